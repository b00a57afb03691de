"""The first line where an answer leaves the right computation: when a case fails and neither the
catalog nor a probe names the cause, the answer and the reference are run again on the case under a
tracer (sys.settrace) that records every array a line of theirs assigns, and the answer's values are
matched, in the order its lines made them, against the reference's. The first value that matches none
is where the answer went wrong: its line is quoted, its variable named, the nearest right value given
with how the two differ, and the values before it that were still right are listed.

A value matches a reference value when it holds the same numbers: equal, transposed (any order of the
axes), reshaped (the same numbers in the same order) or broadcast. Arrays and torch tensors alike; in a
loop, the first pass that goes wrong. The tracer runs within a time and a memory budget, never raises
or prints, and never changes a score: it only words the likely cause.
"""

import ast
import contextlib
import io
import itertools
import linecache
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .base import Finding, quiet

BUDGET_SECONDS = 1.5  # for the two traced runs together
BUDGET_NUMBERS = 4_000_000  # numbers kept, answer and reference together
SMALL = 2  # arrays with fewer numbers (a scalar, a pair) are too common to tell anything apart
_LIBRARY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # lib/encdec


@dataclass(eq=False)
class Value:
    """One array a line assigned: the variable, the line (number and text), its pass through that line."""

    name: str
    lineno: int
    line: str
    array: np.ndarray
    passes: int = 1
    function: str = ""
    code: object = None  # the code object of its function (for how often its line ran)


@dataclass
class Trace:
    values: list = field(default_factory=list)
    numbers: int = 0
    deadline: float = 0.0
    stopped: bool = False
    passes: dict = field(default_factory=dict)  # (function, line) -> times it ran


def _as_array(x):
    """A float64 copy of an array or tensor, or None for anything else."""
    if isinstance(x, np.ndarray) and x.dtype != object and x.size:
        return np.array(x, dtype=np.float64) if np.issubdtype(x.dtype, np.number) or x.dtype == bool else None
    if type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "numel"):
        try:
            if x.numel() and not x.is_complex():
                return x.detach().to("cpu").double().numpy().copy()
        except Exception:
            return None
    return None


def _student_code(filename):
    """True for code the student wrote: not the library, not NumPy, torch or Python itself."""
    return not (filename.startswith(_LIBRARY) or "site-packages" in filename or "/lib/python" in filename
                or filename.startswith("<frozen"))


def _reference_code(filename):
    """Every frame of the reference's run but NumPy's, torch's and Python's own."""
    return not ("site-packages" in filename or "/lib/python" in filename or filename.startswith("<frozen"))


_STATEMENTS = {}  # filename -> {line number: the statement that starts there}
_PARTS = (ast.BinOp, ast.Call, ast.UnaryOp, ast.Subscript)


def _statement(filename, lineno):
    """The statement that starts at `lineno` of `filename` (parsed once per file), or None."""
    if filename not in _STATEMENTS:
        table = {}
        try:
            tree = ast.parse("".join(linecache.getlines(filename)))
            for node in ast.walk(tree):
                if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.If, ast.For,
                                                                         ast.While, ast.With, ast.Try)):
                    table.setdefault(node.lineno, node)
        except (SyntaxError, ValueError):
            pass
        _STATEMENTS[filename] = table
    return _STATEMENTS[filename].get(lineno)


def _parts(trace, frame, lineno):
    """Every array a sub-expression of the statement at `lineno` evaluates to (the reference's steps inside
    one line, `x / rms` of `x / rms * gamma`), evaluated on the frame's variables before the line runs."""
    stmt = _statement(frame.f_code.co_filename, lineno)
    value = getattr(stmt, "value", None)
    if value is None:
        return
    for node in ast.walk(value):
        if not isinstance(node, _PARTS) or (isinstance(node, ast.Call) and not node.args):
            continue
        try:
            result = eval(compile(ast.Expression(node), "<part>", "eval"), frame.f_globals, dict(frame.f_locals))
        except Exception:
            continue
        array = _as_array(result)
        if array is not None and array.size >= SMALL and trace.numbers + array.size <= BUDGET_NUMBERS:
            trace.numbers += array.size
            trace.values.append(Value("", lineno, "(part of a line)", array, 1, frame.f_code.co_name))


