"""The repair's edits of an axis of size 1 (tried with wiring.py's, before edits.py's): an axis inserted where
the array already has it (`mask[..., None, :]` of a mask shaped to broadcast), and an axis dropped by an integer
index where the result keeps it (`padding_mask(...)[..., 0, :, :]`, where `0:1` keeps the heads' axis). Same
contract as edits.py: each kind yields Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import Edit, _const_int, _text


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


SIZE_ONE_KINDS = [_extra_new_axis, _index_drops_axis]
