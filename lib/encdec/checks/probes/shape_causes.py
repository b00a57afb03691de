"""What usually causes a shape error, read from the student's failing line and function (shapes.py asks, after
an operation fails): a `.T` of an array with a batch axis (it reverses every axis), a reduction over an axis
without keepdims (the reduced axis is gone, so the result lines up against another), an array cut to a length
it is shorter than (`pred[:, :m]` of a prediction that stopped early: a slice never pads; cut_short.py), an array made with a shape
that starts from another's first size (`np.full((targets.shape[0], 1), ...)`: one batch axis), and an array walked
along its first axis (`list(heads)`, `for h in heads`, `zip(*heads)`) where that axis is the batch; and a
reshape given a size read from another array (`t.reshape(*lead, T, h, d_k)` with T the queries' length, where t
holds the keys). Each says
(detail, words) in the student's names and shapes; None where none of them is the cause. Nothing of the
student's is run: the arrays are read from the failing frame.
"""

import ast

import numpy as np

from .cut_short import _cut_short, _made_before
from .nodes import _REDUCTIONS, _axis_slots, _callee, _const_int, _reduced, _text, function_of


def cause(frame, nodes, resolve, sizes):
    """(detail, words) for the first operand in `nodes` that explains a shape error, else the first array of
    the function walked along a batch axis; None when nothing here explains it."""
    for node in nodes:
        found = _transposed_batch(node, frame, resolve) or _reduced_without_keepdims(node, frame, resolve) \
            or _cut_short(node, frame, resolve) or _shaped_for_one_batch(node, frame, resolve)
        if found is not None:
            return found
    return _iterated_batch(frame, resolve, sizes)


def _transposed_batch(node, frame, resolve):
    if not (isinstance(node, ast.Attribute) and node.attr == "T"):
        return None
    base = resolve(node.value, frame)
    if base is None or base.ndim < 3:
        return None
    name, shape = _text(node.value), tuple(int(s) for s in base.shape)
    return "transposed_batch", (
        f"`{name}.T` reverses every axis of `{name}` {shape}, giving {shape[::-1]}: with a batch axis in front, the "
        f"batch moves to the end. Swap only the last two axes: np.swapaxes({name}, -1, -2) ({name}.mT in torch).")


def _reduced_without_keepdims(node, frame, resolve):
    if not (isinstance(node, ast.Call) and _callee(node) in _REDUCTIONS and _axis_slots(node)) \
            or any(k.arg in ("keepdims", "keepdim") for k in node.keywords):
        return None
    array = _reduced(node)
    base = resolve(array, frame) if array is not None else None
    if base is None or base.ndim < 2:
        return None
    slot = _axis_slots(node)[0]
    value = slot.value if isinstance(slot, ast.keyword) else node.args[slot]
    axis = _const_int(value)
    if axis is None and isinstance(value, ast.Name) and type(frame.f_locals.get(value.id)) is int:
        axis = frame.f_locals[value.id]
    if axis is None or not -base.ndim <= axis < base.ndim:
        return None
    shape = tuple(int(s) for s in base.shape)
    left = shape[:axis % base.ndim] + shape[axis % base.ndim + 1:]
    word = "keepdim" if "dim" in [k.arg for k in node.keywords] else "keepdims"
    return "keepdims", (
        f"`{_text(node)}` drops the axis it reduces: `{_text(array)}` {shape} gives {left}, which lines up "
        f"(from the right) against other axes of the arrays it meets. {word}=True keeps the reduced axis with size "
        "1, so the result broadcasts along it.")


def _shaped_for_one_batch(node, frame, resolve):
    """`name` made with a shape that starts from another array's first size (`np.full((targets.shape[0], 1),
    ...)`), where that array has another number of axes than one batch axis plus the rest: the new array counts
    on exactly one leading axis."""
    array, made = _made_before(node, frame, resolve, ast.Call)
    for stmt in made:
        if not (stmt.value.args and isinstance(stmt.value.args[0], ast.Tuple)):
            continue
        shape = stmt.value.args[0]
        first = shape.elts[0] if shape.elts else None
        if not (isinstance(first, ast.Subscript) and isinstance(first.value, ast.Attribute)
                and first.value.attr == "shape" and _const_int(first.slice) == 0):
            continue
        other = resolve(first.value.value, frame)
        if other is None or other.ndim == len(shape.elts):
            continue
        source, rest = _text(first.value.value), ", ".join(_text(e) for e in shape.elts[1:])
        return "shaped_for_one_batch", (
            f"`{node.id}` is made with the shape `{_text(shape)}` (line {stmt.lineno}), which counts on exactly one "
            f"leading (batch) axis of `{source}`; here `{source}` has shape {tuple(int(n) for n in other.shape)}, and "
            f"`{node.id}` gets {tuple(int(n) for n in array.shape)}. Take every leading axis, whatever there are: "
            f"`{source}.shape[:-1] + ({rest},)`.")
    return None


