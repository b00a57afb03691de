"""The repair's edits of a call (tried in edits.py's order, which lists them): np.dot for @, .T of a batched array,
`.T` dropped from weights used as stored, a product moved into the call it follows (`split_heads(x @ W, h)`), a call moved onto the first operand of the sum it wraps (`gelu(h) @ W2 + b2`), a mean of masked values
taken over the mask's count (`(loss * real).sum() / real.sum()`), shapes compared where entries are counted
(`numel()` against `.size`), a trailing comma that makes a tuple of one value, one function for its pair (sin for cos, max for min, mean for sum), np.maximum for a np.max given two values, an ascending sort, and a call that is a step
too many (a swap of axes a helper makes itself, a squeeze of an axis the result keeps). Same contract as
edits.py: each kind yields Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import Edit, _atom, _callee, _const_int, _int_node, _parent, _replace_child, _text

_PAIRS = {"sin": "cos", "cos": "sin", "max": "min", "min": "max", "maximum": "minimum", "minimum": "maximum",
          "argmax": "argmin", "argmin": "argmax", "triu": "tril", "tril": "triu", "amax": "amin", "amin": "amax",
          "any": "all", "all": "any", "d_k": "n_heads", "n_heads": "d_k", "mean": "sum", "sum": "mean"}
_ELEMENTWISE = {"min": "minimum", "amin": "minimum", "max": "maximum", "amax": "maximum"}
_PAIR_WHY = {frozenset(("d_k", "n_heads")): "n_heads is how many heads there are and d_k the width of each "
                                            "(d_model // n_heads); split_heads takes the number of heads.",
             frozenset(("mean", "sum")): "a mean is the sum divided by how many entries it reduces, so the two differ "
                                         "by that count (the vocabulary's size, a sequence's length); the formula "
                                         "has {other} here."}


def _dot(i, node, fdef):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dot" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy"):
        def apply(n, tree):
            n.func.attr = "matmul"
            return True
        yield Edit(i, "dot", apply, f"`np.matmul` (@) in place of `np.dot` in `{_text(node)}`",
                   "np.dot of arrays with more than two axes is not a batched product: it pairs every batch with "
                   "every other. @ (np.matmul) multiplies batch by batch.")


def _transpose(i, node, fdef):
    if isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.ctx, ast.Load):
        def apply(n, tree):
            parent = _parent(tree, n)
            call = ast.Call(ast.Attribute(n.value, "swapaxes", ast.Load()), [_int_node(-1), _int_node(-2)], [])
            return parent is not None and _replace_child(parent, n, call)
        yield Edit(i, "transpose", apply, f"`{_atom(node.value)}.swapaxes(-1, -2)` in place of `{_text(node)}`",
                   ".T reverses every axis; with a batch in front only the last two should swap "
                   "(np.swapaxes(x, -1, -2), or x.mT in torch).")


def _untransposed(i, node, fdef):
    """`W_q.T` where the weights are used as they are stored (x @ W_q, W of shape (d_model, d_k))."""
    if isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.ctx, ast.Load):
        def apply(n, tree):
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, n.value)
        yield Edit(i, "untransposed", apply, f"`{_text(node.value)}` in place of `{_text(node)}`",
                   f"`{_text(node.value)}` is used as it is stored: the docstring gives its shape in the order the "
                   "product needs (x @ W, W of shape (d_in, d_out)); .T turns it into the (d_out, d_in) layout of "
                   "torch's nn.Linear.")


def _product_before_the_call(i, node, fdef):
    """`split_heads(x, h) @ W_q` for `split_heads(x @ W_q, h)`: the product applied to what a call returns, where
    the formula applies it to what the call takes (project, then split)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and isinstance(node.left, ast.Call)
            and node.left.args and not isinstance(node.left.func, ast.Lambda)):
        return
    call = node.left

    def apply(n, tree):
        inner = n.left
        moved = ast.Call(inner.func, [ast.BinOp(inner.args[0], ast.MatMult(), n.right), *inner.args[1:]],
                         inner.keywords)
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, moved)
    fixed = f"{_text(call.func)}({', '.join([f'{_text(call.args[0])} @ {_text(node.right)}', *(_text(a) for a in call.args[1:])])})"
    yield Edit(i, "product_inside", apply, f"`{fixed}` in place of `{_text(node)}`",
               f"`@ {_text(node.right)}` is applied to what `{_text(call.func)}` returns; the formula applies it to "
               f"what `{_text(call.func)}` takes: the product first, on the whole width, then the call (project, "
               "then split into heads).")



