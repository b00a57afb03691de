"""Variant probes: the exercise computed with one part changed (a weight transposed, two parameters
swapped, a part missing, another activation, another axis, a fitted scale, named variants)."""

import itertools
import math
import re

import numpy as np

from .base import Finding, Knobs, Variant, _arrays


# -- variant probes ----------------------------------------------------------------------------------------
class Transposed(Variant):
    """A square weight used transposed (x @ W.T): every shape still fits, only the values are wrong."""

    kind = "transposed"

    def __init__(self, names=None):
        self.names = names

    def variants(self, attempt, probes):
        for name, p in probes.params(attempt).items():
            if self.names is not None and name not in self.names:
                continue
            if isinstance(p, np.ndarray) and p.ndim >= 2 and p.shape[-1] == p.shape[-2]:
                short = name.rsplit(".", 1)[-1]
                yield name, (
                    f"`{name}`{probes.role(name)} is used transposed: @ {short}.T where the course multiplies "
                    f"by {short} itself. {short} is square, so every shape still fits and only the values "
                    f"show it: weights are stored as (inputs, outputs) and used as x @ {short}."), \
                    Knobs(params={name: np.swapaxes(p, -1, -2)})


def _same_kind(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
    return type(a) is type(b) and a is not b


class Swapped(Variant):
    """Two parameters of the same shape swapped; then one used in place of another (`instead`)."""

    kind = "swapped"

    def __init__(self, names=None, instead=True):
        self.names, self.instead = names, instead

    def variants(self, attempt, probes):
        params = {n: p for n, p in probes.params(attempt).items() if self.names is None or n in self.names}
        pairs = [(a, b) for a, b in itertools.combinations(params, 2) if _same_kind(params[a], params[b])]
        for a, b in pairs:
            if {a, b} in ({"W_q", "W_k"}, {"Q", "K"}):
                yield f"{a}:{b}", _queries_keys_exchanged(attempt, a, b), Knobs(params={a: params[b], b: params[a]})
                continue
            yield f"{a}:{b}", (
                f"`{a}` and `{b}` are swapped: each is used where the other belongs"
                f"{self._roles(probes, a, b)}. They have the same shape, so nothing fails; only the values "
                "show it."), Knobs(params={a: params[b], b: params[a]})
        if not self.instead:
            return
        for a, b in pairs:
            for used, meant in ((a, b), (b, a)):
                yield f"instead:{used}:{meant}", (
                    f"`{used}` is used where `{meant}` belongs{probes.role(meant)}, so `{meant}` is never "
                    f"used and `{used}` is used twice: use `{meant}` there."), \
                    Knobs(params={meant: params[used]})

    @staticmethod
    def _roles(probes, a, b):
        if a in probes.roles and b in probes.roles:
            return f" ({a} is {probes.roles[a]}; {b} is {probes.roles[b]})"
        return ""

    def finding(self, attempt, detail_key, diagnosis, detail=""):
        if detail_key.startswith("instead:"):
            return Finding(attempt.exercise, "probe:" + detail_key, diagnosis, detail)
        return super().finding(attempt, detail_key, diagnosis, detail)


_KEYS_FIRST = re.compile(r"\b[kK]\w*\s*@\s*(?:np\.)?(?:swapaxes|transpose|moveaxis)?\(?\s*[qQ]\w*|"
                         r"matmul\(\s*[kK]\w*\s*,\s*(?:np\.)?(?:swapaxes|transpose)?\(?\s*[qQ]")


def _student_source(student):
    """The source of the answer (a function, or the class of an object), or "" when it cannot be read."""
    import inspect
    for target in (student, type(student)):
        try:
            return inspect.getsource(target)
        except (TypeError, OSError):
            continue
    return ""


def _queries_keys_exchanged(attempt, a, b):
    """Exchanging the queries' and the keys' weights gives exactly K Q^T instead of Q K^T, the scores
    transposed; which of the two the answer wrote is read from its source, else both are named."""
    why = ("The scores are Q K^T (queries first, from W_q; keys second, from W_k), scaled, then softmax over the keys."
           if "W_q" in (a, b) else "The scores are Q K^T, queries first and keys second, scaled, then softmax over the keys.")
    if _KEYS_FIRST.search(_student_source(attempt.student)):
        return (f"your scores are K Q^T, the transpose of Q K^T: the product is taken with the keys first. {why} "
                "Write Q @ swapaxes(K, -1, -2).")
    return (f"your scores come out as K Q^T, the transpose of Q K^T: either `{a}` and `{b}` are exchanged (the "
            "queries made from the key weights and the keys from the query weights), or the product is taken with "
            f"the keys first. Both give the same numbers. {why}")


class Missing(Variant):
    """One part left out (a bias, a residual, a norm, a factor): the model with knob without={part}.

    parts: {part: what it is} or {part: (what it is, how to put it back)}."""

    kind = "missing"

    def __init__(self, parts):
        self.parts = parts

    def variants(self, attempt, probes):
        for part, words in self.parts.items():
            what, fix = words if isinstance(words, tuple) else (words, "")
            yield part, f"{what} is missing: your output is exactly what the computation gives without it." + (
                f" {fix}" if fix else ""), Knobs(without={part})


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, dtype=np.float64))


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


