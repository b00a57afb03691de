"""What each part of Exercise 6.7's check observes of an answer: the pair it merges, the new corpus
(and whether `words` was left unchanged), the merges of k steps; and the merges of Hugging Face
tokenizers trained on a case's texts."""

import functools

from ... import subwords
from .observed_parts import _Malformed


def _as_pair(value):
    if not isinstance(value, (tuple, list)) or len(value) != 2 or not all(isinstance(s, str) for s in value):
        raise _Malformed(f"the pair should be a tuple of two symbols (strings), like ('e', 's'); got {value!r:.80}")
    return tuple(value)


def _as_result(value):
    """(pair, corpus as a dict {tuple of str: int}) from an answer's return value, or _Malformed."""
    if value is None:
        raise _Malformed("your function returned None (did you forget `return`?)")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _Malformed(f"expected a tuple (pair, new corpus), got {type(value).__name__}")
    pair, corpus = value
    pair = _as_pair(pair)
    if not isinstance(corpus, dict):
        raise _Malformed(f"the new corpus should be a dict {{tuple of symbols: count}}, got {type(corpus).__name__}")
    for word in corpus:
        if not isinstance(word, tuple) or not all(isinstance(s, str) for s in word):
            raise _Malformed(f"the new corpus's words should be tuples of strings, one string a symbol, like "
                             f"('lo', 'w'); got {word!r:.80}")
    return pair, dict(corpus)


def _copy_words(words):
    return {tuple(w): n for w, n in words.items()}


def _observe_pair(fn, case):
    value = fn(_copy_words(case.args[0]))
    if value is None:
        raise _Malformed("your function returned None (did you forget `return`?)")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _Malformed(f"expected a tuple (pair, new corpus), got {type(value).__name__}")
    return _as_pair(value[0])


def _observe_corpus(fn, case):
    words = _copy_words(case.args[0])
    pair, corpus = _as_result(fn(words))
    return pair, corpus, words == case.args[0]


def _observe_merges(fn, case):
    texts, k = case.args
    words, pairs = subwords.word_counts(texts), []
    for _ in range(k):
        pair, words = _as_result(fn(words))
        pairs.append(pair)
    return pairs


def _library_merges(case):
    """The first k merges of Hugging Face tokenizers' BPE trained on the case's texts."""
    texts, k = case.args
    return _trained_merges(tuple(texts))[:k]


@functools.cache
def _trained_merges(texts):
    return subwords.merges(subwords.train(list(texts), 400))
