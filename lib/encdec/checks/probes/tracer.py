"""The answer's and the reference's values, line by line: run again on a failing case under a tracer
(sys.settrace), a function records every array a line of theirs assigns (and, for the reference, every
sub-expression of its lines), with the line, its text and its pass through a loop. divergence.py matches
the two and words where the answer leaves the right computation.

Arrays and torch tensors alike. The tracer runs within a time and a memory budget, never raises or
prints, and never changes a score.
"""

import ast
import contextlib
import io
import linecache
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from ..clock import Deadline

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
    deadline: Deadline = None
    stopped: bool = False
    passes: dict = field(default_factory=dict)  # (function, line) -> times it ran
    numbers_set: list = field(default_factory=list)  # (len(values) then, name, line, value): plain numbers assigned


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


def student_code(filename):
    """True for code the student wrote: not the library, not NumPy, torch or Python itself."""
    return not (filename.startswith(_LIBRARY) or "site-packages" in filename or "/lib/python" in filename
                or filename.startswith("<frozen"))


def reference_code(filename):
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
        if not _without_side_effects(node, frame):
            continue
        try:
            result = eval(compile(ast.Expression(node), "<part>", "eval"), frame.f_globals, dict(frame.f_locals))
        except Exception:
            continue
        array = _as_array(result)
        if array is not None and array.size >= SMALL and trace.numbers + array.size <= BUDGET_NUMBERS:
            trace.numbers += array.size
            trace.values.append(Value("", lineno, "(part of a line)", array, 1, frame.f_code.co_name))


_CHANGES_IN_PLACE = {"fill", "sort", "resize", "put", "itemset", "setfield", "partition", "setflags", "append",
                     "extend", "update", "pop", "clear", "add", "insert", "remove"}


def _without_side_effects(node, frame):
    """Whether evaluating `node` a second time leaves the run as it was: every call in it is NumPy's (a
    ufunc or a function of numpy), an array's or tensor's method that makes a new one, or a builtin. A call
    to anything else (a random generator's draw, a cache's append, a model's sublayer) may change state,
    and the reference's run must stay the run it would have been."""
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        try:
            fn = eval(compile(ast.Expression(call.func), "<callee>", "eval"), frame.f_globals, dict(frame.f_locals))
        except Exception:
            return False
        owner = getattr(fn, "__self__", None)
        name = getattr(fn, "__name__", "")
        if isinstance(fn, np.ufunc):
            continue
        if owner is None or isinstance(owner, type(np)):
            module = getattr(fn, "__module__", None) or ""
            if module.startswith("numpy") or module == "builtins":
                continue
            return False
        arrays = isinstance(owner, np.ndarray) or type(owner).__module__.startswith("torch")
        if not arrays or name in _CHANGES_IN_PLACE or name.endswith("_"):
            return False
    return True


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
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if before.get(name) != ("number", value) and lineno is not None:
                    trace.numbers_set.append((len(trace.values), name, lineno, value))
                now[name] = ("number", value)
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
                                      array, passes.get((frame.f_code, lineno), 1), frame.f_code.co_name,
                                      frame.f_code))

    def local(frame, event, arg):
        if trace.stopped or trace.deadline.passed():
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
    trace = Trace(deadline=Deadline(seconds))
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
