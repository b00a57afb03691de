"""Probes: which *kind* of slip a wrong answer makes, when no catalog entry names it.

A catalog entry (encdec.mistakes) is one wrong implementation someone thought of in advance. A probe
is a kind of slip: a weight used transposed, two parameters swapped, the heads split without the axis
swap, the scores scaled by the wrong factor, a reduction over the wrong axis, another activation, a
missing bias, residual or norm, attention weights that break their own rules... It names what it
found in the student's terms (W_q, norm2_gamma, d_k), whatever else their code looks like.

Each exercise declares the probes that apply to it, in `Probes(model, *probes, ...)` (see
encdec.checks.lesson01 .. lesson05), and hands the declaration to `Checker.check_cases(probes=...)`.
The checker runs them only after a case fails and no catalog entry explains it; the first finding
is printed as the likely cause and recorded like a catalog misconception, under a key
"probe:<kind>:<detail>" (e.g. "probe:transposed:W_q"), once per key. A probe never raises, never
prints, and never costs or gives points.

Two families:

- Variant probes compute the exercise with one part changed and compare with the student's output.
  They need a *model*: the reference written with its parts made variable ("knobs"),
  `model(k, *args, **kwargs)`, where `k` is a `Knobs` (a dict of knob values, plus `k.obj`, the layer
  under test with a probe's parameter changes applied). With no knobs the model must compute the
  reference (tests/test_probes.py checks it on every case). A variant whose output equals the
  reference's on the case is skipped: it is not a slip there. Kinds: Transposed, Swapped, Missing,
  Activation, Axis, Scale, and Variants (any list of knob settings a lesson names).
- Property probes look at the student's own output, or run the student's code again on an edited
  input: RowsSumToOne, MaskedKeysZero, Causal, HeadsCompared, AdditiveMask, NotFinite, Calls (what
  a sublayer received). They need no model.

An answer that raises is matched against the variants that raise the same error, and a shape error
is explained by naming the arrays and the step that failed (`ShapeError`, always on).

The attempt a probe inspects is core.Attempt: `.case`, `.got`, `.expected`, `.error`, `.float32`,
`.args()` and `.kwargs()` (fresh copies of the case's inputs), `.matches(value)` (the student's output
equals `value`), `.is_expected(value)`, `.rerun(args, kwargs)` (the student's code run safely again).

To add a kind: subclass `Variant` (yield `(detail, diagnosis, Knobs)` from `variants`) or `Property`
(return a `Finding` from `inspect`). Lessons 6-10 declare their own models and probes the same way.

Keys: "probe:<kind>:<detail>", e.g. probe:transposed:W_q, probe:swapped:norm1_gamma:norm2_gamma,
probe:instead:W_k:W_q (W_k used where W_q belongs), probe:heads:split_bare, probe:scale:1/sqrt(n),
probe:axis:-2, probe:missing:b1, probe:masks:causal_to_cross, probe:shape_error:broadcast.

Proof that nothing misfires: inside `audit()` every checker runs its probes on every case it passes
(on the answer's output and on the reference's) and checks its model with no knobs against the
reference (`model_problem`); tests/test_probes.py runs every correct variant of Lessons 1-5 so.
"""

import ast
import contextlib
import copy
import io
import itertools
import linecache
import math
import re
import traceback
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Finding:
    """What a probe found: recorded like a catalog mistake (exercise, key, diagnosis). `detail` is
    printed before the diagnosis (where in this case), and not recorded."""

    exercise: str
    key: str
    diagnosis: str
    detail: str = ""


class Knobs(dict):
    """The knobs of one variant: knob name -> value, the parameter changes (`params`: name -> array,
    dotted for a sublayer's, e.g. "cross_attn.W_q"), and `obj`, the declared layer with those changes
    applied (a copy; the original is never touched). `drops(part)` is True when the knob
    `without` names `part`."""

    def __init__(self, params=None, **knobs):
        super().__init__(**knobs)
        self.params = dict(params or {})
        self.obj = None

    def drops(self, part):
        return part in self.get("without", ())


def replaced(obj, changes):
    """A shallow copy of `obj` with the attributes in `changes` set (dotted names reach sublayers,
    which are copied too), so that the original stays as it was."""
    if not changes:
        return obj
    root = copy.copy(obj)
    for name, value in changes.items():
        *path, last = name.split(".")
        holder = root
        for part in path:
            child = copy.copy(getattr(holder, part))
            setattr(holder, part, child)
            holder = child
        setattr(holder, last, value)
    return root


def attribute(obj, name):
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@contextlib.contextmanager
def quiet():
    """No warnings, no floating-point complaints, nothing printed."""
    sink = io.StringIO()
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield


class Probes:
    """The probes of one exercise (or of one part of its check, when each part has its own layer).

    model: `model(k, *args, **kwargs)`, the reference with knobs (None when only property probes apply).
    probes: tried in order; the first finding wins. Put exact variants first, general properties last.
    obj: the layer whose parameters Transposed and Swapped may change (k.obj in the model).
    params: the names of its parameters (dotted for sublayers); or {name: index} of the case's
        positional arguments that are parameters (e.g. {"W_q": 1, "W_k": 2, "W_v": 3}).
    roles: {name: what it is for, in the course's words}, for the messages.
    """

    def __init__(self, model=None, *probes, obj=None, params=(), roles=None):
        self.model, self.probes, self.obj = model, list(probes), obj
        self.arg_params = dict(params) if isinstance(params, dict) else None
        self.names = list(self.arg_params or params)
        self.roles = dict(roles or {})

    def params(self, attempt):
        """{name: current value} of the declared parameters on this case."""
        if self.arg_params is not None:
            args = attempt.case.args
            return {n: args[i] for n, i in self.arg_params.items() if i < len(args)}
        if self.obj is None:
            return {}
        return {n: attribute(self.obj, n) for n in self.names}

    def role(self, name):
        return f" ({self.roles[name]})" if name in self.roles else ""

    def run(self, attempt, knobs):
        """(value, None) of the model with `knobs` on this case, or (None, the exception)."""
        if self.model is None:
            return None, LookupError("no model declared")
        args, kwargs = attempt.args(), attempt.kwargs()
        if knobs.params and self.arg_params is not None:
            args = list(args)
            for name, value in knobs.params.items():
                args[self.arg_params[name]] = value
            args = tuple(args)
        knobs.obj = replaced(self.obj, knobs.params if self.arg_params is None else {})
        with quiet():
            try:
                return self.model(knobs, *args, **kwargs), None
            except Exception as exc:
                return None, exc

    def find(self, attempt):
        """The first finding of the declared probes, then of the error probes; None if none fits."""
        for probe in self.probes + ERROR_PROBES:
            finding = probe.safe_find(attempt, self)
            if finding is not None:
                return finding
        return None


