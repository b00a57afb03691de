"""Constants fitted: for an exercise that transcribes a formula, the formula's constants and exponents
are fitted one at a time to the answer's output, and the one that differs is named, with the number
found written as what it most likely is ("your factor is 2.5066 = √(2π); the formula has √(2/π) =
0.7979"; "the exponent is -0.25, where the formula has -0.5").

    Fitted(model, [Constant("factor", "the factor inside the tanh", "√(2/π)", math.sqrt(2 / math.pi))])

`model(k, *args)` is the exercise's model (the reference with knobs, as for the variant probes), reading
each constant by its knob: k.get("factor", math.sqrt(2 / math.pi)). A constant is reported only when
the model with the fitted value reproduces the answer's output on the case, and the finding is
confirmed on another failing case (Variant.confirmed), so a fit that happens to pass through one case
names nothing.
"""

import dataclasses
import math

import numpy as np

from .base import Knobs, Variant, _arrays

# Numbers a formula's constants are often mistaken for, with how they are written.
KNOWN = [("√(2/π)", math.sqrt(2 / math.pi)), ("√(2π)", math.sqrt(2 * math.pi)), ("1/√(2π)", 1 / math.sqrt(2 * math.pi)),
         ("2/π", 2 / math.pi), ("π/2", math.pi / 2), ("√(π/2)", math.sqrt(math.pi / 2)), ("π", math.pi),
         ("√π", math.sqrt(math.pi)), ("1/π", 1 / math.pi), ("√(1/π)", math.sqrt(1 / math.pi)), ("e", math.e),
         ("√2", math.sqrt(2)), ("1/√2", 1 / math.sqrt(2)), ("1/2", 0.5), ("2", 2.0), ("1", 1.0), ("-1", -1.0),
         ("0", 0.0), ("-1/2", -0.5), ("-3/2", -1.5), ("3/2", 1.5), ("-1/4", -0.25), ("1/4", 0.25), ("3", 3.0),
         ("1/3", 1 / 3), ("0.044715", 0.044715), ("0.0447", 0.0447), ("10000", 10000.0), ("1000", 1000.0),
         ("100", 100.0), ("10", 10.0)]


def name_number(x, sizes=None):
    """How `x` is most likely written: a power of the case's named sizes ({"d_k": 4} gives d_k^(-1/4) for
    0.7071; every size that fits is named), else a known constant, or None."""
    powers = []
    for name, size in (sizes or {}).items():
        if size and size > 1 and x > 0 and not name.startswith("B"):
            p = math.log(x) / math.log(size)
            for q, written in ((1, "1"), (-1, "-1"), (0.5, "1/2"), (-0.5, "-1/2"), (0.25, "1/4"), (-0.25, "-1/4"),
                               (2, "2"), (-2, "-2"), (1.5, "3/2"), (-1.5, "-3/2")):
                if math.isclose(p, q, abs_tol=1e-4):
                    powers.append(name if q == 1 else f"{name}^({written})")
    if powers:
        return " = ".join(powers)
    for text, value in KNOWN:
        if math.isclose(x, value, rel_tol=1e-4, abs_tol=1e-9):
            return text
    return None


def fit(attempt, probes, knob, lo, hi, log=True, steps=41):
    """The value of `knob` whose model output is nearest the answer's (a grid, then golden section), or None."""
    got = _arrays(attempt.got)
    if not got:
        return None

    def loss(t):
        value, error = probes.run(attempt, Knobs(**{knob: float(np.exp(t)) if log else float(t)}))
        if error is not None:
            return np.inf
        total = 0.0
        arrays = _arrays(value)
        if len(arrays) != len(got):
            return np.inf
        for a, b in zip(arrays, got):
            if a.shape != b.shape:
                return np.inf
            ok = np.isfinite(a) & np.isfinite(b)
            total += float(np.sum((a[ok] - b[ok]) ** 2))
        return total

    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    grid = np.linspace(a, b, steps)
    values = [loss(g) for g in grid]
    best = int(np.argmin(values))
    if not np.isfinite(values[best]):
        return None
    lo_t, hi_t = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(50):
        x, y = hi_t - ratio * (hi_t - lo_t), lo_t + ratio * (hi_t - lo_t)
        if loss(x) < loss(y):
            hi_t = y
        else:
            lo_t = x
    t = (lo_t + hi_t) / 2
    return float(np.exp(t)) if log else float(t)


_PARENTHESIS = "a factor outside its parenthesis, or inside the wrong one?"


class Constant:
    """One constant of a formula: its knob, what it is, how the formula writes it, its value, and the range
    to fit it in (on a log scale for a positive factor, else linear)."""

    def __init__(self, knob, what, written, value, lo=None, hi=None, log=None):
        self.knob, self.what, self.written, self.value = knob, what, written, value
        self.log = (value > 0) if log is None else log
        self.lo = lo if lo is not None else (value / 100 if self.log else value - 4)
        self.hi = hi if hi is not None else (value * 100 if self.log else value + 4)


class Fitted(Variant):
    """Each constant of a formula fitted to the answer's output; the one that reproduces it is named."""

    kind = "constant"
    needs_confirmation = True

    def __init__(self, *constants):
        self.constants = constants

    def find(self, attempt, probes):
        """The fitted constant; weak where only its ratio to the formula's constant is named (a factor outside
        its parenthesis, or inside the wrong one): the repair, which quotes the parentheses, is tried first."""
        found = super().find(attempt, probes)
        if found is not None and _PARENTHESIS in found.diagnosis:
            return dataclasses.replace(found, weak=True)
        return found

    def variants(self, attempt, probes):
        if attempt.error is not None:
            return
        for c in self.constants:
            found = fit(attempt, probes, c.knob, c.lo, c.hi, c.log)
            if found is None or math.isclose(found, c.value, rel_tol=1e-6):
                continue
            yield c.knob, describe(c, found, getattr(attempt, "sizes", None)), Knobs(**{c.knob: found})


def describe(c, found, sizes=None):
    """The words for a constant `c` fitted at `found`: the number as it is most likely written, or as the
    formula's own constant times or over a known one (a factor outside its parenthesis)."""
    named = name_number(found, sizes)
    shown = f"{found:.5g}" + (f" = {named}" if named and named != f"{found:.5g}" else "")
    hint = f"Check how you wrote {c.written}."
    if not named and c.value:
        over, times = name_number(c.value / found), name_number(found / c.value)
        if over and over not in ("1", "-1"):
            shown += f" = {c.written} / {over}"
            hint = f"{over} divides it: {_PARENTHESIS}"
        elif times and times not in ("1", "-1"):
            shown += f" = {c.written} × {times}"
            hint = f"{times} multiplies it: {_PARENTHESIS}"
    formula = c.written if c.written == f"{c.value:.5g}" else f"{c.written} = {c.value:.5g}"
    return f"{c.what} is {shown} in your answer; the formula has {formula}. {hint}"
