"""The edits of a formula's arithmetic, tried by the repair probe after the moves of moves.py: a product
where the formula adds (`scores * mask`), a double where it squares (`d_model * 2`), and parentheses left
out or put around the wrong terms (`t ** -3 / 2`, `(step * warmup) ** -1.5`, `np.sqrt(2 / np.pi * x)` for
`np.sqrt(2 / np.pi) * x`), Python's own operators misread (`^` for a power, `&` for `|`), two parameters in each
other's place in one term, a factor in the wrong place (factors.py), the power of a mean where the formula takes the mean of the powers (`np.mean(x) ** 2`), a
term added to what a call returns that belongs inside it (`rms_norm(x, g) + out`); and a shift made at one place of a line and not at another (`z - log(sum(exp(z - m)))`), tried early. Same contract as edits.py.
"""

import ast
import copy

from .factors import _SUMS, FACTOR_KINDS
from .nodes import Edit, _callee, _parameters, _reduced, _text, operator_edit, replaced

_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Pow: "**",
            ast.MatMult: "@", ast.Mod: "%"}
_BINDS = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.FloorDiv: 2, ast.MatMult: 2, ast.Mod: 2, ast.Pow: 3}


def _product_for_sum(i, node, fdef):
    """`scores * mask` where an additive mask is added."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        yield operator_edit(i, node, ast.Add, "*", "+", (
            "a product where the formula adds: an additive mask (0 where visible, -inf where hidden) is added "
            "to the scores, not multiplied with them."))


def _double_for_square(i, node, fdef):
    """`d_model * 2` where the formula squares: `d_model ** 2` (in `4 * d_model * 2`, the last factor squared)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.right, ast.Constant)
            and node.right.value in (2, 3)):
        return
    power = node.right.value
    if isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mult):
        squared = ast.BinOp(node.left.left, ast.Mult(), ast.BinOp(node.left.right, ast.Pow(), ast.Constant(power)))
        yield Edit(i, "operator", lambda n, tree: replaced(tree, n, ast.BinOp(
                       n.left.left, ast.Mult(), ast.BinOp(n.left.right, ast.Pow(), n.right))),
                   f"`{_text(squared)}` in place of `{_text(node)}`",
                   f"`* {power}` multiplies where the formula raises `{_text(node.left.right)}` to the power {power}.")
    yield operator_edit(i, node, ast.Pow, "*", "**", (
        f"`{_text(node)}` multiplies by {power} where the formula raises to the power {power}."))


def _product_for_power(i, node, fdef):
    """`1 - beta1 * t` where the formula raises: `1 - beta1 ** t` (a bias correction)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.right, ast.Name) \
            and isinstance(node.left, ast.Name) and any(
                isinstance(p, ast.BinOp) and isinstance(p.op, ast.Sub) and p.right is node
                and isinstance(p.left, ast.Constant) and p.left.value == 1 for p in ast.walk(fdef)):
        yield operator_edit(i, node, ast.Pow, "*", "**", (
            f"`{_text(node)}` multiplies where the formula raises `{_text(node.left)}` to the power "
            f"`{_text(node.right)}` (a bias correction's 1 - beta^t)."))



def _factor_for_exponent(i, node, fdef):
    """`total / L * alpha` where the formula divides by a power: `total / L ** alpha` (a length penalty), the
    exponent a parameter of the function."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.left, ast.BinOp)
            and isinstance(node.left.op, ast.Div) and isinstance(node.right, ast.Name)
            and node.right.id in _parameters(fdef)):
        return
    powered = ast.BinOp(node.left.left, ast.Div(), ast.BinOp(node.left.right, ast.Pow(), node.right))
    yield Edit(i, "operator", lambda n, tree: replaced(tree, n, ast.BinOp(
                   n.left.left, ast.Div(), ast.BinOp(n.left.right, ast.Pow(), n.right))),
               f"`{_text(powered)}` in place of `{_text(node)}`",
               f"`{_text(node)}` divides by `{_text(node.left.right)}` and then multiplies by `{_text(node.right)}`; the "
               f"formula divides by `{_text(node.left.right)}` raised to the power `{_text(node.right)}`.")