NO_PROBES = Probes()


def find_slip(probes, attempt):
    """What kind of slip `attempt` makes, by the declared probes (or only the always-on ones)."""
    try:
        return (probes or NO_PROBES).find(attempt)
    except Exception:  # a probe is an extra: the check stands without it
        return None


def argument(index, name=None, default=None):
    """A picker of one case input, by position or keyword: argument(3, "mask")(*args, **kwargs)."""
    def pick(*args, **kwargs):
        if name is not None and name in kwargs:
            return kwargs[name]
        return args[index] if index is not None and index < len(args) else default
    return pick


def model_problem(probes, attempt):
    """Why the declared model with no knobs does not compute the reference on this case, or None
    (a probe's variants are only as good as its model: the tests check every case)."""
    if probes is None or probes.model is None:
        return None
    value, error = probes.run(attempt, Knobs())
    if error is not None:
        return f"the model raised {type(error).__name__}: {error}"
    if not attempt.is_expected(value):
        return "the model with no knobs differs from the reference"
    return None


# -- auditing: the proof that probes never misfire ------------------------------------------------------
_audit = []  # a stack of lists; the innermost collects


@contextlib.contextmanager
def audit():
    """Inside, every checker also runs its probes on every case it passes, on the answer's output and
    on the reference's, and collects what they find here (it should be nothing): tests only."""
    found = []
    _audit.append(found)
    try:
        yield found
    finally:
        _audit.remove(found)


def auditing():
    return _audit[-1] if _audit else None


# -- the base classes --------------------------------------------------------------------------------------
class Probe:
    kind = "probe"

    def safe_find(self, attempt, probes):
        try:
            with quiet():
                return self.find(attempt, probes)
        except Exception:
            return None

    def find(self, attempt, probes):
        raise NotImplementedError

    def finding(self, attempt, detail_key, diagnosis, detail=""):
        key = f"probe:{self.kind}" + (f":{detail_key}" if detail_key else "")
        return Finding(attempt.exercise, key, diagnosis, detail)


class Variant(Probe):
    """A probe that tries variants of the model: `variants(attempt, probes)` yields
    (detail key, diagnosis, Knobs); the first whose output is the student's is the finding."""

    def variants(self, attempt, probes):
        return ()

    def find(self, attempt, probes):
        if probes.model is None:
            return None
        for detail, diagnosis, knobs in self.variants(attempt, probes):
            if self.matches(attempt, probes, knobs):
                return self.finding(attempt, detail, diagnosis)
        return None

    @staticmethod
    def matches(attempt, probes, knobs):
        value, error = probes.run(attempt, knobs)
        if attempt.error is not None:
            return error is not None and type(error) is type(attempt.error) and str(error) == str(attempt.error)
        return error is None and not attempt.is_expected(value) and attempt.matches(value)


class Property(Probe):
    """A probe that inspects the student's own output: `inspect(attempt, probes)` returns a Finding."""

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        return self.inspect(attempt, probes)

    def inspect(self, attempt, probes):
        raise NotImplementedError


def _arrays(value):
    """The numeric arrays in a value (a tuple's items in order)."""
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    try:
        arr = np.asarray(value)
    except Exception:
        return []
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        return []
    return [arr.astype(np.float64)]


def _pick(select, value):
    """select(value) as a float array, or None."""
    try:
        out = np.asarray(select(value) if select is not None else value)
    except Exception:
        return None
    if out.dtype == object or not np.issubdtype(out.dtype, np.number):
        return None
    return out.astype(np.float64)


def _tol(attempt):
    return (2e-4, 1e-5) if attempt.float32 else (1e-6, 1e-9)


def _at(idx):
    return "(" + ", ".join(str(int(i)) for i in idx) + ")"


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
        return self.finding(attempt, "other", (
            f"{self.what} are multiplied by {factor:.4g} where {label} = {right_factor:.4g} is right "
            f"({factor / right_factor:.4g} times the right factor). Scale them by {label} exactly once."))

    def _fit(self, attempt, probes):
        """The factor s whose model output is nearest the student's (log-grid search, then golden section)."""
        got = _arrays(attempt.got)
        if not got:
            return None

        def loss(log_s):
            value, error = probes.run(attempt, Knobs(**{self.knob: float(np.exp(log_s))}))
            if error is not None:
                return np.inf
            total = 0.0
            for a, b in zip(_arrays(value), got):
                if a.shape != b.shape:
                    return np.inf
                ok = np.isfinite(a) & np.isfinite(b)
                total += float(np.sum((a[ok] - b[ok]) ** 2))
            return total

        grid = np.linspace(np.log(1e-3), np.log(1e3), 41)
        values = [loss(g) for g in grid]
        best = int(np.argmin(values))
        if not np.isfinite(values[best]):
            return None
        lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        ratio = (math.sqrt(5) - 1) / 2
        for _ in range(40):
            a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
            if loss(a) < loss(b):
                hi = b
            else:
                lo = a
        return float(np.exp((lo + hi) / 2))


