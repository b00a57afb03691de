"""The one-token edits the repair probe (repair.py) tries on an answer's own code, in the order it tries
them: each a small change a slip often is (`//` for `/`, `>` for `>=`, another axis, a missing
keepdims, len() of a batch, a sign, a product for a quotient, an exponent's sign, `or` for `and`, a number off by
one; from call_edits.py, np.dot for @,
.T of a batched array, sin for cos, an ascending sort, a swap or a squeeze too many; and, in moves.py, a statement
too many or out of place, two arguments in each other's place, a call around a value, one variable read where
another belongs).

Each kind is a generator of Edit (nodes.py says how one is made). EXPRESSION_KINDS lists them in the order
they are tried.
"""

import ast

from .call_edits import (_call_on_the_operand, _count_for_shape, _dot, _mean_over_the_mask, _trailing_comma, _other_swapped, _pair, _product_before_the_call, _sort, _step_too_many, _transpose,
                         _two_values, _untransposed)
from .nodes import (_REDUCTIONS, Edit, _axis_slots, _axis_values, _callee, _const_int, _inside_unary, _parameters,
                    _int_node, _parent, _reduced, _replace_child, _text, operator_edit)

_COMPARE = {ast.Gt: (ast.GtE, ">", ">="), ast.GtE: (ast.Gt, ">=", ">"), ast.Lt: (ast.LtE, "<", "<="),
            ast.LtE: (ast.Lt, "<=", "<")}
_AXES = (-1, -2, -3, 0, 1, 2)
def _floordiv(i, node, fdef):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        def apply(n, tree):
            n.op = ast.Div()
            return True
        yield Edit(i, "integer_division", apply, f"`/` in place of `//` in `{_text(node)}`",
                   "`//` is integer (floor) division: it rounds down to a whole number, so a fraction below 1 "
                   "becomes 0. The formula divides: `/`.")


def _compare(i, node, fdef):
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        new, old_text, new_text = _COMPARE[type(node.ops[0])]

        def apply(n, tree, new=new):
            n.ops = [new()]
            return True
        yield Edit(i, "boundary", apply, f"`{new_text}` in place of `{old_text}` in `{_text(node)}`",
                   f"`{old_text}` and `{new_text}` differ only at the boundary, where the two sides are equal: "
                   "that one value is decided the other way.")


def _axis(i, node, fdef):
    if not isinstance(node, ast.Call):
        return
    for slot in _axis_slots(node):
        value = slot.value if isinstance(slot, ast.keyword) else node.args[slot]
        old = _const_int(value)
        word = slot.arg if isinstance(slot, ast.keyword) else "axis"
        if old is None:
            continue
        for new in _AXES:
            if new == old or new in _other_swapped(node, value):
                continue  # swapaxes(x, k, k) does nothing: _step_too_many says that

            def apply(n, tree, slot=slot, new=new):
                if isinstance(slot, ast.keyword):
                    kw = next(k for k in n.keywords if k.arg == slot.arg)
                    kw.value = _int_node(new)
                else:
                    n.args[slot] = _int_node(new)
                return True
            hint = (" Counting axes from the end (-1 is the last) keeps them right whatever leading batch axes "
                    "come first." if old >= 0 and new < 0 else "")
            yield Edit(i, "axis", apply, f"{word}={new} in place of {word}={old} in `{_text(node)}`",
                       f"{word}={old} is another axis than the formula's.{hint}")
        target = _reduced(node)
        if _callee(node) in _REDUCTIONS and target is not None and old == 0:
            def apply(n, tree, slot=slot):
                arr = _reduced(n)
                every = ast.parse(f"tuple(range(({_text(arr)}).ndim - 1))", mode="eval").body
                if isinstance(slot, ast.keyword):
                    next(k for k in n.keywords if k.arg == slot.arg).value = every
                else:
                    n.args[slot] = every
                return True
            yield Edit(i, "axis", apply, f"every leading axis in place of {word}=0 in `{_text(node)}`",
                       f"{word}=0 sums over the first axis only; with more than one leading (batch) axis the sum "
                       f"runs over all of them: {word}=tuple(range(x.ndim - 1)).")


