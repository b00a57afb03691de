"""A translation task with real words and real reordering: English number words -> German ones.

    "four hundred and thirty two"  ->  "vierhundertzweiunddreißig"
    "seventy one"                  ->  "einundsiebzig"

German says the units before the tens ("zwei-und-dreißig", two-and-thirty), so the decoder must
read the source out of order: to write "zwei" it looks at "two", at the end of the English, and
only then at "thirty" (the cross-attention maps cross). Both sides are written by `num2words`
(lang="en", lang="de"), offline and deterministic.

Range: every number from 0 to 9,999. That holds every construction of the two languages the
task is about (teens, the units-before-tens of 21..99, hundreds, thousands, "and") in sequences
short enough to train on a 2-core CPU in minutes; past 9,999 the words only repeat the same
patterns (German writes 12,345 as "zwölftausenddreihundertfünfundvierzig").

Normalisation: English as num2words writes it (British style, "one hundred and one"), without
its commas ("one thousand, two hundred" -> "one thousand two hundred") and with its hyphens as
spaces ("thirty-two" -> "thirty two"): one word per space. German exactly as num2words writes it:
one lowercase word per number, with "ß", "ö" and "ü" ("dreißig", "zwölf", "fünf"), and the formal
"einhundert", "eintausend" for 100 and 1,000.

Tokens: subwords (encdec.subwords), one BPE vocabulary of 128 symbols for both languages (the model
ties its embeddings), trained on the training split's English and German texts and shipped in
data/numbers_bpe.json: "▁four ▁hundred ▁and ▁thi rty ▁two" -> "▁ vier hundert zwei und drei ßig".

Splits are by number: every number belongs to exactly one split, drawn with a fixed seed, so no
validation or test number is ever seen in training, in either language. Training batches are
drawn afresh for each step from the training numbers, by a generator seeded with (seed, step),
as dates.TrainingBatches: any step's batch can be rebuilt from the step number alone. A batch
draws its numbers by range, TRAIN_MIX of it from each of RANGES (then uniformly within the range):
drawn uniformly from 0..9,999, the numbers below 100 (the irregular ones: "elf", "zwölf",
"siebzehn", "dreißig") would be 1% of the training examples, and a model trained on them is the
least accurate there. The validation and test sets are uniform over their numbers.

The API mirrors encdec.dates: PAD, BOS, EOS, VOCAB, VOCAB_SIZE, TARGET_LEN, encode, decode,
pad_batch, encode_pairs, split_numbers (dates: split_dates), examples, TrainingBatches.
"""

from functools import lru_cache
from pathlib import Path

import numpy as np

from . import subwords
from .dates import pad_batch  # noqa: F401  (the same padding as the dates task)

PAD, BOS, EOS = subwords.PAD, subwords.BOS, subwords.EOS
FIRST, LAST = 0, 9_999
N_VALID, N_TEST = 500, 1_000  # numbers held out for validation and test
VOCAB_TARGET_SIZE = 128  # the BPE vocabulary's size, special tokens included
TOKENIZER_PATH = Path(__file__).resolve().parent / "data" / "numbers_bpe.json"
MAX_SOURCE_LEN = 10  # tokens of the longest English source (tests/test_numbers.py checks both)
TARGET_LEN = 11  # tokens of the longest German target, plus EOS
RANGES = {"0-99": (0, 99), "100-999": (100, 999), "1000-9999": (1_000, 9_999)}
TRAIN_MIX = {"0-99": 0.1, "100-999": 0.3, "1000-9999": 0.6}  # each range's share of a training batch
ENGLISH_CHARS = set("abcdefghijklmnopqrstuvwxyz ")
GERMAN_CHARS = set("abcdefghijklmnopqrstuvwxyzßäöü")


# -- the words -------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def english(n):
    """english(432) -> 'four hundred and thirty two'."""
    from num2words import num2words
    return " ".join(num2words(_check(n), lang="en").replace(",", " ").replace("-", " ").split())


@lru_cache(maxsize=None)
def german(n):
    """german(432) -> 'vierhundertzweiunddreißig'."""
    from num2words import num2words
    return num2words(_check(n), lang="de")


def range_name(n):
    """The part of the range a number falls in: '0-99', '100-999' or '1000-9999'."""
    return next(name for name, (lo, hi) in RANGES.items() if lo <= n <= hi)


