"""Exercise 2.4's diagnoses: MultiHeadAttention with knobs (mha_model), the messages of its slips, and
its probes (mha_probes, which Lesson 4's checks use too)."""

import numpy as np

from ... import attention
from ..probes import (Axis, HeadsCompared, MaskedKeysZero, Missing, NotFinite, Probes, RowsSumToOne, Scale, Swapped,
                      Transposed, Variants, argument)


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
