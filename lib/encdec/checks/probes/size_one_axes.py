"""The repair's edits of an axis of size 1 (tried with wiring.py's, before edits.py's): an axis inserted where
the array already has it (`mask[..., None, :]` of a mask shaped to broadcast), two or more `None`s that add
axes the result does not have (`mask[None, None]` "to broadcast"), one `None` where two belong, an axis dropped by an integer
index where the result keeps it (`padding_mask(...)[..., 0, :, :]`, where `0:1` keeps the heads' axis), and a
reduced axis put back at the end (`[..., None]` after a reduction over `axis`, in one expression or through a
name), where keepdims=True keeps it in place, and a squeeze() that drops them all. Same contract as edits.py: each kind yields
Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import Edit, _const_int, _parent, _replace_child, _text


def _items(node):
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def _extra_new_axis(i, node, fdef):
    """`mask[..., None, :]` where `mask` already has the axis of size 1 it broadcasts over: the None left out."""
    if not isinstance(node, ast.Subscript):
        return
    items = _items(node)
    nones = [k for k, item in enumerate(items) if isinstance(item, ast.Constant) and item.value is None]
    for k in nones:
        def apply(n, tree, k=k):
            if isinstance(n.slice, ast.Tuple):
                del n.slice.elts[k]
                return bool(n.slice.elts)
            return False
        if len(items) > 1:
            yield Edit(i, "new_axis", apply, f"`{_text(node)}` without its `None`",
                       f"the `None` inserts an axis of size 1 that `{_text(node.value)}` does not need: it already "
                       "has the axes it broadcasts over, and the extra one shifts the others.")


def _extra_new_axes(i, node, fdef):
    """`mask[None, None, :, :]` (two or more `None`s) where the result has none of those axes: every `None` left
    out, and the index with it where only full slices remain."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
        return
    items = _items(node)
    nones = [item for item in items if isinstance(item, ast.Constant) and item.value is None]
    if len(nones) < 2:
        return

    def full(item):
        return (isinstance(item, ast.Slice) and item.lower is None and item.upper is None and item.step is None) \
            or (isinstance(item, ast.Constant) and item.value is Ellipsis)

    def apply(n, tree):
        kept = [item for item in _items(n) if not (isinstance(item, ast.Constant) and item.value is None)]
        if all(full(item) for item in kept):
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, n.value)
        n.slice = ast.Tuple(kept, ast.Load()) if len(kept) > 1 else kept[0]
        return True
    yield Edit(i, "new_axis", apply, f"`{_text(node)}` without its {len(nones)} `None`s",
               f"each `None` inserts an axis of size 1 that the result does not have (the docstring gives its shape): "
               f"broadcasting adds such axes itself where the array is used, so there is no need to add them here.")


def _one_none_short(i, node, fdef):
    """`pad[..., None, :]` where the result keeps two axes of size 1 there (a mask's heads' and queries' axes): one
    `None` more."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
        return
    items = _items(node)
    at = next((k for k, item in enumerate(items) if isinstance(item, ast.Constant) and item.value is None), None)
    if at is None:
        return

    def apply(n, tree, at=at):
        if not isinstance(n.slice, ast.Tuple):
            n.slice = ast.Tuple([n.slice], ast.Load())
        n.slice.elts.insert(at, ast.Constant(None))
        return True
    longer = _text(node).replace("None", "None, None", 1)
    yield Edit(i, "new_axis", apply, f"`{longer}` in place of `{_text(node)}`",
               "one `None` adds one axis of size 1; the result keeps two there (for a mask: the heads' axis and the "
               "queries' axis, (..., 1, 1, n)), so one more is needed.")


def _index_drops_axis(i, node, fdef):
    """`a[..., 0, :, :]` where the result keeps that axis (of size 1): `0:1` in place of `0`."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
        return
    items = _items(node)
    if len(items) < 2 or not any(isinstance(item, (ast.Slice,)) or isinstance(item, ast.Constant)
                                 and item.value is Ellipsis for item in items):
        return  # a single number (`heads[0]`, `x.shape[-1]`) picks an item, not an axis of an array
    for k, item in enumerate(items):
        at = _const_int(item)
        if at is None:
            continue

        def apply(n, tree, k=k, at=at):
            stop = None if at == -1 else ast.Constant(at + 1)
            elts = n.slice.elts
            elts[k] = ast.Slice(lower=ast.Constant(at) if at >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-at)),
                                upper=stop, step=None)
            return True
        kept = f"{at}:{'' if at == -1 else at + 1}"
        yield Edit(i, "index_drops_axis", apply, f"`{kept}` in place of `{at}` in `{_text(node)}`",
                   f"an integer index drops its axis: `{_text(node)}` has one axis fewer than `{_text(node.value)}`. "
                   f"A slice of length 1 (`{kept}`) picks the same entries and keeps the axis, with size 1, so the "
                   "result keeps the axes it broadcasts over.")


