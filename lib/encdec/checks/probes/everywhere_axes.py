"""The repair's every-place edits of axes (everywhere.py lists them with the others): one axis written wrong in
each call of a kind, axis=-1 given to np.insert, np.append and np.delete (which flatten the array without one),
swapaxes's and tensordot's axes counted from the end where they are counted from the front, and np.pad given a
pair of widths for each axis where one pair pads them all. Same contract as edits.py.
"""

import ast

from .nodes import Edit, _axis_slots, _callee, _const_int, _int_node, _text


def _axis_sites(fdef):
    """{(callee, the axis written): [(call, slot)]} of the calls that write an axis as a number."""
    groups = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call):
            for slot in _axis_slots(node)[:1]:
                value = slot.value if isinstance(slot, ast.keyword) else node.args[slot]
                old = _const_int(value)
                if old is not None:
                    groups.setdefault((_callee(node), old), []).append((node, slot))
    return groups


def _every_axis(i, node, fdef):
    """The same axis written wrong in each call of one kind (`torch.cat(..., dim=-1)` for the keys and the
    values both): another axis in all of them, as one change."""
    if node is not fdef:
        return
    for (callee, old), sites in _axis_sites(fdef).items():
        if len(sites) < 2:
            continue
        word = sites[0][1].arg if isinstance(sites[0][1], ast.keyword) else "axis"
        for new in (-2, -1, -3, 0, 1):
            if new == old:
                continue

            def apply(n, tree, callee=callee, old=old, new=new):
                for call, slot in _axis_sites(n).get((callee, old), []):
                    if isinstance(slot, ast.keyword):
                        slot.value = _int_node(new)
                    else:
                        call.args[slot] = _int_node(new)
                return True
            first = min(sites, key=lambda site: (site[0].lineno, site[0].col_offset))[0]
            yield Edit(i, "axis", apply, f"{word}={new} in place of {word}={old} in every `{callee}` "
                       f"(`{_text(first)}`, ...)",
                       f"{word}={old} is another axis than the formula's, at each of these calls." + (
                           " Counting axes from the end (-1 is the last) keeps them right whatever leading batch "
                           "axes come first." if old >= 0 > new else ""), first.lineno)


def _front_axes(node):
    """`np.swapaxes(x, 0, 1)` (or x.swapaxes(0, 1), moveaxis): the call and its two axes, both counted from the
    front, else None."""
    if not (isinstance(node, ast.Call) and _callee(node) in ("swapaxes", "moveaxis")):
        return None
    module = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
        and node.func.value.id in ("np", "numpy", "torch")
    axes = node.args[1:3] if module else node.args[0:2]
    values = [_const_int(a) for a in axes]
    if len(values) != 2 or any(v is None or v < 0 for v in values):
        return None
    return (1 if module else 0), values


def _axes_from_the_end(i, node, fdef):
    """Every swapaxes of axes counted from the front (0, 1), right only without a batch axis: the same axes
    counted from the end (-3, -2 for an array of three axes), at every such call, as one change."""
    if node is not fdef:
        return
    calls = sorted((n for n in ast.walk(fdef) if _front_axes(n)), key=lambda n: (n.lineno, n.col_offset))
    if not calls:
        return
    for ndim in (3, 2, 4):
        if any(max(_front_axes(c)[1]) >= ndim for c in calls):
            continue

        def apply(n, tree, ndim=ndim):
            for call in [c for c in ast.walk(n) if _front_axes(c)]:
                start, values = _front_axes(call)
                call.args[start:start + 2] = [_int_node(v - ndim) for v in values]
            return True
        start, values = _front_axes(calls[0])
        yield Edit(i, "axis", apply, f"axes {values[0] - ndim}, {values[1] - ndim} in place of {values[0]}, {values[1]} "
                   f"in `{_text(calls[0])}`" + (" and each call like it" if len(calls) > 1 else ""),
                   "axes counted from the front are the right ones only when no batch axis comes first; counted from "
                   "the end, they name the same axes whatever leading axes there are.", calls[0].lineno)


_FLATTENING = ("insert", "append", "delete")


