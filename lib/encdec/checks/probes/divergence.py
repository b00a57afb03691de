"""The first line where an answer leaves the right computation: when a case fails and neither the
catalog nor a probe names the cause, the answer and the reference are run again on the case under the
tracer (tracer.py), and the answer's values are matched, in the order its lines made them, against the
reference's. The first value that matches none is where the answer went wrong: its line is quoted, its
variable named, the nearest right value given with how the two differ, and the values before it that
were still right are listed. Where that line may be right in another form (its difference has no
simple shape and later wrong values are made from it), the message says so and names the next line;
where it reads values that matched only in another arrangement, it names them. Where the right computation
returned zeros at once (a guard's own answer, for N = 0) and the answer has no such branch, it says that.

A value matches a reference value when it holds the same numbers: equal, transposed (any order of the
axes), reshaped (the same numbers in the same order), broadcast, or their reciprocals. In a loop, the
first pass that goes wrong. Never raises, and never changes a score: it only words the likely cause.
"""

import ast
import functools
import inspect
import textwrap

import numpy as np

from ..clock import Deadline
from .base import Finding, _arrays, quiet
from .tracer import BUDGET_SECONDS, reference_code, student_code, traced
from .value_relations import EXPLAINED, SLICE, difference, nearest, relation


class _OutOfTime(Exception):
    """The matching of the answer's values with the reference's ran past its budget: nothing is said."""


def _matches(value, pool, deadline=None, inputs=frozenset()):
    """[(index in pool, relation)] of every reference value `value` holds the same numbers as; a value near one of
    the `inputs` (indices of the pool's copies of an argument) only within the tolerance matches none of them."""
    found = []
    for i, right in enumerate(pool):
        if deadline is not None and deadline.passed():
            raise _OutOfTime()
        how = relation(value.array, right.array)
        if how == "equal" and i in inputs and not np.array_equal(value.array, right.array):
            continue  # near an input only within the tolerance (z - log(1 + tiny) for z): computed, not passed on
        if how:
            found.append((i, how))
    return found


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
    mine = traced(attempt.student, attempt.args(), attempt.kwargs(), student_code, seconds / 2)
    right = traced(reference, attempt.args(), attempt.kwargs(), reference_code, seconds / 2, parts=True)
    deadline = Deadline(seconds)  # the matching's own budget, as long as the tracing's
    assigned = [v for v in mine.values if v.line != "(an argument)"]
    if not assigned or not right.values:
        return None
    early = _guarded(right) and not _guarded(mine)  # the right computation returned its own answer at once
    pool = right.values
    # Walk the answer's values in order. A value is right when it matches a value the reference makes at or
    # after the last one matched (progress), neutral when it only matches an earlier one (an input, a mask
    # made again), and wrong when it matches none. A wrong value is forgiven when a later right value is
    # computed from it (a reciprocal where the reference divides, then used right): it was another right
    # way. The slip is the first wrong value nothing right was computed from.
    position, matched, pending = -1, [], []
    arguments = [v.array for v in pool if v.line == "(an argument)"]
    inputs = frozenset(i for i, v in enumerate(pool) if any(a.shape == v.array.shape and np.array_equal(a, v.array)
                                                            for a in arguments))
    for k, value in enumerate(assigned):
        found = _matches(value, pool, deadline, inputs)
        ahead = [(i, how) for i, how in found if i >= position]
        if ahead:
            position = ahead[0][0]
            whole = any(pool[i].line != PART for i, _ in ahead)  # not only a step inside a line of the reference
            matched.append((k, value, ahead[0][1] if whole else PART))
            if ahead[0][1] != SLICE:  # one pass right forgives no earlier pass of the same line
                used = _names(value.line)
                pending = [(j, w) for j, w in pending if w.name not in used]
        elif not found:
            pending.append((k, value))
    if not pending:
        return _no_guard(attempt) if early else None
    first, value = pending[0]
    near = nearest(value, pool)
    said = f"`{value.line}` ({_where(value, mine.passes)}) gives {_called(value)} the shape {value.array.shape}, "
    explained = False
    if near is not None:
        how = difference(value.array, near.array, pool)
        explained = how.startswith(EXPLAINED)
        said += f"and no right value along the way holds its numbers: {how}."
    else:
        said += "which no value of the right computation has."
    right_so_far = [f"{_called(v)} on {_where(v, mine.passes)}" + (f" (as the right value {how})" if how not in ("equal", PART, SLICE)
                                                               else " (a part of the right value)" if how == SLICE else "")
                    for k, v, how in matched if k < first][-3:]
    if right_so_far:
        said += " Up to there your values are right: " + ", ".join(right_so_far) + "."
    zero = _zero_divisor(value, mine)
    if zero:
        return Finding(attempt.exercise, "trace:zero_divisor", f"`{value.line}` ({_where(value, mine.passes)}) {zero}",
                       f"The first value that goes wrong is {_called(value)}.")
    if early:
        return _no_guard(attempt)
    reads = _what_it_reads(value, matched, first, mine.passes, explained) + _numbers_it_reads(value, mine)
    said += reads
    later = [w for _, w in pending[1:] if value.name and value.name in _names(w.line) and w.lineno != value.lineno]
    if not explained and not reads and later:
        w = later[0]
        said += (f" That line may also be right in another form than the formula's (a step the right computation "
                 f"does not take): then the slip is after it, where {_called(w)} ({_where(w, mine.passes)}) is "
                 "made from it. Check both lines against the formula.")
    else:
        said += " Check that line against the formula."
    return Finding(attempt.exercise, "trace:line", said, f"The first value that goes wrong is {_called(value)}.")


