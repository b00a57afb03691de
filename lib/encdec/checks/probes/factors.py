"""The repair's edits of a factor in the wrong place (tried with arithmetic.py's): a factor outside a sum that
belongs inside it (`np.sum(dout, ...) * p` for `np.sum(dout * p, ...)`, or through a name, `inner * p` with
`inner = np.sum(dout, ...)`), a factor one return has and the other
lacks (a warm-up and a decay), and a factor one operand of a min (max) has and the other lacks
(`min(decay, factor * warm)`). Same contract as edits.py: each kind yields Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import Edit, _callee, _parent, _reduced, _replace_child, _text

_SUMS = ("sum", "mean")


def _factor_outside_sum(i, node, fdef):
    """`np.sum(dout, ...) * p` (or `dout.sum(...) * p`) where the formula sums the products, `np.sum(dout * p, ...)`."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return
    for call, other in ((node.left, node.right), (node.right, node.left)):
        if isinstance(call, ast.Call) and _callee(call) in _SUMS and _reduced(call) is not None \
                and isinstance(other, (ast.Name, ast.Attribute)):
            moved = f"the sum of `{_text(_reduced(call))} * {_text(other)}`"

            def apply(n, tree, left=call is node.left):
                inner, factor = (n.left, n.right) if left else (n.right, n.left)
                _multiply_inside(inner, factor)
                parent = _parent(tree, n)
                return parent is not None and _replace_child(parent, n, inner)
            yield Edit(i, "factor_outside_sum", apply, f"{moved} in place of `{_text(node)}`",
                       f"`{_text(other)}` multiplies the sum, where the formula sums the products: each term is "
                       f"multiplied by its own `{_text(other)}` before the sum.")


def _sum_assigned(fdef, name, lineno):
    """The one assignment `name = np.sum(array, ...)` (or a mean) of the function, before `lineno`, else None."""
    stores = [s for s in ast.walk(fdef) if isinstance(s, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(s) if isinstance(t, ast.Name)
                      and isinstance(t.ctx, ast.Store))]
    if len(stores) != 1 or stores[0].lineno >= lineno or len(stores[0].targets) != 1:
        return None
    value = stores[0].value
    return stores[0] if isinstance(value, ast.Call) and _callee(value) in _SUMS and _reduced(value) is not None \
        else None


def _factor_outside_named_sum(i, node, fdef):
    """`inner * p` with `inner = np.sum(dout, ...)` on a line before: the factor outside a sum kept in a name, where
    the formula sums the products (`np.sum(dout * p, ...)`)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return
    for named, other in ((node.left, node.right), (node.right, node.left)):
        if not (isinstance(named, ast.Name) and isinstance(other, (ast.Name, ast.Attribute))):
            continue
        made = _sum_assigned(fdef, named.id, node.lineno)
        if made is None:
            continue

        def apply(n, tree, left=named is node.left, line=made.lineno):
            kept, factor = (n.left, n.right) if left else (n.right, n.left)
            stmt = next((s for s in ast.walk(tree) if isinstance(s, ast.Assign) and s.lineno == line), None)
            if stmt is None:
                return False
            _multiply_inside(stmt.value, factor)
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, kept)
        yield Edit(i, "factor_outside_sum", apply,
                   f"the sum of `{_text(_reduced(made.value))} * {_text(other)}` on line {made.lineno}, and "
                   f"`{named.id}` in place of `{_text(node)}`",
                   f"`{_text(other)}` multiplies `{named.id}`, the sum made on line {made.lineno}, where the formula "
                   f"sums the products: each term is multiplied by its own `{_text(other)}` before the sum.")


def _multiply_inside(call, factor):
    """`np.sum(a, ...)` (or `a.sum(...)`) made `np.sum(a * factor, ...)`, in place."""
    array = _reduced(call)
    product = ast.BinOp(array, ast.Mult(), factor)
    if call.args and call.args[0] is array:
        call.args[0] = product
    else:
        call.func.value = product


def _factor_in_one_branch(i, node, fdef):
    """Two returns of the function (a warm-up and a decay), one with a factor (`d_model ** -0.5`) the other lacks."""
    if node is not fdef:
        return
    returns = [r for r in ast.walk(fdef) if isinstance(r, ast.Return) and r.value is not None]
    if len(returns) != 2:
        return

    def factors(expr):
        return [expr.right, *factors(expr.left)] if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult) \
            else [expr]
    for full, short in (returns, returns[::-1]):
        have = {_text(f) for f in factors(short.value)}
        for factor in factors(full.value):
            text = _text(factor)
            if text in have or not any(isinstance(n, ast.Name) for n in ast.walk(factor)):
                continue

            def apply(n, tree, line=short.lineno, text=text):
                target = next(r for r in ast.walk(n) if isinstance(r, ast.Return) and r.lineno == line)
                target.value = ast.BinOp(target.value, ast.Mult(), ast.parse(text, mode="eval").body)
                return True
            yield Edit(i, "factor_in_one_branch", apply, f"`* {text}` added to `{_text(short)}`",
                       f"the return on line {full.lineno} has the factor `{text}` and the one on line {short.lineno} "
                       "does not: the formula applies it to both branches.", short.lineno)


def _factor_in_one_operand(i, node, fdef):
    """`warm = factor * step * w ** -1.5`, `decay = step ** -0.5`, then `min(decay, warm)`: a parameter that
    multiplies one operand of a min (max) and not the other; the formula applies it to both."""
    if node is not fdef:
        return
    params = {a.arg for a in fdef.args.args}
    made = {t.id: n for n in ast.walk(fdef) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}

    def factors(expr):
        return [expr.right, *factors(expr.left)] if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult) \
            else [expr]
    for call in ast.walk(fdef):
        if not (isinstance(call, ast.Call) and _callee(call) in ("min", "max", "minimum", "maximum")
                and len(call.args) == 2 and all(isinstance(a, ast.Name) and a.id in made for a in call.args)):
            continue
        for have, lack in (call.args, call.args[::-1]):
            shared = [f.id for f in factors(made[have.id].value) if isinstance(f, ast.Name) and f.id in params
                      and f.id not in {g.id for g in factors(made[lack.id].value) if isinstance(g, ast.Name)}]
            for name in shared:
                line = made[lack.id].lineno

                def apply(n, tree, line=line, name=name):
                    target = next(a for a in ast.walk(n) if isinstance(a, ast.Assign) and a.lineno == line)
                    target.value = ast.BinOp(ast.Name(name, ast.Load()), ast.Mult(), target.value)
                    return True
                yield Edit(i, "factor_in_one_branch", apply, f"`{name} *` added to `{_text(made[lack.id])}`",
                           f"`{have.id}` has the factor `{name}` and `{lack.id}` does not, so `{_callee(call)}` "
                           f"compares the two on different scales; the formula applies `{name}` to both (to the "
                           f"result of the `{_callee(call)}`).", line)


FACTOR_KINDS = [_factor_outside_sum, _factor_outside_named_sum, _factor_in_one_branch, _factor_in_one_operand]
