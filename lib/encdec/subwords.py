"""Subword tokens: byte-pair encoding (BPE) with Hugging Face `tokenizers`, and a plain-Python BPE step.

A BPE vocabulary starts from the characters and repeatedly merges the most frequent pair of
adjacent symbols into a new symbol, until the vocabulary has the size asked for:

    l o w e s t  ->  l o w es t  ->  l o w est  ->  low est

The library does the training (`train`) and the tokenizing (`Tokenizer.encode`); `bpe_merge_step`
is the same step written in plain Python, for a lesson's exercise, and reproduces the library's
merges (tests/test_subwords.py). Words are found as SentencePiece finds them: every space becomes
the symbol "▁" (U+2581) glued to the front of the word that follows it, and a text starts with one,
so decoding is lossless and needs no rule for where spaces go: "four hundred" -> "▁four", "▁hundred".

Ids: the course's special tokens keep their ids (pad 0, bos 1, eos 2); the characters follow in
code-point order, then the merged symbols in the order they were made. The vocabulary is saved as
the library's JSON (a few kilobytes) and shipped in encdec/data/, so nothing is trained at grading time.

The library's tie rule (tokenizers' BPE trainer, `Merge`'s ordering in trainer.rs): the pair with the
largest count is merged; among pairs with the same count, the pair (left, right) whose ids are
smallest, left first, then right. Its counts are the classic ones: every adjacent pair of every
word, times the word's count (overlapping pairs too: "a a a" counts ("a", "a") twice), and a merge
replaces the pair left to right without overlap.
"""

from collections import Counter
from pathlib import Path

import numpy as np

from .dates import pad_batch

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ["<pad>", "<bos>", "<eos>"]
SPACE = "\u2581"  # "▁": a space, glued to the front of the word after it


def new_tokenizer():
    """An untrained BPE tokenizer: NFC normalisation, SentencePiece-style words, lossless decoding."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always")
    return tok


def train(texts, vocab_size):
    """A BPE tokenizer trained on `texts` (an iterable of strings) with `vocab_size` symbols in all.

    Deterministic: the same texts give the same vocabulary and merges, byte for byte, on every run
    (the library sorts the characters, and its merge order is a total order on (count, pair)).
    """
    from tokenizers import trainers
    tok = new_tokenizer()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    if [tok.token_to_id(s) for s in SPECIALS] != [PAD, BOS, EOS]:
        raise AssertionError("the special tokens lost their ids")
    return tok


def to_json(tok):
    """The tokenizer as the library's JSON text (what is shipped)."""
    return tok.to_str(pretty=True)


def from_json(text):
    from tokenizers import Tokenizer
    return Tokenizer.from_str(text)


def load(path):
    return from_json(Path(path).read_text(encoding="utf-8"))


def vocab(tok):
    """The symbols by id: vocab(tok)[i] is the symbol of id i."""
    by_id = {i: s for s, i in tok.get_vocab().items()}
    return [by_id[i] for i in range(len(by_id))]


def merges(tok):
    """The library's merges in the order it made them: a list of (left, right) symbol pairs."""
    import json
    out = []
    for m in json.loads(tok.to_str())["model"]["merges"]:
        out.append(tuple(m) if isinstance(m, list) else tuple(m.split(" ")))
    return out


# -- encoding ---------------------------------------------------------------------------------------
def encode(tok, text, eos=False, alphabet=None):
    """Text -> ids (list of int), optionally followed by EOS. Characters the vocabulary lacks raise
    (alphabet: the vocabulary's characters, when the caller has them already)."""
    alphabet = _alphabet(tok) if alphabet is None else alphabet
    missing = sorted({c for c in text if c not in alphabet and not c.isspace()})
    if missing:
        raise ValueError(f"character {missing[0]!r} in {text!r} is not in the vocabulary")
    ids = tok.encode(text).ids
    return ids + [EOS] if eos else ids


