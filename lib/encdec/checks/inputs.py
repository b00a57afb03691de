"""Whether an answer changed the arrays it was given, which ones, and on which line of its code.

Every lesson asks for new arrays and leaves the caller's unchanged (Lesson 1's "How exercises work",
Lesson 8's Adam statement). An answer that writes into an input (`x -= m`, `x[0] = 1`,
`np.exp(x, out=x)`) may still return the right values, so the checks call it on copies and compare
the copies afterwards. The line is found in the answer's source: the first statement that writes
into that parameter's name.
"""
import ast
import inspect
import textwrap

import numpy as np


def changed_inputs(student, args, kwargs, before_args, before_kwargs):
    """The names of the array arguments that `student(*args, **kwargs)` left different from their copies
    `before_*`, in the function's own parameter names where it has them (`x`, or `argument 2`)."""
    names = _parameter_names(student, len(args))
    changed = [names[i] for i, (a, b) in enumerate(zip(args, before_args)) if _differs(a, b)]
    changed += [k for k, v in kwargs.items() if _differs(v, before_kwargs.get(k))]
    return changed


def where_changed(student, name):
    """The first line of `student`'s source that writes into the parameter `name`, as (number, text), the
    number counted as the student's cell (or file) counts it, or None."""
    try:  # the answer's own objects: anything they raise is theirs, and means no line is found
        if not (inspect.isfunction(student) or inspect.ismethod(student)) and callable(student):
            student = type(student).__call__  # an object called as a function: a block's __call__
        lines, first = inspect.getsourcelines(student)
        source = textwrap.dedent("".join(lines))
        tree = ast.parse(source)
    except Exception:
        return None
    for node in ast.walk(tree):
        if _writes_into(node, name):
            return max(first, 1) + node.lineno - 1, source.splitlines()[node.lineno - 1].strip()
    return None


def line_text(student, name):
    """" (line 3: `x -= m`)", the line that writes into `name`, or "" where none is found."""
    where = where_changed(student, name)
    return f" (line {where[0]}: `{where[1]}`)" if where else ""


def message(student, changed):
    """What a student reads when the answer changed its inputs: which ones, where, and what to write."""
    names = ", ".join(f"`{n}`" for n in changed)
    line = line_text(student, changed[0]) if changed else ""
    return (f"your function changed {names} in place{line}: the caller's array no longer holds what it held. "
            f"Return a new array and leave the inputs unchanged: write `x = x - m`, not `x -= m` or `x[...] = ...`, "
            f"or copy first (`x = x.copy()`).")


def _differs(after, before):
    return (isinstance(after, np.ndarray) and isinstance(before, np.ndarray) and after.shape == before.shape
            and not np.array_equal(after, before, equal_nan=True))


def _parameter_names(student, count):
    try:
        params = [p.name for p in inspect.signature(student).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except Exception:  # a signature the answer's object makes raise
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(count)]


def _writes_into(node, name):
    """`name op= ...`, `name[...] = ...`, `name[...] op= ...`, or a call with `out=name`."""
    if isinstance(node, ast.AugAssign):
        return _root(node.target) == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Subscript) and _root(t) == name for t in node.targets)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return any(k.arg == "out" and _root(k.value) == name for k in node.value.keywords)
    return False


def _root(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
