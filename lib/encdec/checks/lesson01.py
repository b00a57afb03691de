"""Checkers for lesson 01, Attention from scratch.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.
"""

import numpy as np

from .. import attention, layers
from ..mistakes import CATALOG
from ..mistakes import lesson01 as _register  # noqa: F401  (fills the catalog)
from .cases import Case
from .core import Checker
from .exercises import Exercise
from .fixtures import generator
from .ordering import Ordering, Step
from .probes import (Axis, Constant, Fitted, MaskedKeysZero, Missing, NotFinite, Probes, RowsSumToOne, Scale, Swapped,
                     Variants,
                     argument)
from .rebinding import rebind


# -- probes: the kinds of slip each exercise's answer may show (encdec.checks.probes) -------------------------
def softmax_model(k, x, axis=-1):
    """The softmax with knobs: axis (the axis it normalises over)."""
    return attention.softmax(x, axis=k.get("axis", axis))


def _all_axes(x, axis=-1):
    return [None] + list(range(-np.ndim(x), 0))


def _softmax_axis(x, axis=-1):
    return axis - np.ndim(x) if axis >= 0 else axis


SOFTMAX_PROBES = Probes(
    softmax_model,
    Axis("the softmax", "axis", _all_axes, right=_softmax_axis,
         fix="Pass `axis` on to np.max and np.sum, with keepdims=True."),
    NotFinite(),
    RowsSumToOne(axis=_softmax_axis, what="softmax output", over="the entries along `axis`"))


