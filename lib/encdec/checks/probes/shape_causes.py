"""What usually causes a shape error, read from the student's failing line and function (shapes.py asks, after
an operation fails): a `.T` of an array with a batch axis (it reverses every axis), a reduction over an axis
without keepdims (the reduced axis is gone, so the result lines up against another), an array cut to a length
it is shorter than (`pred[:, :m]` of a prediction that stopped early: a slice never pads), an array made with a shape
that starts from another's first size (`np.full((targets.shape[0], 1), ...)`: one batch axis), and an array walked
along its first axis (`list(heads)`, `for h in heads`, `zip(*heads)`) where that axis is the batch. Each says
(detail, words) in the student's names and shapes; None where none of them is the cause. Nothing of the
student's is run: the arrays are read from the failing frame.
"""

import ast

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
    """`name` assigned `...[:, :bound]` in the function, where the array `name` holds is shorter than `bound` along
    that axis: the slice kept it as it was, and it meets an array of the full length."""
    array, made = _made_before(node, frame, resolve, ast.Subscript)
    for stmt in made:
        items = stmt.value.slice.elts if isinstance(stmt.value.slice, ast.Tuple) else [stmt.value.slice]
        ellipsis = [k for k, item in enumerate(items) if isinstance(item, ast.Constant) and item.value is Ellipsis]
        for k, item in enumerate(items):
            if not (isinstance(item, ast.Slice) and item.lower is None and item.step is None and item.upper is not None):
                continue
            bound = _const_int(item.upper)
            if bound is None and isinstance(item.upper, ast.Name) and type(frame.f_locals.get(item.upper.id)) is int:
                bound = frame.f_locals[item.upper.id]
            axis = k - len(items) if ellipsis and ellipsis[0] < k else k
            if bound is None or bound <= 0 or not -array.ndim <= axis < array.ndim or array.shape[axis] >= bound:
                continue
            return "cut_short", (
                f"`{_text(stmt)}` (line {stmt.lineno}) cuts `{node.id}` to at most {bound} along axis {axis}, but "
                f"`{node.id}` has only {int(array.shape[axis])} there: a slice never makes an array longer. Where it "
                f"is shorter (a decoder that stopped early), pad it to {bound} first, with a value that cannot "
                "match, such as the pad id.")
    return None


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
