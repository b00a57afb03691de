"""What Exercise 6.7's check says when an observation differs: the pair merged (and the slip of a
word's last pair left out), the new corpus (and a merge by text replacement), the k merges."""

from ... import subwords


def _pair_words(words, pair):
    counts = subwords.pair_counts(words)
    return f"{pair} occurs {counts.get(pair, 0)} times"


def _say_pair(got, expected, case):
    words = case.args[0]
    said = (f"the pair merged: expected {expected}, got {got} ({_pair_words(words, expected)} in the corpus, "
            f"{_pair_words(words, got)})")
    if got != _most_frequent(words, last=True) and got == _most_frequent(words, last=False) \
            and got != _most_frequent(words, last=True, once=True):  # a set of each word's pairs: another slip
        said += (": it is the most frequent pair when each word's last pair is not counted. A word of k symbols "
                 "has k - 1 adjacent pairs, at i, i + 1 for i in range(len(word) - 1) (or zip(word, word[1:]))")
    return said


def _most_frequent(words, last, once=False):
    """The pair the stated rule merges, its pairs counted with (last=True) or without each word's last pair;
    once=True: each pair once per word."""
    counts = {}
    for word, n in words.items():
        pairs = [(word[i], word[i + 1]) for i in range(len(word) - (1 if last else 2))]
        for pair in (dict.fromkeys(pairs) if once else pairs):
            counts[pair] = counts.get(pair, 0) + n
    if not counts:
        return None
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    return min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))


def _say_corpus(got, expected, case):
    (g_pair, g_corpus, untouched), (e_pair, e_corpus, _) = got, expected
    if g_pair != e_pair:
        return _say_pair(g_pair, e_pair, case)
    if g_corpus == case.args[0] and g_corpus != e_corpus:
        return f"after merging {e_pair} your corpus is the corpus you were given: no word was merged"
    if g_corpus != e_corpus:
        missing = [w for w in e_corpus if w not in g_corpus]
        extra = [w for w in g_corpus if w not in e_corpus]
        if _replaced_in_text(case.args[0], e_pair) == g_corpus:
            return (f"your corpus is what a text replace of '{' '.join(e_pair)}' by '{''.join(e_pair)}' makes: it also "
                    "joins where the left symbol only ends with "
                    f"'{e_pair[0]}' or the right one only starts with '{e_pair[1]}' (('x', 'ab') becomes ('xab',) when "
                    "('x', 'a') is merged). Compare whole symbols: walk each word's tuple, and merge where "
                    "word[i] == left and word[i + 1] == right")
        if missing:
            text = f"after merging {e_pair} the new corpus should hold {missing[0]} (count {e_corpus[missing[0]]})"
            return text + (f"; yours holds {extra[0]} (count {g_corpus[extra[0]]})" if extra else "; yours does not")
        if extra:
            return f"your new corpus holds {extra[0]}, which merging {e_pair} does not make"
        word = next(w for w in e_corpus if e_corpus[w] != g_corpus[w])
        return f"the count of {word}: expected {e_corpus[word]}, got {g_corpus[word]}"
    if not untouched:
        return "your function changed `words`, the corpus it was given: build a new dict and leave the old one as it is"
    return ""


def _replaced_in_text(words, pair):
    """The corpus a merge by text replacement makes (symbols joined by spaces, the pair's text replaced)."""
    left, right = pair
    merged = {}
    for word, count in words.items():
        key = tuple(" ".join(word).replace(f"{left} {right}", left + right).split(" "))
        merged[key] = merged.get(key, 0) + count
    return merged


def _say_merges(got, expected, case):
    i = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), None)
    if i is None:
        return f"{len(got)} merges, expected {len(expected)}"
    agree = "" if i == 0 else " (merge 1 agrees)" if i == 1 else f" (merges 1 to {i} agree)"
    return f"merge {i + 1}: Hugging Face tokenizers merged {expected[i]}, your step {got[i]}{agree}"
