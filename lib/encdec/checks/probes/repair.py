"""The repair probe: the one small change to the answer's own code that makes it right.

When a case fails and neither the catalog nor the exercise's probes name the cause, the answer's function
(or method) is read from its source, and copies of it are made with one edit each (edits.py: `/` for `//`,
another axis, keepdims, len() of a batch, a sign, a number off by one, ...; moves.py: two arguments or two
statements exchanged, a step out of a loop or left out, another variable read; wiring.py: a residual left
out, a call around each pass's value that belongs after the loop; everywhere.py: one of edits.py's at every
place at once, the model's eps passed to each norm; arithmetic.py: parentheses, a double for a square, a
product for a sum). Each copy runs on the
failing case and, when it is right there, on every other case of the part. The first copy right on all of
them names the slip exactly: the line, what to change, and why that change is the usual slip. Nothing is
found when no single edit is enough (two slips, or one no edit describes): the error probes and the tracer
come next (judging.py).

It runs the answer's code again, as the other probes do, under a time budget that stops a copy looping
forever; it never raises, never prints, and never changes a score.
"""

import ast
import copy
import inspect
import linecache
import textwrap
import types

from ..clock import Deadline
from .base import Finding, Probe, quiet
from .copies import _Runner
from .arithmetic import ARITHMETIC_KINDS, EXPONENT_KINDS, SHIFT_KINDS
from .edits import EXPRESSION_KINDS
from .everywhere import EVERYWHERE_KINDS
from .streams import STREAM_KINDS
from .moves import STATEMENT_KINDS, axis_argument
from .tracer import student_code
from .default_axes import DEFAULT_AXIS_KINDS
from .size_one_axes import SIZE_ONE_KINDS
from .wiring import WIRING_KINDS

BUDGET_SECONDS = 0.6  # for one failing case: the copies, their runs and the reference's on the part's cases
MAX_EDITS = 600
SECOND_SECONDS = 0.15  # after a first fix, how long to look for a second one


def _target(student):
    """(the function whose source is the answer, a binder that makes an edited copy callable like the answer):
    the answer itself, its method, or the answer inside a checker's wrapper (a closure holding it, such as
    one that converts its result), which the binder rebuilds around the copy."""
    if isinstance(student, types.FunctionType):
        if student_code(student.__code__.co_filename):
            return student, lambda f: f
        for k, cell in enumerate(student.__closure__ or ()):
            try:
                inner, bind_inner = _target(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
            if inner is not None:
                def bind(f, k=k, bind_inner=bind_inner):
                    cells = list(student.__closure__)
                    cells[k] = types.CellType(bind_inner(f))
                    return types.FunctionType(student.__code__, student.__globals__, student.__name__,
                                              student.__defaults__, tuple(cells))
                return inner, bind
        return None, None
    if isinstance(student, types.MethodType) and isinstance(student.__func__, types.FunctionType):
        owner = student.__self__
        return student.__func__, lambda f: types.MethodType(f, owner)
    call = getattr(type(student), "__call__", None)
    if isinstance(call, types.FunctionType) and student_code(call.__code__.co_filename):
        return call, lambda f: types.MethodType(f, student)
    return None, None


def direct(student, fn):
    """True when the case's arguments are the answer's own (no checker's wrapper between the check and `fn`)."""
    return student is fn or getattr(student, "__func__", None) is fn or getattr(type(student), "__call__", None) is fn


def _tree(fn):
    """The function's syntax tree, its lines numbered as in its file, or None (no source, a closure, not the
    student's code)."""
    code = fn.__code__
    if code.co_freevars or not student_code(code.co_filename):
        return None
    lines, start = inspect.getsourcelines(fn)
    module = ast.parse(textwrap.dedent("".join(lines)))
    if len(module.body) != 1 or not isinstance(module.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    module.body[0].decorator_list = []
    ast.increment_lineno(module, max(start, 1) - 1)
    return module


def answer_function(student):
    """The FunctionDef of the answer's own code (through a method or a checker's wrapper), or None."""
    fn, _ = _target(student) if student is not None else (None, None)
    module = _tree(fn) if fn is not None else None
    return module.body[0] if module is not None else None


def _compiled(module, fn):
    ast.fix_missing_locations(module)
    code = compile(module, fn.__code__.co_filename, "exec")
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__code__.co_name)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, None)
    new.__kwdefaults__, new.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    return new


def _edits(fdef, only=None):
    nodes = list(ast.walk(fdef))
    kinds = only or [axis_argument, *WIRING_KINDS, *SIZE_ONE_KINDS, *DEFAULT_AXIS_KINDS, *EVERYWHERE_KINDS, *SHIFT_KINDS, *EXPONENT_KINDS, *STREAM_KINDS, *EXPRESSION_KINDS, *STATEMENT_KINDS, *ARITHMETIC_KINDS]
    for kind in kinds:
        for i, node in enumerate(nodes):
            for edit in kind(i, node, fdef):
                edit.lineno = edit.lineno or getattr(node, "lineno", 0)
                yield edit


