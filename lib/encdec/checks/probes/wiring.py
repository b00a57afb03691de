"""The edits of how a block is wired, tried by the repair probe first (few, and each mends only its own
slip): a sublayer's output that replaces the stream where it is added to it (the residual left out), a call
around each pass's new value that the formula takes once, after the loop (a final norm applied to every
block's output), and an axis of size 1 inserted where the array already has it. Same contract as edits.py:
each kind yields Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import Edit, _text


def _assigned_before(fdef, name, lineno):
    """True when `name` is a parameter of the function or is assigned on a line before `lineno`."""
    params = {a.arg for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs)}
    if name in params:
        return True
    for node in ast.walk(fdef):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.For) else []
        for target in targets:
            if any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(target)) \
                    and getattr(node, "lineno", lineno) < lineno:
                return True
    return False


def _reads(node, name):
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _residual(i, node, fdef):
    """`x = sublayer(...)` where the formula has `x = x + sublayer(...)`: x already holds the stream."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return
    name, value = node.targets[0].id, node.value
    call = value.value if isinstance(value, ast.Subscript) else value  # block.ffn(h) or self.attn(h)[0]
    if not isinstance(call, ast.Call) or not _assigned_before(fdef, name, node.lineno):
        return

    def apply(n, tree):
        n.value = ast.BinOp(ast.Name(name, ast.Load()), ast.Add(), n.value)
        return True
    yield Edit(i, "residual", apply, f"`{name} = {name} + {_text(value)}`",
               f"the sublayer's output replaces `{name}`; the residual connection adds it to `{name}`, the stream "
               "that every sublayer reads and adds to.")


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


def _extra_new_axis(i, node, fdef):
    """`mask[..., None, :]` where `mask` already has the axis of size 1 it broadcasts over: the None left out."""
    if not isinstance(node, ast.Subscript):
        return
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
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


WIRING_KINDS = [_residual, _outer_call_after_loop, _extra_new_axis]
