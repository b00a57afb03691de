"""Exercise 7.4, attention_backward: its cases, the knob model of attention's backward slips
(ATTENTION_BACKWARD_PROBES, an untransposed product read from the failing one), the catalog entries matched by
their values only, and the checker (with the reference softmax_backward in place of the notebook's)."""

import dataclasses
import importlib

import numpy as np

from ...attention import create_causal_mask, scaled_dot_product_attention
from ...mistakes import CATALOG
from ..core import Case, Checker, rebind
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Combos, EachOutput, FailedProduct, Probes, Scale, combos

# the module, not encdec.backward (the package exports training.backward under that name)
backward = importlib.import_module("...backward", __package__)


def attention_backward_cases():
    r = generator(74)

    def case(lead, m, n, d_k, d_v, mask=None, scale=1.0, dtype=np.float64):
        Q, K, V = (r.normal(size=lead + s) * scale for s in ((m, d_k), (n, d_k), (n, d_v)))
        _, weights = scaled_dot_product_attention(Q, K, V, mask)
        dout = r.normal(size=lead + (m, d_v))
        return tuple(a.astype(dtype) for a in (dout, Q, K, V, weights))

    pad = np.where(np.arange(6) >= 4, -np.inf, 0.0)  # keys 4 and 5 hidden
    return {
        "basic": [Case("unbatched, m=3 queries, n=5 keys, d_k=4, d_v=2", case((), 3, 5, 4, 2)),
                  Case("one query, d_k=1", case((), 1, 4, 1, 3), hidden=True)],
        "batched": [Case("batched (2,), m=4, n=3, d_k=6, d_v=5", case((2,), 4, 3, 6, 5)),
                    Case("heads: leading shape (2, 3), m=n=4", case((2, 3), 4, 4, 2, 2), hidden=True)],
        "masked": [Case("causal mask, m=n=4", case((), 4, 4, 3, 2, create_causal_mask(4)), alike=(("m", "n"),)),
                   Case("padding mask hiding keys 4 and 5, m=3, n=6, d_v=5", case((2,), 3, 6, 4, 5, pad)),
                   Case("large scores (entries about 5)", case((), 3, 5, 8, 2, scale=5.0), hidden=True),
                   Case("float32", case((), 3, 5, 4, 2, dtype=np.float32), float32=True, hidden=True)],
    }


def _attention_backward_model(k, dout, Q, K, V, weights):
    """attention_backward with knobs: scale (a number in place of 1/sqrt(d_k)), softmax ("right",
    "skipped": dscores = dweights, "diagonal": weights * dweights), dV ("right", "untransposed": weights
    @ dout), dK ("right", "untransposed": dscores @ Q), sign (on all three)."""
    dout, Q, K, V, weights = (np.asarray(a) for a in (dout, Q, K, V, weights))
    scale = k.get("scale", 1.0 / np.sqrt(Q.shape[-1]))
    wT = np.swapaxes(weights, -1, -2)
    if "untransposed" in (k.get("dV"), k.get("dK")) and weights.shape[-1] != weights.shape[-2]:
        # (m, n) @ (m, .) fails with one message whichever product it is: the error would not say
        # which gradient was left untransposed (FailedProduct reads the failing product's operands instead)
        raise LookupError("an untransposed product does not apply to m != n")
    dV = wT @ dout if k.get("dV", "right") == "right" else weights @ dout
    dweights = dout @ np.swapaxes(V, -1, -2)
    how = k.get("softmax", "right")
    if how == "right":
        dscores = backward.softmax_backward(dweights, weights)
    elif how == "skipped":
        dscores = dweights
    else:
        dscores = weights * dweights
    dscores = dscores * scale
    dQ = dscores @ K
    dK = np.swapaxes(dscores, -1, -2) @ Q if k.get("dK", "right") == "right" else dscores @ Q
    sign = k.get("sign", 1)
    return tuple(sign * backward._sum_to(g, a.shape) for g, a in ((dQ, Q), (dK, K), (dV, V)))


