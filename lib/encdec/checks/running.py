"""Running the student's code: safely, and watching for delegation.

`run_student` calls an answer with warnings captured, stdout and stderr redirected (nbgrader gives zero to a
test cell that writes to stderr) and every exception caught, a student's sys.exit() included: the call's
Outcome holds its value, its error (with the line of the student's code that raised), its warnings and what
it printed. With `forbidden` reference functions, a call into one of them stops the answer and is reported as
delegation (`reference_allowed()` lifts that, for tests). `_caller_namespace` finds the notebook's globals,
where a checker looks up the answer by name.
"""

import contextlib
import io
import sys
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np


# -- finding the student's answer ----------------------------------------------------------------
def _caller_namespace():
    """Globals of the first frame outside the encdec.checks package: the notebook's namespace."""
    frame = sys._getframe(1)
    package = __name__.rsplit(".", 1)[0]
    while frame is not None and frame.f_globals.get("__name__", "").startswith(package):
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}


# -- running student code -----------------------------------------------------------------------
class Delegated(BaseException):
    """The student's code called the reference implementation it is being checked against."""


@dataclass
class Outcome:
    value: object = None
    error: BaseException = None
    error_text: str = ""
    warnings: list = field(default_factory=list)
    printed: str = ""
    delegated: str = ""


def _student_traceback(exc):
    """The last frame of the traceback that is the student's code (not numpy, not encdec)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if "encdec" not in f.filename and "site-packages" not in f.filename
            and "/lib/python" not in f.filename and not f.filename.endswith((".pyx", ".pxd"))
            and (f.filename.endswith(".py") or f.filename.startswith("<"))]
    where = ""
    if mine:
        f = mine[-1]
        where = f" (in {f.name}, line {f.lineno}: {f.line.strip() if f.line else ''})"
    return f"{type(exc).__name__}: {exc}{where}"


_REFERENCE_ALLOWED = []


@contextlib.contextmanager
def reference_allowed():
    """Tests only: answers may call the reference inside (a test's mutant built from the reference with
    one argument pinned, tests/test_visible_cases.py), which is otherwise refused as delegation."""
    _REFERENCE_ALLOWED.append(True)
    try:
        yield
    finally:
        _REFERENCE_ALLOWED.pop()


def _materialized(value):
    """The answer's result as plain arrays, made while the watch for delegation is on: an object of the answer's
    own making that turns into an array (`__array__`) does so here, not later in the comparison, where a call
    to the reference inside it would go unseen. Arrays, numbers, tensors and everything else stay as they are."""
    if type(value) in (tuple, list):
        return type(value)(_materialized(v) for v in value)
    kind = type(value)
    if hasattr(kind, "__array__") and kind.__module__.split(".")[0] not in ("numpy", "torch", "builtins"):
        try:
            return np.asarray(value)  # a Delegated raised inside is a BaseException: it goes on up
        except Exception:
            return value
    return value


def run_student(fn, args=(), kwargs=None, forbidden=()):
    """Call fn(*args, **kwargs) safely: capture warnings, prints and exceptions; detect delegation.

    `forbidden` are reference functions whose code must not run inside the student's call.
    """
    kwargs = kwargs or {}
    forbidden = () if _REFERENCE_ALLOWED else forbidden
    forbidden_codes = {getattr(f, "__code__", None): getattr(f, "__qualname__", "?") for f in forbidden}
    forbidden_codes.pop(None, None)
    hit = []

    def profiler(frame, event, arg):
        if event == "call" and frame.f_code in forbidden_codes:
            hit.append(forbidden_codes[frame.f_code])
            sys.setprofile(None)
            raise Delegated(forbidden_codes[frame.f_code])

    out = Outcome()
    buffer = io.StringIO()
    previous = sys.getprofile()
    with warnings.catch_warnings(record=True) as caught, \
            contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        warnings.simplefilter("always")
        try:
            if forbidden_codes:
                sys.setprofile(profiler)
            try:
                out.value = _materialized(fn(*args, **kwargs))
            finally:
                sys.setprofile(previous)
        except Delegated:
            pass
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a student's sys.exit() must not end grading
            out.error = exc
            out.error_text = _student_traceback(exc)
    if hit:
        out.delegated = hit[0]
        out.error = Delegated(hit[0])
    out.warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
    out.printed = buffer.getvalue()
    return out