# -- property probes ---------------------------------------------------------------------------------------
class RowsSumToOne(Property):
    """Attention weights (or any distribution): each row sums to 1 along `axis` (rows that the mask
    hides entirely are all zero). weights(output) picks them; axis(args, kwargs) or an int."""

    kind = "weights"

    def __init__(self, weights=None, axis=-1, what="weights", over="the keys"):
        self.weights, self.axis, self.what, self.over = weights, axis, what, over

    def inspect(self, attempt, probes):
        w = _pick(self.weights, attempt.got)
        if w is None or w.ndim == 0:
            return None
        axis = self.axis(*attempt.case.args, **attempt.case.kwargs) if callable(self.axis) else self.axis
        rtol, atol = _tol(attempt)
        with np.errstate(all="ignore"):
            sums = np.sum(w, axis=axis)
        ok = np.isclose(sums, 1.0, rtol=rtol, atol=max(atol, 1e-7)) | (sums == 0.0)
        if np.all(ok):
            return None
        first = tuple(np.argwhere(~ok)[0])
        detail = f"{self.what}: the {'row' if axis in (-1, w.ndim - 1) else 'slice'} at {_at(first)} sums to {float(sums[first]):.4g}."
        if w.ndim >= 2:
            other = -2 if axis in (-1, w.ndim - 1) else -1
            with np.errstate(all="ignore"):
                cols = np.sum(w, axis=other)
            if np.all(np.isclose(cols, 1.0, rtol=rtol, atol=max(atol, 1e-7))):
                return self.finding(attempt, "wrong_axis", (
                    f"each column of the {self.what} sums to 1, not each row: the normalisation ran over "
                    f"the wrong axis (axis={other}). Each row must be a distribution over {self.over}: "
                    f"normalise along axis={axis}."), detail)
            with np.errstate(all="ignore"):
                whole = np.sum(w, axis=(-2, -1))
            if np.all(np.isclose(whole, 1.0, rtol=rtol, atol=max(atol, 1e-7))):
                return self.finding(attempt, "whole_matrix", (
                    f"the whole matrix of {self.what} sums to 1, not each row: the sum ran over every "
                    f"axis at once. Each row must be a distribution over {self.over}: sum along "
                    f"axis={axis} with keepdims=True."), detail)
        return self.finding(attempt, "rows_do_not_sum_to_one", (
            f"the rows of the {self.what} do not sum to 1: each must be a distribution over {self.over}. "
            "Normalise with a softmax along that axis, and change nothing in the weights after it."), detail)


class MaskedKeysZero(Property):
    """Keys hidden by the mask (-inf) get exactly zero weight. weights(output) and
    mask(args, kwargs) pick the arrays; the mask is broadcast to the weights' shape."""

    kind = "weights"

    def __init__(self, mask, weights=None, what="weights"):
        self.mask, self.weights, self.what = mask, weights, what

    def inspect(self, attempt, probes):
        w = _pick(self.weights, attempt.got)
        mask = self.mask(*attempt.case.args, **attempt.case.kwargs)
        if w is None or mask is None:
            return None
        try:
            hidden = np.broadcast_to(np.isneginf(np.asarray(mask, dtype=np.float64)), w.shape)
        except ValueError:
            return None
        bad = hidden & ~(w == 0.0)
        if not np.any(bad):
            return None
        first = tuple(np.argwhere(bad)[0])
        return self.finding(attempt, "masked_key_gets_weight", (
            "keys that the mask hides get weight. The mask must be added to the scores before the "
            "softmax: exp(-inf) = 0 gives every hidden key exactly zero weight, and the visible ones "
            "still sum to 1."),
            f"{self.what}{_at(first)} is {float(w[first]):.4g} where the mask is -inf.")


def _edit_last(x, axis):
    x = np.array(x, dtype=np.float64, copy=True)
    index = [slice(None)] * x.ndim
    index[axis] = -1
    x[tuple(index)] = x[tuple(index)] * -1.5 + 0.75
    return x


class Causal(Property):
    """Changing the last position of the inputs `edit` (argument indices) changes no earlier output:
    runs the student's code again and compares outputs(value) (arrays with positions on `axis`)
    before the last position. when(args, kwargs) says whether the case is causal at all.
    With expect=False the property is the opposite (bidirectional: an encoder)."""

    kind = "causal"

    def __init__(self, edit=(0,), outputs=None, axis=-2, when=None, expect=True, what="x"):
        self.edit, self.outputs, self.axis, self.when = edit, outputs, axis, when
        self.expect, self.what = expect, what

    def inspect(self, attempt, probes):
        args, kwargs = attempt.args(), attempt.kwargs()
        if self.when is not None and not self.when(*args, **kwargs):
            return None
        edited = list(args)
        for i in self.edit:
            edited[i] = _edit_last(edited[i], self.axis)
        outcome = attempt.rerun(tuple(edited), kwargs)
        if outcome.error is not None:
            return None
        before = [a for a in _arrays(self.outputs(attempt.got) if self.outputs else attempt.got)]
        value = attempt.output(outcome.value)
        after = [a for a in _arrays(self.outputs(value) if self.outputs else value)]
        if not before or len(before) != len(after):
            return None
        moved = 0.0
        for a, b in zip(before, after):
            if a.shape != b.shape or a.ndim == 0 or a.shape[self.axis] < 2:
                return None
            index = [slice(None)] * a.ndim
            index[self.axis] = slice(0, -1)
            with np.errstate(all="ignore"):
                diff = np.abs(a[tuple(index)] - b[tuple(index)])
            diff = np.where(np.isnan(diff), np.inf, diff)
            moved = max(moved, float(np.max(diff)) if diff.size else 0.0)
        rtol, atol = _tol(attempt)
        if self.expect and moved > max(atol, 1e-9) * 10:
            return self.finding(attempt, "future_visible", (
                f"changing only the last position of {self.what} changed the outputs at earlier positions: "
                "a position reads positions after it. Hide every key j > i with the causal mask, added to "
                "the scores before the softmax, so that position i sees only positions 0..i."),
                f"the earlier outputs moved by up to {moved:.3g}.")
        if not self.expect and moved == 0.0:
            return self.finding(attempt, "encoder_is_causal", (
                f"changing the last position of {self.what} changed no earlier output: the earlier positions "
                "never read it. The encoder is bidirectional: every token may look at every other (only "
                "padding is hidden), so no causal mask here."))
        return None


