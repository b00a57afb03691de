"""The repair's edits of where a block's norms sit (listed with wiring.py's kinds, tried first): the residual left
out inside a post-norm's norm (`x = rms_norm(a, g)` for `x = rms_norm(x + a, g)`), a norm around every sublayer's
input where the formula gives each the stream itself, and the stream read where its norm, made just before, belongs
(`attend(x, K, V)` after `a = rms_norm(x, g)`, where the keys came from `a`), and a norm read after its stream
moved on (`cross_attn(h, ...)` with `h` the norm of `x` before `x = x + sa_out`: the norm made again, with the gain
the code never reads). Same contract as edits.py: each
kind yields Edit(index, kind, apply, said, why).
"""

import ast
import copy

from .moves import _arrays_before
from .nodes import Edit, _text, unread_siblings


def _normed_alone(node, fdef):
    """(stream, sublayer output) of `x = rms_norm(a, g)` with x the stream (assigned before) and a another name."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
            and isinstance(node.value, ast.Call) and node.value.args and isinstance(node.value.args[0], ast.Name):
        name, inner = node.targets[0].id, node.value.args[0].id
        if inner != name and name in _arrays_before(fdef, node.lineno):
            return name, inner
    return None


def _residual_inside(i, node, fdef):
    """Post-norm: `x = rms_norm(a, g)` where the formula has `x = rms_norm(x + a, g)`: the sublayer's output
    normalised without the stream it is added to; at every sublayer too, as one change."""
    found = _normed_alone(node, fdef)
    each = [n for n in ast.walk(fdef) if _normed_alone(n, fdef)] if node is fdef else []
    if found is None and len(each) < 2:
        return

    def add_stream(stmt):
        name = stmt.targets[0].id
        stmt.value.args[0] = ast.BinOp(ast.Name(name, ast.Load()), ast.Add(), stmt.value.args[0])

    if found is not None:
        name, inner = found

        def apply(n, tree):
            add_stream(n)
            return True
        yield Edit(i, "residual", apply, f"`{_text(node.value.func)}({name} + {inner}, ...)`",
                   f"`{inner}` is normalised on its own; the residual connection adds it to `{name}`, the stream, and "
                   "the sum is what the norm takes.")
    else:
        def apply(n, tree):
            for stmt in [m for m in ast.walk(n) if _normed_alone(m, n)]:
                add_stream(stmt)
            return True
        yield Edit(i, "residual", apply, "the stream added to each sublayer's output before its norm "
                   f"(`{_text(each[0].value.func)}({each[0].targets[0].id} + {each[0].value.args[0].id}, ...)`, each one)",
                   "every sublayer's output is normalised on its own; the residual connection adds it to the stream, "
                   "and the sum is what the norm takes.", each[0].lineno)


def _unwrap_each_argument(i, node, fdef):
    """`sublayer(rms_norm(x, g))` at every sublayer, where the formula gives each sublayer `x` itself (a
    post-norm block normalised before each sublayer too): every such call taken out, as one change."""
    if node is not fdef:
        return
    wrapped = {}
    for call in ast.walk(fdef):
        if isinstance(call, ast.Call):
            for arg in call.args:
                if isinstance(arg, ast.Call) and arg.args and isinstance(arg.args[0], ast.Name):
                    wrapped.setdefault(_text(arg.func), []).append(arg)
    for func, calls in wrapped.items():
        if len(calls) < 2:
            continue

        def apply(n, tree, func=func):
            for call in ast.walk(n):
                if isinstance(call, ast.Call):
                    call.args = [a.args[0] if isinstance(a, ast.Call) and _text(a.func) == func and a.args
                                 and isinstance(a.args[0], ast.Name) else a for a in call.args]
            return True
        yield Edit(i, "extra_call", apply, f"the `{func}(...)` around each sublayer's input taken out",
                   f"every sublayer reads `{func}(...)` of its input, a step the formula does not take there (it "
                   "takes it once, after the residual sum).", calls[0].lineno)


def _normed_before(fdef, call):
    """{stream: (the norm, statement)} of the norms of `stream` made on lines before `call`, the stream not assigned
    again in between: the name of `name = ...norm(stream, ...)`, or the call itself where it is written inline
    (`project_kv(rms_norm(x, g))`)."""
    found = {}
    statements = [s for s in ast.walk(fdef) if isinstance(s, (ast.Assign, ast.Expr))]
    for stmt in sorted(statements, key=lambda s: s.lineno):
        if stmt.lineno >= call.lineno:
            break
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        for target in [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]:
            found = {k: v for k, v in found.items() if k != target.id}
        value = stmt.value
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and _norm_of_a_name(value):
            found[value.args[0].id] = (targets[0].id, stmt)
            continue
        for inline in [n for n in ast.walk(value) if n is not value and _norm_of_a_name(n)]:
            found.setdefault(inline.args[0].id, (inline, stmt))
    return found


def _norm_of_a_name(node):
    return isinstance(node, ast.Call) and "norm" in _text(node.func).split(".")[-1] and node.args \
        and isinstance(node.args[0], ast.Name)


def _stream_where_its_norm_belongs(i, node, fdef):
    """`block.self_attn.attend(x, K, V)` right after `a = rms_norm(x, g)`: a sublayer given the stream where the
    norm made for it belongs (pre-norm feeds every input of a sublayer, the queries too, from the norm)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return
    normed = _normed_before(fdef, node)
    for k, arg in enumerate(node.args):
        if not (isinstance(arg, ast.Name) and arg.id in normed):
            continue
        norm, stmt = normed[arg.id]
        name = norm if isinstance(norm, str) else _text(norm)

        def apply(n, tree, k=k, norm=norm):
            n.args[k] = ast.Name(norm, ast.Load()) if isinstance(norm, str) else copy.deepcopy(norm)
            return True
        made = f"line {stmt.lineno}: `{_text(stmt)}`" if isinstance(norm, str) else f"made on line {stmt.lineno}"
        yield Edit(i, "stream_for_norm", apply, f"`{name}` in place of `{arg.id}` in `{_text(node)}`",
                   f"`{_text(node)}` reads the stream `{arg.id}` where its norm `{name}` ({made}) belongs: in a "
                   "pre-norm block every input of the sublayer, its queries too, comes from the norm of the stream.")