def attention_model(k, Q, K, V, mask=None):
    """softmax(Q K^T * scale + mask) V with knobs: scale, axis (of the softmax), without={"mask"}."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) * k.get("scale", 1.0 / np.sqrt(Q.shape[-1]))
    if mask is not None and not k.drops("mask"):
        scores = scores + mask
    weights = attention.softmax(scores, axis=k.get("axis", -1))
    return weights @ V, weights


def score_scales(Q, K, V, mask=None):
    """The factors a student may scale Q K^T by, the right one (1/sqrt(d_k)) with no diagnosis."""
    d_k, m, n, d_v = np.shape(Q)[-1], np.shape(Q)[-2], np.shape(K)[-2], np.shape(V)[-1]
    why = "Q K^T is divided by sqrt(d_k), where d_k = Q.shape[-1] is the width of a query and a key"
    return [("1/sqrt(d_k)", 1.0 / np.sqrt(d_k), None),
            ("1/sqrt(n)", 1.0 / np.sqrt(n), "the scores are divided by sqrt(n), the number of keys "
             f"(K.shape[-2]), instead of sqrt(d_k). {why}."),
            ("1/sqrt(m)", 1.0 / np.sqrt(m), "the scores are divided by sqrt(m), the number of queries "
             f"(Q.shape[-2]), instead of sqrt(d_k). {why}."),
            ("1/sqrt(d_v)", 1.0 / np.sqrt(d_v), "the scores are divided by sqrt(d_v), the width of a value "
             f"(V.shape[-1]), instead of sqrt(d_k). {why}."),
            ("1/d_k", 1.0 / d_k, f"the scores are divided by d_k instead of sqrt(d_k). {why}."),
            ("none", 1.0, f"the scores are not scaled at all. {why}, so that they do not grow with d_k."),
            ("sqrt(d_k)", np.sqrt(d_k), f"the scores are multiplied by sqrt(d_k) instead of divided by it. {why}.")]


def attention_probes(mask_index=3, queries="queries", keys="keys"):
    """The probes of an attention function (Q, K, V, mask=None) -> (output, weights)."""
    mask = argument(mask_index, "mask")
    return Probes(
        attention_model,
        Scale(score_scales),
        Axis("the softmax", "axis", lambda Q, K, V, mask=None: [-2, None] + ([-3] if np.ndim(Q) > 2 else []),
             labels={-1: f"the {keys} (axis=-1)", -2: f"the {queries} (axis=-2)", -3: "the batch axis (axis=-3)",
                     None: "the whole array"},
             fix=f"Each row (one query) needs a distribution over the {keys}: softmax along the last axis."),
        Missing({"mask": ("the mask", "Add `mask` to the scores before the softmax, when it is given.")}),
        Swapped(),
        NotFinite(),
        RowsSumToOne(weights=lambda v: v[1], what="attention weights", over=f"the {keys}"),
        MaskedKeysZero(mask, weights=lambda v: v[1], what="weights"),
        params={"Q": 0, "K": 1, "V": 2},
        roles={"Q": "the queries", "K": "the keys", "V": "the values"})


# -- Exercise 1.1 -------------------------------------------------------------------------------------
def softmax_cases():
    r = generator(11)
    far_apart = np.stack([r.normal(size=5) + 1e3, r.normal(size=5) - 1e3, r.normal(size=5) * 1e3])
    return {
        "rows": [Case("a (3, 5) matrix of scores", (r.normal(size=(3, 5)) * 2,)),
                 Case("a single row of 4 scores", (r.normal(size=4),)),
                 Case("a (4, 6) matrix", (r.normal(size=(4, 6)),), hidden=True)],
        "large": [Case("large logits: rows near +1000, near -1000, and spread by 1000", (far_apart,)),
                  Case("large logits (about 1e4)", (r.normal(size=(3, 4)) * 1e4,), hidden=True)],
        "axis": [Case("axis=0 on a (4, 3) matrix", (r.normal(size=(4, 3)),), {"axis": 0}),
                 Case("axis=1 on a (2, 3, 4) array", (r.normal(size=(2, 3, 4)),), {"axis": 1}, hidden=True)],
        "batched": [Case("a batch of shape (2, 3, 4, 5)", (r.normal(size=(2, 3, 4, 5)),)),
                    Case("float32 input", (r.normal(size=(3, 5)).astype(np.float32),), float32=True),
                    Case("near-zero inputs (1e-12)", (r.normal(size=(2, 5)) * 1e-12,), hidden=True)],
    }


SOFTMAX = Exercise("1.1", "softmax", points=3, reference=attention.softmax,
                   weights={"large logits stay finite": 3})  # a stable softmax is half of what the exercise asks


@SOFTMAX.checked_by
def check_softmax(softmax=None, *, points=None, hidden=False):
    """Stable softmax along `axis`."""
    c = Checker(SOFTMAX, points, hidden)
    fn = c.find(softmax, "softmax")
    cases, catalog = softmax_cases(), CATALOG["softmax"]
    common = dict(catalog=catalog, forbidden=[attention.softmax], probes=SOFTMAX_PROBES)
    c.check_cases("each row becomes a distribution", fn, attention.softmax, cases["rows"], **common)
    c.check_cases("large logits stay finite", fn, attention.softmax, cases["large"], robust=True, **common)
    c.check_cases("the axis argument is respected", fn, attention.softmax, cases["axis"], **common)
    c.check_cases("batched and float32 inputs", fn, attention.softmax, cases["batched"], **common)
    return c.result()


# -- Exercise 1.2 -------------------------------------------------------------------------------------
def attention_cases():
    r = generator(12)

    def qkv(lead, m, n, d_k, d_v, scale=1.0, dtype=np.float64):
        return tuple((r.normal(size=lead + s) * scale).astype(dtype)
                     for s in ((m, d_k), (n, d_k), (n, d_v)))

    causal = attention.create_causal_mask(4)
    pad = np.where(np.arange(5) >= 3, -np.inf, 0.0)[None, :]  # keys 3 and 4 hidden
    batch_pad = np.where(np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]]) == 1, -np.inf, 0.0)[:, None, :]
    return {
        "basic": [Case("unbatched, m=3 queries, n=5 keys, d_k=4, d_v=2", qkv((), 3, 5, 4, 2)),
                  Case("one query, d_k=1", qkv((), 1, 6, 1, 3), hidden=True)],
        "batched": [Case("batched, leading shape (2,), m=3, n=5, d_k=6, d_v=4", qkv((2,), 3, 5, 6, 4)),
                    Case("leading shape (2, 3), m=4, n=2", qkv((2, 3), 4, 2, 6, 5), hidden=True)],
        "masked": [Case("causal mask, m=n=4", qkv((), 4, 4, 3, 2) + (causal,), alike=(("m", "n"),)),
                   Case("padding mask hiding keys 3 and 4, m=3, n=5", qkv((), 3, 5, 4, 2) + (pad,)),
                   Case("per-batch padding mask (2, 1, 5)", qkv((2,), 3, 5, 4, 2) + (batch_pad,), hidden=True)],
        "robust": [Case("float32 inputs", qkv((), 3, 5, 4, 2, dtype=np.float32), float32=True),
                   Case("large scores (entries about 30)", qkv((), 3, 5, 8, 2, scale=30.0)),
                   Case("masked large scores", qkv((2,), 4, 4, 8, 3, scale=30.0) + (causal,), hidden=True)],
    }


SCALED_DOT_PRODUCT_ATTENTION = Exercise("1.2", "scaled_dot_product_attention", points=4,
                                        reference=attention.scaled_dot_product_attention,
                                        sizes={"Q": "... m d_k", "K": "... n d_k", "V": "... n d_v"})


@SCALED_DOT_PRODUCT_ATTENTION.checked_by
def check_scaled_dot_product_attention(scaled_dot_product_attention=None, *, points=None, hidden=False):
    """softmax(Q K^T / sqrt(d_k) + mask) V, returning (output, weights).

    Your `softmax` is replaced by the reference while this runs, so a mistake in Exercise 1.1
    is not charged again here.
    """
    c = Checker(SCALED_DOT_PRODUCT_ATTENTION, points, hidden)
    fn = c.find(scaled_dot_product_attention, "scaled_dot_product_attention")
    fn = rebind(fn, softmax=attention.softmax)
    cases = attention_cases()
    common = dict(catalog=CATALOG["scaled_dot_product_attention"], names=("output", "weights"),
                  forbidden=[attention.scaled_dot_product_attention, attention.cross_attention],
                  probes=attention_probes())
    ref = attention.scaled_dot_product_attention
    c.check_cases("unbatched, rectangular (m != n)", fn, ref, cases["basic"], **common)
    c.check_cases("leading batch dimensions", fn, ref, cases["batched"], **common)
    c.check_cases("masks (causal and padding)", fn, ref, cases["masked"], **common)
    c.check_cases("float32 and large scores", fn, ref, cases["robust"], robust=True, **common)
    return c.result()


# -- Exercise 1.3 -------------------------------------------------------------------------------------
def positions_model(k, n, d):
    """sinusoidal_positions with knobs: base (10000), exponent (how 2i/d is computed: "2i/d", "2i//d" in
    integer division, "i/d" without the 2), swap (True: cos on the even columns, sin on the odd)."""
    pos = np.arange(int(n), dtype=np.float64)[:, None]  # (n, 1)
    two_i = np.arange(0, int(d), 2)  # (ceil(d/2),)
    form = k.get("exponent", "2i/d")
    expo = {"2i/d": two_i / d, "2i//d": (two_i // d).astype(np.float64), "i/d": (two_i // 2) / d}[form]
    angles = pos / np.power(k.get("base", 10000.0), expo)  # (n, ceil(d/2))
    first, second = (np.cos, np.sin) if k.get("swap") else (np.sin, np.cos)
    pe = np.zeros((int(n), int(d)))
    pe[:, 0::2] = first(angles)
    pe[:, 1::2] = second(angles[:, : int(d) // 2])
    return pe


POSITIONS_PROBES = Probes(
    positions_model,
    Variants("exponent", [
        ("integer_division", {"exponent": "2i//d"}, "the exponent uses integer division, `2i // d`: it is 0 for every "
         "column (2i < d), so every column has the same wavelength. Divide as floats: 2i / d."),
        ("sin_cos_swapped", {"swap": True}, "sine and cosine are exchanged: the even columns (0, 2, 4, ...) hold the "
         "sine, the odd ones the cosine.")]),
    Fitted(Constant("base", "the base of the wavelengths", "10000", 10000.0, lo=2.0, hi=1e8)))


SINUSOIDAL_POSITIONS = Exercise("1.3", "sinusoidal_positions", points=2, reference=layers.sinusoidal_positions,
                                sizes={"n": "n", "d": "d"})


@SINUSOIDAL_POSITIONS.checked_by
def check_sinusoidal_positions(sinusoidal_positions=None, *, points=None, hidden=False):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same)."""
    c = Checker(SINUSOIDAL_POSITIONS, points, hidden)
    fn = c.find(sinusoidal_positions, "sinusoidal_positions")
    common = dict(catalog=CATALOG["sinusoidal_positions"], forbidden=[layers.sinusoidal_positions],
                  probes=POSITIONS_PROBES)
    ref = layers.sinusoidal_positions
    c.check_cases("even width", fn, ref, [Case("n=6 positions, d=8", (6, 8)),
                                          Case("n=50, d=16", (50, 16)),
                                          Case("n=128, d=64", (128, 64), hidden=True)], **common)
    c.check_cases("odd width", fn, ref, [Case("n=5, d=7", (5, 7)),
                                         Case("n=3, d=1", (3, 1), hidden=True)], **common)
    return c.result()


