"""Whether an answer changed the arrays it was given, which ones, and on which line of its code.

Every lesson asks for new arrays and leaves the caller's unchanged (Lesson 1's "How exercises work",
Lesson 8's Adam statement). An answer that writes into an input (`x -= m`, `x[0] = 1`,
`np.exp(x, out=x)`) may still return the right values, so the checks call it on copies and compare
the copies afterwards. The line is found in the answer's source: the first statement that writes
into that parameter's name, or into a name bound to a part of it (`E = model.embedding`, then `E *= s`).

A model given as an argument is not copied: its parameters (`model.parameters()`, arrays by name) are
held before the call, compared after it and put back, so that an answer that scales `model.embedding` in
place is told so, and neither the reference's expected values nor a later case sees the changed model.

New arrays also means a new one on every call: an answer whose settings are plain numbers is called a second
time, and a result that shares its memory with the first call's (a functools.lru_cache) is told so.
"""
import ast
import contextlib
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


def held_parameters(student, args, kwargs):
    """The models among the arguments (objects whose `parameters()` is a dict of arrays), each with its
    parameters copied: [(the argument's name, model, {key: (array, copy)})]."""
    names = _parameter_names(student, len(args)) + list(kwargs)
    held = []
    for name, value in zip(names, [*args, *kwargs.values()]):
        params = _parameters(value)
        if params:
            held.append((name, value, {k: (v, v.copy()) for k, v in params.items()}))
    return held


def put_back(held):
    """The parameters the call changed (in place, or bound to another array), as `model.embedding`, each
    model put back as it was held."""
    changed = []
    for name, model, kept in held:
        now = _parameters(model) or {}
        for key, (array, copy) in kept.items():
            current = now.get(key)
            if current is array and np.array_equal(array, copy, equal_nan=True):
                continue
            changed.append(f"{name}.{key}")
            array[...] = copy
            if current is not array and current is not None:
                _bind_again(model, current, array)
    return changed


def _bind_again(owner, current, array, depth=3):
    """Wherever `owner` (or an object, list or dict it holds, `depth` levels down) holds `current`, it holds
    `array` again: a parameter the answer bound to another array (`model.embedding = ...`)."""
    if depth < 0:
        return False
    slots = (owner.items() if isinstance(owner, dict) else enumerate(owner) if isinstance(owner, list)
             else vars(owner).items() if hasattr(owner, "__dict__") and not isinstance(owner, type) else ())
    for key, value in list(slots):
        if value is current:
            if isinstance(owner, (dict, list)):
                owner[key] = array
            else:
                setattr(owner, key, array)
            return True
        if not isinstance(value, (np.ndarray, str, int, float)) and _bind_again(value, current, array, depth - 1):
            return True
    return False


def result_shared(student, args, kwargs, value, call):
    """True when the answer, called again on the same settings (every argument a number, a string or None:
    nothing of the caller's to return a view of), returns an array that shares its memory with the first
    call's: a cache (functools.lru_cache) or a module-level array handed to every caller."""
    if not isinstance(value, np.ndarray) or any(isinstance(v, (np.ndarray, list, dict)) or hasattr(v, "__dict__")
                                                for v in [*args, *kwargs.values()]):
        return False
    again = call(tuple(args), dict(kwargs))
    return again.error is None and isinstance(again.value, np.ndarray) and np.shares_memory(again.value, value)


def shared_message():
    """What a student reads when two calls returned the same array."""
    return ("your function returned the very same array on two calls with the same settings (a cache such as "
            "functools.lru_cache, or an array kept outside the function): a caller that changes one result in place "
            "changes what every later call returns. Return a new array on every call: the lessons' functions "
            "return new arrays.")


def parameter_message(student, changed):
    """What a student reads when the answer changed a model's parameters."""
    names = ", ".join(f"`{n}`" for n in changed[:3]) + (" and others" if len(changed) > 3 else "")
    line = line_text(student, changed[0].split(".")[0])
    return (f"your function changed {names} in place{line}: the model's [LEARNED] parameters must stay as they "
            f"are: with them changed, every later call (and everything else that reads the model) sees other "
            f"numbers, and a second call changes them again. Compute a new array instead: `E = model.embedding * s`, "
            f"not `E = model.embedding` then `E *= s`.")


def _parameters(value):
    if isinstance(value, np.ndarray) or not callable(getattr(type(value), "parameters", None)):
        return None
    with _quietly():
        params = value.parameters()
        if isinstance(params, dict) and params and all(isinstance(v, np.ndarray) for v in params.values()):
            return params
    return None


@contextlib.contextmanager
def _quietly():
    try:
        yield
    except Exception:  # a model the answer left in a state its own methods refuse: nothing more to put back
        pass


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
    names = {name} | _aliases(tree, name)
    for node in ast.walk(tree):
        if any(_writes_into(node, n) for n in names):
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


def _aliases(tree, name):
    """The names bound to a part of `name` (`E = model.embedding`, `w = params["W"]`): writing into them
    writes into it."""
    return {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, (ast.Attribute, ast.Subscript)) and _root(node.value) == name
            for t in node.targets if isinstance(t, ast.Name)}


def _writes_into(node, name):
    """`name op= ...`, `name[...] = ...`, `name.attr = ...`, `name[...] op= ...`, or a call with `out=name`."""
    if isinstance(node, ast.AugAssign):
        return _root(node.target) == name
    if isinstance(node, ast.Assign):
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) and _root(t) == name for t in node.targets)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return any(k.arg == "out" and _root(k.value) == name for k in node.value.keywords)
    return False


def _root(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