def encode_batch(tok, texts, eos=False, length=None):
    """Texts -> (B, T) int64 ids, right-padded with PAD like dates.pad_batch (T: the longest or `length`)."""
    alphabet = _alphabet(tok)
    return pad_batch([encode(tok, t, eos, alphabet) for t in texts], length)


def decode(tok, ids):
    """Ids -> text, stopping at the first EOS and skipping pad and BOS (the inverse of encode)."""
    keep = []
    for i in np.asarray(ids).tolist():
        if i == EOS:
            break
        if i >= len(SPECIALS):
            keep.append(i)
    return tok.decode(keep)


def tokens(tok, text):
    """The symbols a text is cut into: tokens(tok, 'four hundred') -> ['▁four', '▁hundred']."""
    return tok.encode(text).tokens


def _alphabet(tok):
    """The characters a text may hold: the vocabulary's single characters, and the space."""
    return {s for s in tok.get_vocab() if len(s) == 1} | {" "}


# -- BPE in plain Python: one merge step -----------------------------------------------------------
def word_counts(texts):
    """{word as a tuple of characters: count}, with words found as the library finds them:
    word_counts(['low lower']) -> {('▁', 'l', 'o', 'w'): 1, ('▁', 'l', 'o', 'w', 'e', 'r'): 1}."""
    counts = Counter()
    for text in texts:
        for word in text.split():
            counts[tuple(SPACE + word)] += 1
    return dict(counts)


def pair_counts(words):
    """{(left, right): how often the pair stands side by side}, over a corpus {symbols: count}."""
    counts = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += n
    return counts


def merge_pair(word, pair):
    """The word (a tuple of symbols) with every occurrence of `pair` merged, left to right."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def bpe_merge_step(words, order=None):
    """One BPE merge on a corpus {tuple of symbols: count}. Returns (pair, new corpus).

    The pair merged is the most frequent pair of adjacent symbols. Ties go to the pair whose left
    symbol, then right symbol, comes first: in `order` (a list of the symbols in the order the
    vocabulary numbers them) when given, which is the library's rule exactly; without it, single
    characters come first, in code-point order, then merged symbols in alphabetical order. That is
    the library's rule too whenever no two merged symbols are compared (the library numbers the
    characters in code-point order and each merged symbol after them, in the order it was made).
    Raises ValueError when no word has two symbols left.
    """
    counts = pair_counts(words)
    if not counts:
        raise ValueError("no pair left to merge: every word is a single symbol")
    rank = _default_rank if order is None else {s: i for i, s in enumerate(order)}.__getitem__
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    merged = {}
    for word, n in words.items():
        new = merge_pair(word, best)
        merged[new] = merged.get(new, 0) + n
    return best, merged


def _default_rank(symbol):
    """Without an order: the characters first, in code-point order, then merged symbols alphabetically."""
    return (len(symbol) > 1, symbol)


def bpe_merges(words, k, order=None):
    """The first k merges of repeated bpe_merge_step: a list of pairs. With `order` (the starting
    symbols in id order), each new symbol is numbered after the others, as the library numbers it."""
    order = None if order is None else list(order)
    pairs = []
    for _ in range(k):
        pair, words = bpe_merge_step(words, order)
        pairs.append(pair)
        if order is not None and pair[0] + pair[1] not in order:
            order.append(pair[0] + pair[1])
    return pairs


def merge_trace(texts, k, show=None):
    """BPE step by step on a small example, for a lesson: a list of k (pair, {word: segmentation}).

    texts: the training texts; show: the words whose segmentation is shown (default: every word).
    Each step's segmentation is the list of symbols the word is cut into after that merge,
    with the "▁" that marks a word's start.
    """
    words = word_counts(texts)
    show = sorted({w for t in texts for w in t.split()}) if show is None else list(show)
    seg = {w: tuple(SPACE + w) for w in show}
    trace = []
    for _ in range(k):
        try:
            pair, words = bpe_merge_step(words)
        except ValueError:
            break
        seg = {w: merge_pair(s, pair) for w, s in seg.items()}
        trace.append((pair, {w: list(s) for w, s in seg.items()}))
    return trace
