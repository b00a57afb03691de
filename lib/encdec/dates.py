"""The capstone task: human-written dates in many formats -> ISO 8601 (`2026-12-02`).

    "2 Dec 2026", "december 2nd, 2026", "Wednesday, 2 December 2026", "02/12/2026" -> "2026-12-02"

A seq2seq task with real alignment structure: to write the year, the month and the day, the
decoder must find them in the source, and they sit in different places in different formats
(cross-attention maps show it). Source and target lengths differ (8 to 28 characters in, always
10 out, plus EOS).

Convention: numeric dates are day-first, as in most of the world: "02/12/2026", "2/12/2026",
"02.12.2026" and "02-12-2026" are all the 2nd of December. Year-first numeric dates
("2026/12/02", "20261202") are year, month, day.

Characters are tokens. One vocabulary serves the source and the target (the model shares one
embedding): pad 0, bos 1, eos 2, then the characters of VOCAB_CHARS.

Splits are by date, so the validation and test dates never appear in training in any format:
every date between 1950-01-01 and 2049-12-31 belongs to exactly one split, drawn with a fixed
seed. Training batches are drawn afresh for each step from the training dates, with a random
format, by a generator seeded with (seed, step): any step's batch can be rebuilt from the step
number alone, which is what makes resuming and data-parallel training exact.
"""

import datetime as dt

import numpy as np

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ["<pad>", "<bos>", "<eos>"]
VOCAB_CHARS = " ,-./0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
VOCAB = SPECIALS + list(VOCAB_CHARS)
VOCAB_SIZE = len(VOCAB)  # 70
CHAR_TO_ID = {c: i for i, c in enumerate(VOCAB) if i >= len(SPECIALS)}

FIRST_DATE, LAST_DATE = dt.date(1950, 1, 1), dt.date(2049, 12, 31)
TARGET_LEN = 11  # "YYYY-MM-DD" + EOS
N_VALID, N_TEST = 1000, 2000  # dates held out for validation and test

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(day):
    """1 -> '1st', 2 -> '2nd', 3 -> '3rd', 4 -> '4th', 11 -> '11th', 22 -> '22nd'."""
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"


def _fields(d):
    month, weekday = MONTHS[d.month - 1], WEEKDAYS[d.weekday()]
    return dict(d=d.day, dd=f"{d.day:02d}", m=d.month, mm=f"{d.month:02d}", Y=f"{d.year:04d}",
                Month=month, month=month.lower(), Mon=month[:3], mon=month[:3].lower(),
                MON=month[:3].upper(), th=ordinal(d.day), Weekday=weekday, Wkd=weekday[:3])


# name -> template, with an example for 2026-12-02 in the comment.
FORMATS = {
    "d_Mon_Y": "{d} {Mon} {Y}",                          # 2 Dec 2026
    "dd_Mon_Y": "{dd} {Mon} {Y}",                        # 02 Dec 2026
    "d_Month_Y": "{d} {Month} {Y}",                      # 2 December 2026
    "Month_d_Y": "{Month} {d}, {Y}",                     # December 2, 2026
    "month_th_Y": "{month} {th}, {Y}",                   # december 2nd, 2026
    "Mon_d_Y": "{Mon} {d}, {Y}",                         # Dec 2, 2026
    "th_of_Month_Y": "{th} of {Month} {Y}",              # 2nd of December 2026
    "the_th_of_month_Y": "the {th} of {month}, {Y}",     # the 2nd of december, 2026
    "Weekday_d_Month_Y": "{Weekday}, {d} {Month} {Y}",   # Wednesday, 2 December 2026
    "Wkd_dd_Mon_Y": "{Wkd} {dd} {Mon} {Y}",              # Wed 02 Dec 2026
    "MON_d_Y": "{MON} {d} {Y}",                          # DEC 2 2026
    "d-mon-Y": "{d}-{mon}-{Y}",                          # 2-dec-2026
    "dd/mm/Y": "{dd}/{mm}/{Y}",                          # 02/12/2026  (day first)
    "d/m/Y": "{d}/{m}/{Y}",                              # 2/12/2026   (day first)
    "dd.mm.Y": "{dd}.{mm}.{Y}",                          # 02.12.2026  (day first)
    "dd-mm-Y": "{dd}-{mm}-{Y}",                          # 02-12-2026  (day first)
    "Y/mm/dd": "{Y}/{mm}/{dd}",                          # 2026/12/02
    "Ymmdd": "{Y}{mm}{dd}",                              # 20261202
}
FORMAT_NAMES = list(FORMATS)
MAX_SOURCE_LEN = 28  # the longest: "Wednesday, 30 September 2026"