def _masked_mean(call):
    """(the product, the mask's name) of `(per_token * real).mean()` or `np.mean(per_token * real)`: a mean of a
    product with a named factor and no axis, else None."""
    if not isinstance(call, ast.Call) or _callee(call) != "mean" or call.keywords:
        return None
    method = isinstance(call.func, ast.Attribute) and not call.args and not (
        isinstance(call.func.value, ast.Name) and call.func.value.id in ("np", "numpy", "torch"))
    product = call.func.value if method else call.args[0] if len(call.args) == 1 else None
    if not (isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult)):
        return None
    mask = next((side for side in (product.right, product.left) if isinstance(side, ast.Name)), None)
    return (product, mask.id) if mask is not None else None


def _mean_over_the_mask(i, node, fdef):
    """`(per_token * real).mean()` for `(per_token * real).sum() / real.sum()`: the masked positions zeroed, then a
    mean over every position, where the mean is over the positions the mask keeps."""
    found = _masked_mean(node)
    if found is None:
        return
    product, mask = found

    def apply(n, tree):
        kept, name = _masked_mean(n)
        total = ast.Call(ast.Attribute(kept, "sum", ast.Load()), [], [])
        count = ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "sum", ast.Load()), [], [])
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, ast.BinOp(total, ast.Div(), count))
    yield Edit(i, "masked_mean", apply, f"`({_text(product)}).sum() / {mask}.sum()` in place of `{_text(node)}`",
               f"`{_text(node)}` divides by every position, the ones `{mask}` zeroes too; the mean is over the "
               f"positions `{mask}` keeps: their sum divided by how many there are, `{mask}.sum()`.")


def _counted(side):
    """The array whose entries `side` counts (`t.numel()`, `a.size`, `np.size(a)`), else None."""
    if isinstance(side, ast.Call) and isinstance(side.func, ast.Attribute) and side.func.attr == "numel" \
            and not side.args:
        return side.func.value
    if isinstance(side, ast.Attribute) and side.attr == "size":
        return side.value
    if isinstance(side, ast.Call) and _callee(side) == "size" and len(side.args) == 1 and not side.keywords:
        return side.args[0]
    return None


def _count_for_shape(i, node, fdef):
    """`own.numel() != value.size` where the shapes are compared: `tuple(own.shape) != tuple(value.shape)` (a
    (12, 8) array has as many entries as an (8, 12) parameter)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq))):
        return
    left, right = _counted(node.left), _counted(node.comparators[0])
    if left is None or right is None:
        return

    def shape(array):
        return ast.Call(ast.Name("tuple", ast.Load()), [ast.Attribute(array, "shape", ast.Load())], [])

    def apply(n, tree):
        a, b = _counted(n.left), _counted(n.comparators[0])
        n.left, n.comparators = shape(a), [shape(b)]
        return True
    op = "!=" if isinstance(node.ops[0], ast.NotEq) else "=="
    yield Edit(i, "count_for_shape", apply,
               f"`tuple({_text(left)}.shape) {op} tuple({_text(right)}.shape)` in place of `{_text(node)}`",
               f"`{_text(node)}` compares how many entries each has, and an array with its axes the other way "
               "round has as many as the right one: compare the shapes.")


def _trailing_comma(i, node, fdef):
    """`lr = (a * b),` or `return x,`: a trailing comma makes a tuple of one value, where the value itself belongs."""
    if not (isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) and len(node.elts) == 1
            and any(isinstance(s, (ast.Assign, ast.Return)) and s.value is node for s in ast.walk(fdef))):
        return

    def apply(n, tree):
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, n.elts[0])
    yield Edit(i, "trailing_comma", apply, f"`{_text(node.elts[0])}` in place of `{_text(node)}` (the comma taken out)",
               "the comma at the end makes a tuple of one value, `(value,)`, where the value itself belongs: take "
               "the comma out.")

_SPINE = (ast.Add, ast.Sub, ast.MatMult, ast.Mult)


def _call_on_the_operand(i, node, fdef):
    """`gelu(h) @ W2 + b2` for `gelu(h @ W2 + b2)`: a one-argument call applied to a whole sum or product whose
    first operand is what the formula applies it to (an activation put after the layer it belongs inside)."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.func, (ast.Name, ast.Attribute)) and isinstance(node.args[0], ast.BinOp)
            and isinstance(node.args[0].op, _SPINE)):
        return
    depth, inner = 0, node.args[0]
    while isinstance(inner, ast.BinOp) and isinstance(inner.op, _SPINE):
        depth, inner = depth + 1, inner.left
        operand = inner

        def apply(n, tree, depth=depth):
            whole = n.args[0]
            holder = whole
            for _ in range(depth - 1):
                holder = holder.left
            holder.left = ast.Call(n.func, [holder.left], [])
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, whole)
        name, whole, first = _text(node.func), _text(node.args[0]), _text(operand)
        if not whole.startswith(first):  # a parenthesised first operand: said by the copy's own text
            continue
        rest = whole[len(first):].strip()
        yield Edit(i, "call_on_operand", apply, f"`{name}({first}) {rest}` in place of `{_text(node)}`",
                   f"`{name}` is applied to the whole of `{whole}`; the formula applies it to `{first}` alone, "
                   f"before `{rest}`.")