def _no_guard(attempt):
    """The finding for an answer that runs the formula where the right computation returned zeros at once."""
    got = attempt.got if attempt.got is not None else attempt.rerun(attempt.args(), attempt.kwargs()).value
    nan = any(not np.all(np.isfinite(a)) for a in _arrays(got))
    return Finding(attempt.exercise, "trace:no_guard", (
        "on this case the function has an answer of its own: the right computation returns zeros (or an "
        "empty result) at once, before any step of the formula, for an input the docstring names, such as no "
        "real token (N = 0). Your code has no such branch and runs the formula here"
        + (", where a division by that zero count gives nan" if nan else "") + ". Return that answer first, "
        "in an `if` before the formula."))


def _guarded(trace):
    """True where a function of the trace returned zeros (or nothing) from a `return` before its last one: a
    guard's own answer for an input such as N = 0."""
    last = {}
    for v in trace.values:
        if v.name.startswith("the value returned") and v.code is not None:
            last.setdefault(v.code, []).append(v)
    for code, given in last.items():
        returns = _return_lines(code)
        taken = [v.array for v in given if v.lineno == given[-1].lineno]
        if returns and given[-1].lineno < max(returns) and all(a.size == 0 or not np.any(a) for a in taken):
            return True
    return False


@functools.lru_cache(maxsize=512)
def _return_lines(code):
    """The line numbers of a function's own `return` statements (not those of functions inside it); () where its
    source cannot be read."""
    try:
        lines, start = inspect.getsourcelines(code)
        fdef = ast.parse(textwrap.dedent("".join(lines))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return ()
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ()  # a lambda: no statement of its own returns
    return tuple(start + n.lineno - 1 for n in _own(fdef) if isinstance(n, ast.Return))


def _own(fdef):
    """The nodes of a function's body, not those of the functions or lambdas defined inside it."""
    stack = list(fdef.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


PART = "(part of a line)"  # tracer.py's line for a sub-expression's value


def _what_it_reads(value, matched, first, passes, explained=False):
    """A sentence on the values the line reads that held the right numbers only in another arrangement
    (reshaped, transposed, broadcast): the slip may be that arrangement, made on an earlier line."""
    reads = _names(value.line)
    last = {}
    for k, v, how in matched:
        if k < first and v.name in reads:
            last[v.name] = (v, how)
    loose = [(v, how) for v, how in last.values() if how in ("reshaped", "transposed", "broadcast")]
    steps = [] if explained else [v for v, how in last.values() if how == PART]
    said = ""
    if loose:
        names = ", ".join(f"{_called(v)} ({_where(v, passes)}, {how})" for v, how in loose)
        said += (f" It is made from {names}: the right numbers, in another arrangement than the right value's; "
                 "if their axes are not the formula's, the slip is on that earlier line.")
    if steps:
        names = ", ".join(f"{_called(v)} ({_where(v, passes)})" for v in steps)
        said += (f" It is made from {names}, right as far as it goes: a step the right computation takes in the "
                 "middle of one of its lines, not that line's result. What the formula does next to it (a scale, a "
                 "mask, a norm, a sum) may be missing there.")
    return said


def _numbers_it_reads(value, trace):
    """A sentence giving the plain numbers the line reads (a size, an eps, a count): the tracer compares
    arrays only, so a wrong number shows first in the array made from it."""
    reads = _names(value.line)
    index = next((i for i, v in enumerate(trace.values) if v is value), len(trace.values))
    last = {}
    for made, name, lineno, number in trace.numbers_set:
        if made <= index and name in reads:
            last[name] = (lineno, number)
    if not last:
        return ""
    shown = ", ".join(f"`{name}` = {number:.6g} (line {lineno})" for name, (lineno, number) in list(last.items())[:3])
    return (f" The line also reads {shown}: " + ("a number" if len(last) == 1 else "numbers")
            + " the tracer does not compare with the right computation's; check " + ("it" if len(last) == 1 else "them")
            + " too.")


def _zero_divisor(value, trace):
    """Words where the value holds nan or inf and its line divides by a plain number that is 0 here (a count
    of positions where every one is padding), else ""."""
    if np.all(np.isfinite(value.array)):
        return ""
    try:
        tree = ast.parse(value.line.strip().removeprefix("return "), mode="exec")
    except SyntaxError:
        return ""
    divisors = {n.right.id for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                and isinstance(n.right, ast.Name)}
    index = next((i for i, v in enumerate(trace.values) if v is value), len(trace.values))
    last = {name: (lineno, number) for made, name, lineno, number in trace.numbers_set
            if made <= index and name in divisors}
    zero = [(name, lineno) for name, (lineno, number) in last.items() if number == 0]
    if not zero:
        return ""
    name, lineno = zero[0]
    return (f"divides by `{name}`, which is 0 on this case (set on line {lineno}), and gives {_called(value)} nan or "
            f"inf: 0 / 0 is nan and x / 0 is inf. Where `{name}` is 0 the function needs its own answer, returned "
            "before any division; the docstring says what it is.")


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