def _keepdims(i, node, fdef):
    if isinstance(node, ast.Call) and _callee(node) in _REDUCTIONS \
            and not any(k.arg in ("keepdims", "keepdim") for k in node.keywords):
        for word in ("keepdims", "keepdim"):
            def apply(n, tree, word=word):
                n.keywords = [*n.keywords, ast.keyword(word, ast.Constant(True))]
                return True
            yield Edit(i, "keepdims", apply, f"{word}=True added to `{_text(node)}`",
                       f"the reduction drops the axis it runs over; {word}=True keeps it with size 1, so that the "
                       "result lines up (broadcasts) with the array it came from.")


def _len(i, node, fdef):
    """`len(x)` where the length of a sequence is meant: its last axis, or the axis a loop over it indexes
    (`for t in range(len(H)): H[..., t:t + 1, :]` runs over axis -2)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        arg = node.args[0]
        axis = _axis_a_loop_indexes(fdef, node, _text(arg)) or -1

        def apply(n, tree):
            n.func, n.args = ast.Attribute(ast.Attribute(n.args[0], "shape", ast.Load()), "__getitem__", ast.Load()), \
                [_int_node(axis)]
            return True
        meant = (f"A sequence's length is its last axis, {_text(arg)}.shape[-1]." if axis == -1 else
                 f"The loop indexes axis {axis} of {_text(arg)}: its size is {_text(arg)}.shape[{axis}], counted "
                 "from the end whatever batch axes come first.")
        yield Edit(i, "length", apply, f"`{_text(arg)}.shape[{axis}]` in place of `{_text(node)}`",
                   f"len({_text(arg)}) is the size of its first axis: the batch, when a batch comes. {meant}")


def _full(node):
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def _leading(i, node, fdef):
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and node.slice.elts \
            and _full(node.slice.elts[0]):
        def apply(n, tree):
            elts = list(n.slice.elts)
            while elts and _full(elts[0]):
                elts.pop(0)
            n.slice = ast.Tuple([ast.Constant(Ellipsis), *elts], ast.Load())
            return True
        rest = list(node.slice.elts)
        while rest and _full(rest[0]):
            rest.pop(0)
        fixed = f"{_text(node.value)}[{', '.join(['...', *(_text(e) for e in rest)])}]"
        yield Edit(i, "leading_axes", apply, f"`{fixed}` in place of `{_text(node)}`",
                   "a `:` in front counts on exactly that many leading axes (a batch). The input may come with "
                   "none or with several: `...` stands for whatever leading axes there are.")


def _as_given(i, node, fdef):
    """`mask[..., 0, :]` of an argument that broadcasts as it comes: the index dropped."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) \
            and node.value.id in _parameters(fdef) and isinstance(node.slice, ast.Tuple) \
            and any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in node.slice.elts) \
            and any(_const_int(e) is not None for e in node.slice.elts):
        def apply(n, tree):
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, n.value)
        yield Edit(i, "as_given", apply, f"`{node.value.id}` in place of `{_text(node)}`",
                   f"`{_text(node)}` drops an axis that `{node.value.id}` may not have, or that lines it up with "
                   f"another axis; `{node.value.id}` broadcasts as it is given (the docstring's shape), so use it "
                   "as it comes.")


_FLIP = {ast.Add: (ast.Sub, "+", "-"), ast.Sub: (ast.Add, "-", "+"), ast.Mult: (ast.Div, "*", "/"),
         ast.Div: (ast.Mult, "/", "*")}


def _flip(i, node, fdef):
    if isinstance(node, ast.BinOp) and type(node.op) in _FLIP:
        new, old_text, new_text = _FLIP[type(node.op)]
        what = "a sign" if old_text in "+-" else "a product for a quotient" if old_text == "*" else "a quotient for a product"
        yield operator_edit(i, node, new, old_text, new_text, f"{what}: the formula has `{new_text}` there.")


