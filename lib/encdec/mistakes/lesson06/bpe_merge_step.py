"""Exercise 6.7, bpe_merge_step: the mistakes of one byte-pair-encoding merge step."""

from .. import mistake


# -- Exercise 6.7 bpe_merge_step --------------------------------------------------------------------------
# Each entry is the whole step, written as a student would, with one wrong idea in it.
@mistake("bpe_merge_step", "counts_per_word_type",
         "each pair is counted once per distinct word, not weighted by how often the word occurs: a pair in a "
         "word that occurs 20 times counts 20. Add the word's count n for every occurrence of the pair.")
def bpe_merge_step(words):
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "repeated_pair_counted_once",
         "a pair is counted once per word however often it stands there: ('a', 'a', 'a') holds ('a', 'a') twice "
         "(overlapping), and each occurrence adds the word's count. Count every position of zip(word, word[1:]), "
         "not a set of the pairs.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in set(zip(word, word[1:])):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "ties_reversed",
         "ties go the wrong way: among pairs of equal count the statement takes the one whose left symbol comes "
         "first, then whose right symbol comes first, the smallest (-count, rank(left), rank(right)); the "
         "largest (count, rank(left), rank(right)) takes the last one.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = max(counts, key=lambda p: (counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "ties_first_seen",
         "ties go to the pair counted first (max and min return the first of equal keys), so the order of the "
         "words in the dict decides. The statement's order decides: among equal counts, the smallest "
         "(rank(left), rank(right)), with rank(s) = (len(s) > 1, s).")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    best = max(counts, key=counts.get)
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "ties_in_string_order",
         "ties are broken in plain string order, in which the merged symbol 'lo' comes before the character '▁'. "
         "The vocabulary numbers every single character before any merged symbol: compare rank(s) = "
         "(len(s) > 1, s), not the symbols themselves.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    best = min(counts, key=lambda p: (-counts[p], p))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "first_occurrence_only",
         "only the first occurrence of the pair in each word is merged: ('h', 'a', 'h', 'a') must become "
         "('ha', 'ha'), and ('a', 'a', 'a', 'a') ('aa', 'aa'). Keep scanning the word after a merge.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i, merged = [], 0, False
        while i < len(word):
            if not merged and i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i, merged = i + 2, True
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "scan_moves_one_after_a_merge",
         "after a merge the scan moves on by one symbol, not two, so the right symbol of the pair is kept a "
         "second time: ('a', 'a', 'a') becomes ('aa', 'aa', 'a') instead of ('aa', 'a'), and ('e', 's', 't') "
         "becomes ('es', 's', 't'). A merged pair uses up both its symbols: skip both.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 1
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "returns_the_old_corpus",
         "the corpus returned is the one given, with no word merged: the merged words are built but not "
         "returned. Return the new dict: (best, new_words).")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, words


@mistake("bpe_merge_step", "merged_symbol_is_the_pair",
         "the merged symbol is the pair itself, a tuple such as ('e', 's'), not one string: a new symbol is its "
         "two symbols joined, left + right ('es'), so that it can be merged again and looked up in the vocabulary.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(best)
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "changes_the_corpus_given",
         "the corpus given is changed in place (each word popped and put back merged): the caller's corpus is "
         "lost, so a run that keeps the corpus of each step (to show a trace, to compare) sees only the last one. "
         "Build a new dict and leave `words` as it is.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    for word in list(words):
        n = words.pop(word)
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        words[tuple(out)] = words.get(tuple(out), 0) + n
    return best, words