# -- Exercise 1.4 -------------------------------------------------------------------------------------
ATTENTION_ORDER = Ordering(
    "1.4", "the steps of attention, in order", "attention_order", points=1,
    steps=[
        Step("look up each token's embedding vector",
             "Everything starts from the tokens' vectors: there is nothing to add positions to before them."),
        Step("add the sinusoidal position encodings",
             "Positions are added to the embeddings before any attention, because attention itself "
             "ignores order: without them, shuffling the tokens would just shuffle the outputs."),
        Step("score every query against every key: Q K^T",
             "Scores compare queries with keys, which are computed from the position-aware vectors."),
        Step("scale the scores by 1/sqrt(d_k) and add the mask",
             "Scaling and masking act on the raw scores, so they come right after Q K^T and before the softmax."),
        Step("softmax along the key axis",
             "The softmax must see the final, scaled and masked scores: exp(-inf) = 0 is what hides a key."),
        Step("take the weighted sum of the values",
             "The values are mixed with the weights, so the weights (the softmax) must exist first."),
    ],
    shown=[2, 0, 5, 3, 4, 1],
)


@ATTENTION_ORDER.checked_by
def check_attention_order(attention_order=None, *, points=None):
    """All or nothing."""
    return ATTENTION_ORDER.check(attention_order, points)


EXERCISES = [SOFTMAX, SCALED_DOT_PRODUCT_ATTENTION, SINUSOIDAL_POSITIONS]
ORDERINGS = [ATTENTION_ORDER]


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 1.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(1, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
