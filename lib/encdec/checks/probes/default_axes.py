"""The repair's edits of an axis left to its default (tried with size_one_axes.py's): a reduction given no axis,
which runs over the whole array where one axis of each vector is meant (`np.mean(g * x)` for
`np.mean(g * x, axis=-1, keepdims=True)`), and a slice given one index, which cuts the first axis, the batch
when a batch comes, where the positions are meant (`H_dec[t:t + 1]` for `H_dec[..., t:t + 1, :]`), and so does one integer index
written into (`shifted[0] = bos_id` for `shifted[..., 0] = bos_id`); an argument
sliced with a loop's variable where it is the same at every step (`mask[..., t:t + 1]` for `mask`); and the
opposite of the first, a count given an axis where the formula counts over the whole batch
(`keep.sum(axis=-1, keepdims=True)` for `keep.sum()`). Same contract
as edits.py: each kind yields Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import Edit, _callee, _parameters, _parent, _replace_child, _text

_OVER_AN_AXIS = {"sum", "mean", "max", "min", "var", "std"}


def _no_axis(node):
    """`np.mean(a)` or `a.mean()`: a reduction with no axis, positional or named."""
    if not (isinstance(node, ast.Call) and _callee(node) in _OVER_AN_AXIS) or any(
            k.arg in ("axis", "dim", "keepdims", "keepdim") for k in node.keywords):
        return False
    method = isinstance(node.func, ast.Attribute) and not (isinstance(node.func.value, ast.Name)
                                                           and node.func.value.id in ("np", "numpy", "torch"))
    return not node.args if method else len(node.args) == 1


def _reduction_over_everything(i, node, fdef):
    """A reduction with no axis: over the whole array, where the formula reduces each vector (its last axis)."""
    if not _no_axis(node):
        return

    def apply(n, tree):
        n.keywords = [*n.keywords, ast.keyword("axis", ast.Constant(-1)), ast.keyword("keepdims", ast.Constant(True))]
        return True
    yield Edit(i, "whole_array", apply, f"axis=-1, keepdims=True added to `{_text(node)}`",
               f"`{_text(node)}` has no axis, so it reduces the whole array to one number: every row gets the same "
               "value. The formula reduces each vector on its own, along the last axis, keeping it (size 1) so that "
               "the result lines up with the rows.")


def _one_count_per_row(i, node, fdef):
    """`keep.sum(axis=-1, keepdims=True)` where the formula counts over the whole batch (N, one number): a sum given
    an axis, the axis and keepdims taken out."""
    if not (isinstance(node, ast.Call) and _callee(node) == "sum" and isinstance(node.func, ast.Attribute)
            and any(k.arg in ("axis", "dim") for k in node.keywords)):
        return
    module = isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy", "torch")
    if len(node.args) != (1 if module else 0):
        return

    def apply(n, tree):
        n.keywords = [k for k in n.keywords if k.arg not in ("axis", "dim", "keepdims", "keepdim")]
        return True
    whole = f"{_text(node.func)}({_text(node.args[0]) if module else ''})"
    yield Edit(i, "one_count", apply, f"`{whole}` in place of `{_text(node)}`",
               f"`{_text(node)}` counts along one axis, one number for each row; the formula's count is one number "
               "for the whole batch, every axis at once (the mean over all the batch's real tokens, not each "
               "row's own mean).")


def _slice_of_first_axis(i, node, fdef):
    """`H_dec[t:t + 1]`: a slice with one index cuts axis 0; the positions are counted from the end."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Slice)
            and (node.slice.lower is not None or node.slice.upper is not None)):
        return
    if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return
    for trailing in (1, 0):
        def apply(n, tree, trailing=trailing):
            n.slice = ast.Tuple([ast.Constant(Ellipsis), n.slice, *[ast.Slice() for _ in range(trailing)]], ast.Load())
            return True
        cut = f"{_text(node.value)}[..., {_text(node.slice)}{', :' if trailing else ''}]"
        yield Edit(i, "first_axis", apply, f"`{cut}` in place of `{_text(node)}`",
                   f"a slice with one index, `{_text(node)}`, cuts the first axis, which is the batch when a batch "
                   f"comes; the axis meant is counted from the end, whatever axes lead (`...`).")



def _index_of_first_axis(i, node, fdef):
    """`shifted[0] = bos_id`: one integer index picks a row of axis 0, the batch when a batch comes; the column of
    the last axis (`shifted[..., 0]`) is meant."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int
            and isinstance(node.value, ast.Name)):
        return
    if not any(isinstance(s, ast.Assign) and node in s.targets for s in ast.walk(fdef)):
        return  # written into: a read of one row is as often right as not

    def apply(n, tree):
        n.slice = ast.Tuple([ast.Constant(Ellipsis), n.slice], ast.Load())
        return True
    yield Edit(i, "first_axis", apply, f"`{_text(node.value)}[..., {_text(node.slice)}]` in place of `{_text(node)}`",
               f"one index, `{_text(node)}`, picks a row of the first axis, which is the batch when a batch comes; "
               "the position meant is on the last axis, whatever axes lead (`...`).")

def _sliced_by_the_loop(i, node, fdef):
    """`mask[..., t:t + 1]` in a loop over t, where `mask` is a parameter meant whole at every step."""
    params = set(_parameters(fdef))
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
            and node.value.id in params):
        return
    loops = {n.target.id for n in ast.walk(fdef) if isinstance(n, ast.For) and isinstance(n.target, ast.Name)}
    read = {n.id for n in ast.walk(node.slice) if isinstance(n, ast.Name)} & loops
    if not read:
        return
    name, step = node.value.id, sorted(read)[0]

    def apply(n, tree):
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, ast.Name(name, ast.Load()))
    yield Edit(i, "sliced_per_step", apply, f"`{name}` in place of `{_text(node)}`",
               f"`{_text(node)}` takes a slice of `{name}` with the loop's `{step}`, as if `{name}` had one entry per "
               f"step; it is the same at every step (the docstring says what its axes are): pass `{name}` whole.")


DEFAULT_AXIS_KINDS = [_reduction_over_everything, _one_count_per_row, _slice_of_first_axis, _index_of_first_axis,
                      _sliced_by_the_loop]
