"""The edits of how a block is wired, tried by the repair probe first (few, and each mends only its own
slip): a sublayer's output that replaces the stream where it is added to it (the residual left out), a call
around each pass's new value that the formula takes once, after the loop (a final norm applied to every
block's output). Same contract as edits.py:
each kind yields Edit(index, kind, apply, said, why). Also: another attribute named alike (norm2_gamma for
norm3_gamma, W_k for W_v), a sublayer reading the stream before an earlier sublayer's output is added, a factor applied
after a call (a softmax) where it belongs on the call's input, and a parameter that arrives already made
(K from project_kv) made again by the object's weight (`merge_heads(K) @ self.W_k`), and another sublayer's weights read in one
statement (`b.self_attn.W_k` where `b.cross_attn.W_k` belongs). Where the norms sit is norm_wiring.py's.
"""

import ast

from .moves import _arrays_before
from .nodes import Edit, _parent, _replace_child, _text, numbered_siblings
from .norm_wiring import _norm_after_the_sum, _residual_inside, _stale_norm, _stream_where_its_norm_belongs, _unwrap_each_argument


def _reads(node, name):
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _residual(i, node, fdef):
    """`x = sublayer(...)` where the formula has `x = x + sublayer(...)`: x already holds the stream."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return
    name, value = node.targets[0].id, node.value
    call = value.value if isinstance(value, ast.Subscript) else value  # block.ffn(h) or self.attn(h)[0]
    if not isinstance(call, ast.Call) or name not in _arrays_before(fdef, node.lineno):
        return

    def apply(n, tree):
        n.value = ast.BinOp(ast.Name(name, ast.Load()), ast.Add(), n.value)
        return True
    yield Edit(i, "residual", apply, f"`{name} = {name} + {_text(value)}`",
               f"the sublayer's output replaces `{name}`; the residual connection adds it to `{name}`, the stream "
               "that every sublayer reads and adds to.")


def _assigned_from_calls(fdef, lineno):
    """The names assigned from a call's result (a sublayer's output) on lines before `lineno`."""
    found = []
    for stmt in ast.walk(fdef):
        if isinstance(stmt, ast.Assign) and stmt.lineno < lineno and len(stmt.targets) == 1:
            value = stmt.value.value if isinstance(stmt.value, ast.Subscript) else stmt.value
            target = stmt.targets[0]
            target = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
            if isinstance(value, ast.Call) and isinstance(target, ast.Name) and target.id != "_" \
                    and "norm" not in _text(value.func):  # a norm's output is no sublayer's
                found.append(target.id)
    return found


def _stream_not_updated(i, node, fdef):
    """`ffn(rms_norm(x, g))` where the formula has `ffn(rms_norm(x + attn_out, g))`: a sublayer reads the stream
    as it was before an earlier sublayer's output was added (sublayers side by side, not one after another)."""
    calls = [c for c in ast.walk(fdef) if isinstance(c, ast.Call) and c.args and c.args[0] is node
             and "norm" in _text(c.func)]  # a sublayer's input is the stream's norm
    if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and calls
            and node.id in _arrays_before(fdef, node.lineno)):
        return
    sums = {frozenset((_text(a.value.left), _text(a.value.right))) for a in ast.walk(fdef)
            if isinstance(a, ast.Assign) and a.lineno < node.lineno and isinstance(a.value, ast.BinOp)
            and isinstance(a.value.op, ast.Add)}
    for added in _assigned_from_calls(fdef, node.lineno):
        if added == node.id or frozenset((node.id, added)) in sums:  # kept in a name: reading it is the fix
            continue

        def apply(n, tree, added=added):
            parent = next(c for c in ast.walk(tree) if isinstance(c, ast.Call) and c.args and c.args[0] is n)
            parent.args[0] = ast.BinOp(ast.Name(n.id, ast.Load()), ast.Add(), ast.Name(added, ast.Load()))
            return True
        func = _text(calls[0].func)
        yield Edit(i, "stream", apply, f"`{func}({node.id} + {added}, ...)` in place of `{_text(calls[0])}`",
                   f"`{func}` reads `{node.id}` as it was before `{added}` was added to it: each sublayer reads the "
                   f"stream as the sublayers before it left it, here `{node.id} + {added}`.")


_FACTORS = {ast.Div: "/", ast.Mult: "*"}


def _factor_outside_call(i, node, fdef):
    """`softmax(s, axis=-1) / np.sqrt(d_k)` where the formula has `softmax(s / np.sqrt(d_k), axis=-1)`: a
    factor applied to what a call returns, where it belongs on what the call takes."""
    if not (isinstance(node, ast.BinOp) and type(node.op) in _FACTORS):
        return
    sides = [(node.left, node.right)] + ([(node.right, node.left)] if isinstance(node.op, ast.Mult) else [])
    for call, factor in sides:
        if not (isinstance(call, ast.Call) and call.args and "softmax" in _text(call.func)) \
                or any(n is call for n in ast.walk(factor)):
            continue
        op = _FACTORS[type(node.op)]

        def apply(n, tree, left=call is node.left):
            inner = n.left if left else n.right
            factor_node = n.right if left else n.left
            moved = ast.BinOp(inner.args[0], n.op, factor_node) if left or isinstance(n.op, ast.Div) \
                else ast.BinOp(factor_node, n.op, inner.args[0])
            inner.args[0] = moved
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, inner)
        func = _text(call.func)
        yield Edit(i, "factor", apply, f"`{func}({_text(call.args[0])} {op} {_text(factor)}, ...)` in place of "
                   f"`{_text(node)}`",
                   f"`{op} {_text(factor)}` is applied to what `{func}` returns; the formula applies it to what "
                   f"`{func}` takes, before it (a softmax's rows sum to 1, and a factor after it makes them sum to "
                   "that factor).")