ACTIVATIONS = {
    "relu": ("ReLU, max(0, x)", lambda x: np.maximum(0.0, x)),
    "erf_gelu": ("the exact GELU, x Phi(x) with the error function (it differs from the tanh form by up to 5e-4)",
                 lambda x: 0.5 * x * (1.0 + _erf(np.asarray(x) / np.sqrt(2.0)))),
    "sigmoid_gelu": ("the sigmoid approximation of GELU, x sigmoid(1.702 x)", lambda x: x * _sigmoid(1.702 * x)),
    "silu": ("SiLU (swish), x sigmoid(x)", lambda x: x * _sigmoid(x)),
    "tanh": ("tanh", np.tanh),
    "sigmoid": ("the sigmoid", _sigmoid),
    "leaky_relu": ("leaky ReLU", lambda x: np.where(np.asarray(x) > 0, x, 0.01 * np.asarray(x))),
    "none": ("no activation at all (the identity)", lambda x: np.asarray(x) * 1.0),
}


class Activation(Variant):
    """Another activation than the one asked for: the model with knob activation=f."""

    kind = "activation"

    def __init__(self, asked, options=None):
        self.asked, self.options = asked, dict(options or ACTIVATIONS)

    def variants(self, attempt, probes):
        for name, (words, fn) in self.options.items():
            yield name, f"the activation is {words} instead of {self.asked}.", Knobs(activation=fn)


def _axis_words(axis, labels):
    if axis in labels:
        return labels[axis]
    return "the whole array (no axis)" if axis is None else f"axis {axis}"


class Axis(Variant):
    """A reduction over the wrong axis: the model with knob `knob` = each other axis in turn.

    what: the reduction, e.g. "the softmax"; right: the axis it must run over, or right(args, kwargs);
    axes(args, kwargs): the axes to try (None for the whole array); labels: {axis: words}."""

    kind = "axis"

    def __init__(self, what, knob, axes, right=-1, labels=None, fix=""):
        self.what, self.knob, self.axes, self.right = what, knob, axes, right
        self.labels, self.fix = dict(labels or {}), fix

    def variants(self, attempt, probes):
        args, kwargs = attempt.case.args, attempt.case.kwargs
        right = self.right(*args, **kwargs) if callable(self.right) else self.right
        for axis in self.axes(*args, **kwargs):
            if axis == right:
                continue
            label = "all" if axis is None else str(axis)
            yield label, (f"{self.what} runs over {_axis_words(axis, self.labels)} instead of "
                          f"{_axis_words(right, self.labels)}." + (f" {self.fix}" if self.fix else "")), \
                Knobs(**{self.knob: axis})


