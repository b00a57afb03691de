"""One slip made at every place it could be, mended as one change: the repair (repair.py) tries each edit of
edits.py at one place; a student who writes np.dot for @, or .T on a batched array, or a reduction without
keepdims, usually writes it at each place, and no single edit mends that. Here: np.matmul for every
np.dot, swapaxes(-1, -2) for every .T, keepdims=True on every reduction over an axis, the model's eps
passed to every norm that was left with its default, one axis written wrong in each call of a kind, and
axis=-1 given to np.insert, np.append and np.delete, which flatten the array without one, swapaxes's and
tensordot's axes counted from the end where they are counted from the front, np.pad given a pair of widths
for each axis where one pair pads them all, every division by a norm taken out (a cosine for a dot product), and every power of a parenthesised
difference regrouped (`(1 - beta1) ** t`, `(1 - beta2) ** t`), every division missing its parentheses regrouped
(`m / 1 - b ** t`), and every product in a bias correction made a power (`1 - beta1 * t`). Same contract as edits.py: each kind yields
Edit(index, kind, apply, said, why); each applies to the whole function (index 0) and needs two places or
more (one place is edits.py's), except the eps, which reads a constant the code never passes.
"""

import ast

from .arithmetic import _product_for_power, _regroup, _term_outside_call, term_outside_call
from .call_edits import _dot, _transpose
from .edits import _keepdims
from .nodes import _REDUCTIONS, Edit, _axis_slots, _callee, _const_int, _int_node, _parent, _replace_child, _text


def _sites(fdef, kind, select=lambda node: True):
    """[(index, node)] of the nodes where `kind` makes an edit (and `select` agrees), in ast.walk order."""
    found = [(j, n) for j, n in enumerate(ast.walk(fdef)) if select(n) and any(True for _ in kind(j, n, fdef))]
    return sorted(found, key=lambda site: (site[1].lineno, site[1].col_offset))


def _every(kind, said, why, select=lambda node: True, which=0):
    """A kind of edits.py applied at each of its places at once (its `which`-th edit at each)."""
    def every(i, node, fdef):
        if node is not fdef:
            return
        sites = _sites(fdef, kind, select)
        if len(sites) < 2:
            return
        places = ", ".join(f"`{_text(n)}`" for _, n in sites[:3]) + (", ..." if len(sites) > 3 else "")

        def apply(n, tree):
            nodes = list(ast.walk(tree))
            for j, _ in sites:
                edits = list(kind(j, nodes[j], tree))
                if len(edits) <= which or not edits[which].apply(nodes[j], tree):
                    return False
            return True
        yield Edit(i, kind.__name__.strip("_"), apply, f"{said} ({places})", why, sites[0][1].lineno)
    return every


def _over_an_axis(node):
    return isinstance(node, ast.Call) and _callee(node) in _REDUCTIONS and bool(_axis_slots(node))


_NORMS = ("rms_norm", "layer_norm", "rmsnorm", "layernorm", "_rms")


def _norm_without_eps(node):
    """`rms_norm(x, owner.gamma)` with no eps given: (the call, the owner's text), else None."""
    if not (isinstance(node, ast.Call) and _callee(node) in _NORMS and len(node.args) == 2
            and not any(k.arg == "eps" for k in node.keywords)):
        return None
    gamma = node.args[1] if len(node.args) > 1 else None
    if not isinstance(gamma, ast.Attribute):
        return None
    return node, _text(gamma.value)


def _eps_of(owner):
    """Where the model's constant is: `model.config.eps` for the model, `block.eps` for a block."""
    return f"{owner}.config.eps" if owner.split(".")[-1].endswith("model") else f"{owner}.eps"


def _model_eps(i, node, fdef):
    """Every norm called without eps, given the eps of the object its gain belongs to."""
    if node is not fdef:
        return
    calls = sorted((found for n in ast.walk(fdef) if (found := _norm_without_eps(n)) is not None),
                   key=lambda found: (found[0].lineno, found[0].col_offset))
    if not calls:
        return

    def apply(n, tree):
        for call in ast.walk(n):
            found = _norm_without_eps(call)
            if found is not None:
                call.keywords = [*call.keywords, ast.keyword("eps", ast.parse(_eps_of(found[1]), mode="eval").body)]
        return True
    first, owner = calls[0]
    sources = list(dict.fromkeys(f"`eps={_eps_of(owner)}`" for _, owner in calls))
    every = "each norm" if len(calls) > 1 else "the norm"
    yield Edit(i, "eps", apply, f"{' or '.join(sources)} passed to {every} (`{_text(first)}`"
               + (", ..." if len(calls) > 1 else "") + ")",
               f"{_text(first.func)} called without eps uses its own default (1e-6); the model's RMSNorms use the "
               "model's constant, [CONFIG] eps, which the call must pass.", first.lineno)


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


