"""Exercise 2.2, gelu: its model with knobs, probes, cases and checker."""

import numpy as np

from ... import layers
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Activation, Constant, Fitted, NotFinite, Probes


# -- probes: the kinds of slip the answer may show (encdec.checks.probes) -------------------------------------
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