def _shape_index(node):
    """k in `x.shape[k]` (an int), else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return _const_int(node.slice)
    return None


def _shape_axis(i, node, fdef):
    """`x.shape[0]` where the positions are meant: an axis counted from the front, which is the batch when
    one comes. The other axes are tried counted from the end."""
    old = _shape_index(node)
    if old is None:
        return
    indexed = _axis_a_loop_indexes(fdef, node, _text(node.value.value))
    for new in sorted((-1, -2, -3), key=lambda a: a != indexed):
        if new == old:
            continue

        def apply(n, tree, new=new):
            n.slice = _int_node(new)
            return True
        array = _text(node.value.value)
        hint = (f" Axis {old}, counted from the front, is a batch axis when a batch comes; counted from the end, "
                f"axis {new} names one axis whatever batch axes come first." if old >= 0 else "")
        yield Edit(i, "axis", apply, f"`{array}.shape[{new}]` in place of `{_text(node)}`",
                   f"`{_text(node)}` is the size of another axis than the one the code runs over.{hint}")


def _size_of_another_input(i, node, fdef):
    """`n = H_enc.shape[-2]` where the size belongs to another argument (`tgt_in.shape[-1]`, the target's length
    where the source's was read): each other parameter's last two axes are tried."""
    old = _shape_index(node)
    if old is None or old >= 0 or not isinstance(node.value.value, ast.Name) \
            or node.value.value.id not in _parameters(fdef):
        return  # an axis counted from the front is _shape_axis's (the batch read for the positions)
    array = node.value.value.id
    for other in _parameters(fdef):
        if other == array:
            continue
        for axis in (-1, -2):
            def apply(n, tree, other=other, axis=axis):
                n.value.value, n.slice = ast.Name(other, ast.Load()), _int_node(axis)
                return True
            yield Edit(i, "another_input", apply, f"`{other}.shape[{axis}]` in place of `{_text(node)}`",
                       f"`{_text(node)}` is a size of `{array}`; the size the code needs there is one of `{other}`'s "
                       "(two inputs whose lengths are equal on some cases and not on others).")


def _reshape_for_one_batch_axis(i, node, fdef):
    """`out.reshape(out.shape[0], -1, d)` where every leading axis is kept: `out.shape[0]` counts on exactly one
    batch axis (none comes: it is the positions, and the -1 makes an axis of size 1; two come: they are merged)."""
    if not (isinstance(node, ast.Call) and _callee(node) == "reshape" and isinstance(node.func, ast.Attribute)
            and len(node.args) >= 3 and _shape_index(node.args[0]) == 0
            and any(_const_int(a) == -1 for a in node.args[1:])):
        return
    array = node.args[0].value.value
    rest = [a for a in node.args[1:] if _const_int(a) != -1]
    kept = len(node.args) - 1  # the trailing axes the reshape makes (the -1 merges two of them into one)

    def apply(n, tree):
        lead = ast.Subscript(ast.Attribute(array, "shape", ast.Load()),
                             ast.Slice(upper=_int_node(-kept)), ast.Load())
        n.args = [ast.Starred(lead, ast.Load()), *rest]
        return True
    fixed = f"{_text(node.func)}(*{_text(array)}.shape[:{-kept}], {', '.join(_text(a) for a in rest)})"
    yield Edit(i, "one_batch_axis", apply, f"`{fixed}` in place of `{_text(node)}`",
               f"`{_text(node.args[0])}` counts on exactly one batch axis in front: where none comes it is the "
               "positions, and the -1 makes an axis of size 1; where two come, they are merged into one. Keep every "
               f"leading axis (`*{_text(array)}.shape[:{-kept}]`) and merge only the last ones.")


def _axis_a_loop_indexes(fdef, size, array):
    """In `for t in range(x.shape[k]): ... x[..., t:t + 1, :]` (or `range(len(x))`, a comprehension, or the size
    first kept in a variable, `steps = x.shape[k]`), the axis that `t` indexes in `array` (x), counted from the
    end (-2 here), or None."""
    kept = {t.id for a in ast.walk(fdef) if isinstance(a, ast.Assign) and any(n is size for n in ast.walk(a.value))
            for t in a.targets if isinstance(t, ast.Name)}

    def over(it):
        return any(n is size or isinstance(n, ast.Name) and n.id in kept for n in ast.walk(it))
    loops = [(f.target, f) for f in ast.walk(fdef) if isinstance(f, ast.For) and over(f.iter)]
    loops += [(g.target, c) for c in ast.walk(fdef) if isinstance(c, (ast.ListComp, ast.GeneratorExp, ast.SetComp))
              for g in c.generators if over(g.iter)]
    for target, scope in loops:
        if not isinstance(target, ast.Name):
            continue
        for node in ast.walk(scope):
            if isinstance(node, ast.Subscript) and _text(node.value) == array and isinstance(node.slice, ast.Tuple) \
                    and any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in node.slice.elts):
                elts = node.slice.elts
                for k, e in enumerate(elts):
                    if any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(e)):
                        return k - len(elts)
    return None


def _exponent_sign(i, node, fdef):
    """`step ** 0.5` where the formula has `step ** -0.5`: the exponent's sign (and the reverse)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        power = node.right
        negative = isinstance(power, ast.UnaryOp) and isinstance(power.op, ast.USub)
        if not (isinstance(power, ast.Constant) and isinstance(power.value, (int, float)) and power.value != 0
                or negative and isinstance(power.operand, ast.Constant)):
            return
        flipped = power.operand if negative else ast.UnaryOp(ast.USub(), power)

        def apply(n, tree, flipped=flipped):
            n.right = flipped
            return True
        yield Edit(i, "exponent_sign", apply, f"`{_text(node.left)} ** {_text(flipped)}` in place of `{_text(node)}`",
                   f"the exponent's sign: `{_text(node)}` grows where the formula's `{_text(node.left)} ** "
                   f"{_text(flipped)}` shrinks (or the reverse); x^-a is 1 / x^a.")


def _and_or(i, node, fdef):
    """`if not training and rate == 0:` where either condition is enough: `or` for `and` (and the reverse)."""
    if isinstance(node, ast.BoolOp) and len(node.values) == 2:
        new, old_text, new_text = (ast.Or, "and", "or") if isinstance(node.op, ast.And) else (ast.And, "or", "and")

        def apply(n, tree, new=new):
            n.op = new()
            return True
        yield Edit(i, "boolean", apply, f"`{new_text}` in place of `{old_text}` in `{_text(node)}`",
                   f"`{old_text}` and `{new_text}` differ where one condition holds and the other does not: `and` needs "
                   "both, `or` either.")


def _truthiness(i, node, fdef):
    """`if pad_id:` where `if pad_id is not None:` is meant: a pad id of 0 is false."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While)) and isinstance(node.test, ast.Name):
        name = node.test.id

        def apply(n, tree):
            n.test = ast.Compare(ast.Name(name, ast.Load()), [ast.IsNot()], [ast.Constant(None)])
            return True
        yield Edit(i, "condition", apply, f"`{name} is not None` in place of `{name}` as the condition",
                   f"`if {name}:` is false for 0 as well as for None, so a value of 0 ({name} = 0, a real pad id) "
                   "is taken for \"not given\".")


def _off_by_one(i, node, fdef):
    k = _const_int(node)
    if k is None:
        return
    if isinstance(node, ast.Constant) and _inside_unary(fdef, node) or id(node) in _axis_values(fdef) \
            or any(_shape_index(s) is not None and s.slice is node for s in ast.walk(fdef)):
        return
    factor = any(isinstance(p, ast.BinOp) and isinstance(p.op, (ast.Mult, ast.Div)) and node in (p.left, p.right)
                 for p in ast.walk(fdef))
    where = ("where a slice starts, stops or steps" if any(isinstance(p, ast.Slice) and node in (p.lower, p.upper, p.step)
                                                         for p in ast.walk(fdef))
             else "in a count, an index, or where a range or a step count starts")
    swapped = next((_other_swapped(c, node) for c in ast.walk(fdef) if isinstance(c, ast.Call) and node in c.args), ())
    for new in (k + 1, k - 1):
        if new in swapped:
            continue

        def apply(n, tree, new=new):
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, _int_node(new))
        said = (f"a factor of {k} where the formula has {new}" + (" (none)" if new == 1 else "") + "." if factor
                else f"a number one off, {where}.")
        yield Edit(i, "off_by_one", apply, f"{new} in place of {k}", said)


EXPRESSION_KINDS = [_floordiv, _compare, _step_too_many, _axis, _shape_axis, _size_of_another_input, _reshape_for_one_batch_axis, _keepdims, _len, _leading, _as_given, _dot, _transpose, _untransposed, _product_before_the_call, _call_on_the_operand, _mean_over_the_mask, _count_for_shape, _trailing_comma, _pair, _two_values, _sort,
                    _flip, _exponent_sign, _and_or, _truthiness, _off_by_one]
