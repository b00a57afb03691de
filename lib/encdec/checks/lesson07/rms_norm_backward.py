"""Exercise 7.5, rms_norm_backward: its cases, the knob model of RMSNorm's backward slips
(RMS_NORM_BACKWARD_PROBES) and the checker."""

import importlib

import numpy as np

from ...mistakes import CATALOG
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Combos, EachOutput, Probes, Scale

# the module, not encdec.backward (the package exports training.backward under that name)
backward = importlib.import_module("...backward", __package__)


def rms_norm_backward_cases():
    r = generator(75)

    def case(shape, scale=1.0, **kwargs):
        d = shape[-1]
        return Case(kwargs.pop("label"), (r.normal(size=shape), r.normal(size=shape) * scale, r.uniform(0.5, 1.5, size=d)),
                    kwargs.pop("kw", {}), **kwargs)

    # x of scale 10 in the first two parts: eps = 1e-6 is then invisible at this tolerance, so leaving it
    # out costs only the third part, which is about eps.
    return {
        "basic": [case((4, 6), 10.0, label="x of shape (4, 6)"),
                  case((5,), 10.0, label="a single vector, d=5"),
                  case((3, 3), 10.0, label="x of shape (3, 3)", hidden=True)],
        "batched": [case((2, 3, 5), 10.0, label="batched (2, 3, 5)"),
                    case((2, 2, 3, 4), 10.0, label="leading shape (2, 2, 3)", hidden=True)],
        "eps": [case((3, 4), scale=1e-4, label="near-zero x (about 1e-4), where eps matters"),
                case((3, 4), scale=0.1, kw={"eps": 1e-2}, label="eps=1e-2"),
                case((2, 8), scale=1e3, label="large x (about 1e3)", hidden=True)],
    }


def _rms_backward_model(k, dout, x, gamma, eps=1e-6):
    """rms_norm_backward with knobs: second ("right"; "none": r treated as a constant; "no_gamma": the
    second term without gamma), second_factor (a number on the second term; 1 right), gamma_in_dx
    (False: dx without gamma), eps ("right", "none", "default": 1e-6 whatever is passed), dgamma
    ("right", "unnormalised": sum(dout * x), "with_gamma": times gamma), sign."""
    dout, x, gamma = (np.asarray(a, dtype=np.float64) for a in (dout, x, gamma))
    e = {"right": eps, "none": 0.0, "default": 1e-6}[k.get("eps", "right")]
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + e)
    how = k.get("dgamma", "right")
    dgamma = np.sum((dout * x * (1.0 if how == "unnormalised" else r)).reshape(-1, x.shape[-1]), axis=0)
    if how == "with_gamma":
        dgamma = dgamma * gamma
    dxhat = dout * gamma if k.get("gamma_in_dx", True) else dout
    second = k.get("second", "right")
    inner = dxhat if second != "no_gamma" else dout
    dx = r * dxhat - (0.0 if second == "none" else k.get("second_factor", 1.0) * x * r**3 *
                      np.mean(inner * x, axis=-1, keepdims=True))
    return k.get("sign", 1) * dx, dgamma


_RMS_CHOICES = [
    ("second", [("right", "", ""), ("none", "no_second_term", "the second term of dx, - x r³ mean(dx̂ · x), is missing: "
                                                             "r = 1/rms(x) depends on x too"),
                ("no_gamma", "second_term_without_gamma", "the second term uses dout instead of dx̂ = dout * gamma")]),
    ("gamma_in_dx", [(True, "", ""), (False, "no_gamma", "dx leaves gamma out: the upstream gradient of x̂ is dout * gamma")]),
    ("eps", [("right", "", ""), ("none", "no_eps", "eps is left out of rms(x)"),
             ("default", "eps_ignored", "the eps argument is ignored (1e-6 is used whatever is passed)")]),
    ("dgamma", [("right", "", ""), ("unnormalised", "dgamma_unnormalised", "dgamma sums dout * x, not dout * x / rms(x)"),
                ("with_gamma", "dgamma_times_gamma", "dgamma is multiplied by gamma")]),
    ("sign", [(1, "", ""), (-1, "sign", "dx has the wrong sign")]),
]
_RMS_RIGHT = ("With r = 1/sqrt(mean(x²) + eps) and dx̂ = dout * gamma: dx = r dx̂ - x r³ mean(dx̂ · x), "
              "dgamma = the sum of dout * x * r over every position.")


RMS_NORM_BACKWARD_PROBES = Probes(
    _rms_backward_model,
    Combos("rms_norm_backward", _RMS_CHOICES, _RMS_RIGHT),
    Scale(lambda dout, x, gamma, eps=1e-6: [
        ("1", 1.0, None),
        ("d", float(np.shape(x)[-1]), "the second term of dx uses a sum over the d features where the mean belongs "
                                      "(it is d times too large).")], what="the entries of the second term of dx", knob="second_factor"),
    EachOutput(Combos("rms_norm_backward", _RMS_CHOICES, _RMS_RIGHT, most=1), ("dx", "dgamma")))


RMS_NORM_BACKWARD = Exercise("7.5", "rms_norm_backward", points=3, reference=backward.rms_norm_backward,
                             sizes={"x": "... d"}, reads=("eps",))


@RMS_NORM_BACKWARD.checked_by
def check_rms_norm_backward(rms_norm_backward=None, *, points=None, hidden=False):
    """(dx, dgamma) of y = gamma * x / sqrt(mean(x^2) + eps)."""
    c = Checker(RMS_NORM_BACKWARD, points, hidden)
    fn = c.find(rms_norm_backward, "rms_norm_backward")
    cases = rms_norm_backward_cases()
    common = dict(catalog=CATALOG["rms_norm_backward"], names=("dx", "dgamma"),
                  forbidden=[backward.rms_norm_backward], probes=RMS_NORM_BACKWARD_PROBES)
    ref = backward.rms_norm_backward
    c.check_cases("dx and dgamma", fn, ref, cases["basic"], **common)
    c.check_cases("leading batch dimensions (dgamma summed over them)", fn, ref, cases["batched"], **common)
    c.check_cases("eps: near-zero and large x, another eps", fn, ref, cases["eps"], **common)
    return c.result()
