"""A parameter the answer never reads: its result cannot depend on that input, and the right one does. Also
an attribute of `self` that the course's own method of that name reads and the answer's method never does
(`self.W_q` in `attend`), confirmed by changing it: the answer's result stays the same.

Read from the answer's own source (no Name of the parameter is ever loaded, in the function or in a
function nested in it), then confirmed on the failing case: the reference, given that input changed (its
default when it has one, else another value of its kind), gives another result. Only then is it named, so
a parameter that the right computation does not need on this case (a mask of no pads) is never blamed.

Always on, after what the returned value alone says and before the exercise's own probes (judging.py): a
variant probe may explain such an answer by the effect of the missing input (positions that read later
ones, where cross-attention was given no encoder output), this says which input is missing.
"""

import ast
import inspect
import re
import textwrap
import types

import numpy as np

from .base import Probe
from .repair import _target, _tree, direct
from .settings import answer_arguments

_ESCAPES = {"locals", "vars", "eval", "exec", "globals"}  # a parameter read through these is not seen


def _unread(fdef):
    """The names of the function's parameters (not self) that its code never loads, or [] when it takes
    *args or **kwargs, or reads its names through locals() and the like."""
    args = fdef.args
    if args.vararg or args.kwarg:
        return []
    loaded = set()
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            loaded.add(node.id)
    if loaded & _ESCAPES:
        return []
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    return [p for p in params if p not in loaded]


def _changed(value, default):
    """Another value of the same kind for a parameter (its default first), or None when there is none."""
    if default is not inspect.Parameter.empty and not _same(value, default):
        return default, "left out"
    if hasattr(value, "detach") and hasattr(value, "is_floating_point") and value.is_floating_point():
        return value + 0.5 + value.detach().abs().mean(), "changed"
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating) and value.size:
        return value + 0.5 + np.abs(value).mean(), "changed"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value + 1, "changed"
    if isinstance(value, float):
        return value * 2 + 0.1, "changed"
    return None


def _same(a, b):
    try:
        return a is b or bool(a == b)
    except Exception:
        return False


def _doc_line(fn, name):
    """The first line of the answer's docstring that names `name`, stripped, or ''."""
    for line in (inspect.getdoc(fn) or "").splitlines():
        if re.search(rf"\b{re.escape(name)}\b", line):
            return " ".join(line.split()).rstrip(".")
    return ""


class UnreadParameter(Probe):
    """probe:unread:<parameter>: a parameter the answer's code never reads, where the right result needs it."""

    kind = "unread"

    def find(self, attempt, probes):
        fn, _ = _target(attempt.student)
        if fn is None or not direct(attempt.student, fn):
            return None
        tree = _tree(fn)
        if tree is None:
            return None
        unread = _unread(tree.body[0])
        if not unread:
            return None
        signature = inspect.signature(attempt.student)
        args, kwargs = attempt.args(), attempt.kwargs()
        bound = signature.bind(*args, **kwargs)
        for name in unread:
            if name not in bound.arguments:
                continue
            change = _changed(bound.arguments[name], signature.parameters[name].default)
            if change is None:
                continue
            other = signature.bind(*attempt.args(), **attempt.kwargs())
            other.arguments[name] = change[0]
            try:
                value = attempt.reference(*other.args, **other.kwargs)
            except Exception:
                continue
            if attempt.is_expected(value):
                continue  # the right result does not need it here
            said = _doc_line(fn, name)
            return self.finding(attempt, name, (
                f"`{fn.__name__}` never reads its parameter `{name}`, so its result is the same whatever "
                f"`{name}` is; the right result is not (on this case it changes when `{name}` is {change[1]})."
                + (f" The docstring: \"{said}\"." if said else "")
                + f" Use `{name}` where the computation needs it."))
        return None


_NUMBERED = re.compile(r"([A-Za-z_]*?)(\d+)([A-Za-z_]*)")