def _tracer(trace, wanted, parts=False):
    """A sys.settrace function recording, for frames whose file `wanted(filename)` accepts, the arrays each
    line assigns (seen at the next line event, or at the return)."""
    last = {}  # frame -> (lineno, {name: id and checksum of the value})
    passes = trace.passes

    def snapshot(frame, lineno):
        before = last.get(frame, (None, {}))[1]
        now = {}
        for name, value in frame.f_locals.items():
            if name.startswith("__"):
                continue
            array = _as_array(value)
            if array is None or array.size < SMALL:
                continue
            key = (id(value), array.shape, float(np.nansum(np.abs(array))))
            now[name] = key
            if before.get(name) != key and lineno is not None:
                if trace.numbers + array.size > BUDGET_NUMBERS:
                    trace.stopped = True
                    continue
                trace.numbers += array.size
                count = passes.get((frame.f_code, lineno), 1)
                trace.values.append(Value(name, lineno, linecache.getline(frame.f_code.co_filename, lineno).strip(),
                                          array, count, frame.f_code.co_name))
                trace.values[-1].code = frame.f_code  # noqa: E501
        return now

    def returned(frame, value):
        """The arrays a return statement gives back (each item of a returned tuple), as values of that line."""
        items = value if isinstance(value, (tuple, list)) else (value,)
        for k, item in enumerate(items):
            array = _as_array(item)
            if array is None or array.size < SMALL or trace.numbers + array.size > BUDGET_NUMBERS:
                continue
            trace.numbers += array.size
            name = "the value returned" + (f" (item {k + 1})" if len(items) > 1 else "")
            lineno = frame.f_lineno
            trace.values.append(Value(name, lineno, linecache.getline(frame.f_code.co_filename, lineno).strip(),
                                      array, passes.get((frame.f_code, lineno), 1), frame.f_code.co_name))

    def local(frame, event, arg):
        if trace.stopped or time.perf_counter() > trace.deadline:
            trace.stopped = True
            return None
        if event in ("line", "return"):
            previous = last.get(frame, (None, {}))[0]
            if previous is not None:
                passes[(frame.f_code, previous)] = passes.get((frame.f_code, previous), 0) + 1
            last[frame] = (frame.f_lineno if event == "line" else None, snapshot(frame, previous))
            if event == "line" and parts:
                _parts(trace, frame, frame.f_lineno)
            if event == "return" and arg is not None:
                returned(frame, arg)
        return local

    def call(frame, event, arg):
        if trace.stopped:
            return None
        if event == "call" and wanted(frame.f_code.co_filename):
            for name, value in frame.f_locals.items():  # the arguments, as they come in
                array = _as_array(value)
                if array is not None and array.size >= SMALL and trace.numbers + array.size <= BUDGET_NUMBERS:
                    trace.numbers += array.size
                    trace.values.append(Value(name, frame.f_code.co_firstlineno, "(an argument)", array, 0,
                                              frame.f_code.co_name))
            last[frame] = (None, {})
            return local
        return None

    return call


def traced(fn, args, kwargs, wanted, seconds, parts=False):
    """The values fn's own frames assign (those `wanted` accepts; with `parts`, every sub-expression of their
    lines too), run quietly; the call's outcome is ignored."""
    trace = Trace(deadline=time.perf_counter() + seconds)
    previous = sys.gettrace()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), np.errstate(all="ignore"):
            sys.settrace(_tracer(trace, wanted, parts))
            try:
                fn(*args, **kwargs)
            except BaseException:  # noqa: BLE001 - what raised is the student's; the values so far still count
                pass
            finally:
                sys.settrace(previous)
    except BaseException:  # noqa: BLE001
        sys.settrace(previous)
    return trace


# -- matching ----------------------------------------------------------------------------------------------
def _close(a, b):
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True)


def relation(mine, right):
    """How `mine` holds the same numbers as `right`: "equal", "transposed", "reshaped", "broadcast", or None."""
    if _close(mine, right):
        return "equal"
    if mine.size == right.size:
        if mine.ndim == right.ndim and mine.ndim <= 5 and sorted(mine.shape) == sorted(right.shape):
            for axes in itertools.permutations(range(mine.ndim)):
                if axes != tuple(range(mine.ndim)) and _close(np.transpose(right, axes), mine):
                    return "transposed"
        if _close(mine.reshape(-1), right.reshape(-1)):
            return "reshaped"
    for small, big in ((right, mine), (mine, right)):
        try:
            if small.size < big.size and _close(np.broadcast_to(small, big.shape), big):
                return "broadcast"
        except ValueError:
            pass
    return None


def _matches(value, pool):
    """[(index in pool, relation)] of every reference value `value` holds the same numbers as."""
    found = []
    for i, right in enumerate(pool):
        how = relation(value.array, right.array)
        if how:
            found.append((i, how))
    return found


_NAMED_FACTORS = [(-1.0, "-1 (a sign)"), (2.0, "2"), (0.5, "1/2")]