def render(date, fmt):
    """A date written in format `fmt` (a name of FORMATS): render(date(2026, 12, 2), 'd_Mon_Y') -> '2 Dec 2026'."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; the formats are {FORMAT_NAMES}")
    return FORMATS[fmt].format(**_fields(date))


def iso(date):
    """The target: '2026-12-02'."""
    return date.isoformat()


# -- tokens --------------------------------------------------------------------------------------
def encode(text, eos=False):
    """Characters -> ids (list of int), optionally followed by EOS."""
    try:
        ids = [CHAR_TO_ID[c] for c in text]
    except KeyError as exc:
        raise ValueError(f"character {exc.args[0]!r} in {text!r} is not in the vocabulary") from None
    return ids + [EOS] if eos else ids


def decode(ids):
    """Ids -> text, stopping at the first EOS and skipping pad and BOS."""
    chars = []
    for i in np.asarray(ids).tolist():
        if i == EOS:
            break
        if i >= len(SPECIALS):
            chars.append(VOCAB[i])
    return "".join(chars)


def pad_batch(sequences, length=None):
    """A list of id lists -> (B, T) int64 array, right-padded with PAD (T = the longest, or `length`)."""
    T = max(len(s) for s in sequences) if length is None else length
    out = np.full((len(sequences), T), PAD, dtype=np.int64)
    for i, s in enumerate(sequences):
        if len(s) > T:
            raise ValueError(f"sequence {i} has {len(s)} tokens, more than the batch length {T}")
        out[i, :len(s)] = s
    return out


def encode_pairs(sources, targets):
    """Texts -> (src (B, n) ids, tgt (B, 11) ids ending in EOS); decoder inputs are shift_right(tgt)."""
    src = pad_batch([encode(s) for s in sources])
    tgt = pad_batch([encode(t, eos=True) for t in targets], TARGET_LEN)
    return src, tgt


# -- splits and examples -------------------------------------------------------------------------
def all_dates():
    n = (LAST_DATE - FIRST_DATE).days + 1
    return [FIRST_DATE + dt.timedelta(days=i) for i in range(n)]


def split_dates(seed=0):
    """{'train', 'valid', 'test'} -> disjoint lists of dates, covering 1950..2049, drawn with `seed`."""
    dates = all_dates()
    order = np.random.default_rng(seed).permutation(len(dates))
    test, valid, train = np.split(order, [N_TEST, N_TEST + N_VALID])
    return {name: [dates[i] for i in sorted(idx)] for name, idx in
            (("train", train), ("valid", valid), ("test", test))}


def examples(split, seed=0, n=None):
    """The fixed validation or test set: a list of (source text, ISO target, format name).

    Each held-out date appears once, in one format; formats rotate so every format is equally
    represented. `n` keeps the first n examples (they cover all formats once n >= 18).
    """
    if split not in ("valid", "test"):
        raise ValueError(f"split must be 'valid' or 'test' (training examples come from batch()), got {split!r}")
    dates = split_dates(seed)[split]
    rng = np.random.default_rng([seed, 1 if split == "valid" else 2])
    dates = [dates[i] for i in rng.permutation(len(dates))]
    offset = int(rng.integers(len(FORMAT_NAMES)))
    out = []
    for i, d in enumerate(dates[:n]):
        fmt = FORMAT_NAMES[(i + offset) % len(FORMAT_NAMES)]
        out.append((render(d, fmt), iso(d), fmt))
    return out


class TrainingBatches:
    """Training batches as a function of the step: batch(step) is the same wherever it is built.

    Inputs:  seed [CONFIG]; batch(step, batch_size) draws batch_size training dates and formats
             with numpy's Generator seeded by (seed, step).
    Returns: (src (B, n) ids, tgt (B, 11) ids), right-padded, n the longest source in the batch.
    """

    def __init__(self, seed=0):
        self.seed = seed
        self.dates = split_dates(seed)["train"]

    def texts(self, step, batch_size):
        rng = np.random.default_rng([self.seed, 1000, step])
        di = rng.integers(len(self.dates), size=batch_size)
        fi = rng.integers(len(FORMAT_NAMES), size=batch_size)
        pairs = [(render(self.dates[d], FORMAT_NAMES[f]), iso(self.dates[d])) for d, f in zip(di, fi)]
        return [s for s, _ in pairs], [t for _, t in pairs]

    def batch(self, step, batch_size):
        return encode_pairs(*self.texts(step, batch_size))