def _regroup(i, node, fdef):
    """Parentheses left out or put around the wrong terms: `t ** -3 / 2` for `t ** (-3 / 2)`,
    `0.5 * x * 1 + t` for `0.5 * x * (1 + t)`, `(a + b) * c` for `a + b * c`."""
    if not isinstance(node, ast.BinOp) or type(node.op) not in _SYMBOLS:
        return
    op, tail = _SYMBOLS[type(node.op)], _text(node.right)
    cur, depth = node.left, 0
    while isinstance(cur, ast.BinOp) and type(cur.op) in _SYMBOLS:  # `op tail` applied to a part further right
        if not (_same_value(cur.op, node.op) and depth == 0):
            target = cur.right
            explicit = depth == 0 and _BINDS[type(cur.op)] < _BINDS[type(node.op)]
            why = (f"the parentheses make `{_text(node.left)}` one term, so `{op} {tail}` applies to all of it; the "
                   f"formula applies it to `{_text(target)}` alone." if explicit else
                   f"without parentheses, `{op} {tail}` applies to `{_text(node.left)}`; the formula applies it "
                   f"to `{_text(target)}` alone, which needs parentheses.")
            part = _attached(node, depth, whole=False)
            yield Edit(i, "parentheses", lambda n, tree, depth=depth: _attach_lower(n, tree, depth),
                       f"`{_text(part)}` in place of `{_text(node) if depth == 0 else f'{_text(cur)} {op} {tail}'}`",
                       why)
        cur, depth = cur.right, depth + 1
    inner = node.right
    if isinstance(inner, ast.BinOp) and type(inner.op) in _SYMBOLS and not _same_value(node.op, inner.op) \
            and _BINDS[type(inner.op)] <= _BINDS[type(node.op)] and not isinstance(node.op, ast.Pow):
        grouped = ast.BinOp(ast.BinOp(node.left, node.op, inner.left), inner.op, inner.right)
        yield Edit(i, "parentheses", _widen, f"`{_text(grouped)}` in place of `{_text(node)}`",
                   f"the parentheses make `{_text(inner)}` one term; the formula applies `{op}` to "
                   f"`{_text(grouped.left)}` first.")


def _same_value(first, then):
    """(a first b) then c == a first (b then c): `a * b / c`, `a + b - c`."""
    return isinstance(first, ast.Mult) and isinstance(then, (ast.Mult, ast.Div)) \
        or isinstance(first, ast.Add) and isinstance(then, (ast.Add, ast.Sub))


def _attached(node, depth, whole=True):
    """A copy of `node` (`left op tail`) with `op tail` applied to the part `depth` steps down left's right
    side: the whole expression, or (whole=False) the operation whose right side now takes it."""
    new = copy.deepcopy(node)
    cur = new.left
    for _ in range(depth):
        cur = cur.right
    cur.right = ast.BinOp(cur.right, new.op, new.right)
    return new.left if whole else cur


def _attach_lower(n, tree, depth):
    return replaced(tree, n, _attached(n, depth))


def _widen(n, tree):
    inner = n.right
    n.left, n.op, n.right = ast.BinOp(n.left, n.op, inner.left), inner.op, inner.right
    return True


_ONE_ARGUMENT = {"sqrt", "exp", "log", "tanh", "abs", "square", "sin", "cos"}