class HeadsCompared(Property):
    """Each head's result compared with the reference heads: names heads in the wrong order, or the
    heads that are right when others are not. heads(value) -> [arrays with the heads on axis -3]
    (weights (..., h, m, n), head outputs (..., h, m, d_k)), for the student's and the reference's."""

    kind = "heads"

    def __init__(self, heads, hint=""):
        self.heads, self.hint = heads, hint

    def inspect(self, attempt, probes):
        try:
            mine, right = self.heads(attempt.got), self.heads(attempt.expected)
        except Exception:
            return None
        rtol, atol = _tol(attempt)
        for name, s, r in zip(("weights", "outputs"), mine, right):
            if s is None or r is None:
                continue
            s, r = np.asarray(s, dtype=np.float64), np.asarray(r, dtype=np.float64)
            if s.shape != r.shape or s.ndim < 3 or s.shape[-3] < 2:
                continue
            h = s.shape[-3]
            match = [[i for i in range(h) if np.allclose(s[..., j, :, :], r[..., i, :, :], rtol=rtol, atol=atol,
                                                         equal_nan=True)] for j in range(h)]
            right_heads = [j for j in range(h) if j in match[j]]
            if len(right_heads) == h:
                continue
            if all(match) and sorted(m[0] for m in match) == list(range(h)):
                pairs = ", ".join(f"your head {j} is head {m[0]}" for j, m in enumerate(match) if m[0] != j)
                return self.finding(attempt, "order", (
                    f"every head's {name} are right, but the heads come out in the wrong order ({pairs}). "
                    "Keep head i in place i, when splitting (columns i*d_k to (i+1)*d_k) and when merging "
                    "(swap the h and position axes back before the reshape)."))
            if right_heads:
                wrong = [j for j in range(h) if j not in right_heads]
                return self.finding(attempt, "some_wrong", (
                    f"some heads' {name} are right and others are not: each head must use its own d_k "
                    "columns of Q, K and V (head i: columns i*d_k to (i+1)*d_k of every position)."
                    + (f" {self.hint}" if self.hint else "")),
                    f"right: head{'s' if len(right_heads) > 1 else ''} {', '.join(map(str, right_heads))}; "
                    f"wrong: head{'s' if len(wrong) > 1 else ''} {', '.join(map(str, wrong))}.")
        return None


class AdditiveMask(Property):
    """An additive mask (0.0 visible, -inf hidden) compared with the reference's, entry by entry:
    values other than 0.0 and -inf, then keys hidden that must be visible, or visible that must be
    hidden. where(index) describes an entry in the course's words, e.g. "query 2, key 3"."""

    kind = "mask"

    def __init__(self, where=None, what="the mask"):
        self.where, self.what = where, what

    def _describe(self, idx):
        return self.where(idx) if self.where else f"entry {_at(idx)}"

    def inspect(self, attempt, probes):
        s, r = _pick(None, attempt.got), _pick(None, attempt.expected)
        if s is None or r is None or s.shape != r.shape:
            return None
        if np.any(np.isnan(s)):
            idx = tuple(np.argwhere(np.isnan(s))[0])
            return self.finding(attempt, "nan", (
                f"{self.what} holds nan. 0 * inf and inf - inf are nan: build the mask with "
                "np.where(hidden, -np.inf, 0.0) rather than by multiplying or subtracting infinities."),
                f"nan at {self._describe(idx)}.")
        if np.any(np.isposinf(s)):
            idx = tuple(np.argwhere(np.isposinf(s))[0])
            return self.finding(attempt, "plus_inf", (
                f"{self.what} holds +inf where -inf belongs. Added to a score, +inf gives that key all the "
                "weight (and inf - inf = nan in the softmax); hidden keys get -inf, so that exp(-inf) = 0."),
                f"+inf at {self._describe(idx)}.")
        odd = ~((s == 0.0) | np.isneginf(s))
        if np.any(odd):
            idx = tuple(np.argwhere(odd)[0])
            return self.finding(attempt, "values", (
                f"{self.what} holds values other than 0.0 and -inf. The course's masks are additive: 0.0 "
                "where a key is visible and -inf where it is hidden, added to the scores before the softmax."),
                f"{float(s[idx]):.4g} at {self._describe(idx)}.")
        extra = np.isneginf(s) & ~np.isneginf(r)
        missing = ~np.isneginf(s) & np.isneginf(r)
        if np.any(extra) and np.any(missing):
            a, b = tuple(np.argwhere(extra)[0]), tuple(np.argwhere(missing)[0])
            return self.finding(attempt, "pattern", (
                f"{self.what} hides the wrong entries: some that must stay visible are hidden, and some that "
                "must be hidden are visible."),
                f"{self._describe(a)} is hidden but must be visible; {self._describe(b)} is visible but must be hidden.")
        if np.any(extra):
            a = tuple(np.argwhere(extra)[0])
            return self.finding(attempt, "hides_visible", (
                f"{self.what} hides entries that must stay visible: every other entry is right."),
                f"{self._describe(a)} is hidden ({int(np.sum(extra))} such entries).")
        if np.any(missing):
            b = tuple(np.argwhere(missing)[0])
            return self.finding(attempt, "shows_hidden", (
                f"{self.what} leaves entries visible that must be hidden: every other entry is right."),
                f"{self._describe(b)} is visible ({int(np.sum(missing))} such entries).")
        return None