def _stale_norms(fdef, call):
    """{name: (stream now, statement)} of the norms `name = ...norm(stream, g)` made before `call` whose stream moved
    on after them (`x = x + a`, or `out = x + a`), `name` not assigned again: `name` is the norm of the stream
    as it was, and `stream now` the name that holds it as it is."""
    found, moved = {}, {}
    for stmt in sorted((s for s in ast.walk(fdef) if isinstance(s, ast.Assign)), key=lambda s: s.lineno):
        if stmt.lineno >= call.lineno:
            break
        names = {t.id for target in stmt.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        found = {k: v for k, v in found.items() if k not in names}
        value = stmt.value
        added = {_text(side) for side in (value.left, value.right)} \
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) else set()
        for k, (stream, _) in found.items():
            now = moved.get(k, stream)
            if now in names or (now in added and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                moved[k] = stmt.targets[0].id if now in added and isinstance(stmt.targets[0], ast.Name) else now
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and isinstance(value, ast.Call) \
                and "norm" in _text(value.func).split(".")[-1] and len(value.args) >= 2 \
                and isinstance(value.args[0], ast.Name):
            found[stmt.targets[0].id] = (value.args[0].id, stmt)
            moved.pop(stmt.targets[0].id, None)
    return {k: (moved[k], stmt) for k, (_, stmt) in found.items() if k in moved}


def _gains_for_a_new_norm(norm, fdef):
    """The gains a norm made again may take: the numbered siblings of the stale norm's gain that the code never
    reads (`norm2_gamma` beside `norm1_gamma` and `norm3_gamma`), else that gain itself."""
    gain = norm.args[1]
    unread = unread_siblings(gain.attr, fdef) if isinstance(gain, ast.Attribute) else []
    return [ast.Attribute(gain.value, other, ast.Load()) for other in unread] or [gain]


def _stale_norm(i, node, fdef):
    """`self.cross_attn(h, ...)` with `h = rms_norm(x, g1)` made before `x = x + sa_out`: a sublayer given the norm
    of the stream as it was before an earlier sublayer's output was added; the norm made again just before it."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return
    stale = _stale_norms(fdef, node)
    for arg in node.args:
        if not (isinstance(arg, ast.Name) and arg.id in stale):
            continue
        stream, made = stale[arg.id]
        was = made.value.args[0].id
        rest = "".join(f", {_text(extra)}" for extra in [*made.value.args[2:], *made.value.keywords])
        for gain in _gains_for_a_new_norm(made.value, fdef):
            new = ast.parse(f"{arg.id} = {_text(made.value.func)}({stream}, {_text(gain)}{rest})").body[0]

            def apply(n, tree, new=new):
                for holder in ast.walk(tree):
                    for field in ("body", "orelse"):
                        body = getattr(holder, field, None)
                        if isinstance(body, list):
                            at = next((k for k, stmt in enumerate(body) if any(x is n for x in ast.walk(stmt))), None)
                            if at is not None and not any(isinstance(x, (ast.For, ast.While, ast.If, ast.With))
                                                          and any(y is n for y in ast.walk(x)) for x in body[at:at + 1]):
                                body.insert(at, copy.deepcopy(new))
                                return True
                return False
            yield Edit(i, "norm_again", apply, f"`{_text(new)}` added before `{_text(node)}`",
                       f"`{_text(node)}` reads `{arg.id}`, the norm of `{was}` made on line {made.lineno} "
                       f"(`{_text(made)}`), before an earlier sublayer's output was added to the stream (now "
                       f"`{stream}`): each sublayer reads the norm of the stream as the sublayers before it left it, "
                       "made again for it with its own gain.")


def _sum_after(fdef, stmt, stream, output):
    """The statement after `stmt` that adds the sublayer's `output` to `stream` (`x = x + out`), else None."""
    later = sorted((s for s in ast.walk(fdef) if isinstance(s, ast.Assign) and s.lineno > stmt.lineno),
                   key=lambda s: s.lineno)
    for s in later:
        value = s.value
        if len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == stream \
                and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) \
                and {_text(value.left), _text(value.right)} == {stream, output}:
            return s
        if any(isinstance(t, ast.Name) and t.id in (stream, output) for t in ast.walk(s) if isinstance(t, ast.Name)
               and isinstance(t.ctx, ast.Store)):
            return None
    return None


