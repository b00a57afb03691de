"""Exercise 3.3, causal_self_attention: the model of its slips (the attention's knobs, from Lesson 1),
its probes, its cases and the checker."""

import numpy as np

from ... import attention
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..lesson01 import attention_model, score_scales
from ..probes import (Axis, Causal, MaskedKeysZero, Missing, NotFinite, Probes, RowsSumToOne, Scale, Swapped,
                      Transposed)
from ..rebinding import rebind
from .references import EARLIER, REF_CAUSAL_SELF_ATTENTION


def causal_attention_model(k, x, W_q, W_k, W_v):
    """causal_self_attention with the attention's knobs (scale, axis, without={"mask"})."""
    x = np.asarray(x, dtype=np.float64)
    return attention_model(k, x @ W_q, x @ W_k, x @ W_v, attention.create_causal_mask(np.shape(x)[-2]))


def _projected_scales(x, W_q, W_k, W_v):
    return score_scales(x @ W_q, x @ W_k, x @ W_v)


CAUSAL_ATTENTION_PROBES = Probes(
    causal_attention_model,
    Transposed(), Swapped(),
    Scale(_projected_scales),
    Axis("the softmax", "axis", lambda x, *W: [-2, None],
         labels={-1: "the keys (axis=-1)", -2: "the queries (axis=-2)", None: "the whole array"},
         fix="Each query needs a distribution over the keys it may see: softmax along the last axis."),
    Missing({"mask": ("the causal mask", "Add create_causal_mask(m) to the scores before the softmax.")}),
    NotFinite(),
    Causal(edit=(0,), what="x"),
    RowsSumToOne(weights=lambda v: v[1], what="attention weights", over="the keys"),
    MaskedKeysZero(lambda x, *W: attention.create_causal_mask(np.shape(x)[-2]), weights=lambda v: v[1]),
    params={"W_q": 1, "W_k": 2, "W_v": 3},
    roles={"W_q": "it makes the queries", "W_k": "it makes the keys", "W_v": "it makes the values"})


def causal_attention_cases():
    r = generator(33)

    def inputs(lead, m, d_model, d_k, d_v, scale=1.0, dtype=np.float64):
        x = (r.normal(size=lead + (m, d_model)) * scale).astype(dtype)
        W = [(r.normal(size=(d_model, d)) / np.sqrt(d_model)).astype(dtype) for d in (d_k, d_k, d_v)]
        return (x, *W)

    return {
        "one": [Case("x (5, 8), W_q and W_k (8, 4), W_v (8, 3)", inputs((), 5, 8, 4, 3)),
                Case("a single position, x (1, 6)", inputs((), 1, 6, 2, 2), hidden=True)],
        "batched": [Case("a batch, x (2, 6, 8)", inputs((2,), 6, 8, 4, 5)),
                    Case("leading shape (2, 3), x (2, 3, 4, 6)", inputs((2, 3), 4, 6, 3, 2), hidden=True)],
        "robust": [Case("float32 inputs", inputs((), 4, 6, 3, 5, dtype=np.float32), float32=True),
                   Case("large scores (x of size about 10)", inputs((2,), 5, 8, 6, 3, scale=10.0)),
                   Case("near-zero inputs (x of size about 1e-6)", inputs((), 4, 6, 3, 3, scale=1e-6), hidden=True)],
    }


CAUSAL_SELF_ATTENTION = Exercise("3.3", "causal_self_attention", points=3, reference=REF_CAUSAL_SELF_ATTENTION,
                                 sizes={"x": "... m d_model", "W_q": "d_model d_k", "W_v": "d_model d_v"})


@CAUSAL_SELF_ATTENTION.checked_by
def check_causal_self_attention(causal_self_attention=None, *, points=None, hidden=False):
    """Q, K, V = x W_q, x W_k, x W_v; softmax(Q K^T / sqrt(d_k) + causal mask) V.

    Your `softmax` and `create_causal_mask` run as the reference while this is checked.
    """
    c = Checker(CAUSAL_SELF_ATTENTION, points, hidden)
    fn = c.find(causal_self_attention, "causal_self_attention")
    fn = rebind(fn, **EARLIER)
    cases = causal_attention_cases()
    ref = REF_CAUSAL_SELF_ATTENTION
    common = dict(catalog=CATALOG["causal_self_attention"], names=("output", "weights"),
                  forbidden=[ref, attention.scaled_dot_product_attention, attention.cross_attention,
                             attention.MultiHeadAttention.__call__, attention.MultiHeadAttention.attend],
                  probes=CAUSAL_ATTENTION_PROBES)
    c.check_cases("one sequence (m=5, d_model=8, d_k=4, d_v=3)", fn, ref, cases["one"], **common)
    c.check_cases("leading batch dimensions", fn, ref, cases["batched"], **common)
    c.check_cases("float32 and large scores", fn, ref, cases["robust"], robust=True, **common)
    return c.result()
