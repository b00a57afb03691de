"""Exercise 6.7's cases: Sennrich's corpus, the corpus after k merges of the reference, the German
number words, and bpe_cases (the parts' cases: the pair, the whole new corpus, k steps against
Hugging Face tokenizers)."""

import functools

from ... import subwords
from ..core import Case


SENNRICH = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3  # Sennrich et al. (2016)'s example


def _after_merges(texts, k):
    """The corpus of `texts` after k merge steps of the reference: a state a real BPE run passes through."""
    words = subwords.word_counts(texts)
    for _ in range(k):
        words = subwords.bpe_merge_step(words)[1]
    return words


def _german(numbers):
    from ... import number_words
    return [number_words.german(n) for n in numbers]


@functools.cache
def bpe_cases():
    """{"pair": cases whose pair is compared, "corpus": cases whose whole result is, "library": (texts, k)
    cases run k steps and compared with the merges of Hugging Face tokenizers trained on the texts}."""
    sennrich = {("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2, ("n", "e", "w", "e", "s", "t"): 6,
                ("w", "i", "d", "e", "s", "t"): 3}
    return {
        "pair": [
            Case("counts that matter: ('l', 'o') 20 times in one word, ('e', 'w') once in each of three",
                 ({("l", "o", "w"): 20, ("n", "e", "w"): 1, ("f", "e", "w"): 1, ("d", "e", "w"): 1},)),
            Case("a tie: ('e', 's') and ('s', 't') both 9 times", (sennrich,)),
            Case("a tie of every pair (3 times each): the first in the order is not the first seen",
                 ({("s", "t", "o", "p"): 3, ("a", "b", "l", "e"): 3},)),
            Case("a character against a merged symbol: ('▁', 'lo') and ('lo', 'w') both 7 times",
                 (_after_merges(SENNRICH, 3),)),
            Case("a word's last pair counts: ('b', 'c') ends both words, 5 times in all",
                 ({("a", "b", "c"): 3, ("x", "b", "c"): 2},)),
            Case("overlapping pairs: ('a', 'a', 'a') holds ('a', 'a') twice",
                 ({("a", "a", "a"): 3, ("a", "b", "c"): 5},)),
            Case("a pair twice in one word: ('x', 'y', 'x', 'y')", ({("x", "y", "x", "y"): 1, ("a", "b"): 1},),
                 hidden=True),
            Case("German number words after 4 merges (ties among 'ch', 'ie', 'ei')",
                 (_after_merges(_german(range(20, 100)), 4),), hidden=True),
        ],
        "corpus": [
            Case("every occurrence merged, counts kept (Sennrich's corpus, merging ('e', 's'))", (sennrich,)),
            Case("overlapping: ('a', 'a', 'a') -> ('aa', 'a'), ('a', 'a', 'a', 'a') -> ('aa', 'aa')",
                 ({("a", "a", "a"): 3, ("a", "a", "a", "a"): 2, ("b", "a", "a"): 1},)),
            Case("the pair twice in one word: ('h', 'a', 'h', 'a') -> ('ha', 'ha')",
                 ({("h", "a", "h", "a"): 4, ("h", "a", "t"): 1, ("t", "a"): 2},)),
            Case("symbols that only contain the pair's: merging ('x', 'a') leaves ('x', 'ab') and ('zx', 'a') as they are",
                 ({("x", "a"): 5, ("x", "ab"): 2, ("zx", "a"): 2},)),
            Case("five a's in a row: ('a', 'a', 'a', 'a', 'a') -> ('aa', 'aa', 'a')",
                 ({("a", "a", "a", "a", "a"): 2, ("b", "a"): 1},), hidden=True),
            Case("German number words after 6 merges", (_after_merges(_german(range(20, 100)), 6),), hidden=True),
        ],
        "library": [
            Case("Sennrich's corpus ('low' 5, 'lower' 2, 'newest' 6, 'widest' 3), 5 merges", (SENNRICH, 5)),
            Case("Sennrich's corpus, every merge until each word is one symbol (15)", (SENNRICH, 15), hidden=True),
            Case("the German words for 20 to 99, 8 merges", (_german(range(20, 100)), 8), hidden=True),
        ],
    }
