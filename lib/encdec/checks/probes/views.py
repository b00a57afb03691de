"""The array an expression of the student's failing line holds, when reading it runs nothing of theirs:
a name or attribute chain (shapes.py), an index of one (`x[:, :m]`, `x[..., None]`, with plain numbers or
int variables), or an axis swap (`np.swapaxes(x, -1, -2)`, `x.swapaxes(-1, -2)`, `x.transpose(...)`,
`x.T`). Indexing and swapping make views: nothing is computed or changed."""

import ast

import numpy as np

_SWAPS = ("swapaxes", "transpose", "moveaxis")


def _number(node, frame):
    """An int the node writes or names (3, -1, m), or None."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = frame.f_locals.get(node.id, frame.f_globals.get(node.id)) if isinstance(node, ast.Name) else None
    return value if type(value) is int or value is None and isinstance(node, ast.Constant) else None


def _index(node, frame):
    """The Python index an ast index stands for, or raise ValueError."""
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _number(p, frame) for p in (node.lower, node.upper, node.step)]
        if any(p is None and q is not None for p, q in zip(parts, (node.lower, node.upper, node.step))):
            raise ValueError("not a plain slice")
        return slice(*parts)
    if isinstance(node, ast.Constant) and node.value in (None, Ellipsis):
        return node.value
    number = _number(node, frame)
    if number is None:
        raise ValueError("not a plain index")
    return number


def view(node, frame, resolve):
    """The array `node` holds, by `resolve` (names and attribute chains) or as a view of one; None otherwise."""
    try:
        if isinstance(node, ast.Subscript):
            base = view(node.value, frame, resolve)
            if base is None:
                return None
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return base[tuple(_index(e, frame) for e in elts)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SWAPS:
            owner = node.func.value
            module = isinstance(owner, ast.Name) and owner.id in ("np", "numpy", "torch")
            base = view(node.args[0] if module else owner, frame, resolve)
            numbers = [_number(a, frame) for a in (node.args[1:] if module else node.args)]
            if base is None or any(n is None for n in numbers):
                return None
            if node.func.attr == "transpose" and not numbers:
                return base.T
            return getattr(base, node.func.attr)(*numbers) if not module else getattr(np, node.func.attr)(base, *numbers)
    except Exception:
        return None
    return resolve(node, frame)