def _check(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not FIRST <= n <= LAST:
        raise ValueError(f"the numbers task covers the integers {FIRST}..{LAST}, got {n!r}")
    return int(n)


# -- tokens ----------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def tokenizer():
    """The shipped BPE tokenizer (data/numbers_bpe.json), loaded once."""
    return subwords.load(TOKENIZER_PATH)


def train_tokenizer(seed=0):
    """The BPE tokenizer trained afresh on the training split's English and German (what is shipped)."""
    train = split_numbers(seed)["train"]
    return subwords.train([english(n) for n in train] + [german(n) for n in train], VOCAB_TARGET_SIZE)


def vocab():
    """The symbols by id (pad 0, bos 1, eos 2, then the characters, then the merged symbols)."""
    return subwords.vocab(tokenizer())


def __getattr__(name):  # VOCAB and VOCAB_SIZE are read from the shipped tokenizer on first use
    if name == "VOCAB":
        return vocab()
    if name == "VOCAB_SIZE":
        return len(vocab())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def encode(text, eos=False):
    """Words -> ids (list of int), optionally followed by EOS."""
    return subwords.encode(tokenizer(), text, eos)


def decode(ids):
    """Ids -> words, stopping at the first EOS and skipping pad and BOS."""
    return subwords.decode(tokenizer(), ids)


def tokens(text):
    """The subwords of a text: tokens('seventy one') -> ['▁seventy', '▁one']."""
    return subwords.tokens(tokenizer(), text)


def encode_pairs(sources, targets):
    """Texts -> (src (B, n) ids, tgt (B, TARGET_LEN) ids ending in EOS); decoder inputs are shift_right(tgt)."""
    return subwords.encode_batch(tokenizer(), sources), subwords.encode_batch(tokenizer(), targets, True, TARGET_LEN)


# -- splits and examples ---------------------------------------------------------------------------
def all_numbers():
    return list(range(FIRST, LAST + 1))


def split_numbers(seed=0):
    """{'train', 'valid', 'test'} -> disjoint sorted lists of numbers covering 0..9,999, drawn with `seed`."""
    numbers = all_numbers()
    order = np.random.default_rng([seed, 7]).permutation(len(numbers))
    test, valid, train = np.split(order, [N_TEST, N_TEST + N_VALID])
    return {name: sorted(numbers[i] for i in idx) for name, idx in
            (("train", train), ("valid", valid), ("test", test))}


def examples(split, seed=0, n=None):
    """The fixed validation or test set: a list of (English source, German target, range name),
    in a fixed random order (`n` keeps the first n)."""
    if split not in ("valid", "test"):
        raise ValueError(f"split must be 'valid' or 'test' (training examples come from batch()), got {split!r}")
    numbers = split_numbers(seed)[split]
    rng = np.random.default_rng([seed, 1 if split == "valid" else 2])
    numbers = [numbers[i] for i in rng.permutation(len(numbers))][:n]
    return [(english(k), german(k), range_name(k)) for k in numbers]


class TrainingBatches:
    """Training batches as a function of the step: batch(step) is the same wherever it is built.

    Inputs:  seed [CONFIG]; batch(step, batch_size) draws batch_size training numbers with numpy's
             Generator seeded by (seed, step), each from a range drawn with TRAIN_MIX's shares.
    Returns: (src (B, n) ids, tgt (B, TARGET_LEN) ids), right-padded, n the longest source in the batch.
    """

    def __init__(self, seed=0):
        self.seed = seed
        self.numbers = split_numbers(seed)["train"]
        self.by_range = [[k for k in self.numbers if range_name(k) == name] for name in RANGES]

    def numbers_of(self, step, batch_size):
        """The training numbers of the step's batch."""
        rng = np.random.default_rng([self.seed, 1000, step])
        ranges = rng.choice(len(RANGES), size=batch_size, p=[TRAIN_MIX[name] for name in RANGES])
        within = rng.random(batch_size)
        return [self.by_range[r][int(u * len(self.by_range[r]))] for r, u in zip(ranges, within)]

    def texts(self, step, batch_size):
        """The step's (English sources, German targets): the texts batch(step, batch_size) encodes."""
        picked = self.numbers_of(step, batch_size)
        return [english(k) for k in picked], [german(k) for k in picked]

    def batch(self, step, batch_size):
        pairs = [number_ids(k) for k in self.numbers_of(step, batch_size)]
        return pad_batch([s for s, _ in pairs]), pad_batch([t for _, t in pairs], TARGET_LEN)


@lru_cache(maxsize=None)
def number_ids(n):
    """(source ids, target ids ending in EOS) of the number n, computed once (batches reuse them)."""
    return tuple(encode(english(n))), tuple(encode(german(n), eos=True))
