"""One slip made at every place it could be, mended as one change: the repair (repair.py) tries each edit of
edits.py at one place; a student who writes np.dot for @, or .T on a batched array, or a reduction without
keepdims, usually writes it at each place, and no single edit mends that. Here: np.matmul for every
np.dot, swapaxes(-1, -2) for every .T, every .T of a weight dropped, keepdims=True on every reduction over an axis, the model's eps
passed to every norm that was left with its default, the edits of axes in everywhere_axes.py (one axis written
wrong in each call of a kind, and more), every division by a norm taken out (a cosine for a dot product), and every power of a parenthesised
difference regrouped (`(1 - beta1) ** t`, `(1 - beta2) ** t`), every division missing its parentheses regrouped
(`m / 1 - b ** t`), every fractional exponent without its parentheses (`x ** -1 / 2`), and every product in a bias correction made a power (`1 - beta1 * t`). Same contract as edits.py: each kind yields
Edit(index, kind, apply, said, why); each applies to the whole function (index 0) and needs two places or
more (one place is edits.py's), except the eps, which reads a constant the code never passes.
"""

import ast

from .arithmetic import _product_for_power, _regroup, _term_outside_call, term_outside_call
from .call_edits import _dot, _transpose, _untransposed
from .edits import _keepdims
from .everywhere_axes import (_axes_from_the_end, _axis_for_flattening, _every_axis, _pad_every_axis,
                              _tensordot_from_the_end)
from .nodes import _REDUCTIONS, Edit, _axis_slots, _callee, _parent, _replace_child, _text


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


def _power_of_a_difference(node):
    """`(1 - beta1) ** t`: a power of a parenthesised difference."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.left, ast.BinOp) \
        and isinstance(node.left.op, ast.Sub)


def _difference_after_a_division(node):
    """`m / 1 - b ** t`: a difference whose left side is a division (the divisor meant to be the difference)."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.BinOp) \
        and isinstance(node.left.op, ast.Div)


def _of_a_weight(node):
    """`W_q.T`, `self.W_o.T`: a transpose of a name or attribute that starts with W (a weight matrix)."""
    base = node.value if isinstance(node, ast.Attribute) else None
    name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
    return name[:1] in ("W", "w") and (len(name) == 1 or name[1] == "_")


def _fraction_after_a_power(node):
    """`d ** -1 / 2`: a division by a number whose left side ends in a power of a number (the exponent meant to be
    the fraction, -1/2)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant)
            and type(node.right.value) in (int, float)):
        return False
    cur = node.left
    while isinstance(cur, ast.BinOp) and isinstance(cur.op, (ast.Mult, ast.Div)):
        cur = cur.right
    return isinstance(cur, ast.BinOp) and isinstance(cur.op, ast.Pow) and _const_number(cur.right)


def _const_number(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


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
    _every(_untransposed, "every `.T` dropped",
           "the weights are used as they are stored: the docstring gives each in the order the product needs "
           "(x @ W, W of shape (d_in, d_out)); .T turns them into the (d_out, d_in) layout of torch's nn.Linear.",
           _of_a_weight),
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
    _every(_regroup, "the fraction put in parentheses in every exponent like `x ** -1 / 2`",
           "`**` binds tighter than `/` and `-`: `x ** -1 / 2` is (x ** -1) / 2, a half of 1/x, not x to the power "
           "-1/2; a fractional exponent needs parentheses, `x ** (-1 / 2)` (or `x ** -0.5`), at each place.",
           _fraction_after_a_power),
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