def repair(attempt, seconds=BUDGET_SECONDS, kinds=None):
    """A Finding naming the one edit of the answer's code that makes it right on every case of the part, or
    None (`kinds`: only those edits, targeted.py's). Never raises."""
    try:
        with quiet():
            return _repair(attempt, seconds, kinds)
    except Exception:
        return None


def _repair(attempt, seconds, kinds=None):
    if attempt.student is None or attempt.reference is None:
        return None
    runner = _Runner(attempt, Deadline(seconds))
    return repair_by(attempt.student, lambda candidate: runner.right(candidate, 0) and all(
        runner.right(candidate, k) for k in range(1, len(runner.cases))), attempt.exercise, seconds,
        cases=len(runner.cases), runner=runner, kinds=kinds)


def repair_by(student, right, exercise, seconds=BUDGET_SECONDS, cases=None, runner=None, kinds=None):
    """The repair with the checker's own test of a copy: `right(candidate)` is True when the copy (callable as
    the answer is) passes everything the answer failed. A Finding or None; never raises."""
    try:
        with quiet():
            return _search(student, right, exercise, seconds, cases, runner, kinds)
    except Exception:
        return None


def _search(student, right, exercise, seconds, cases, runner, kinds=None):
    deadline = Deadline(seconds)
    runner = runner or _Runner(None, deadline)
    fn, bind = _target(student)
    if fn is None:
        return None
    module = _tree(fn)
    if module is None:
        return None
    if runner.bounded(lambda: right(bind(fn))):  # right already (an audit of a passing case): nothing to repair
        return None
    fixes, second_until = [], None
    for count, edit in enumerate(_edits(module.body[0], kinds)):
        if count >= MAX_EDITS or deadline.passed() or second_until is not None and second_until.passed():
            break
        if fixes and edit.lineno == fixes[0][0].lineno and edit.kind == fixes[0][0].kind:
            continue  # the same change written another way (axis=1 for axis=-2)
        edited = copy.deepcopy(module)
        node = list(ast.walk(edited.body[0]))[edit.index]
        try:
            if not edit.apply(node, edited.body[0]):
                continue
            candidate = bind(_compiled(edited, fn))
        except Exception:
            continue
        if runner.bounded(lambda: right(candidate)):
            fixes.append((edit, candidate))
            if len(fixes) == 2:
                break
            second_until = Deadline(SECOND_SECONDS)  # a little longer, for another fix
    return finding(exercise, fn, fixes, cases) if fixes else None


def still_right(attempt, candidate, seconds=None):
    """True when a copy the repair made is right on every case of `attempt` (its case and others): the
    checker asks it again once every part has run, of the cases of the parts after the one it mended."""
    try:
        with quiet():
            runner = _Runner(attempt, Deadline(BUDGET_SECONDS if seconds is None else seconds))
            return all(runner.bounded(lambda k=k: runner.right(candidate, k)) for k in range(len(runner.cases)))
    except Exception:
        return False


def rebound(candidate, student, other):
    """The repair's copy `candidate`, made from the answer `student`, made callable as `other` is, where
    `other` is the same code bound to another object (a part that builds its own CrossAttention with other
    weights); None where it is not."""
    try:
        fn, _ = _target(student)
        mine, bind = _target(other)
        edited, _ = _target(candidate)
        if fn is None or mine is None or edited is None or fn.__code__ is not mine.__code__:
            return None
        return bind(edited)
    except Exception:
        return None


def finding(exercise, fn, fixes, cases):
    """One fix: its line, why, and the change. Two: both, for the student to tell which is the slip (a
    step left out and a second slip that undoes it can be mended either way)."""
    every = ("every case it was tried on" if cases is None else "the case it was tried on" if cases == 1
             else "both cases it was tried on" if cases == 2 else f"all {cases} cases it was tried on")

    def where(edit):
        line = linecache.getline(fn.__code__.co_filename, edit.lineno).strip()
        return f"line {edit.lineno}, `{line}`" if line else f"line {edit.lineno}"
    first = fixes[0][0]
    if len(fixes) == 1:
        said = (f"On {where(first)}: {first.why} With {first.said} there, your code gives the right result on "
                f"{every}; that one change is the fix.")
    else:
        other = fixes[1][0]
        said = (f"Either of two single changes makes your code right on {every}. On {where(first)}: {first.said} "
                f"({first.why[0].lower()}{first.why[1:].rstrip('.')}). Or on {where(other)}: {other.said} "
                f"({other.why[0].lower()}{other.why[1:].rstrip('.')}). The slip is where your code departs from "
                "the formula.")
    return Finding(exercise, f"repair:{first.kind}", said, fixes=tuple(fixes), source=fn)


class Repair(Probe):
    """The repair probe in the judging order (judging.py): after the exercise's own probes."""

    kind = "repair"

    def find(self, attempt, probes):
        return repair(attempt, getattr(attempt, "repair_seconds", BUDGET_SECONDS))
