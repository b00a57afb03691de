"""Exercise 7.3, softmax_backward: its cases, the knob model of the softmax's backward slips
(SOFTMAX_BACKWARD_PROBES) and the checker."""

import importlib

import numpy as np

from ...attention import create_causal_mask, softmax
from ...mistakes import CATALOG
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Axis, Combos, Probes, Scale

# the module, not encdec.backward (the package exports training.backward under that name)
backward = importlib.import_module("...backward", __package__)


def softmax_backward_cases():
    r = generator(73)

    def pair(shape, axis=-1, scale=1.0, mask=None, dtype=np.float64):
        z = r.normal(size=shape) * scale
        if mask is not None:
            z = z + mask
        return (r.normal(size=shape).astype(dtype), softmax(z, axis=axis).astype(dtype))

    return {
        "rows": [Case("a (3, 5) array, softmax over the last axis", pair((3, 5))),
                 Case("a single row of 4", pair((4,))),
                 Case("a (4, 4) array", pair((4, 4)), hidden=True)],
        "axis": [Case("axis=0 on a (4, 3) array", pair((4, 3), axis=0), {"axis": 0}),
                 Case("axis=1 on a (2, 3, 4) array", pair((2, 3, 4), axis=1), {"axis": 1}, hidden=True)],
        "batched": [Case("batched (2, 3, 4, 5)", pair((2, 3, 4, 5))),
                    Case("masked rows (causal, 5 x 5): zero probabilities", pair((5, 5), mask=create_causal_mask(5))),
                    Case("saturated softmax (logits about 50)", pair((3, 6), scale=50.0), hidden=True),
                    Case("float32", pair((3, 5), dtype=np.float32), float32=True, hidden=True)],
    }


def _softmax_backward_model(k, dout, probs, axis=-1):
    """softmax_backward with knobs: inner ("weighted": sum(dout * p); "unweighted": sum(dout); "none"),
    lead (False: the leading p left out), sign, sum_axis (the axis of the sum), factor (on the result)."""
    dout, probs = np.asarray(dout), np.asarray(probs)
    sum_axis = k.get("sum_axis", axis)
    inner = {"weighted": lambda: np.sum(dout * probs, axis=sum_axis, keepdims=True),
             "unweighted": lambda: np.sum(dout, axis=sum_axis, keepdims=True),
             "none": lambda: 0.0}[k.get("inner", "weighted")]()
    core = dout - inner
    return k.get("factor", 1.0) * k.get("sign", 1) * (probs * core if k.get("lead", True) else core)


def _axes(dout, probs, axis=-1):
    return list(range(np.ndim(dout))) + [None]


SOFTMAX_BACKWARD_PROBES = Probes(
    _softmax_backward_model,
    Combos("softmax_backward", [
        ("inner", [("weighted", "", ""), ("none", "no_inner_term", "the term ⟨dout, p⟩ = sum(dout * p) is missing: "
                                                                   "that is the diagonal of the Jacobian only"),
                   ("unweighted", "inner_unweighted", "the inner term sums dout alone, not dout * p")]),
        ("lead", [(True, "", ""), (False, "no_leading_p", "the leading factor p is missing")]),
        ("sign", [(1, "", ""), (-1, "sign", "the sign is flipped")]),
    ], "dx = p * (dout - sum(dout * p, axis, keepdims=True)): the Jacobian diag(p) - p pᵀ applied to dout."),
    Axis("the sum ⟨dout, p⟩", "sum_axis", _axes, right=lambda dout, probs, axis=-1: axis % np.ndim(dout),
         fix="Sum along `axis`, the axis the softmax ran over, with keepdims=True."),
    Scale(lambda dout, probs, axis=-1: [("1", 1.0, None)], what="the entries of your dx", knob="factor"))


SOFTMAX_BACKWARD = Exercise("7.3", "softmax_backward", points=3, reference=backward.softmax_backward,
                            reads=("axis",))


@SOFTMAX_BACKWARD.checked_by
def check_softmax_backward(softmax_backward=None, *, points=None, hidden=False):
    """dx = p * (dout - sum(dout * p)) along `axis`."""
    c = Checker(SOFTMAX_BACKWARD, points, hidden)
    fn = c.find(softmax_backward, "softmax_backward")
    cases = softmax_backward_cases()
    common = dict(catalog=CATALOG["softmax_backward"], forbidden=[backward.softmax_backward],
                  probes=SOFTMAX_BACKWARD_PROBES)
    ref = backward.softmax_backward
    c.check_cases("rows of probabilities", fn, ref, cases["rows"], **common)
    c.check_cases("the axis argument is respected", fn, ref, cases["axis"], **common)
    c.check_cases("batched, masked and saturated", fn, ref, cases["batched"], **common)
    return c.result()
