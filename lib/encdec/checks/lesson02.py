"""Checkers for lesson 02, The encoder stack.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

Class exercises: the checker builds the student's object with the student's own constructor, then
copies randomised reference weights into it by attribute name (no all-ones gains, no zero
biases), so the student's method and the reference run on identical parameters.
"""

import copy

import numpy as np

from .. import attention, layers
from ..mistakes import CATALOG
from ..mistakes import lesson02 as _register  # noqa: F401  (fills the catalog)
from .catalog import bind_catalog
from .core import Case, Checker, rebind, run_student
from .exercises import Exercise
from .fixtures import generator, randomize
from .ordering import Ordering, Step

# Earlier exercises a student's answer may call: each runs as the reference while a later
# exercise is checked, so a mistake is charged once, where it was made.
EARLIER = dict(softmax=attention.softmax, scaled_dot_product_attention=attention.scaled_dot_product_attention,
               rms_norm=layers.rms_norm, gelu=layers.gelu, padding_mask=attention.padding_mask,
               MultiHeadAttention=attention.MultiHeadAttention, FeedForward=layers.FeedForward)


def random_layer(layer, seed):
    """A reference layer with every parameter random: gains in [0.5, 1.5], biases around 0, matrices
    with entries of size about 1/sqrt(d_in)."""
    return randomize(layer, generator(seed), 1.0, fan_in=True)


def build_student(c, cls, args, ref_obj, attributes, what):
    """The student's object built with their constructor, holding copies of the reference's
    `attributes`; None when that fails (the check stops, or the part fails, with a message)."""
    outcome = run_student(cls, args)
    if outcome.error is not None:  # nothing can be checked without an object
        c.stop(f"building `{cls.__name__}{args}` raised {outcome.error_text}. Keep the given "
               "constructor, and run the cell that defines the class again.", "error")
        return None
    obj = outcome.value
    for name in attributes:
        try:
            setattr(obj, name, copy.deepcopy(getattr(ref_obj, name)))
        except Exception as exc:  # a read-only property, say
            c.part(what, False, f"could not set `{name}` on your object ({type(exc).__name__}: {exc}); "
                                "keep the attribute names of the given constructor")
            return None
    return obj


# -- Exercise 2.1 -------------------------------------------------------------------------------------
def rms_norm_cases():
    r = generator(21)

    def gamma(d, dtype=np.float64):
        return r.uniform(0.5, 1.5, size=d).astype(dtype)

    return {
        "rows": [Case("a (4, 8) matrix whose rows have a non-zero mean", (r.normal(size=(4, 8)) + 1.5, gamma(8))),
                 Case("a single vector of width 6", (r.normal(size=6) - 2.0, gamma(6))),
                 Case("a (5, 3) matrix", (r.normal(size=(5, 3)) * 3 + 1, gamma(3)), hidden=True)],
        "batched": [Case("a batch of shape (2, 3, 5)", (r.normal(size=(2, 3, 5)) + 2.0, gamma(5))),
                    Case("float32 inputs", (r.normal(size=(3, 6)).astype(np.float32) + 1, gamma(6, np.float32)),
                         float32=True),
                    Case("leading shape (2, 2, 3, 4)", (r.normal(size=(2, 2, 3, 4)) - 1, gamma(4)), hidden=True)],
        "scale": [Case("large inputs (about 1e3)", (r.normal(size=(3, 8)) * 1e3 + 500, gamma(8))),
                  Case("near-zero inputs (about 1e-5), where eps matters", (r.normal(size=(3, 8)) * 1e-5, gamma(8))),
                  Case("eps=0.1 given as an argument", (r.normal(size=(2, 5)) * 0.3, gamma(5)), {"eps": 0.1}),
                  Case("a row of exact zeros", (np.zeros((2, 4)), gamma(4)), hidden=True)],
    }


RMS_NORM = Exercise("2.1", "rms_norm", points=2, reference=layers.rms_norm)