def _pieces(node, frame, resolve):
    """[(node, its sizes)] for the pieces a reshape's shape is written with, read from the frame: a number, a name
    of one, `self.n_heads`, `*lead` of a list of numbers, `x.shape[:-2]`, and tuples of these joined with +; None
    where any piece is something else."""
    if isinstance(node, ast.Tuple):
        parts = [_pieces(e, frame, resolve) for e in node.elts]
        return None if any(p is None for p in parts) else [q for p in parts for q in p]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pieces(node.left, frame, resolve), _pieces(node.right, frame, resolve)
        return None if left is None or right is None else left + right
    value = None
    if isinstance(node, ast.Starred) and isinstance(node.value, ast.Name):
        value = frame.f_locals.get(node.value.id)
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
            and isinstance(node.slice, ast.Slice) and node.slice.step is None:
        array = resolve(node.value.value, frame)
        ends = [None if e is None else _const_int(e) for e in (node.slice.lower, node.slice.upper)]
        if array is not None and all(e is not None or b is None for e, b in zip(ends, (node.slice.lower,
                                                                                       node.slice.upper))):
            value = array.shape[ends[0]:ends[1]]
    if value is not None:
        return [(node, [int(v) for v in value])] if all(isinstance(v, (int, np.integer)) for v in value) else None
    if _const_int(node) is not None:
        return [(node, [_const_int(node)])]
    if isinstance(node, ast.Name):
        value = frame.f_locals.get(node.id)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in frame.f_locals:
        value = getattr(frame.f_locals[node.value.id], node.attr, None)
    return [(node, [value])] if type(value) is int else None


def reshaped_with_another_size(call, frame, resolve, error=""):
    """(detail, words) where `x.reshape(..., T, ...)` fails and `T` is not x's size along any axis, while x's own
    size along one axis in its place would hold x's entries: T was read from another array (the queries' length
    used for the keys). The statement that set T is looked for in the failing function and the one that called it
    (a helper defined inside a method reads the method's names)."""
    array = resolve(call.func.value, frame)
    pieces = _pieces(call.args[0] if len(call.args) == 1 else ast.Tuple(list(call.args)), frame, resolve) \
        if call.args else None
    import re
    told = re.search(r"array of size (\d+)", error)
    if not pieces or array is None and told is None:
        return None
    total = int(array.size) if array is not None else int(told.group(1))
    for arg, size in pieces:
        first = _first_axis_of(arg.id, frame) if isinstance(arg, ast.Name) else None
        leading = _leading_size(call.func.value, array, frame, resolve)
        if first is not None and leading is not None and leading != size[0]:
            stmt, text = first
            name = _text(call.func.value)
            has = f"has shape {tuple(int(n) for n in array.shape)}" if array is not None else f"holds {total} numbers"
            return "first_axis_size", (
                f"`{arg.id}` is `{text}` (line {stmt.lineno}: `{_text(stmt)}`), the size of the first axis, which is the "
                f"batch only where exactly one batch axis comes; here `{name}` {has}, and `{arg.id}` is "
                f"{size[0]}. Take every leading axis, whatever there are: `*lead, m, _ = x.shape`, then "
                "`x.reshape(*lead, m, h, d_k)`, and swap the last axes with np.swapaxes(..., -3, -2) rather than a "
                "transpose that names every axis.")
    if array is None:
        return None
    asked = int(np.prod([n for _, s in pieces for n in s]))
    for arg, size in pieces:
        if not isinstance(arg, ast.Name) or size[0] <= 0 or size[0] in array.shape or asked % size[0]:
            continue
        for axis in range(-1, -array.ndim - 1, -1):
            own = int(array.shape[axis])
            if asked // size[0] * own != array.size:
                continue
            name, shape = _text(call.func.value), tuple(int(n) for n in array.shape)
            return "size_of_another", (
                f"`{arg.id}` is {size[0]} here, but `{name}` has shape {shape}: {own} along axis {axis}, and with {own} "
                f"in its place the reshape holds {name}'s {int(array.size)} numbers.{_set_by(arg.id, frame)} Take "
                f"each size from the array you reshape: {name}.shape[{axis}].")
    return None