class NotFinite(Property):
    """nan or inf in the output where the answer is finite."""

    kind = "not_finite"

    def __init__(self, hint="Look for exp() of a large number (subtract the maximum first), a 0/0, "
                            "inf - inf or 0 * inf."):
        self.hint = hint

    def inspect(self, attempt, probes):
        for s, r in zip(_arrays(attempt.got), _arrays(attempt.expected)):
            if s.shape != r.shape:
                return None
            bad = ~np.isfinite(s) & np.isfinite(r)
            if np.any(bad):
                idx = tuple(np.argwhere(bad)[0])
                return self.finding(attempt, "", (
                    "your output holds nan or inf where the answer is finite: a step overflowed or divided "
                    f"by zero. {self.hint}"),
                    f"{float(s[idx]) if s.ndim == 0 else s[idx]} at index {_at(idx)} ({int(np.sum(bad))} entries).")
        return None


class _Recorder:
    """Stands in for a sublayer: records each call's arguments, then lets the sublayer do its work."""

    def __init__(self, inner):
        self._inner, self.calls = inner, []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self._inner(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class Calls(Property):
    """Runs the student's code again with sublayers replaced by recorders, and lets `judge` read what
    each received: judge({attr: [(args, kwargs), ...]}, args, kwargs) -> (detail key, diagnosis) or
    (detail key, diagnosis, detail) or None. `kind` names the key's kind (default "calls").

    holder: "self" when the sublayers belong to the answer's object (a method exercise), or the index
    of the case argument that holds them (e.g. the block passed to a function). Also runs when the
    student's code raised: what reached a sublayer before it failed often says why."""

    kind = "calls"

    def __init__(self, attrs, judge, holder="self", kind=None):
        self.attrs, self.judge, self.holder = list(attrs), judge, holder
        if kind is not None:
            self.kind = kind

    def find(self, attempt, probes):
        args, kwargs = attempt.args(), attempt.kwargs()
        owner = attempt.student if self.holder == "self" else args[self.holder]
        twin = copy.copy(owner)
        recorders = {}
        for attr in self.attrs:
            recorders[attr] = _Recorder(getattr(owner, attr))
            setattr(twin, attr, recorders[attr])
        if self.holder == "self":
            attempt.rerun(args, kwargs, student=twin)
        else:
            args = list(args)
            args[self.holder] = twin
            attempt.rerun(tuple(args), kwargs)
        verdict = self.judge({a: r.calls for a, r in recorders.items()}, args, kwargs)
        if verdict is None:
            return None
        return self.finding(attempt, *verdict)  # (key, diagnosis) or (key, diagnosis, detail)


# -- errors: the arrays and the step of a failed operation -------------------------------------------------
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@", ast.Pow: "**",
        ast.FloorDiv: "//", ast.Mod: "%"}
_SHAPE_WORDS = ("broadcast", "matmul", "shapes", "reshape", "core dimension", "aligned", "dimension")


