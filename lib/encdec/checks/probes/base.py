"""The base of the probes: a finding, the knobs of a model, an exercise's declared probes, the two
families (Variant, Property), and the audit that proves no probe misfires."""

import contextlib
import copy
import io
import warnings
from dataclasses import dataclass, field

import numpy as np



@dataclass(frozen=True)
class Finding:
    """What a probe found: recorded like a catalog mistake (exercise, key, diagnosis). `detail` is
    printed before the diagnosis (where in this case), and not recorded."""

    exercise: str
    key: str
    diagnosis: str
    detail: str = ""
    fixes: tuple = field(default=(), compare=False, repr=False)  # the repair's ((edit, copy), ...), re-checked
    source: object = field(default=None, compare=False, repr=False)  # the answer's function the edits are of
    weak: bool = field(default=False, compare=False, repr=False)  # says what is off, not where: the repair first


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
        """The first finding of the declared probes; None if none fits (the order after them: judging.py)."""
        for probe in self.probes:
            finding = probe.safe_find(attempt, self)
            if finding is not None:
                return finding
        return None


NO_PROBES = Probes()


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
    symptom = False  # True: it names a symptom (nan in the output), tried after the repair (judging.py)
    exact = False  # True: it reproduces the answer (a variant) or reads what it did (Calls), not an effect

    def safe_find(self, attempt, probes):
        try:
            with quiet():
                return self.find(attempt, probes)
        except Exception:
            return None

    def find(self, attempt, probes):
        raise NotImplementedError

    def finding(self, attempt, detail_key, diagnosis, detail="", weak=False):
        """weak: the finding says what is off, not where (a fitted factor, the right array reduced): the
        repair, which can quote the line, is tried first (judging.py)."""
        key = f"probe:{self.kind}" + (f":{detail_key}" if detail_key else "")
        return Finding(attempt.exercise, key, diagnosis, detail, weak=weak)


class Variant(Probe):
    """A probe that tries variants of the model: `variants(attempt, probes)` yields
    (detail key, diagnosis, Knobs); the first whose output is the student's is the finding."""

    exact = True
    weak = frozenset()  # the details (or parts of a combination) that say what is off, not where: the repair first

    def variants(self, attempt, probes):
        return ()

    def find(self, attempt, probes):
        if probes.model is None:
            return None
        for detail, diagnosis, knobs in self.variants(attempt, probes):
            if self.matches(attempt, probes, knobs) and self.confirmed(attempt, probes, detail):
                if self.weak & set(str(detail).split("+")):
                    return self.finding(attempt, detail, diagnosis, weak=True)
                return self.finding(attempt, detail, diagnosis)
        return None

    needs_confirmation = False  # True: a finding needs another failing case it also explains

    def confirmed(self, attempt, probes, detail):
        """False when the same variant does not explain the answer on one of the part's next three cases
        where the answer also fails: a variant that fits one case by a coincidence of its numbers (d_k ** 0.25
        = sqrt(d_v) when d_k = 4 and d_v = 2; every block reading the embedding, on two-block models, for
        a loop that skips the first block) is not the slip. True when it explains every such case; when no
        other case can tell, True unless the kind needs confirmation (a factor named after a size, which
        numbers alone can imitate)."""
        if attempt.reference is None:
            return True
        told = False
        for case in getattr(attempt, "others", ())[:3]:
            try:
                other = attempt.on(case)
            except Exception:
                continue
            if other.error is None and other.is_expected(other.got):
                continue  # the answer is right there: that case tells nothing
            for again, _, knobs in self.variants(other, probes):
                if again == detail:
                    value, error = probes.run(other, knobs)
                    if error is not None and other.error is None:
                        break  # the variant cannot run there (nothing to shift in one token): it tells nothing
                    if not self.matches(other, probes, knobs):
                        return False
                    told = True
                    break
            # the variant does not apply there (a swap of arrays that differ in shape on that case): it tells nothing
        return told or not self.needs_confirmation

    @staticmethod
    def matches(attempt, probes, knobs):
        value, error = probes.run(attempt, knobs)
        if attempt.error is not None:
            return error is not None and type(error) is type(attempt.error) and str(error) == str(attempt.error)
        return error is None and not attempt.is_expected(value) and attempt.matches(value) \
            and informative(value, attempt.expected)


def informative(value, expected):
    """True where `value` differs from the right `expected` in some finite entry: a variant whose every difference
    is nan or inf matches any answer that overflows or divides by zero there, whatever its slip."""
    pairs = [(a, b) for a, b in zip(_arrays(value), _arrays(expected)) if a.shape == b.shape]
    if not pairs:
        return True
    with np.errstate(all="ignore"):
        return any(np.any((a != b) & np.isfinite(a)) for a, b in pairs)


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


