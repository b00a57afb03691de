"""Exercise 2.1, rms_norm: its model with knobs, probes, cases and checker."""

import numpy as np

from ... import layers
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Axis, Missing, NotFinite, Probes


# -- probes: the kinds of slip the answer may show (encdec.checks.probes) -------------------------------------
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