def _norm_after_the_sum(i, node, fdef):
    """Post-norm: `out = sublayer(rms_norm(x, g))` then `x = x + out`, where the formula has `out = sublayer(x)`
    then `x = rms_norm(x + out, g)`: one sublayer written the pre-norm way, its norm moved after the sum."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
        return
    target = node.targets[0]
    output = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
    if not isinstance(output, ast.Name):
        return
    for k, arg in enumerate(node.value.args):
        if not (isinstance(arg, ast.Call) and "norm" in _text(arg.func).split(".")[-1] and len(arg.args) >= 2
                and isinstance(arg.args[0], ast.Name)):
            continue
        stream = arg.args[0].id
        total = _sum_after(fdef, node, stream, output.id)
        if total is None:
            continue

        def apply(n, tree, k=k, lineno=total.lineno):
            norm = n.value.args[k]
            later = next((s for s in ast.walk(tree) if isinstance(s, ast.Assign) and s.lineno == lineno), None)
            if later is None:
                return False
            n.value.args[k] = norm.args[0]
            later.value = ast.Call(norm.func, [later.value, *norm.args[1:]], norm.keywords)
            return True
        rest = "".join(f", {_text(a)}" for a in arg.args[1:])
        yield Edit(i, "norm_after_sum", apply,
                   f"`{stream}` as the sublayer's input and `{stream} = {_text(arg.func)}({_text(total.value)}{rest})` "
                   f"on line {total.lineno}",
                   f"`{_text(arg)}` normalises the sublayer's input, the pre-norm way; the post-norm block gives the "
                   f"sublayer `{stream}` itself and normalises the residual sum after it: `{stream} = "
                   f"{_text(arg.func)}({_text(total.value)}{rest})`.")