@RMS_NORM.checked_by
def check_rms_norm(rms_norm=None, *, points=None, hidden=False):
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis."""
    c = Checker(RMS_NORM, points, hidden)
    fn = c.find(rms_norm, "rms_norm")
    cases = rms_norm_cases()
    common = dict(catalog=CATALOG["rms_norm"], forbidden=[layers.rms_norm])
    c.check_cases("each row divided by its RMS, times gamma", fn, layers.rms_norm, cases["rows"], **common)
    c.check_cases("batched and float32 inputs", fn, layers.rms_norm, cases["batched"], **common)
    c.check_cases("large and near-zero inputs, the eps argument", fn, layers.rms_norm, cases["scale"], **common)
    return c.result()


# -- Exercise 2.2 -------------------------------------------------------------------------------------
def gelu_cases():
    r = generator(22)
    return {
        "values": [Case("a grid of 41 inputs from -5 to 5", (np.linspace(-5.0, 5.0, 41),)),
                   Case("a (3, 4) matrix", (r.normal(size=(3, 4)) * 2,)),
                   Case("a single number, 0.5", (0.5,), hidden=True)],
        "shapes": [Case("a batch of shape (2, 3, 4)", (r.normal(size=(2, 3, 4)),)),
                   Case("float32 inputs", (r.normal(size=(4, 5)).astype(np.float32) * 2,), float32=True)],
        "extremes": [Case("large inputs (-30 to 30)", (np.array([-30.0, -12.0, -7.5, 7.5, 12.0, 30.0]),)),
                     Case("near-zero inputs (about 1e-8)", (r.normal(size=6) * 1e-8,)),
                     Case("inputs of size 100", (r.normal(size=(2, 3)) * 100,), hidden=True)],
    }


GELU = Exercise("2.2", "gelu", points=2, reference=layers.gelu)


@GELU.checked_by
def check_gelu(gelu=None, *, points=None, hidden=False):
    """GELU, tanh form, elementwise."""
    c = Checker(GELU, points, hidden)
    fn = c.find(gelu, "gelu")
    cases = gelu_cases()
    common = dict(catalog=CATALOG["gelu"], forbidden=[layers.gelu])
    c.check_cases("the tanh formula, elementwise", fn, layers.gelu, cases["values"], **common)
    c.check_cases("any shape, float32", fn, layers.gelu, cases["shapes"], **common)
    c.check_cases("large and near-zero inputs", fn, layers.gelu, cases["extremes"], **common)
    return c.result()


# -- Exercise 2.3 -------------------------------------------------------------------------------------
def padding_mask_cases():
    return {
        "one": [Case("one sentence [5, 7, 3, 9, 0, 0] with pad_id=0", (np.array([5, 7, 3, 9, 0, 0]), 0)),
                Case("one sentence without padding", (np.array([4, 2, 8]), 0), hidden=True)],
        "batch": [Case("a batch of 2 sentences, padded to length 5", (np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7]]), 0)),
                  Case("leading shape (2, 2), length 4",
                       (np.array([[[1, 2, 0, 0], [3, 0, 0, 0]], [[5, 6, 7, 8], [9, 9, 0, 0]]]), 0), hidden=True)],
        "pad_id": [Case("pad_id=1, where 0 is a real token: [0, 4, 2, 1, 1]", (np.array([0, 4, 2, 1, 1]), 1)),
                   Case("pad_id=9 in a batch", (np.array([[0, 1, 9, 9], [2, 0, 3, 9]]), 9), hidden=True)],
    }


PADDING_MASK = Exercise("2.3", "padding_mask", points=2, reference=attention.padding_mask)


@PADDING_MASK.checked_by
def check_padding_mask(padding_mask=None, *, points=None, hidden=False):
    """An additive (..., 1, 1, n) mask, -inf at pad keys, 0.0 elsewhere."""
    c = Checker(PADDING_MASK, points, hidden)
    fn = c.find(padding_mask, "padding_mask")
    cases = padding_mask_cases()
    common = dict(catalog=CATALOG["padding_mask"], forbidden=[attention.padding_mask])
    ref = attention.padding_mask
    c.check_cases("one sentence: -inf at the pads, shape (1, 1, n)", fn, ref, cases["one"], **common)
    c.check_cases("a batch: shape (B, 1, 1, n)", fn, ref, cases["batch"], **common)
    c.check_cases("the pad_id argument", fn, ref, cases["pad_id"], **common)
    return c.result()


# -- Exercise 2.4 -------------------------------------------------------------------------------------
MHA_ATTRIBUTES = ("W_q", "W_k", "W_v", "W_o", "n_heads", "d_k", "d_model")


def mha_parts():
    """(label, d_model, n_heads, cases): one reference layer per part."""
    r = generator(24)
    x = r.normal
    tokens = np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7]])
    pad5 = attention.padding_mask(tokens, 0)  # (2, 1, 1, 5)
    pad6 = attention.padding_mask(np.array([[5, 5, 5, 5, 0, 0], [6, 6, 6, 6, 6, 0]]), 0)  # (2, 1, 1, 6)
    return [
        ("self-attention, one sentence (T=5, d_model=8, h=2)", 8, 2,
         [Case("x of shape (5, 8)", (x(size=(5, 8)),)),
          Case("x of shape (3, 8)", (x(size=(3, 8)),), hidden=True)]),
        ("leading batch dimensions (d_model=12, h=3, so d_k=4)", 12, 3,
         [Case("x of shape (2, 5, 12)", (x(size=(2, 5, 12)),)),
          Case("x of shape (2, 3, 4, 12)", (x(size=(2, 3, 4, 12)),), hidden=True)]),
        ("cross-attention: m=4 queries read n=6 keys/values", 12, 3,
         [Case("query_input (4, 12), key_value_input (6, 12)", (x(size=(4, 12)), x(size=(6, 12)))),
          Case("batched: (2, 4, 12) and (2, 6, 12)", (x(size=(2, 4, 12)), x(size=(2, 6, 12))), hidden=True)]),
        ("masks: padding (B, 1, 1, n) and causal (T, T)", 8, 2,
         [Case("a padding mask hiding the pads of 2 sentences", (x(size=(2, 5, 8)),), {"mask": pad5}),
          Case("a causal mask (5, 5)", (x(size=(5, 8)),), {"mask": attention.create_causal_mask(5)}),
          Case("cross-attention with a source padding mask", (x(size=(2, 3, 8)), x(size=(2, 6, 8))),
               {"mask": pad6}, hidden=True)]),
        ("float32 and large inputs (d_model=8, h=4)", 8, 4,
         [Case("float32 x of shape (4, 8)", (x(size=(4, 8)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 10)", (x(size=(2, 4, 8)) * 10,), hidden=True),
          Case("near-zero inputs (entries about 1e-6)", (x(size=(3, 8)) * 1e-6,), hidden=True)]),
        ("one head per feature (d_model=6, h=6, d_k=1)", 6, 6,
         [Case("x of shape (2, 4, 6)", (x(size=(2, 4, 6)),), hidden=True)]),
    ]


MULTI_HEAD_ATTENTION = Exercise("2.4", "MultiHeadAttention", points=5, reference=attention.MultiHeadAttention,
                                method="__call__", cell="multi_head_attention")


@MULTI_HEAD_ATTENTION.checked_by
def check_multi_head_attention(MultiHeadAttention=None, *, points=None, hidden=False):
    """Project, split heads, attend, merge heads, project with W_o.

    Your class is built with your constructor and given the same random weights as the reference.
    `softmax` and `scaled_dot_product_attention` run as the reference while this is checked.
    """
    c = Checker(MULTI_HEAD_ATTENTION, points, hidden)
    cls = c.find(MultiHeadAttention, "MultiHeadAttention", kind="class")
    if cls is not None:
        cls = rebind(cls, **EARLIER)
    forbidden = [attention.MultiHeadAttention.__call__, attention.MultiHeadAttention.attend,
                 attention.MultiHeadAttention.project_kv, attention.split_heads, attention.merge_heads]
    for seed, (label, d_model, n_heads, cases) in enumerate(mha_parts()):
        if c.stopped:
            break
        if not hidden and all(case.hidden for case in cases):
            continue
        ref = random_layer(attention.MultiHeadAttention(d_model, n_heads), 240 + seed)
        student = build_student(c, cls, (d_model, n_heads), ref, MHA_ATTRIBUTES, label)
        if student is None:
            continue
        c.check_cases(label, student, ref, cases, catalog=bind_catalog(CATALOG["MultiHeadAttention"], ref),
                      forbidden=forbidden, names=("output", "weights"))
    return c.result()


# -- Exercise 2.5 -------------------------------------------------------------------------------------
FFN_ATTRIBUTES = ("W1", "b1", "W2", "b2", "d_model", "d_ff")


def ffn_parts():
    r = generator(25)
    return [
        ("one sentence (T=5, d_model=8, d_ff=12)", 8, 12,
         [Case("x of shape (5, 8)", (r.normal(size=(5, 8)),)),
          Case("x of shape (1, 8)", (r.normal(size=(1, 8)),), hidden=True)]),
        ("batched, float32 and large inputs (d_model=6, d_ff=24)", 6, 24,
         [Case("x of shape (2, 3, 6)", (r.normal(size=(2, 3, 6)),)),
          Case("float32 x", (r.normal(size=(4, 6)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 20)", (r.normal(size=(3, 6)) * 20,), hidden=True),
          Case("near-zero inputs (entries about 1e-7)", (r.normal(size=(2, 6)) * 1e-7,), hidden=True)]),
    ]


FEED_FORWARD = Exercise("2.5", "FeedForward", points=2, reference=layers.FeedForward, method="__call__",
                        cell="feed_forward")


@FEED_FORWARD.checked_by
def check_feed_forward(FeedForward=None, *, points=None, hidden=False):
    """gelu(x @ W1 + b1) @ W2 + b2; `gelu` runs as the reference while this is checked."""
    c = Checker(FEED_FORWARD, points, hidden)
    cls = c.find(FeedForward, "FeedForward", kind="class")
    if cls is not None:
        cls = rebind(cls, **EARLIER)
    for seed, (label, d_model, d_ff, cases) in enumerate(ffn_parts()):
        if c.stopped:
            break
        ref = random_layer(layers.FeedForward(d_model, d_ff), 250 + seed)
        student = build_student(c, cls, (d_model, d_ff), ref, FFN_ATTRIBUTES, label)
        if student is None:
            continue
        c.check_cases(label, student, ref, cases, catalog=bind_catalog(CATALOG["FeedForward"], ref),
                      forbidden=[layers.FeedForward.__call__])
    return c.result()


# -- Exercise 2.6 -------------------------------------------------------------------------------------
BLOCK_ATTRIBUTES = ("self_attn", "ffn", "norm1_gamma", "norm2_gamma", "d_model")


def encoder_block_parts():
    r = generator(26)
    tokens = np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7]])
    return [
        ("one sentence, no padding (n=6, d_model=8, h=2, d_ff=12)", (8, 2, 12),
         [Case("x of shape (6, 8), mask=None", (r.normal(size=(6, 8)),)),
          Case("a single token, x of shape (1, 8)", (r.normal(size=(1, 8)),), hidden=True)]),
        ("a padded batch with its padding mask (d_model=12, h=3, d_ff=16)", (12, 3, 16),
         [Case("x (2, 5, 12) and padding_mask(tokens, 0) of shape (2, 1, 1, 5)",
               (r.normal(size=(2, 5, 12)), attention.padding_mask(tokens, 0))),
          Case("leading shape (2, 2, 4, 12), no mask", (r.normal(size=(2, 2, 4, 12)),), hidden=True)]),
        ("float32 and large inputs (d_model=8, h=4, d_ff=8)", (8, 4, 8),
         [Case("float32 x of shape (4, 8)", (r.normal(size=(4, 8)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 50)", (r.normal(size=(3, 8)) * 50 + 10,)),
          Case("near-zero inputs (entries about 1e-5), where the norms' eps matters",
               (r.normal(size=(2, 3, 8)) * 1e-5,), hidden=True)]),
    ]


ENCODER_BLOCK = Exercise("2.6", "EncoderBlock", points=4, reference=layers.EncoderBlock, method="__call__",
                         cell="encoder_block")


@ENCODER_BLOCK.checked_by
def check_encoder_block(EncoderBlock=None, *, points=None, hidden=False):
    """Pre-norm, bidirectional self-attention with the padding mask, then the FFN.

    The block's self_attn and ffn are reference layers with random weights, and `rms_norm` runs as
    the reference, so only the block's own wiring is checked here.
    """
    c = Checker(ENCODER_BLOCK, points, hidden)
    cls = c.find(EncoderBlock, "EncoderBlock", kind="class")
    if cls is not None:
        cls = rebind(cls, **EARLIER)
    for seed, (label, sizes, cases) in enumerate(encoder_block_parts()):
        if c.stopped:
            break
        ref = random_layer(layers.EncoderBlock(*sizes), 260 + seed)
        student = build_student(c, cls, sizes, ref, BLOCK_ATTRIBUTES, label)
        if student is None:
            continue
        c.check_cases(label, student, ref, cases, catalog=bind_catalog(CATALOG["EncoderBlock"], ref),
                      forbidden=[layers.EncoderBlock.__call__])
    return c.result()


# -- Exercise 2.7 -------------------------------------------------------------------------------------
ENCODER_BLOCK_ORDER = Ordering(
    "2.7", "the steps of a pre-norm encoder block, in order", "encoder_block_order", points=1,
    steps=[
        Step("normalise the block's input x with RMSNorm (norm1_gamma)",
             "In a pre-norm block the attention reads a normalised copy of the input, so this norm "
             "comes first, straight off the block's input x."),
        Step("multi-head self-attention over the normalised states, with the padding mask",
             "Self-attention reads the normalised copy of x, so the first norm must come before it; "
             "its output is what the first residual adds."),
        Step("add the attention output back to x (the first residual)",
             "The residual adds the attention's output to x, so the attention must already have run; "
             "everything in the second half of the block starts from this sum."),
        Step("normalise the sum with RMSNorm (norm2_gamma)",
             "The second norm normalises x + attention output, so the first residual must be complete; "
             "the feed-forward network then reads what it returns."),
        Step("the feed-forward network, on each position separately",
             "The feed-forward network reads the second norm's output, which already holds what "
             "attention gathered from the other tokens: tokens talk first, then each one thinks alone."),
        Step("add the feed-forward output back (the second residual) and pass the result on",
             "The last residual adds the feed-forward network's output, so that output must exist "
             "first; this sum is what leaves the block."),
    ],
    shown=[3, 5, 1, 0, 2, 4],
)


@ENCODER_BLOCK_ORDER.checked_by
def check_encoder_block_order(encoder_block_order=None, *, points=None):
    """All or nothing."""
    return ENCODER_BLOCK_ORDER.check(encoder_block_order, points)


EXERCISES = [RMS_NORM, GELU, PADDING_MASK, MULTI_HEAD_ATTENTION, FEED_FORWARD, ENCODER_BLOCK]
ORDERINGS = [ENCODER_BLOCK_ORDER]
