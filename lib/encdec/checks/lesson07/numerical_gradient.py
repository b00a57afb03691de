"""Exercise 7.2, numerical_gradient: the scalar functions it differentiates (Problem), its cases, the probes
(a loop over the first axis read from the source, a factor on the differences) and the checker, which asks for
x put back exactly, as the statement does: an x restored by arithmetic, off in its last bits, loses that part."""

import ast
import dataclasses
import functools
import importlib

import numpy as np

from ... import loss
from ...mistakes import CATALOG
from ..catalog import wrapped
from ..core import Case, Checker, run_student
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Probe, Probes, Scale
from ..probes.repair import answer_function

# the module, not encdec.backward (the package exports training.backward under that name)
backward = importlib.import_module("...backward", __package__)


@dataclasses.dataclass(frozen=True)
class Problem:
    """A scalar function f() that reads an array x: make() gives a fresh (f, x) each time."""

    label: str
    shape: tuple
    seed: int
    kind: str

    def make(self):
        x = generator(self.seed).normal(size=self.shape)
        w = generator(self.seed + 1).normal(size=self.shape)
        if self.kind == "sin":
            def f():
                return np.sum(w * np.sin(x))
        elif self.kind == "quadratic":
            A = generator(self.seed + 2).normal(size=(x.size, x.size))

            def f():
                return x.ravel() @ A @ x.ravel()
        elif self.kind == "cubic":
            def f():
                return np.sum(w * x**3)
        elif self.kind == "xent":
            targets = generator(self.seed + 3).integers(0, self.shape[-1], size=self.shape[:-1])

            def f():
                return loss.softmax_cross_entropy(x, targets)[0]
        else:  # log-sum-exp
            def f():
                return np.log(np.sum(np.exp(x * w)))
        return f, x


def _gradient_of(fn):
    def run(problem, h=None):
        f, x = problem.make()
        return fn(f, x) if h is None else fn(f, x, h)
    return run


def _x_after(fn):
    def run(problem, h=None):
        f, x = problem.make()
        fn(f, x) if h is None else fn(f, x, h)
        return x
    return run


def numerical_gradient_cases():
    return [
        Case("f = sum(w * sin(x)), x of shape (3, 4), default h", (Problem("sin", (3, 4), 720, "sin"),)),
        Case("f = xᵀ A x (every entry interacts), x of shape (5,), h=1e-5",
             (Problem("quadratic", (5,), 721, "quadratic"), 1e-5)),
        Case("f = sum(w * x³), x of shape (4,), h=1e-2", (Problem("cubic", (4,), 722, "cubic"), 1e-2)),
        Case("f = cross-entropy of logits x (2, 3, 5), h=1e-4", (Problem("xent", (2, 3, 5), 723, "xent"), 1e-4),
             hidden=True),
        Case("f = log(sum(exp(w * x))), x of shape (2, 2, 3), h=1e-3",
             (Problem("lse", (2, 2, 3), 724, "lse"), 1e-3), hidden=True),
    ]


@functools.lru_cache(maxsize=64)
def _reference_gradient(problem, h):
    f, x = problem.make()
    return backward.numerical_gradient(f, x) if h is None else backward.numerical_gradient(f, x, h)


def _gradient_model(k, problem, h=None):
    """The central differences times a factor (knob factor; 1 is right)."""
    return k.get("factor", 1.0) * _reference_gradient(problem, h)