def _student_frame(exc):
    """The traceback entry and frame of the last frame that is the student's code."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "encdec" not in name and "site-packages" not in name and "/lib/python" not in name \
                and (name.endswith(".py") or name.startswith("<")):
            found = tb
        tb = tb.tb_next
    return found


def _resolve(node, frame):
    """The array a name (x), or an attribute of one (self.W_q), holds in the frame; never runs code."""
    if isinstance(node, ast.Name):
        value = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    elif isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        holder = _resolve_object(node.value, frame)
        if isinstance(holder, np.ndarray) and node.attr in ("T", "mT"):  # x.T: a view, nothing runs
            return holder.T if node.attr == "T" or holder.ndim < 2 else np.swapaxes(holder, -1, -2)
        value = vars(holder).get(node.attr) if hasattr(holder, "__dict__") else None
    else:
        return None
    return value if isinstance(value, np.ndarray) else None


def _resolve_object(node, frame):
    if isinstance(node, ast.Name):
        return frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    if isinstance(node, ast.Attribute):
        holder = _resolve_object(node.value, frame)
        return vars(holder).get(node.attr) if hasattr(holder, "__dict__") else None
    return None


def _fails(op, a, b):
    """Why `a op b` fails for these shapes, or None when it works."""
    if op == "@":
        if a.ndim == 0 or b.ndim == 0:
            return "@ needs arrays of at least one dimension"
        inner_a, inner_b = a.shape[-1], (b.shape[-2] if b.ndim >= 2 else b.shape[0])
        if inner_a != inner_b:
            return f"the last axis of the left ({inner_a}) must equal the second-to-last of the right ({inner_b})"
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            return "their leading (batch) axes do not broadcast"
        return None
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        pairs = [(x, y) for x, y in zip(reversed(a.shape), reversed(b.shape)) if x != y and 1 not in (x, y)]
        which = f" ({pairs[0][0]} against {pairs[0][1]})" if pairs else ""
        return ("they do not broadcast: lined up from the right, each pair of sizes must be equal or 1" + which)
    return None


class ShapeError(Probe):
    """A shape error in the student's code: names the arrays, their shapes and the operation that
    failed (e.g. "scores (2, 4, 3, 3) + mask (3, 5): they do not broadcast"). Always on. Arrays are
    read from the failing frame; a subclass says which errors, which arrays and which reshapes it reads
    (TorchShapeError)."""

    kind = "shape_error"
    errors = (ValueError,)
    words = _SHAPE_WORDS
    reshapes = ("reshape",)
    library = "NumPy"

    def resolve(self, node, frame):
        return _resolve(node, frame)

    def find(self, attempt, probes):
        exc = attempt.error
        if not isinstance(exc, self.errors) or not any(w in str(exc) for w in self.words):
            return None
        tb = _student_frame(exc)
        if tb is None:
            return None
        frame = tb.tb_frame
        entry = traceback.extract_tb(tb, limit=1)[0]
        raw = linecache.getline(entry.filename, entry.lineno) or entry.line or ""
        snippet = raw.strip()
        if getattr(entry, "colno", None) is not None and entry.lineno == entry.end_lineno \
                and raw[entry.colno:entry.end_colno].strip():
            snippet = raw[entry.colno:entry.end_colno].strip()
        tree = _parsed(snippet, raw.strip())
        if tree is None:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
                a, b = self.resolve(node.left, frame), self.resolve(node.right, frame)
                if a is None or b is None:
                    continue
                op = _OPS[type(node.op)]
                sa, sb = _shape_of(a), _shape_of(b)
                why = _fails(op, _Shaped(sa), _Shaped(sb))
                if why:
                    left, right = ast.unparse(node.left), ast.unparse(node.right)
                    return self.finding(attempt, "matmul" if op == "@" else "broadcast", (
                        f"`{left} {op} {right}` fails: {left} has shape {sa} and {right} has shape {sb}; {why}. "
                        "Print the shapes before that line and compare them with the shapes the docstring gives."))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in self.reshapes:
                a = self.resolve(node.func.value, frame)
                if a is not None:
                    name = ast.unparse(node.func.value)
                    return self.finding(attempt, "reshape", (
                        f"`{ast.unparse(node)}` fails: {name} has shape {_shape_of(a)} ({int(np.prod(_shape_of(a)))} "
                        "numbers), which the shape asked for cannot hold. A reshape keeps the number of entries: "
                        f"check each size you pass (-1 lets {self.library} work one out)."))
        named = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Name, ast.Attribute)):
                a = self.resolve(node, frame)
                text = ast.unparse(node)
                if a is not None and text not in [n for n, _ in named]:
                    named.append((text, _shape_of(a)))
        if not named:
            return None
        shapes = ", ".join(f"{n} {s}" for n, s in named)
        return self.finding(attempt, "shapes", (
            f"a shape error in `{snippet}`, where {shapes}. Compare these shapes with what the operation needs "
            "(the docstring gives the shape of every input and output)."))


def _parsed(*texts):
    """The syntax tree of the first of `texts` that parses, as an expression or else as statements."""
    for text in texts:
        for mode in ("eval", "exec"):
            try:
                return ast.parse(text, mode=mode)
            except SyntaxError:
                continue
    return None


def _shape_of(x):
    return tuple(int(s) for s in x.shape)


class _Shaped:
    """Only a shape (what _fails reads), for arrays and tensors alike."""

    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)


# -- kinds for gradients, training and decoding ------------------------------------------------------------
# Lessons 6-10 add: Combos (every combination of a few knob choices, so that two slips together are
# named too), EachOutput (the variants compared output by output: dK named even when dQ is wrong in
# another way), Invariant (the student's code run again on an input whose answer must not change, or
# must change), DecodedRows (what a decoded batch of token ids must look like: EOS ends a row,
# pads after it, no BOS or pad chosen, no column past the last EOS), and, at the end, FailedProduct (a
# failing `a @ b` named by what its operands are, where two slips fail with one message).
def combos(choices, right=None):
    """Every combination of knob choices but the right one, fewest changes first: a list of
    (name, knobs, diagnosis) for Variants.

    choices: [(knob, [(value, name, words), ...]), ...], the first value of each knob the right one
    (its words unused); the diagnosis joins the words of every knob changed, then `right` (what to do)."""
    knobs = [k for k, _ in choices]
    options = [opts for _, opts in choices]
    out = []
    for pick in itertools.product(*[range(len(o)) for o in options]):
        changed = [i for i, p in enumerate(pick) if p]
        if not changed:
            continue
        name = "+".join(options[i][pick[i]][1] for i in changed)
        words = [options[i][pick[i]][2] for i in changed]
        if len(words) == 1:
            text = words[0][0].upper() + words[0][1:]
        else:
            text = "Two slips together: " + "; and ".join(words) if len(words) == 2 else \
                f"{len(words)} slips together: " + "; ".join(words)
        text = text.rstrip(".") + "." + (f" {right}" if right else "")
        out.append((len(changed), name, {knobs[i]: options[i][pick[i]][0] for i in range(len(knobs))}, text))
    out.sort(key=lambda o: o[0])
    return [(name, knobs_, text) for _, name, knobs_, text in out]


class Combos(Variants):
    """Variants over every combination of a few knobs (see `combos`): a single slip is tried first,
    then two together, so that an answer with two slips is named by both. Key: probe:<kind>:<a+b>."""

    def __init__(self, kind, choices, right=None, most=2):
        options = [o for o in combos(choices, right) if o[0].count("+") < most]
        super().__init__(kind, options)


class EachOutput(Variant):
    """The variants of `inner` (any Variant) compared with one output of a tuple at a time, e.g. dK of
    (dQ, dK, dV): the slip in that output is named even when another output is wrong in another way.
    Reports the first output (in order) whose value one variant gives. Key: probe:<kind>:<output>:<detail>."""

    def __init__(self, inner, names):
        self.inner, self.names = inner, tuple(names)
        self.kind = inner.kind

    def find(self, attempt, probes):
        got, expected = attempt.got, attempt.expected
        if probes.model is None or attempt.error is not None or attempt.postprocess is not None:
            return None
        if not isinstance(got, (tuple, list)) or not isinstance(expected, tuple) or len(got) != len(expected):
            return None
        variants = []
        for detail, diagnosis, knobs in self.inner.variants(attempt, probes):
            value, error = probes.run(attempt, knobs)
            if error is None and isinstance(value, tuple) and len(value) == len(expected):
                variants.append((detail, diagnosis, value))
        for i, name in enumerate(self.names):
            if attempt.is_expected(_with(expected, i, got[i])):
                continue  # this output is right
            for detail, diagnosis, value in variants:
                if not attempt.is_expected(_with(expected, i, value[i])) and attempt.matches(_with(got, i, value[i])):
                    return self.finding(attempt, f"{name}:{detail}", f"in `{name}`: {diagnosis}")
        return None


def _with(values, i, item):
    """The tuple `values` with item i replaced."""
    return tuple(item if j == i else v for j, v in enumerate(values))


class Invariant(Property):
    """The student's code run again on an edited input: what `keep` picks of the output must not
    change (change=False: e.g. a pad appended to the source leaves every real position as it was;
    the last target token changed leaves every earlier position's logits as they were), or must change
    (change=True: e.g. an encoder position must see the positions after it).

    edit(args, kwargs) -> (args, kwargs), or None where the edit does not apply to this case;
    keep(value, args, kwargs) -> the arrays compared (value after the check's postprocess), for the
    original inputs and for the edited ones; name: the detail key; diagnosis: what a failure means."""

    kind = "invariant"

    def __init__(self, name, edit, keep, diagnosis, change=False, kind=None):
        self.name, self.edit, self.keep, self.diagnosis, self.change = name, edit, keep, diagnosis, change
        if kind:
            self.kind = kind

    def inspect(self, attempt, probes):
        args, kwargs = attempt.args(), attempt.kwargs()
        edited = self.edit(args, kwargs)
        if edited is None:
            return None
        new_args, new_kwargs = edited
        outcome = attempt.rerun(tuple(new_args), dict(new_kwargs))
        if outcome.error is not None:
            return None
        before = _arrays(self.keep(attempt.got, attempt.args(), attempt.kwargs()))
        after = _arrays(self.keep(attempt.output(outcome.value), new_args, new_kwargs))
        if not before or len(before) != len(after) or any(a.shape != b.shape for a, b in zip(before, after)):
            return None
        rtol, atol = (1e-4, 1e-6) if attempt.float32 else (1e-7, 1e-9)
        moved = 0.0
        for a, b in zip(before, after):
            with np.errstate(all="ignore"):
                same = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
                diff = np.where(same, 0.0, np.abs(a - b))
            diff = np.where(np.isnan(diff), np.inf, diff)
            moved = max(moved, float(np.max(diff)) if diff.size else 0.0)
        if self.change and moved == 0.0:
            return self.finding(attempt, self.name, self.diagnosis)
        if not self.change and moved > 0.0:
            return self.finding(attempt, self.name, self.diagnosis, f"outputs that must not change moved by up to {moved:.3g}.")
        return None


class DecodedRows(Property):
    """Decoded token ids (..., L) read row by row against what decoding must give, whatever the model
    said: no BOS or pad chosen before the row's EOS; after the first EOS only pads; no column after
    the last row ended (and none past max_len); BOS not written as the first token.

    ids(attempt) -> the (B, L) ids (2-D) or None; special(attempt) -> dict(bos=, eos=, pad=, max_len=)."""

    kind = "decoded"

    def __init__(self, ids, special):
        self.ids, self.special = ids, special

    def inspect(self, attempt, probes):
        mine, right = self.ids(attempt, attempt.got), self.ids(attempt, attempt.expected)
        s = self.special(attempt)
        if mine is None or right is None:
            return None
        mine = np.atleast_2d(np.asarray(mine))
        if mine.dtype.kind not in "iu" and not (mine.dtype.kind == "f" and np.all(mine == np.round(mine))):
            return None
        mine = mine.astype(np.int64)
        right = np.atleast_2d(np.asarray(right)).astype(np.int64)
        bos, eos, pad, max_len = s["bos"], s["eos"], s["pad"], s.get("max_len")
        if mine.shape[-1] and np.all(mine[:, 0] == bos) and not np.all(right[:, 0] == bos):
            return self.finding(attempt, "bos_first", (
                "every row of your output starts with BOS. BOS is the decoder's first input, not a generated "
                "token: return only the tokens the model chose, from the first step on."))
        ended = np.cumsum(mine == eos, axis=-1) - (mine == eos) > 0  # strictly after the first EOS
        if np.any(ended & (mine != pad)):
            row = int(np.argwhere(ended & (mine != pad))[0][0])
            return self.finding(attempt, "written_after_eos", (
                "a row goes on with real tokens after its EOS. A row is finished at its first EOS: every "
                "position after it holds the pad id, while the other rows go on."),
                f"row {row}: {mine[row].tolist()}.")
        before_end = ~ended & (mine != eos)
        for token, name in ((bos, "BOS"), (pad, "the pad token")):
            if np.any(before_end & (mine == token)):
                row = int(np.argwhere(before_end & (mine == token))[0][0])
                return self.finding(attempt, "special_chosen", (
                    f"{name} is chosen as a generated token. BOS and the pad token are never generated: set "
                    "their logits to -inf before the argmax (or the log-softmax), at every step."),
                    f"row {row}: {mine[row].tolist()}.")
        if max_len is not None and mine.shape[-1] > max_len:
            return self.finding(attempt, "past_max_len", (
                f"your output has {mine.shape[-1]} columns, more than max_len = {max_len}: generate at most "
                "max_len tokens (the loop runs max_len times at most)."))
        if mine.shape[-1] > 0 and np.all(np.any(mine[:, :-1] == eos, axis=-1)) and np.all(mine[:, -1] == pad):
            return self.finding(attempt, "runs_after_all_ended", (
                "every row had ended (EOS) before your last column, which is all padding: stop the loop as "
                "soon as every row has produced its EOS, rather than running on to max_len."))
        if mine.shape[-1] < right.shape[-1] and np.any(~np.any(mine == eos, axis=-1)):
            return self.finding(attempt, "stopped_too_early", (
                "your output stops while a row has not yet produced EOS (and max_len is not reached): stop "
                "only when every row has ended, or after max_len tokens."))
        return None  # no rule is broken: the tokens themselves differ


_TORCH_SHAPE_WORDS = ("shapes cannot be multiplied", "must match the size", "size mismatch", "is invalid for input of size",
                      "Expected size", "doesn't match the broadcast shape", "Dimension out of range",
                      "The size of tensor")


def _resolve_tensor(node, frame):
    """The array or tensor a name (x) or an attribute chain (self.W_q, b.cross_attn.W_k) holds in the frame."""
    if isinstance(node, ast.Name):
        value = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    elif isinstance(node, ast.Attribute):
        holder = _resolve_object(node.value, frame)
        if holder is None:
            return None
        try:
            value = vars(holder).get(node.attr)
            if value is None:
                value = getattr(type(holder), "__getattr__", None) and holder.__getattr__(node.attr)
        except Exception:
            return None
    else:
        return None
    shape = getattr(value, "shape", None)
    return value if shape is not None and hasattr(value, "ndim") else None


class TorchShapeError(ShapeError):
    """A torch shape error in the student's code (RuntimeError: "mat1 and mat2 shapes cannot be
    multiplied", "The size of tensor a (5) must match ...", "shape '[2, 3]' is invalid for input of
    size 8"): names the tensors, their shapes and the step that failed, like ShapeError for NumPy.
    Tensors are read from the failing frame (names and attribute chains, such as b.self_attn.W_q)."""

    errors = (RuntimeError, IndexError)
    words = _TORCH_SHAPE_WORDS
    reshapes = ("reshape", "view")
    library = "torch"

    def resolve(self, node, frame):
        return _resolve_tensor(node, frame)


ERROR_PROBES = [ShapeError(), TorchShapeError()]  # always on, after a check's own probes


class Proportional(Property):
    """The student's output is the right one times a constant c (every array of it, the same c): a
    factor wrong. Named when c is one of candidates(args, kwargs) -> [(label, factor, diagnosis)],
    else reported with its value. No model is run (c is fitted in closed form), so it is cheap where
    the model is not. Key: probe:scale:<label> or probe:scale:other."""

    kind = "scale"

    def __init__(self, what, candidates=None, right="1"):
        self.what, self.candidates, self.right = what, candidates, right

    def inspect(self, attempt, probes):
        mine, ref = _arrays(attempt.got), _arrays(attempt.expected)
        if not mine or len(mine) != len(ref) or any(a.shape != b.shape for a, b in zip(mine, ref)):
            return None
        s = np.concatenate([a.ravel() for a in mine])
        r = np.concatenate([b.ravel() for b in ref])
        if not (np.all(np.isfinite(s)) and np.all(np.isfinite(r))):
            return None
        rr = float(r @ r)
        if rr == 0.0:
            return None
        c = float(s @ r) / rr
        rtol, atol = _tol(attempt)
        if abs(c) < 1e-12 or np.allclose(c, 1.0, rtol=1e-9, atol=0) or not np.allclose(s, c * r, rtol=rtol, atol=atol):
            return None
        if c < 0 and np.isclose(c, -1.0, rtol=1e-6):
            return self.finding(attempt, "sign", f"your output ({self.what}) has the wrong sign: it is exactly the "
                                                 "right result times -1.")
        for label, factor, why in (self.candidates(*attempt.case.args, **attempt.case.kwargs) if self.candidates else []):
            if why and np.isclose(c, factor, rtol=1e-6):
                return self.finding(attempt, label, why)
        return self.finding(attempt, "other", (
            f"your output ({self.what}) is exactly the right result times {c:.4g}: a factor is wrong (or applied twice, or "
            f"missing). Check every constant that multiplies it."))


class FailedProduct(Probe):
    """A product `a @ b` that fails in the student's code (read from the failing line, as ShapeError reads
    it), named by what its operands are: products(attempt) -> [(left shape, right shape, detail, diagnosis)],
    the shapes an input-shaped left and right operand have in that slip (e.g. dK left untransposed: dscores,
    shaped like the weights, @ Q). Named only when exactly one product has the operands' shapes, so that
    two slips that fail with one message (weights @ dout, dscores @ Q) are told apart by their operands.
    Key: probe:<kind>:<detail>; or, where the diagnosis given is a catalog entry (anything with .key and
    .diagnosis), that entry's key and words, so that one slip is recorded once."""

    def __init__(self, kind, products):
        self.kind, self.products = kind, products

    def find(self, attempt, probes):
        exc = attempt.error
        if not isinstance(exc, ValueError) or not any(w in str(exc) for w in _SHAPE_WORDS):
            return None
        tb = _student_frame(exc)
        if tb is None:
            return None
        entry = traceback.extract_tb(tb, limit=1)[0]
        line = (linecache.getline(entry.filename, entry.lineno) or entry.line or "").strip()
        try:
            tree = ast.parse(line)
        except SyntaxError:
            return None
        products = [(tuple(left), tuple(right), detail, diagnosis)
                    for left, right, detail, diagnosis in self.products(attempt)]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)):
                continue
            a, b = _resolve(node.left, tb.tb_frame), _resolve(node.right, tb.tb_frame)
            if a is None or b is None or not _fails("@", a, b):
                continue
            fits = [p for p in products if p[0] == a.shape and p[1] == b.shape]
            if len(fits) == 1:
                _, _, detail, diagnosis = fits[0]
                where = f"`{ast.unparse(node)}` fails: shapes {a.shape} and {b.shape}."
                if hasattr(diagnosis, "key") and hasattr(diagnosis, "diagnosis"):
                    return Finding(attempt.exercise, diagnosis.key, diagnosis.diagnosis, where)
                return self.finding(attempt, detail, diagnosis, where)
        return None