def _outer_call_after_loop(i, node, fdef):
    """In a loop, `x = f(g(x), ...)` as its last step, where the formula has `x = g(x)` in each pass and
    `x = f(x, ...)` once after the loop."""
    for field in ("body", "orelse"):
        body = getattr(node, field, None)
        if not isinstance(body, list):
            continue
        for k, loop in enumerate(body):
            if not (isinstance(loop, (ast.For, ast.While)) and loop.body):
                continue
            last = loop.body[-1]
            if not (isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name)
                    and isinstance(last.value, ast.Call) and last.value.args):
                continue
            name, outer = last.targets[0].id, last.value
            if not _reads(outer.args[0], name) or isinstance(outer.args[0], ast.Name):
                continue

            def apply(n, tree, field=field, k=k):
                lst = getattr(n, field)
                step = lst[k].body[-1]
                inner, after = step.value.args[0], step.value
                step.value = inner
                after.args[0] = ast.Name(name, ast.Load())
                lst.insert(k + 1, ast.Assign([ast.Name(name, ast.Store())], after))
                return True
            yield Edit(i, "loop", apply,
                       f"`{name} = {_text(outer.args[0])}` in each pass and `{name} = {_text(outer.func)}({name}, ...)` "
                       "once, after the loop",
                       f"`{_text(outer.func)}(...)` runs on every pass's output; the formula takes that step once, "
                       "on the last pass's.", last.lineno)


_PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


def _sibling_attribute(i, node, fdef):
    """`block.norm2_gamma` where `block.norm3_gamma` belongs, `self.W_k` for `self.W_v`: another attribute of
    the same object, named alike, that the code never reads (the one whose place this one took)."""
    if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
        return
    name = node.attr
    others = numbered_siblings(name) or ([p for p in _PROJECTIONS if p != name] if name in _PROJECTIONS else [])
    read = {a.attr for a in ast.walk(fdef) if isinstance(a, ast.Attribute)}
    for other in [o for o in others if o not in read]:  # a sibling the code reads elsewhere is not the one
        def apply(n, tree, other=other):
            n.attr = other
            return True
        yield Edit(i, "attribute", apply, f"`{_text(node.value)}.{other}` in place of `{_text(node)}`",
                   f"`{_text(node)}` belongs to another step: each step has its own, and this one reads `{other}`.")


_SUBLAYERS = ("self_attn", "cross_attn")


def _other_sublayer(i, node, fdef):
    """`H_enc @ b.self_attn.W_k` (and `.W_v`) in one statement where the cross-attention's weights belong: every
    `self_attn` of the statement read as `cross_attn`, or the other way round, as one change."""
    if not isinstance(node, (ast.Assign, ast.Return, ast.Expr)):
        return
    for old, new in (_SUBLAYERS, _SUBLAYERS[::-1]):
        if not any(isinstance(a, ast.Attribute) and a.attr == old for a in ast.walk(node)):
            continue

        def apply(n, tree, old=old, new=new):
            for a in ast.walk(n):
                if isinstance(a, ast.Attribute) and a.attr == old:
                    a.attr = new
            return True
        yield Edit(i, "attribute", apply, f"`{new}` in place of each `{old}` in that statement",
                   f"the statement reads the weights of `{old}` where those of `{new}` belong: each sublayer has its "
                   "own W_q, W_k, W_v and W_o.")


def _reapplied(stmt, params):
    """`K = split_heads(merge_heads(K) @ self.W_k, h)`: a parameter assigned again from itself and a weight of
    the object (an attribute of self), so that what arrives already made is made a second time."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in params):
        return False
    name = stmt.targets[0].id
    reads = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id == name]
    weights = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
               and n.value.id == "self"]
    return bool(reads and weights)


def _made_again(i, node, fdef):
    """Each parameter made again by a weight of the object (K and V through W_k and W_v), those lines dropped
    as one change."""
    if node is not fdef:
        return
    params = {a.arg for a in fdef.args.args[1:]}
    found = [s for s in ast.walk(fdef) if _reapplied(s, params)]
    if not found:
        return

    def apply(n, tree):
        for holder in ast.walk(n):
            if hasattr(holder, "body") and isinstance(holder.body, list):
                holder.body = [s for s in holder.body if not _reapplied(s, params)] or [ast.Pass()]
        return True
    names = " and ".join(f"`{s.targets[0].id}`" for s in found)
    weights = " and ".join(sorted({_text(a) for s in found for a in ast.walk(s.value) if isinstance(a, ast.Attribute)
                                   and isinstance(a.value, ast.Name) and a.value.id == "self"}))
    lines = ", ".join(str(s.lineno) for s in found)
    yield Edit(i, "made_again", apply, f"line{'s' if len(found) > 1 else ''} {lines} left out",
               f"{names} {'arrive' if len(found) > 1 else 'arrives'} as parameters, already made (the docstring says "
               f"what from), and line{'s' if len(found) > 1 else ''} {lines} pass{'' if len(found) > 1 else 'es'} "
               f"{'them' if len(found) > 1 else 'it'} through {weights} again. Use them as they come.",
               found[0].lineno)


WIRING_KINDS = [_stale_norm, _made_again, _residual, _residual_inside, _stream_not_updated, _factor_outside_call, _outer_call_after_loop, _sibling_attribute, _other_sublayer,
                _unwrap_each_argument, _stream_where_its_norm_belongs, _norm_after_the_sum]