class UnreadSibling(Probe):
    """probe:unread_sibling:<attribute>: the answer reads `b.norm1_gamma` and `b.norm2_gamma` by name but never
    `b.norm3_gamma`, which the objects it is given have: the step that reads it is left out (or reads a sibling
    in its place). Read from the source and the answer's arguments (a model's blocks, one level down)."""

    kind = "unread_sibling"

    def find(self, attempt, probes):
        fn, _ = _target(attempt.student) if attempt.student is not None else (None, None)
        tree = _tree(fn) if fn is not None else None
        if tree is None or attempt.right():
            return None
        read = {n.attr for n in ast.walk(tree.body[0]) if isinstance(n, ast.Attribute)}
        families = {}
        for attr in read:
            match = _NUMBERED.fullmatch(attr)
            if match:
                families.setdefault((match[1], match[3]), set()).add(attr)
        if not families:
            return None
        present = set()
        for value in answer_arguments(attempt).values():
            present |= _attributes(value)
        for (head, tail), seen in sorted(families.items()):
            missing = sorted(a for a in present - read if (m := _NUMBERED.fullmatch(a)) and (m[1], m[3]) == (head, tail))
            if missing:
                said = " and ".join(f"`{a}`" for a in sorted(seen))
                return self.finding(attempt, missing[0], (
                    f"your code reads {said} by name but never `{missing[0]}`, which the objects it is given have: the "
                    f"step that reads `{missing[0]}` is left out, or reads another in its place. Find where "
                    f"`{missing[0]}` belongs (the lesson's formula for the block) and read it there."), weak=True)
        return None


class UnreadAttribute(Probe):
    """probe:unread_attribute:<attribute>: a method of the answer's class never reads `self.W_q`, which the
    library's own method of that name (the class's base) reads, and the answer's result stays the same when
    that attribute is changed: the step that uses it is left out."""

    kind = "unread_attribute"

    def find(self, attempt, probes):
        fn, _ = _target(attempt.student) if attempt.student is not None else (None, None)
        owner = _owner(attempt.student)
        tree = _tree(fn) if fn is not None else None
        if tree is None or owner is None or getattr(attempt, "error", None) is not None or attempt.right():
            return None
        base = next((f for c in type(owner).__mro__ for f in [vars(c).get(fn.__name__)]
                     if isinstance(f, types.FunctionType) and f.__code__ is not fn.__code__
                     and f.__module__.startswith("encdec.") and not f.__module__.startswith("encdec.checks")), None)
        try:
            base_tree = ast.parse(textwrap.dedent(inspect.getsource(base))) if base is not None else None
        except (OSError, TypeError, SyntaxError):
            base_tree = None
        if base_tree is None or not base_tree.body:
            return None
        needed = sorted(_self_reads(base_tree.body[0]) - _self_reads(tree.body[0]))
        for name in needed:
            value = getattr(owner, name, None)
            change = _changed(value, inspect.Parameter.empty) if isinstance(value, np.ndarray) else None
            if change is None:
                continue
            try:
                setattr(owner, name, change[0])
                try:
                    moved = attempt.student(*attempt.args(), **attempt.kwargs())
                except Exception:
                    continue
            finally:
                setattr(owner, name, value)
            if not attempt.matches(moved):
                continue  # the answer reads it after all (through a helper)
            return self.finding(attempt, name, (
                f"your `{fn.__name__}` never reads `self.{name}`, and its result stays the same when `self.{name}` "
                f"changes; the computation of `{fn.__name__}` uses it (the course's own `{fn.__name__}` reads it "
                f"here). The step that uses `self.{name}` is left out: put it back where the formula has it."))
        return None


def _self_reads(fdef):
    """The attribute names the function reads from its first parameter (`self.W_q`)."""
    args = fdef.args.posonlyargs + fdef.args.args
    if not args:
        return set()
    me = args[0].arg
    return {n.attr for n in ast.walk(fdef) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name) and n.value.id == me}


def _owner(student, depth=3):
    """The object whose method the answer is (through a checker's wrappers), or None."""
    if isinstance(student, types.MethodType):
        return student.__self__
    if isinstance(student, types.FunctionType) and depth:
        for cell in student.__closure__ or ():
            try:
                found = _owner(cell.cell_contents, depth - 1)
            except ValueError:
                continue
            if found is not None:
                return found
    return None


def _attributes(obj, depth=2):
    """The attribute names of `obj` and of the objects it holds (its attributes, the items of its lists and
    module lists), `depth` levels down."""
    names = set(vars(obj)) if hasattr(obj, "__dict__") and not isinstance(obj, type) else set()
    if hasattr(obj, "_parameters") and isinstance(getattr(obj, "_parameters"), dict):  # torch modules
        names |= set(obj._parameters) | set(getattr(obj, "_modules", {}))
    if depth:
        children = list(getattr(obj, "_modules", {}).values()) if hasattr(obj, "_modules") else []
        children += [v for v in (vars(obj).values() if hasattr(obj, "__dict__") else []) if not isinstance(v, type)]
        for child in children:
            for item in (child if isinstance(child, (list, tuple)) else [child]):
                if hasattr(item, "__dict__") and not isinstance(item, (np.ndarray, type)):
                    names |= _attributes(item, depth - 1)
    return names


UNREAD_PROBES = [UnreadParameter(), UnreadAttribute(), UnreadSibling()]