def _flattening(node):
    """`np.insert(x, 0, v)` with no axis: NumPy flattens x first."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FLATTENING \
        and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy") \
        and len(node.args) < (4 if node.func.attr != "delete" else 3) and not any(k.arg == "axis" for k in node.keywords)


def _axis_for_flattening(i, node, fdef):
    """np.insert, np.append or np.delete given no axis, which flattens the array: axis=-1 given to each."""
    if node is not fdef:
        return
    calls = sorted((n for n in ast.walk(fdef) if _flattening(n)), key=lambda n: (n.lineno, n.col_offset))
    if not calls:
        return

    def apply(n, tree):
        for call in [c for c in ast.walk(n) if _flattening(c)]:
            call.keywords = [*call.keywords, ast.keyword("axis", _int_node(-1))]
        return True
    name = f"np.{calls[0].func.attr}"
    yield Edit(i, "axis", apply, f"axis=-1 given to `{_text(calls[0])}`" + (" and the others" if len(calls) > 1 else ""),
               f"{name} with no axis flattens the array first: a batch becomes one long row. axis=-1 works along "
               "each sequence, whatever batch axes come first.", calls[0].lineno)


def _tensordot_axes(node):
    """(the axes node, its ints in order) of `np.tensordot(a, b, axes=([1], [1]))` or `axes=(1, 1)` (dims= in
    torch), else None."""
    if not (isinstance(node, ast.Call) and _callee(node) == "tensordot"):
        return None
    axes = next((k.value for k in node.keywords if k.arg in ("axes", "dims")), node.args[2] if len(node.args) > 2 else None)
    if not isinstance(axes, (ast.Tuple, ast.List)) or len(axes.elts) != 2:
        return None
    values = [_const_int(v) for side in axes.elts for v in _side(side)]
    return (axes, values) if values and None not in values else None


def _side(side):
    """The axes of one side of tensordot's `axes`: a list's or tuple's, or the one int written alone."""
    return side.elts if isinstance(side, (ast.Tuple, ast.List)) else [side]


def _tensordot_from_the_end(i, node, fdef):
    """`np.tensordot(h, E, axes=([1], [1]))`: an axis counted from the front, right only without a batch axis;
    the last axis (-1) in its place, one side at a time."""
    found = _tensordot_axes(node)
    if found is None:
        return
    axes, values = found
    for k, old in enumerate(values):
        if old < 0:
            continue

        def apply(n, tree, k=k):
            sides = _tensordot_axes(n)[0].elts
            first = len(_side(sides[0]))
            j, at = (0, k) if k < first else (1, k - first)
            if isinstance(sides[j], (ast.Tuple, ast.List)):
                sides[j].elts[at] = _int_node(-1)
            else:
                sides[j] = _int_node(-1)
            return True
        edited = [[_const_int(v) for v in _side(side)] for side in axes.elts]
        first = len(edited[0])
        edited[0 if k < first else 1][k if k < first else k - first] = -1
        shown = [side if isinstance(node_side, (ast.Tuple, ast.List)) else side[0]
                 for side, node_side in zip(edited, axes.elts)]
        yield Edit(i, "axis", apply, f"axes=({shown[0]}, {shown[1]}) in place of `{_text(axes)}` in `{_text(node)}`",
                   f"axis {old} counted from the front is the features' axis only when no batch axis comes first; "
                   "-1, the last axis, is the features' axis whatever leading axes there are.")


def _pad_every_axis(i, node, fdef):
    """`np.pad(x, (1, 0), ...)`: one pair of widths pads every axis of x; a pair for each axis pads the last alone."""
    if not (isinstance(node, ast.Call) and _callee(node) == "pad" and len(node.args) >= 2
            and isinstance(node.args[1], ast.Tuple) and len(node.args[1].elts) == 2
            and all(_const_int(v) is not None for v in node.args[1].elts)):
        return
    pair = _text(node.args[1])
    width = f"[(0, 0)] * (np.ndim({_text(node.args[0])}) - 1) + [{pair}]"

    def apply(n, tree):
        n.args[1] = ast.parse(width, mode="eval").body
        return True
    yield Edit(i, "axis", apply, f"pad_width `{width}` in place of `{pair}` in `{_text(node)}`",
               f"np.pad applies a single pair of widths, `{pair}`, to every axis: a batch gains a row too. A pair for "
               "each axis, (0, 0) for all but the last, pads the last axis alone.")