class _FirstAxisLoop(Probe):
    """`for i in range(len(x))` (or range(x.shape[0])) with x[i] nudged, on an x of two or more axes: x[i] is a
    whole slice, nudged at once. Read from the answer's source, named only where the failing case's x has more
    than one axis."""

    kind = "loop"

    def find(self, attempt, probes):
        problem = attempt.case.args[0]
        fdef = answer_function(attempt.student)
        if fdef is None or len(problem.shape) < 2:
            return None
        params = [a.arg for a in fdef.args.args]
        x = params[1] if len(params) > 1 else None
        for loop in ast.walk(fdef):
            if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and x is not None \
                    and ast.unparse(loop.iter) in (f"range(len({x}))", f"range({x}.shape[0])") \
                    and any(isinstance(n, ast.Subscript) and ast.unparse(n) == f"{x}[{loop.target.id}]"
                            for n in ast.walk(loop)):
                return self.finding(attempt, "first_axis", (
                    f"your loop `for {loop.target.id} in {ast.unparse(loop.iter)}` runs over the first axis of {x} "
                    f"only: {x} has shape {problem.shape} here, so `{x}[{loop.target.id}]` is a whole slice, every "
                    "entry of it is nudged at once and the slice gets one number, not one partial derivative per "
                    f"entry. Visit every entry: for idx in np.ndindex({x}.shape), with {x}[idx]."))
        return None


NUMERICAL_GRADIENT_PROBES = Probes(_gradient_model, _FirstAxisLoop(), Scale(
    lambda problem, h=None: [("1", 1.0, None),
                             ("2", 2.0, "your differences are twice the gradient: (f(x + h) - f(x - h)) is divided by "
                                        "h, but the two points are 2h apart. Divide by 2 h."),
                             ("1/2", 0.5, "your differences are half the gradient: the central difference "
                                          "(f(x + h) - f(x - h)) is divided by 4 h or 2 h twice. Divide by 2 h, once.")],
    what="your difference quotients", knob="factor"))


NUMERICAL_GRADIENT = Exercise("7.2", "numerical_gradient", points=2, reference=backward.numerical_gradient,
                              reads=("h",), weights={"central differences, entry by entry": 3})


@NUMERICAL_GRADIENT.checked_by
def check_numerical_gradient(numerical_gradient=None, *, points=None, hidden=False):
    """Central differences, one entry at a time, x restored."""
    c = Checker(NUMERICAL_GRADIENT, points, hidden)
    fn = c.find(numerical_gradient, "numerical_gradient")
    cases = numerical_gradient_cases()
    forbidden = [backward.numerical_gradient, backward.gradient_check]
    catalog = CATALOG["numerical_gradient"]
    ref = backward.numerical_gradient
    c.check_cases("central differences, entry by entry", _gradient_of(fn) if fn else None, _gradient_of(ref),
                  cases, catalog=wrapped(catalog, _gradient_of), forbidden=forbidden,
                  probes=NUMERICAL_GRADIENT_PROBES)
    inexact = _restored_by_arithmetic(fn, c.to_run(cases), forbidden) if fn else None
    if inexact is not None:
        case, message = inexact
        c.part("x is left as it was", False, message, cases=c.to_run(cases), failed=case)
    else:
        c.check_cases("x is left as it was", _x_after(fn) if fn else None, _x_after(ref), cases,
                      catalog=wrapped(catalog, _x_after), forbidden=forbidden)
    return c.result()


def _restored_by_arithmetic(fn, cases, forbidden):
    """(case, why) where x comes back within rounding but not exactly, an entry off in its last bits: undone by
    arithmetic (+= h, -= 2 h, += h), not written back. The statement asks for each entry put back exactly as
    it was, so this fails the part. None otherwise (x exact, or off by more, which the part's cases diagnose)."""
    for case in cases:
        problem, *h = case.args
        f, x = problem.make()
        before = x.copy()
        if run_student(fn, (f, x, *h), forbidden=forbidden).error is not None or np.array_equal(x, before) \
                or x.shape != before.shape or not np.allclose(x, before, rtol=1e-9, atol=1e-12):
            continue
        idx = tuple(int(i) for i in np.argwhere(x != before)[0])
        return case, (f"x is not put back exactly: on \"{case.label}\", x{list(idx)} was {float(before[idx])!r} and "
                      f"is {float(x[idx])!r} afterwards. The statement asks for each entry put back exactly as it "
                      "was. Undoing a step by arithmetic (+= h, then -= 2 * h, then += h) does not always give the "
                      "old number back in floating point; save it (old = x[idx]) and write it back (x[idx] = old).")
    return None