def difference(mine, right, pool):
    """In words, how `mine` differs from `right` (same shape): a constant factor, a sign, a missing term
    (another reference value), another axis's reduction, or the entries that differ."""
    a, b = mine.reshape(-1), right.reshape(-1)
    if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.dot(b, b) > 0:
        c = float(np.dot(a, b) / np.dot(b, b))
        if np.allclose(a, c * b, rtol=1e-5, atol=1e-8) and not np.isclose(c, 1.0):
            named = next((text for value, text in _NAMED_FACTORS if np.isclose(c, value)), None)
            return f"it is the right value times a constant factor, {c:.5g}" + (f" = {named}" if named else "")
        for term in pool:
            t = term.array
            if t.shape == right.shape and t is not right and _close(mine + t, right) and term.name.isidentifier():
                return f"it lacks a term: adding `{term.name}` would give the right value"
            if t.shape == right.shape and t is not right and _close(mine - t, right) and term.name.isidentifier():
                return f"it has a term too many: it is the right value plus `{term.name}`"
    bad = ~np.isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True)
    if bad.any():
        idx = np.unravel_index(int(np.argmax(bad)), mine.shape)
        return (f"{int(bad.sum())} of {bad.size} entries differ, the first at index {tuple(int(i) for i in idx)}: "
                f"{mine[idx]:.6g} where the right value has {right[idx]:.6g}")
    return "its values differ"


def nearest(value, pool):
    """The reference value of the same shape closest to `value`: one it is proportional to first (a factor
    is the likeliest slip), else the one with the smallest largest difference; None when no shape fits."""
    same = [right for right in pool if right.array.shape == value.array.shape]
    for right in same:
        a, b = value.array.reshape(-1), right.array.reshape(-1)
        if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.dot(b, b) > 0:
            c = float(np.dot(a, b) / np.dot(b, b))
            if not np.isclose(c, 1.0) and np.allclose(a, c * b, rtol=1e-5, atol=1e-8):
                return right
    best, score = None, None
    for right in same:  # the most entries equal first, then the smallest largest difference
        equal = int(np.sum(np.isclose(value.array, right.array, rtol=1e-5, atol=1e-8, equal_nan=True)))
        with np.errstate(all="ignore"):
            gap = float(np.nanmax(np.abs(value.array - right.array))) if value.array.size else np.inf
        key = (-equal, gap if np.isfinite(gap) else np.inf)
        if score is None or key < score:
            best, score = right, key
    return best


def _where(value, passes=None):
    """'line 6' or, for a line that ran more than once (in a loop), 'line 6, pass 2 of the loop'."""
    runs = (passes or {}).get((getattr(value, "code", None), value.lineno), 1)
    loop = f", pass {value.passes} of the loop" if runs > 1 or value.passes > 1 else ""
    return f"line {value.lineno}{loop}"


def locate(attempt, reference, seconds=BUDGET_SECONDS):
    """A Finding naming the first line of the answer whose value matches no value of the reference on this
    case, or None (nothing traced, every value found, the budget spent). Never raises."""
    try:
        with quiet():
            return _locate(attempt, reference, seconds)
    except Exception:  # the tracer is an extra: the check stands without it
        return None


def _locate(attempt, reference, seconds):
    if attempt.student is None or reference is None:
        return None
    mine = traced(attempt.student, attempt.args(), attempt.kwargs(), _student_code, seconds / 2)
    right = traced(reference, attempt.args(), attempt.kwargs(), _reference_code, seconds / 2, parts=True)
    assigned = [v for v in mine.values if v.line != "(an argument)"]
    if not assigned or not right.values:
        return None
    pool = right.values
    # Walk the answer's values in order. A value is right when it matches a value the reference makes at or
    # after the last one matched (progress), neutral when it only matches an earlier one (an input, a mask
    # made again), and wrong when it matches none. A wrong value is forgiven when a later right value is
    # computed from it (a reciprocal where the reference divides, then used right): it was another right
    # way. The slip is the first wrong value nothing right was computed from.
    position, matched, pending = -1, [], []
    for k, value in enumerate(assigned):
        found = _matches(value, pool)
        ahead = [(i, how) for i, how in found if i >= position]
        if ahead:
            position = ahead[0][0]
            matched.append((k, value, ahead[0][1]))
            used = _names(value.line)
            pending = [(j, w) for j, w in pending if w.name not in used]
        elif not found:
            pending.append((k, value))
    if not pending:
        return None
    first, value = pending[0]
    near = nearest(value, pool)
    said = f"`{value.line}` ({_where(value, mine.passes)}) gives {_called(value)} the shape {value.array.shape}, "
    if near is not None:
        said += f"and no right value along the way holds its numbers: {difference(value.array, near.array, pool)}."
    else:
        said += "which no value of the right computation has."
    right_so_far = [f"{_called(v)} on {_where(v, mine.passes)}" + (f" (as the right value {how})" if how != "equal" else "")
                    for k, v, how in matched if k < first][-3:]
    if right_so_far:
        said += " Up to there your values are right: " + ", ".join(right_so_far) + "."
    said += " Check that line against the formula."
    return Finding(attempt.exercise, "trace:line", said, f"The first value that goes wrong is {_called(value)}.")


def _names(line):
    """The names a line of code reads (its identifiers), for telling which values a value was made from."""
    try:
        tree = ast.parse(line.strip().rstrip(":").removeprefix("return "), mode="exec")
    except SyntaxError:
        import re
        return set(re.findall(r"[A-Za-z_]\w*", line))
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _called(value):
    return value.name if value.name.startswith("the value returned") else f"`{value.name}`"