def _pair(i, node, fdef):
    if isinstance(node, ast.Attribute) and node.attr in _PAIRS and isinstance(node.ctx, ast.Load):
        other = _PAIRS[node.attr]

        def apply(n, tree, other=other):
            n.attr = other
            return True
        yield Edit(i, "instead", apply, f"`{_atom(node.value)}.{other}` in place of `{_text(node)}`",
                   _PAIR_WHY.get(frozenset((node.attr, other)),
                                 "{old} and {other} are easy to exchange; the formula has {other} here.").format(
                                     old=node.attr, other=other))


def two_value_reduction(node):
    """True for `np.min(a, b)` (np.min, np.max, np.amin, np.amax with two positional arguments): a reduction whose
    second argument is read as an axis, where two values may be meant."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy") \
        and node.func.attr in _ELEMENTWISE and len(node.args) == 2 and not node.keywords


def _two_values(i, node, fdef):
    """`np.max(x, 0)` for the larger of x and 0: np.max's second argument is an axis; np.maximum compares."""
    if two_value_reduction(node):
        other = _ELEMENTWISE[node.func.attr]

        def apply(n, tree):
            n.func.attr = other
            return True
        yield Edit(i, "two_values", apply, f"`np.{other}` in place of `np.{node.func.attr}` in `{_text(node)}`",
                   f"np.{node.func.attr} reduces one array and reads its second argument as an axis; "
                   f"np.{other} compares two values entry by entry.")


def _sort(i, node, fdef):
    if isinstance(node, ast.Call) and _callee(node) in ("sort", "argsort") and node.args \
            and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in ("np", "numpy"):
        def apply(n, tree):
            n.args[0] = ast.UnaryOp(ast.USub(), n.args[0])
            if _callee(n) == "sort":
                parent = _parent(tree, n)
                return parent is not None and _replace_child(parent, n, ast.UnaryOp(ast.USub(), n))
            return True
        yield Edit(i, "order", apply, f"the largest first in `{_text(node)}` (sort -x)",
                   "np.sort and np.argsort order from the smallest up; the largest come first when you sort -x "
                   "(or read the ascending order from the end).")


def _other_swapped(call, value):
    """The other axis of a swapaxes call that `value` is one axis of, as a 1-tuple; () otherwise."""
    axes = call.args[-2:] if _callee(call) == "swapaxes" and len(call.args) >= 2 else []
    other = [_const_int(a) for a in axes if a is not value]
    return tuple(other) if len(axes) == 2 and len(other) == 1 and other[0] is not None else ()


def _step_too_many(i, node, fdef):
    """`np.swapaxes(heads, -2, -3)` before a helper that makes the same swap itself, or `x.squeeze(-2)` of an axis
    the result keeps: the call dropped."""
    if not (isinstance(node, ast.Call) and _callee(node) in ("swapaxes", "moveaxis", "squeeze")
            and isinstance(node.func, ast.Attribute)):
        return
    module = isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy", "torch")
    if module and not node.args:
        return
    array = node.args[0] if module else node.func.value

    def apply(n, tree):
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, n.args[0] if module else n.func.value)
    why = (f"`{_text(node)}` removes an axis of size 1 that the result keeps (the docstring's shape has it)."
           if _callee(node) == "squeeze" else
           f"`{_text(node)}` moves axes that are already where the next step takes them: a step too many (a helper "
           "such as merge_heads or split_heads makes that move itself).")
    yield Edit(i, "step_too_many", apply, f"`{_text(array)}` in place of `{_text(node)}`", why)