def _leading_size(node, array, frame, resolve):
    """The product of the leading axes (all but the last two) of the array a reshape takes: `array`'s, or, for
    `x @ W`, the left operand's (a product keeps them); None where neither is known."""
    if array is None and isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        array = resolve(node.left, frame)
    return None if array is None or array.ndim < 2 else int(np.prod(array.shape[:-2], dtype=np.int64))


def _first_axis_of(name, frame):
    """(statement, `x.shape[0]`) where `name` was set to an array's first size (`B, m = x.shape[0], x.shape[-2]`), in
    the failing function or the one that called it; None otherwise."""
    for f in (frame, _student_caller(frame)):
        tree = function_of(f) if f is not None else None
        for stmt in _assigned(name, tree) if tree is not None else []:
            target, value = stmt.targets[0], stmt.value
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                value = next((v for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name) and t.id == name),
                             None)
            if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) \
                    and value.value.attr == "shape" and _const_int(value.slice) == 0:
                return stmt, _text(value)
    return None


def _student_caller(frame):
    """The frame that called `frame` where it is the student's own code (a method calling its helper), else None:
    the grader's frames are never quoted."""
    from .tracer import student_code
    back = frame.f_back
    return back if back is not None and student_code(back.f_code.co_filename) else None


def _assigned(name, tree):
    return [stmt for stmt in ast.walk(tree) if isinstance(stmt, ast.Assign)
            and any(isinstance(n, ast.Name) and n.id == name for t in stmt.targets for n in ast.walk(t))]


def _set_by(name, frame):
    """Words on where `name` got its value: an assignment in the failing function or the one that called it (a
    helper defined inside a method reads the method's names), or the call that passed it as an argument."""
    back = _student_caller(frame)
    tree, caller = function_of(frame), function_of(back) if back is not None else None
    for where in (tree, caller):
        made = _assigned(name, where) if where is not None else []
        if made:
            return f" `{name}` is set by `{_text(made[0])}` (line {made[0].lineno}): the size of another array."
    code = frame.f_code
    params = code.co_varnames[:code.co_argcount]
    if name not in params or caller is None:
        return ""
    for call in ast.walk(caller):
        if isinstance(call, ast.Call) and call.lineno <= back.f_lineno <= call.end_lineno \
                and _callee(call) == code.co_name:
            k = params.index(name) - (1 if params and params[0] == "self" and isinstance(call.func, ast.Attribute)
                                      else 0)
            given = call.args[k] if 0 <= k < len(call.args) else None
            made = _assigned(given.id, caller) if isinstance(given, ast.Name) else []
            if made:
                return (f" `{name}` is the `{given.id}` that `{_text(call)}` passes, and `{given.id}` is set by "
                        f"`{_text(made[0])}` (line {made[0].lineno}): the size of another array.")
    return ""



def _iterated_batch(frame, resolve, sizes):
    """An array of the function walked along its first axis where that axis is the case's batch."""
    batch = {v for k, v in (sizes or {}).items() if k.startswith("B")}
    tree = function_of(frame)
    if tree is None or not batch:
        return None
    for node in ast.walk(tree):
        walked = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "zip") \
                and node.args:
            walked = node.args[0]
        elif isinstance(node, ast.Call) and _callee(node) in ("concatenate", "stack", "hstack", "vstack") and node.args \
                and isinstance(node.args[0], ast.Name):  # an array, not a list: walked along its first axis
            walked = node.args[0]
        elif isinstance(node, (ast.For, ast.comprehension)):
            walked = node.iter
        elif isinstance(node, ast.Starred):
            walked = node.value
        if not isinstance(walked, (ast.Name, ast.Attribute)):
            continue
        array = resolve(walked, frame)
        if array is None or array.ndim < 3 or int(array.shape[0]) not in batch:
            continue
        name, shape = _text(walked), tuple(int(s) for s in array.shape)
        return "walks_batch", (
            f"`{_text(node if not isinstance(node, (ast.For, ast.comprehension)) else walked)}` walks `{name}` "
            f"{shape} along its first axis, which is the batch here (size {shape[0]}), not the axis meant: iterating "
            "an array always takes axis 0, whatever leading axes come. Take the axis you mean from the end "
            f"(np.moveaxis({name}, -3, 0), or index {name}[..., k, :, :]), or reshape instead of looping.")
    return None