def _power_of_a_difference(node):
    """`(1 - beta1) ** t`: a power of a parenthesised difference."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.left, ast.BinOp) \
        and isinstance(node.left.op, ast.Sub)


def _difference_after_a_division(node):
    """`m / 1 - b ** t`: a difference whose left side is a division (the divisor meant to be the difference)."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.BinOp) \
        and isinstance(node.left.op, ast.Div)


def _tensordot_axes(node):
    """(the axes node, its ints in order) of `np.tensordot(a, b, axes=([1], [1]))` (or dims= in torch), else None."""
    if not (isinstance(node, ast.Call) and _callee(node) == "tensordot"):
        return None
    axes = next((k.value for k in node.keywords if k.arg in ("axes", "dims")), node.args[2] if len(node.args) > 2 else None)
    if not isinstance(axes, (ast.Tuple, ast.List)) or len(axes.elts) != 2 \
            or not all(isinstance(side, (ast.Tuple, ast.List)) for side in axes.elts):
        return None
    values = [_const_int(v) for side in axes.elts for v in side.elts]
    return (axes, values) if values and None not in values else None


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
            first = len(sides[0].elts)
            side, at = (sides[0], k) if k < first else (sides[1], k - first)
            side.elts[at] = _int_node(-1)
            return True
        edited = [list(_const_int(v) for v in side.elts) for side in axes.elts]
        first = len(edited[0])
        edited[0 if k < first else 1][k if k < first else k - first] = -1
        yield Edit(i, "axis", apply, f"axes=({edited[0]}, {edited[1]}) in place of `{_text(axes)}` in `{_text(node)}`",
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


def _normalised(node):
    """`h / np.linalg.norm(h, ...)` (or torch.linalg.norm, x.norm(...)): a division by a norm."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Call) \
        and _callee(node.right) == "norm"


def _no_normalisation(i, node, fdef):
    """Every division by a norm taken out, as one change: the formula compares the vectors as they are (a dot
    product, not the cosine of their angle)."""
    if node is not fdef:
        return
    found = sorted((n for n in ast.walk(fdef) if _normalised(n)), key=lambda n: (n.lineno, n.col_offset))
    if not found:
        return

    def apply(n, tree):
        for div in [d for d in ast.walk(n) if _normalised(d)]:
            parent = _parent(n, div)
            if parent is None or not _replace_child(parent, div, div.left):
                return False
        return True
    yield Edit(i, "normalised", apply, f"`{_text(found[0].left)}` in place of `{_text(found[0])}`"
               + (" and each division by a norm like it" if len(found) > 1 else ""),
               "each vector is divided by its norm, so the product is the cosine of their angle; the formula takes "
               "the dot product of the vectors as they are.", found[0].lineno)


EVERYWHERE_KINDS = [
    _every(_dot, "`np.matmul` (@) in place of every `np.dot`",
           "np.dot of arrays with more than two axes is not a batched product: it pairs every batch with every "
           "other. @ (np.matmul) multiplies batch by batch."),
    _every(_transpose, "`.swapaxes(-1, -2)` in place of every `.T`",
           ".T reverses every axis; with a batch in front only the last two should swap (np.swapaxes(x, -1, -2), "
           "or x.mT in torch)."),
    _every(_keepdims, "keepdims=True added to every reduction over an axis",
           "a reduction drops the axis it runs over; keepdims=True keeps it with size 1, so that the result lines "
           "up (broadcasts) with the array it came from.", _over_an_axis),
    _every(_keepdims, "keepdim=True added to every reduction over a dim",
           "a reduction drops the dim it runs over; keepdim=True keeps it with size 1, so that the result lines "
           "up (broadcasts) with the tensor it came from.", _over_an_axis, which=1),
    _every(_regroup, "`1 - b ** t` in place of every `(1 - b) ** t`",
           "the parentheses make `1 - b` one term, so the power applies to all of it; the formula raises `b` alone "
           "(a bias correction's 1 - beta^t), at each place.", _power_of_a_difference),
    _every(_regroup, "`m / (1 - b ** t)` in place of every `m / 1 - b ** t`",
           "without parentheses, `/` divides by the number before the `-` alone and the power is subtracted "
           "afterwards; the bias correction divides by the whole 1 - beta^t, which needs parentheses, at each place.",
           _difference_after_a_division),
    _every(_product_for_power, "`b ** t` in place of every `b * t`",
           "a product where the formula raises to a power: a bias correction is 1 - beta^t, at each place."),
    _every(_term_outside_call, "each term moved into the call it is added to",
           "a sublayer's output (or another term) is added to what a call returns, at each place; the formula puts it "
           "inside, into what the call takes: `rms_norm(x + out, g)`, not `rms_norm(x, g) + out`.",
           lambda node: term_outside_call(node) is not None),
    _model_eps,
    _every_axis,
    _axis_for_flattening,
    _axes_from_the_end,
    _tensordot_from_the_end,
    _pad_every_axis,
    _no_normalisation,
]