def _reduction_axis_at_the_end(i, node, fdef):
    """`np.max(x, axis=axis)[..., None]`, or `m = np.max(x, axis=axis)` then `m[..., None]`: the reduced axis put
    back at the end, not where it was; keepdims=True keeps it in place (each such reduction, as one change)."""
    if node is not fdef:
        return
    reduced = _reduced_names(fdef)
    found = [s for s in ast.walk(fdef) if _put_back_at_end(s, reduced)]
    if not found:
        return

    def apply(n, tree):
        names = _reduced_names(n)
        for sub in [s for s in ast.walk(n) if _put_back_at_end(s, names)]:
            call = sub.value if isinstance(sub.value, ast.Call) else names[sub.value.id]
            call.keywords = [kw for kw in call.keywords if kw.arg != "keepdims"] + \
                [ast.keyword("keepdims", ast.Constant(True))]
            parent = _parent(n, sub)
            if parent is None or not _replace_child(parent, sub, sub.value):
                return False
        return True
    yield Edit(i, "keepdims", apply, "keepdims=True in place of `[..., None]` after each reduction over `axis`",
               "`[..., None]` puts the reduced axis back at the end, which is where it was only when `axis` is the "
               "last; keepdims=True keeps it where it was, for any axis.", found[0].lineno)


def _reduction_over_axis(call):
    """True for `reduce(x, axis=a)` (a keyword axis not written as -1, no keepdims)."""
    if not isinstance(call, ast.Call) or any(kw.arg == "keepdims" for kw in call.keywords):
        return False
    axis = next((kw.value for kw in call.keywords if kw.arg == "axis"), None)
    return axis is not None and _const_int(axis) != -1


def _reduced_names(fdef):
    """{name: the call} of the names the function assigns once, from a reduction over an axis."""
    assigned = {}
    for stmt in ast.walk(fdef):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned.setdefault(stmt.targets[0].id, []).append(stmt.value)
    return {name: values[0] for name, values in assigned.items() if len(values) == 1
            and _reduction_over_axis(values[0])}


def _put_back_at_end(node, reduced):
    """`reduce(x, axis=a)[..., None]` (or np.newaxis), or `m[..., None]` with `m` in `reduced`."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple)):
        return False
    elts = node.slice.elts
    at_end = len(elts) == 2 and isinstance(elts[0], ast.Constant) and elts[0].value is Ellipsis and \
        (isinstance(elts[1], ast.Constant) and elts[1].value is None or _text(elts[1]) == "np.newaxis")
    return at_end and (_reduction_over_axis(node.value) or isinstance(node.value, ast.Name) and node.value.id in reduced)


def _squeezed(i, node, fdef):
    """`mask.squeeze()` (or np.squeeze(mask)) with no axis: every axis of size 1 dropped, those the result keeps
    to broadcast over too."""
    if not (isinstance(node, ast.Call) and not node.keywords and isinstance(node.func, ast.Attribute)
            and node.func.attr == "squeeze"):
        return
    method = not node.args
    if not method and not (len(node.args) == 1 and isinstance(node.func.value, ast.Name)
                           and node.func.value.id in ("np", "numpy", "torch")):
        return
    inner = node.func.value if method else node.args[0]

    def apply(n, tree):
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, n.func.value if not n.args else n.args[0])
    yield Edit(i, "squeeze", apply, f"`{_text(inner)}` in place of `{_text(node)}`",
               "squeeze() with no axis drops every axis of size 1, the ones the result keeps to broadcast over (a "
               "mask's heads and queries) and a batch of one too.")


SIZE_ONE_KINDS = [_extra_new_axis, _extra_new_axes, _one_none_short, _index_drops_axis, _reduction_axis_at_the_end, _squeezed]