def _narrow_call(i, node, fdef):
    """`np.sqrt(2 / np.pi * (x + c))` for `np.sqrt(2 / np.pi) * (x + c)`: a function's parentheses close
    after more than the formula gives it."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.BinOp) and type(node.args[0].op) in _SYMBOLS):
        return
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    if name not in _ONE_ARGUMENT:
        return
    inner = node.args[0]
    for side in ("left", "right"):
        kept = getattr(inner, side)
        narrowed = ast.BinOp(ast.Call(node.func, [kept], []), inner.op, inner.right) if side == "left" else \
            ast.BinOp(inner.left, inner.op, ast.Call(node.func, [kept], []))
        yield Edit(i, "parentheses", lambda n, tree, side=side: replaced(tree, n, _narrowed(n, side)),
                   f"`{_text(narrowed)}` in place of `{_text(node)}`",
                   f"the parentheses of `{_text(node.func)}(...)` take in `{_text(inner)}`; the formula applies it to "
                   f"`{_text(kept)}` alone.")


def _narrowed(n, side):
    inner = n.args[0]
    call = ast.Call(n.func, [getattr(inner, side)], [])
    return ast.BinOp(call, inner.op, inner.right) if side == "left" else ast.BinOp(inner.left, inner.op, call)


def _python_operators(i, node, fdef):
    """`d ^ 2` where the formula raises to a power (`^` is Python's exclusive or), and `a & b` where two masks
    hide a key when either does (`|`), or the other way round."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        powered = _text(node).replace(" ^ ", " ** ")  # read again: `**` binds tighter than `*` and `+`, `^` looser
        yield Edit(i, "operator", lambda n, tree: replaced(tree, n, ast.parse(
                       _text(n).replace(" ^ ", " ** "), mode="eval").body),
                   f"`{powered}` in place of `{_text(node)}`",
                   "`^` is Python's bitwise exclusive or, not a power, and it binds after `+` and `*`: "
                   "`4 * d ^ 2 + d` is (4 * d) xor (2 + d). A power is `**`.")
    if isinstance(node, ast.BinOp) and type(node.op) in (ast.BitAnd, ast.BitOr):
        new, old_text, new_text = (ast.BitOr, "&", "|") if isinstance(node.op, ast.BitAnd) else (ast.BitAnd, "|", "&")
        yield operator_edit(i, node, new, old_text, new_text, (
            f"`{old_text}` keeps what {'both' if old_text == '&' else 'either'} sides mark, `{new_text}` what "
            f"{'either' if new_text == '|' else 'both'} side{'s' if new_text == '&' else ''} mark: a key hidden by "
            "either mask is hidden, so two masks of hidden places combine with `|` (and two of visible places "
            "with `&`)."))


def _shifted_once(i, node, fdef):
    """`z - np.log(np.sum(np.exp(z - m)))`: a line that shifts `z` by `m` at one place and reads it unshifted at
    another, where the formula shifts it at both (a stable log-softmax's `z - m - log(sum(exp(z - m)))`)."""
    if not isinstance(node, (ast.Assign, ast.Return)) or node.value is None:
        return
    for shift in ast.walk(node.value):
        if not (isinstance(shift, ast.BinOp) and isinstance(shift.op, (ast.Sub, ast.Add))
                and isinstance(shift.left, ast.Name) and isinstance(shift.right, (ast.Name, ast.Attribute))):
            continue
        name, inside = shift.left.id, {id(n) for n in ast.walk(shift)}
        bare = [n for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id == name and id(n) not in inside]
        if not bare:
            continue
        text = _text(shift)

        def apply(n, tree, text=text, name=name):
            found = next((b for b in ast.walk(n.value) if isinstance(b, ast.BinOp) and _text(b) == text), None)
            if found is None:
                return False
            keep = {id(k) for k in ast.walk(found)}

            class Shift(ast.NodeTransformer):
                def visit_Name(self, leaf):
                    return copy.deepcopy(found) if leaf.id == name and id(leaf) not in keep else leaf
            n.value = Shift().visit(n.value)
            return True
        yield Edit(i, "shifted_once", apply, f"`{text}` in place of each bare `{name}` in that line",
                   f"the line shifts `{name}` by `{_text(shift.right)}` inside one term (`{text}`) and reads it "
                   f"unshifted in another: the formula shifts it the same everywhere it appears.")


def _names_exchanged(i, node, fdef):
    """`warmup_steps * step ** -1.5` for `step * warmup_steps ** -1.5`: two parameters in each other's place in
    one term (a product, a power: one sits on each side of it)."""
    if not isinstance(node, ast.BinOp):
        return
    params = [a.arg for a in fdef.args.args]

    def names(side):
        return {n.id for n in ast.walk(side) if isinstance(n, ast.Name) and n.id in params}
    left, right = names(node.left), names(node.right)
    for a in sorted(left - right):
        for b in sorted(right - left):
            def apply(n, tree, a=a, b=b):
                for leaf in ast.walk(n):
                    if isinstance(leaf, ast.Name) and leaf.id in (a, b):
                        leaf.id = b if leaf.id == a else a
                return True
            yield Edit(i, "exchanged", apply, f"`{a}` and `{b}` exchanged in `{_text(node)}`",
                       f"`{a}` stands where the formula has `{b}`, and `{b}` where it has `{a}`.")


def _power_of_reduction(i, node, fdef):
    """`np.mean(x, ...) ** 2` (the square of the mean) where the formula takes the mean of the squares,
    `np.mean(x ** 2, ...)`: the power moved into the reduction."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.left, ast.Call)
            and _callee(node.left) in _SUMS and _reduced(node.left) is not None):
        return
    inner = f"{_text(_reduced(node.left))} ** {_text(node.right)}"

    def apply(n, tree):
        call, array = n.left, _reduced(n.left)
        powered = ast.BinOp(array, ast.Pow(), n.right)
        if call.args and call.args[0] is array:
            call.args[0] = powered
        else:
            call.func.value = powered
        return replaced(tree, n, call)
    yield Edit(i, "power_of_reduction", apply, f"the {_callee(node.left)} of `{inner}` in place of `{_text(node)}`",
               f"`{_text(node)}` raises the {_callee(node.left)} to the power `{_text(node.right)}`; the formula takes "
               f"the {_callee(node.left)} of the powers (the mean of the squares is not the square of the mean).")


def term_outside_call(node):
    """`f(a, ...) + b` (or `- b`), f not a sum: (the call, the term), else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.left, ast.Call) \
            and node.left.args and _callee(node.left) not in _SUMS + ("max", "min", "where"):
        return node.left, node.right
    return None