class Variants(Variant):
    """Named knob settings a lesson writes: options is a list of (name, knobs dict, diagnosis), or a
    function of the attempt returning one. Key: probe:<kind>:<name>."""

    def __init__(self, kind, options):
        self.kind, self.options = kind, options

    def variants(self, attempt, probes):
        options = self.options(attempt) if callable(self.options) else self.options
        for name, knobs, diagnosis in options:
            knobs = dict(knobs)
            yield name, diagnosis, Knobs(params=knobs.pop("params", None), **knobs)


class Scale(Variant):
    """Scores scaled by the wrong factor: each named candidate first, then a fit of the factor.

    candidates(args, kwargs) -> [(label, factor, why)], the right one among them with why None;
    what: what is scaled ("the scores"); knob: the model's knob for the factor."""

    kind = "scale"
    needs_confirmation = True  # a size's square root can be another size's fourth root on one case

    def __init__(self, candidates, what="the scores", knob="scale", fit=True):
        self.candidates, self.what, self.knob, self.fit = candidates, what, knob, fit

    def variants(self, attempt, probes):
        right_label, right = None, None
        for label, factor, why in self.candidates(*attempt.case.args, **attempt.case.kwargs):
            if why is None:
                right_label, right = label, factor
                continue
            yield label, why, Knobs(**{self.knob: factor})

    def find(self, attempt, probes):
        found = super().find(attempt, probes)
        if found is not None or not self.fit or attempt.error is not None or probes.model is None:
            return found
        right = [(label, f) for label, f, why in self.candidates(*attempt.case.args, **attempt.case.kwargs)
                 if why is None]
        if not right:
            return None
        label, right_factor = right[0]
        factor = self._fit(attempt, probes)
        if factor is None or not self.matches(attempt, probes, Knobs(**{self.knob: factor})):
            return None
        from .constants import name_number
        named = name_number(factor, getattr(attempt, "sizes", None))
        if not self._same_ratio(attempt, probes, factor / right_factor, named, right_factor):
            return None
        shown = f"{factor:.4g}" + (f" = {named}" if named else "")
        if label == f"{right_factor:g}":  # the right factor is a plain number (1: no scaling at all)
            return self.finding(attempt, "other", (
                f"{self.what} are {factor / right_factor:.4g} times the right ones" + (f" ({named})" if named else "")
                + ": a factor the formula does not have, or a constant of it computed otherwise than written. Check "
                "each power and quotient, and how Python groups them: `1 / d ** 1/2` is `(1 / d ** 1) / 2`, where "
                "`d ** -0.5` is meant."), weak=True)
        return self.finding(attempt, "other", (
            f"{self.what} are multiplied by {shown} where {label} = {right_factor:.4g} is right "
            f"({factor / right_factor:.4g} times the right factor). Scale them by {label} exactly once."), weak=True)

    def _same_ratio(self, attempt, probes, ratio, named, right_here):
        """False when, on one of up to two other cases of the part where the answer is wrong too, the fitted factor
        is another multiple of the right one and another number, or (where it is a named size, d_model) another
        size's: a factor that changes from case to case is no slip of a factor (two bias corrections grouped wrong
        give 7.5 on one case, 4.9 on another)."""
        from .constants import name_number
        for other in attempt.others[:2]:
            try:
                there = attempt.on(other)
            except Exception:
                continue
            if there.error is not None or there.right():
                continue
            right = [f for _, f, why in self.candidates(*other.args, **other.kwargs) if why is None]
            fitted = self._fit(there, probes)
            if not right or fitted is None:
                return False
            if named and name_number(fitted, getattr(there, "sizes", None)) == named:
                continue  # the same size (d_model) on each case
            if not np.isclose(fitted / right[0], ratio, rtol=1e-3) and not np.isclose(fitted, ratio * right_here,
                                                                                      rtol=1e-3):
                return False  # neither the same multiple of the right factor nor the same number
        return True

    def _fit(self, attempt, probes):
        """The factor s whose model output is nearest the student's (constants.fit, on a log scale)."""
        from .constants import fit
        return fit(attempt, probes, self.knob, 1e-3, 1e3)


