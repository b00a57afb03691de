"""The repair probe: the one small change to the answer's own code that makes it right.

When a case fails and neither the catalog nor the exercise's probes name the cause, the answer's function
(or method) is read from its source, and copies of it are made with one edit each (edits.py: `/` for `//`,
another axis, keepdims, len() of a batch, a sign, a number off by one, ...; moves.py: two arguments or two
statements exchanged, a step out of a loop or left out, another variable read). Each copy runs on the
failing case and, when it is right there, on every other case of the part. The first copy right on all of
them names the slip exactly: the line, what to change, and why that change is the usual slip. Nothing is
found when no single edit is enough (two slips, or one no edit describes): the error probes and the tracer
come next (judging.py).

It runs the answer's code again, as the other probes do, under a time budget that stops a copy looping
forever; it never raises, never prints, and never changes a score.
"""

import ast
import copy
import dataclasses
import inspect
import linecache
import sys
import textwrap
import time
import types

from .base import Finding, Probe, quiet
from .edits import EXPRESSION_KINDS
from .moves import STATEMENT_KINDS
from .tracer import student_code

BUDGET_SECONDS = 0.6  # for one failing case: the copies, their runs and the reference's on the part's cases
MAX_EDITS = 600
SECOND_SECONDS = 0.15  # after a first fix, how long to look for a second one


class _OutOfTime(Exception):
    pass


def _target(student):
    """(the function whose source is the answer, a binder that makes an edited copy callable like the answer)."""
    if isinstance(student, types.FunctionType):
        return student, lambda f: f
    if isinstance(student, types.MethodType) and isinstance(student.__func__, types.FunctionType):
        owner = student.__self__
        return student.__func__, lambda f: types.MethodType(f, owner)
    call = getattr(type(student), "__call__", None)
    if isinstance(call, types.FunctionType):
        return call, lambda f: types.MethodType(f, student)
    return None, None


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


def _compiled(module, fn):
    ast.fix_missing_locations(module)
    code = compile(module, fn.__code__.co_filename, "exec")
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn.__code__.co_name)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, None)
    new.__kwdefaults__, new.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    return new


def _edits(fdef):
    nodes = list(ast.walk(fdef))
    for kind in [*EXPRESSION_KINDS, *STATEMENT_KINDS]:
        for i, node in enumerate(nodes):
            for edit in kind(i, node, fdef):
                edit.lineno = edit.lineno or getattr(node, "lineno", 0)
                yield edit


class _Runner:
    """The answer's copies run on the part's cases, with the reference's results computed once each."""

    def __init__(self, attempt, deadline):
        self.attempt, self.deadline = attempt, deadline
        self.cases = [attempt.case, *attempt.others]
        self.expected = {}

    def right(self, fn, k):
        """True when `fn` gives the reference's result on case k, within the time left."""
        at = dataclasses.replace(self.attempt, case=self.cases[k], others=())
        if k not in self.expected:
            self.expected[k] = at.output(self.attempt.reference(*at.args(), **at.kwargs()))
        at = dataclasses.replace(at, expected=self.expected[k])
        outcome = self._bounded(lambda: at.rerun(at.args(), at.kwargs(), student=fn))
        return outcome is not None and outcome.error is None and at.is_expected(outcome.value)

    def all_right(self, fn):
        return all(self.right(fn, k) for k in range(len(self.cases)))

    def _bounded(self, run):
        deadline = self.deadline

        def local(frame, event, arg):
            if time.perf_counter() > deadline:
                raise _OutOfTime()
            return local

        def call(frame, event, arg):
            return local if student_code(frame.f_code.co_filename) else None

        previous = sys.gettrace()
        sys.settrace(call)
        try:
            return run()
        finally:
            sys.settrace(previous)


def repair(attempt, seconds=BUDGET_SECONDS):
    """A Finding naming the one edit of the answer's code that makes it right on every case of the part, or
    None. Never raises."""
    try:
        with quiet():
            return _repair(attempt, seconds)
    except Exception:
        return None


def _repair(attempt, seconds):
    deadline = time.perf_counter() + seconds
    if attempt.student is None or attempt.reference is None:
        return None
    fn, bind = _target(attempt.student)
    if fn is None:
        return None
    module = _tree(fn)
    if module is None:
        return None
    runner = _Runner(attempt, deadline)
    if runner.right(bind(fn), 0):  # right already (an audit of a passing case): nothing to repair
        return None
    fixes, second_until = [], None
    for count, edit in enumerate(_edits(module.body[0])):
        now = time.perf_counter()
        if count >= MAX_EDITS or now > deadline or second_until is not None and now > second_until:
            break
        edited = copy.deepcopy(module)
        node = list(ast.walk(edited.body[0]))[edit.index]
        try:
            if not edit.apply(node, edited.body[0]):
                continue
            candidate = bind(_compiled(edited, fn))
        except Exception:
            continue
        if runner.right(candidate, 0) and all(runner.right(candidate, k) for k in range(1, len(runner.cases))):
            fixes.append(edit)
            if len(fixes) == 2:
                break
            second_until = time.perf_counter() + SECOND_SECONDS  # a little longer, for another fix
    return _finding(attempt, fn, fixes, len(runner.cases)) if fixes else None


def _finding(attempt, fn, fixes, cases):
    """One fix: its line, why, and the change. Two: both, for the student to tell which is the slip (a
    step left out and a second slip that undoes it can be mended either way)."""
    every = "the case it was tried on" if cases == 1 else f"all {cases} cases it was tried on"

    def where(edit):
        line = linecache.getline(fn.__code__.co_filename, edit.lineno).strip()
        return f"line {edit.lineno}, `{line}`" if line else f"line {edit.lineno}"
    first = fixes[0]
    if len(fixes) == 1:
        said = (f"On {where(first)}: {first.why} With {first.said} there, your code gives the right result on "
                f"{every}; that one change is the fix.")
    else:
        other = fixes[1]
        said = (f"Either of two single changes makes your code right on {every}. On {where(first)}: {first.said} "
                f"({first.why[0].lower()}{first.why[1:].rstrip('.')}). Or on {where(other)}: {other.said} "
                f"({other.why[0].lower()}{other.why[1:].rstrip('.')}). The slip is where your code departs from "
                "the formula.")
    return Finding(attempt.exercise, f"repair:{first.kind}", said)


class Repair(Probe):
    """The repair probe in the judging order (judging.py): after the exercise's own probes."""

    kind = "repair"

    def find(self, attempt, probes):
        return repair(attempt, getattr(attempt, "repair_seconds", BUDGET_SECONDS))