_ATTENTION_CHOICES = [
    ("softmax", [("right", "", ""), ("skipped", "softmax_skipped", "the gradient skips the softmax's backward pass "
                                                                    "(dscores = dweights)"),
                 ("diagonal", "softmax_diagonal", "the softmax's backward pass keeps only the diagonal, weights * dweights, "
                                                  "without the - ⟨dweights, weights⟩ term")]),
    ("dV", [("right", "", ""), ("untransposed", "dV_untransposed", "dV is weights @ dout: weights must be transposed, "
                                                                   "dV = weightsᵀ @ dout")]),
    ("dK", [("right", "", ""), ("untransposed", "dK_untransposed", "dK is dscores @ Q: dscores must be transposed, "
                                                                   "dK = dscoresᵀ @ Q")]),
    ("sign", [(1, "", ""), (-1, "sign", "every gradient has the wrong sign")]),
]
_ATTENTION_RIGHT = ("dV = weightsᵀ dout; dweights = dout Vᵀ; dscores = softmax_backward(dweights, weights) / sqrt(d_k); "
                    "dQ = dscores K; dK = dscoresᵀ Q.")


def _attention_scales(dout, Q, K, V, weights):
    d_k = np.shape(Q)[-1]
    return [("1/sqrt(d_k)", 1.0 / np.sqrt(d_k), None),
            ("1", 1.0, "the 1/sqrt(d_k) factor is missing from dscores: the forward pass scaled the scores, so "
                       "their gradient carries the same factor."),
            ("sqrt(d_k)", float(np.sqrt(d_k)), "dscores is multiplied by sqrt(d_k) instead of divided by it."),
            ("1/d_k", 1.0 / d_k, "dscores is divided by d_k, not by sqrt(d_k).")]


def _untransposed_products(attempt):
    """The products a gradient left untransposed computes, with the shapes of their operands: weights @ dout
    for dV (the catalog's dV_not_transposed), dscores @ Q for dK (dscores is shaped like the weights)."""
    dout, Q, K, V, weights = attempt.case.args
    words = {name: text for name, _, text in combos(_ATTENTION_CHOICES, _ATTENTION_RIGHT)}
    return [(np.shape(weights), np.shape(dout), "dV_untransposed", CATALOG.find("attention_backward", "dV_not_transposed")),
            (np.shape(weights), np.shape(Q), "dK_untransposed", words["dK_untransposed"])]


ATTENTION_BACKWARD_PROBES = Probes(
    _attention_backward_model,
    FailedProduct("attention_backward", _untransposed_products),
    Combos("attention_backward", _ATTENTION_CHOICES, _ATTENTION_RIGHT),
    Scale(_attention_scales, what="dscores", knob="scale"),
    EachOutput(Combos("attention_backward", _ATTENTION_CHOICES, _ATTENTION_RIGHT, most=1), ("dQ", "dK", "dV")))


# A product left untransposed, weights @ dout (dV) or dscores @ Q (dK), fails on m != n with the very same
# message, so the error cannot say which one it is: these entries are matched by their values only (on a
# square case), and on m != n the FailedProduct probe reads the failing product's operands instead.
_VALUES_ONLY = {"dV_not_transposed"}


class _NotThisEntry(Exception):
    """What an entry matched by its values only raises in place of its error: no answer raises it."""


def _values_only(m):
    def impl(*args, **kwargs):
        try:
            return m.impl(*args, **kwargs)
        except Exception as exc:
            raise _NotThisEntry(f"{m.key}: {exc}") from None
    return dataclasses.replace(m, impl=impl)


ATTENTION_BACKWARD = Exercise("7.4", "attention_backward", points=4, reference=backward.attention_backward,
                              sizes={"Q": "... m d_k", "K": "... n d_k", "V": "... n d_v"})


@ATTENTION_BACKWARD.checked_by
def check_attention_backward(attention_backward=None, *, points=None, hidden=False):
    """(dQ, dK, dV) of softmax(Q K^T / sqrt(d_k) + mask) V.

    Your `softmax_backward` is replaced by the reference while this runs, so a mistake in
    Exercise 7.3 is not charged again here.
    """
    c = Checker(ATTENTION_BACKWARD, points, hidden)
    fn = c.find(attention_backward, "attention_backward")
    fn = rebind(fn, softmax_backward=backward.softmax_backward)
    cases = attention_backward_cases()
    common = dict(catalog=CATALOG["attention_backward"], names=("dQ", "dK", "dV"),
                  forbidden=[backward.attention_backward], probes=ATTENTION_BACKWARD_PROBES)
    ref = backward.attention_backward
    common["catalog"] = [_values_only(m) if m.key in _VALUES_ONLY else m for m in common["catalog"]]
    c.check_cases("unbatched, rectangular (m != n)", fn, ref, cases["basic"], **common)
    c.check_cases("leading batch dimensions", fn, ref, cases["batched"], **common)
    c.check_cases("masked weights, large scores, float32", fn, ref, cases["masked"], **common)
    return c.result()
