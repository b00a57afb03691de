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
from .cases import Case
from .catalog import bind_catalog
from .core import Checker
from .exercises import Exercise
from .fixtures import generator, randomize
from .ordering import Ordering, Step
from .probes import (Activation, AdditiveMask, Axis, Causal, Constant, Fitted, HeadsCompared, MaskedKeysZero,
                     Missing, NotFinite, Probes, RowsSumToOne, Scale, Swapped, Transposed, Variants, argument)
from .rebinding import rebind
from .running import run_student

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


# -- probes: the kinds of slip each exercise's answer may show (encdec.checks.probes) -------------------------
def rms_norm_model(k, x, gamma, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * gamma with knobs: axis (of the mean), without={"gamma", "eps"}."""
    x = np.asarray(x, dtype=np.float64)
    axis = k.get("axis", -1)
    ms = np.mean(x * x, axis=axis, keepdims=axis is not None)
    out = x / np.sqrt(ms + (0.0 if k.drops("eps") else eps))
    return out if k.drops("gamma") else out * gamma


RMS_NORM_PROBES = Probes(
    rms_norm_model,
    Axis("the mean of x^2", "axis", lambda x, gamma, eps=1e-6: [None] + list(range(-np.ndim(x), -1)),
         labels={-1: "the features (the last axis)", None: "the whole array"},
         fix="Each position is normalised on its own: np.mean(x**2, axis=-1, keepdims=True)."),
    Missing({"gamma": ("the gain gamma", "Multiply the normalised x by gamma, feature by feature."),
             "eps": ("eps", "Add eps under the square root: np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps).")}),
    NotFinite("Look for a division by zero: eps goes under the square root, so a row of zeros stays finite."))


def gelu_model(k, x):
    """GELU with knobs: activation (another function altogether), and the formula's constants half (0.5),
    factor (sqrt(2/pi)), cubic (0.044715) and power (3)."""
    if "activation" in k:
        return k["activation"](x)
    x = np.asarray(x, dtype=np.float64)
    inner = k.get("factor", np.sqrt(2.0 / np.pi)) * (x + k.get("cubic", 0.044715) * x ** k.get("power", 3))
    return k.get("half", 0.5) * x * (1.0 + np.tanh(inner))


GELU_PROBES = Probes(gelu_model,
                     Activation("the tanh form of GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"),
                     Fitted(Constant("factor", "the factor inside the tanh", "√(2/π)", np.sqrt(2.0 / np.pi)),
                            Constant("cubic", "the coefficient of x³", "0.044715", 0.044715),
                            Constant("power", "the power of x in the correction term", "3", 3.0, lo=0.5, hi=6, log=False),
                            Constant("half", "the factor in front", "1/2", 0.5)),
                     NotFinite("For large |x| the formula stays finite: look for an exp() that overflows."))


def _pad_where(idx):
    return (f"sentence {_at_lead(idx[:-3])}, " if len(idx) > 3 else "") + f"key {idx[-1]}"


def _at_lead(lead):
    return ", ".join(str(int(i)) for i in lead)


PADDING_MASK_PROBES = Probes(None, AdditiveMask(_pad_where, what="the padding mask"))


def _split(x, h, bare=False):
    """(..., T, d_model) -> (..., h, T, d_k); bare: the reshape alone, without the axis swap."""
    *lead, T, d = np.shape(x)
    if bare:
        return np.reshape(x, (*lead, h, T, d // h))
    return np.swapaxes(np.reshape(x, (*lead, T, h, d // h)), -2, -3)


def _merge(x, bare=False):
    """(..., h, T, d_k) -> (..., T, h d_k); bare: the reshape alone, without the axis swap."""
    *lead, h, T, d_k = np.shape(x)
    if bare:
        return np.reshape(x, (*lead, T, h * d_k))
    return np.reshape(np.swapaxes(x, -2, -3), (*lead, T, h * d_k))


def mha_model(k, query_input, key_value_input=None, mask=None, *, K=None, V=None):
    """MultiHeadAttention.__call__ (or attend, given K and V) with knobs: split_q, split_kv, merge ("bare":
    a reshape without the axis swap; merge "reversed": the heads merged last first), scale, axis (of the
    softmax), without={"W_o", "mask"}, kv_swapped (keys and values exchanged), residual (the input added
    to the output). k.obj is the layer, with the probe's parameter changes."""
    o = k.obj
    h = o.n_heads
    d_k = o.d_model // h
    q = np.asarray(query_input, dtype=np.float64)
    Q = _split(q @ o.W_q, h, k.get("split_q") == "bare")
    if K is None:
        kv = q if key_value_input is None else np.asarray(key_value_input, dtype=np.float64)
        K = _split(kv @ o.W_k, h, k.get("split_kv") == "bare")
        V = _split(kv @ o.W_v, h, k.get("split_kv") == "bare")
    if k.get("kv_swapped"):
        K, V = V, K
    scores = Q @ np.swapaxes(K, -1, -2) * k.get("scale", 1.0 / np.sqrt(d_k))
    if mask is not None and not k.drops("mask"):
        scores = scores + mask
    weights = attention.softmax(scores, axis=k.get("axis", -1))
    heads = weights @ V
    if k.get("merge") == "reversed":
        heads = heads[..., ::-1, :, :]
    merged = _merge(heads, k.get("merge") == "bare")
    out = merged if k.drops("W_o") else merged @ o.W_o
    return (out + q if k.get("residual") else out), weights


SPLIT_BARE = ("the heads are split with a reshape alone, (..., T, d_model) -> (..., h, T, d_k), without "
              "the axis swap, so each \"head\" takes whole rows of several positions instead of its own d_k "
              "columns of every position. With one head nothing shows. Reshape to (..., T, h, d_k) first, "
              "then swap the T and h axes: np.swapaxes(x.reshape(..., T, h, d_k), -2, -3) (split_heads does).")
MERGE_BARE = ("the heads are merged with a reshape alone, (..., h, T, d_k) -> (..., T, d_model), without "
              "the axis swap, which mixes positions of different heads. Swap the h and T axes back first: "
              "(..., h, T, d_k) -> (..., T, h, d_k) -> (..., T, d_model) (merge_heads does).")
MERGE_REVERSED = ("the heads are merged in reverse order: the last head's output fills the first d_k columns. "
                  "Head i's output belongs in columns i*d_k to (i+1)*d_k, where its part of W_q, W_k and W_v "
                  "came from, so that W_o reads each head in its place.")
SPLIT_AND_MERGE_BARE = (
    "the heads are split and merged with a reshape alone, without the axis swaps, so each \"head\" works on "
    "whole rows of several positions instead of its own d_k columns of every position. With one head nothing "
    "shows. Split: reshape to (..., T, h, d_k), then swap the T and h axes; merge: swap them back, then reshape "
    "(split_heads and merge_heads do both).")
MHA_ROLES = {"W_q": "it makes the queries", "W_k": "it makes the keys", "W_v": "it makes the values",
             "W_o": "it mixes the merged heads"}


def mha_scales(layer):
    def scales(*args, **kwargs):
        d_k, d_model, h = layer.d_model // layer.n_heads, layer.d_model, layer.n_heads
        why = "Each head's scores are divided by sqrt(d_k), d_k = d_model // n_heads, the width of one head"
        return [("1/sqrt(d_k)", 1.0 / np.sqrt(d_k), None),
                ("1/sqrt(d_model)", 1.0 / np.sqrt(d_model),
                 f"the scores are divided by sqrt(d_model) instead of sqrt(d_k). {why}."),
                ("1/d_k", 1.0 / d_k, f"the scores are divided by d_k instead of sqrt(d_k). {why}."),
                ("1/sqrt(n_heads)", 1.0 / np.sqrt(h), f"the scores are divided by sqrt(n_heads) instead of "
                 f"sqrt(d_k). {why}."),
                ("none", 1.0, f"the scores are not scaled at all. {why}."),
                ("sqrt(d_k)", np.sqrt(d_k), f"the scores are multiplied by sqrt(d_k) instead of divided by it. {why}.")]
    return scales


def _heads_axes(*args, **kwargs):
    return [-2, -3, None]


HEADS_AXES = {-1: "the keys (axis=-1)", -2: "the queries (axis=-2)", -3: "the heads (axis=-3)", None: "the whole array"}


def mha_probes(layer, model=mha_model, attend=False):
    """The probes of MultiHeadAttention (or, with attend=True, of attend given K and V) on `layer`."""
    mask = argument(2, "mask")
    heads = [("split_bare", {"split_q": "bare"} if attend else {"split_q": "bare", "split_kv": "bare"}, SPLIT_BARE),
             ("merge_bare", {"merge": "bare"}, MERGE_BARE),
             ("merge_reversed", {"merge": "reversed"}, MERGE_REVERSED),
             ("split_and_merge_bare", dict({"merge": "bare", "split_q": "bare"}, **({} if attend else {"split_kv": "bare"})),
              SPLIT_AND_MERGE_BARE)]
    if not attend:
        heads.insert(1, ("split_q_bare", {"split_q": "bare"}, "the queries' " + SPLIT_BARE[4:]))
    own = ("W_q", "W_o") if attend else ("W_q", "W_k", "W_v", "W_o")
    instead = [] if not attend else [
        (f"{used}:W_q", {"params": {"W_q": getattr(layer, used)}},
         f"`{used}` is used where `W_q` belongs (it makes the queries): Q = query_input @ W_q. (K and V "
         "arrive already made with W_k and W_v.)") for used in ("W_v", "W_o")]
    return Probes(
        model,
        Variants("heads", heads),
        Transposed(own),
        Swapped(own),
        Variants("instead", instead),  # keys as Swapped's: probe:instead:<used>:<meant>
        Variants("extra", [
            ("K_V_swapped", {"kv_swapped": True},
             "the keys and the values are exchanged: the scores must be Q K^T (queries against keys), and "
             "the weights then average the values V." + (" Pass K and V on in that order." if attend else "")),
            ("residual", {"residual": True},
             "the layer's input is added to its output. The residual connection belongs to the block "
             "around the sublayer (x + sublayer(...)), not inside the attention layer, which returns "
             "merge_heads(heads) @ W_o alone.")]),
        Scale(mha_scales(layer)),
        Axis("the softmax", "axis", _heads_axes, labels=HEADS_AXES,
             fix="Each query needs a distribution over the keys: softmax along the last axis of (..., h, m, n)."),
        Missing({"W_o": ("the output projection W_o", "The output is merge_heads(heads) @ W_o."),
                 "mask": ("the mask", "Pass `mask` on to the attention: it is added to every head's scores.")}),
        NotFinite(),
        HeadsCompared(lambda v: [v[1]], hint="Split with a reshape to (..., T, h, d_k), then swap the T and h axes."),
        RowsSumToOne(weights=lambda v: v[1], what="attention weights"),
        MaskedKeysZero(mask, weights=lambda v: v[1]),
        obj=layer, params=("W_q", "W_k", "W_v", "W_o"), roles=MHA_ROLES)


def ffn_model(k, x):
    """gelu(x @ W1 + b1) @ W2 + b2 with knobs: activation, without={"b1", "b2"}."""
    o = k.obj
    hidden = np.asarray(x, dtype=np.float64) @ o.W1 + (0.0 if k.drops("b1") else o.b1)
    return k.get("activation", layers.gelu)(hidden) @ o.W2 + (0.0 if k.drops("b2") else o.b2)


def ffn_probes(layer):
    return Probes(ffn_model,
                  Activation("GELU (tanh form), through `gelu`"),
                  Missing({"b1": ("the first bias b1", "hidden = gelu(x @ W1 + b1)."),
                           "b2": ("the second bias b2", "The output is hidden @ W2 + b2.")}),
                  Transposed(), Swapped(),
                  NotFinite(), obj=layer, params=("W1", "b1", "W2", "b2"),
                  roles={"W1": "d_model -> d_ff", "W2": "d_ff -> d_model"})


def encoder_block_model(k, x, mask=None):
    """The pre-norm EncoderBlock with knobs: without={"norm1", "norm2", "residual_attn", "residual_ffn",
    "mask"}. k.obj is the block (norm gains changed by the probe)."""
    b = k.obj
    x = np.asarray(x, dtype=np.float64)

    def norm(v, which):
        return v if k.drops(which) else layers.rms_norm(v, getattr(b, which + "_gamma"), b.eps)

    out, _ = b.self_attn(norm(x, "norm1"), mask=None if k.drops("mask") else mask)
    x = out if k.drops("residual_attn") else x + out
    out = b.ffn(norm(x, "norm2"))
    return out if k.drops("residual_ffn") else x + out


BLOCK_PARTS = {
    "norm1": ("the first norm (norm1_gamma, before self-attention)", "Self-attention reads rms_norm(x, norm1_gamma)."),
    "norm2": ("the second norm (norm2_gamma, before the feed-forward network)",
              "The feed-forward network reads rms_norm(x, norm2_gamma)."),
    "residual_attn": ("the residual around self-attention", "x = x + self_attn(rms_norm(x, norm1_gamma), mask=mask)[0]."),
    "residual_ffn": ("the residual around the feed-forward network", "Return x + ffn(rms_norm(x, norm2_gamma))."),
    "mask": ("the padding mask", "Pass mask=mask to self_attn."),
}


def _last_key_visible(x, mask=None):
    return mask is None or not np.any(np.isneginf(np.asarray(mask)[..., -1]))


def encoder_block_probes(block):
    return Probes(encoder_block_model,
                  Swapped(("norm1_gamma", "norm2_gamma")),
                  Missing(BLOCK_PARTS),
                  Causal(edit=(0,), expect=False, what="x", when=_last_key_visible),
                  NotFinite(), obj=block, params=("norm1_gamma", "norm2_gamma"),
                  roles={"norm1_gamma": "the gain of the norm before self-attention",
                         "norm2_gamma": "the gain of the norm before the feed-forward network"})


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


RMS_NORM = Exercise("2.1", "rms_norm", points=2, reference=layers.rms_norm, sizes={"x": "... d", "gamma": "d"},
                    reads=("eps",))


@RMS_NORM.checked_by
def check_rms_norm(rms_norm=None, *, points=None, hidden=False):
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis."""
    c = Checker(RMS_NORM, points, hidden)
    fn = c.find(rms_norm, "rms_norm")
    cases = rms_norm_cases()
    common = dict(catalog=CATALOG["rms_norm"], forbidden=[layers.rms_norm], probes=RMS_NORM_PROBES)
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
    common = dict(catalog=CATALOG["gelu"], forbidden=[layers.gelu], probes=GELU_PROBES)
    c.check_cases("the tanh formula, elementwise", fn, layers.gelu, cases["values"], **common)
    c.check_cases("any shape, float32", fn, layers.gelu, cases["shapes"], **common)
    c.check_cases("large and near-zero inputs", fn, layers.gelu, cases["extremes"], robust=True, **common)
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


PADDING_MASK = Exercise("2.3", "padding_mask", points=2, reference=attention.padding_mask,
                        sizes={"tokens": "... n"}, reads=("pad_id",))


@PADDING_MASK.checked_by
def check_padding_mask(padding_mask=None, *, points=None, hidden=False):
    """An additive (..., 1, 1, n) mask, -inf at pad keys, 0.0 elsewhere."""
    c = Checker(PADDING_MASK, points, hidden)
    fn = c.find(padding_mask, "padding_mask")
    cases = padding_mask_cases()
    common = dict(catalog=CATALOG["padding_mask"], forbidden=[attention.padding_mask], probes=PADDING_MASK_PROBES)
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
    tokens = np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7], [5, 2, 0, 0, 0]])
    pad5 = attention.padding_mask(tokens, 0)  # (3, 1, 1, 5)
    pad6 = attention.padding_mask(np.array([[5, 5, 5, 5, 0, 0], [6, 6, 6, 6, 6, 0]]), 0)  # (2, 1, 1, 6)
    return [
        ("self-attention, one sentence (T=5, d_model=8, h=2)", 8, 2,
         [Case("x of shape (5, 8)", (x(size=(5, 8)),)),
          Case("x of shape (3, 8)", (x(size=(3, 8)),), hidden=True)]),
        ("leading batch dimensions (d_model=12, h=3, so d_k=4)", 12, 3,
         [Case("x of shape (2, 5, 12)", (x(size=(2, 5, 12)),)),
          Case("x of shape (2, 3, 4, 12)", (x(size=(2, 3, 4, 12)),), hidden=True)]),
        ("cross-attention: m=5 queries read n=7 keys/values", 12, 3,
         [Case("query_input (5, 12), key_value_input (7, 12)", (x(size=(5, 12)), x(size=(7, 12)))),
          Case("batched: (2, 4, 12) and (2, 6, 12)", (x(size=(2, 4, 12)), x(size=(2, 6, 12))), hidden=True)]),
        ("masks: padding (B, 1, 1, n) and causal (T, T)", 8, 2,
         [Case("a padding mask hiding the pads of 3 sentences", (x(size=(3, 5, 8)),), {"mask": pad5}),
          Case("a causal mask (5, 5)", (x(size=(5, 8)),), {"mask": attention.create_causal_mask(5)}),
          Case("cross-attention with a source padding mask", (x(size=(2, 3, 8)), x(size=(2, 6, 8))),
               {"mask": pad6}, hidden=True)]),
        ("float32 and large inputs (d_model=8, h=4)", 8, 4,
         [Case("float32 x of shape (3, 8)", (x(size=(3, 8)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 10)", (x(size=(2, 4, 8)) * 10,), hidden=True),
          Case("near-zero inputs (entries about 1e-6)", (x(size=(3, 8)) * 1e-6,), hidden=True)]),
        ("one head per feature (d_model=6, h=6, d_k=1)", 6, 6,
         [Case("x of shape (3, 4, 6) (one head per feature: h = d_model)", (x(size=(3, 4, 6)),),
               alike=(("h", "d_model"),))]),
    ]


MULTI_HEAD_ATTENTION = Exercise("2.4", "MultiHeadAttention", points=5, reference=attention.MultiHeadAttention,
                                method="__call__", cell="multi_head_attention",
                                sizes={"query_input": "... m d_model", "key_value_input": "... n d_model",
                                       "self.n_heads": "h", "self.d_k": "d_k"})


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
                      forbidden=forbidden, names=("output", "weights"), probes=mha_probes(ref),
                      robust=label.startswith("float32 and large"))
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
                        cell="feed_forward", sizes={"x": "... m d_model", "self.d_ff": "d_ff"})


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
                      forbidden=[layers.FeedForward.__call__], probes=ffn_probes(ref))
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
        ("float32 and large inputs (d_model=8, h=4, d_ff=20)", (8, 4, 20),
         [Case("float32 x of shape (5, 8)", (r.normal(size=(5, 8)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 50)", (r.normal(size=(3, 8)) * 50 + 10,)),
          Case("near-zero inputs (entries about 1e-5), where the norms' eps matters",
               (r.normal(size=(2, 3, 8)) * 1e-5,), hidden=True)]),
    ]


ENCODER_BLOCK = Exercise("2.6", "EncoderBlock", points=4, reference=layers.EncoderBlock, method="__call__",
                         cell="encoder_block", sizes={"x": "... n d_model", "self.self_attn.n_heads": "h",
                                                      "self.ffn.d_ff": "d_ff"})


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
                      forbidden=[layers.EncoderBlock.__call__], probes=encoder_block_probes(ref),
                      robust=label.startswith("float32 and large"))
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


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 2.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(2, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
