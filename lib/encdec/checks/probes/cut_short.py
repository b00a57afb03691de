"""An array a slice cut short, read from a shape error's frame (shape_causes.py asks): `pred[:, :m]` where `pred`
has fewer than m columns (a decoder that stopped early) keeps its length, for a slice never makes an array longer,
and it meets an array of the full length. The slice may be in the failing line or in the statement that made the
name; its bound a number or an expression of the frame (`m`, `tgt.shape[1]`).
"""

import ast

import numpy as np

from .nodes import _const_int, _text, function_of, value_in_frame


def _made_before(node, frame, resolve, kind):
    """(the array the name `node` holds in the failing frame, the statements of its function before the failing
    line that assign it a value of the syntax `kind`), or (None, []) when it is not a name of an array there."""
    if not isinstance(node, ast.Name):
        return None, []
    array, tree = resolve(node, frame), function_of(frame)
    if array is None or tree is None:
        return None, []
    return array, [stmt for stmt in ast.walk(tree) if isinstance(stmt, ast.Assign) and isinstance(stmt.value, kind)
                   and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets)
                   and stmt.lineno < frame.f_lineno]


def _cut_short(node, frame, resolve):
    """`name` assigned `...[:, :bound]` in the function, or the slice `x[:, :bound]` itself in the failing line,
    where the array is shorter than `bound` along that axis: the slice kept it as it was, and it meets an array of
    the full length."""
    if isinstance(node, ast.Subscript):  # the slice written in the failing line
        array = resolve(node.value, frame)
        found = _short(node, array, frame) if array is not None else None
        where, name = f"`{_text(node)}`", _text(node.value)
    else:
        array, made = _made_before(node, frame, resolve, ast.Subscript)
        found, where, name = None, "", getattr(node, "id", "")
        for stmt in made:
            found = _short(stmt.value, array, frame)
            if found is not None:
                where = f"`{_text(stmt)}` (line {stmt.lineno})"
                break
    if found is None:
        return None
    bound, axis = found
    return "cut_short", (
        f"{where} cuts `{name}` to at most {bound} along axis {axis}, but `{name}` has only "
        f"{int(array.shape[axis])} there: a slice never makes an array longer. Where it is shorter (a decoder that "
        f"stopped early), pad it to {bound} first, with a value that cannot match, such as the pad id.")


def _short(sliced, array, frame):
    """(bound, axis) of a slice `[:, :bound]` of `sliced` that asks for more than `array` holds on that axis, else
    None."""
    items = sliced.slice.elts if isinstance(sliced.slice, ast.Tuple) else [sliced.slice]
    ellipsis = [k for k, item in enumerate(items) if isinstance(item, ast.Constant) and item.value is Ellipsis]
    for k, item in enumerate(items):
        if not (isinstance(item, ast.Slice) and item.lower is None and item.step is None and item.upper is not None):
            continue
        bound = _const_int(item.upper)
        if bound is None:  # a name or an expression of the frame (`m`, `tgt.shape[1]`)
            value = value_in_frame(item.upper, frame)
            bound = int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else None
        axis = k - len(items) if ellipsis and ellipsis[0] < k else k
        shape = getattr(array, "shape", None)
        if bound is None or bound <= 0 or shape is None or not -len(shape) <= axis < len(shape) \
                or shape[axis] >= bound:
            continue
        return bound, axis
    return None