def _term_outside_call(i, node, fdef):
    """`rms_norm(x, g) + out` where the formula is `rms_norm(x + out, g)`: a term added to what a call returns
    that belongs inside its first argument."""
    found = term_outside_call(node)
    if found is None:
        return
    call, term = found
    op = "+" if isinstance(node.op, ast.Add) else "-"

    def apply(n, tree):
        inner, extra = n.left, n.right
        inner.args[0] = ast.BinOp(inner.args[0], n.op, extra)
        return replaced(tree, n, inner)
    yield Edit(i, "term_outside_call", apply,
               f"`{_callee(call)}({_text(call.args[0])} {op} {_text(term)}, ...)` in place of `{_text(node)}`",
               f"`{op} {_text(term)}` is applied to what `{_callee(call)}` returns; the formula puts it inside, into "
               f"what `{_callee(call)}` takes (`{_callee(call)}` of the sum).")


ARITHMETIC_KINDS = [_product_for_sum, _double_for_square, _product_for_power, _python_operators, _regroup, _narrow_call, _names_exchanged, *FACTOR_KINDS,
                    _power_of_reduction, _term_outside_call]
SHIFT_KINDS = [_shifted_once]  # tried with everywhere.py's: one change at every place of a line
EXPONENT_KINDS = [_factor_for_exponent]  # tried early: few places have its pattern, and a long function's
# other edits would use up the repair's count before it
