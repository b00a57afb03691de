"""The repair's edits of where a block's norms sit (listed with wiring.py's kinds, tried first): the residual left
out inside a post-norm's norm (`x = rms_norm(a, g)` for `x = rms_norm(x + a, g)`), a norm around every sublayer's
input where the formula gives each the stream itself, and the stream read where its norm, made just before, belongs
(`attend(x, K, V)` after `a = rms_norm(x, g)`, where the keys came from `a`). Same contract as edits.py: each
kind yields Edit(index, kind, apply, said, why).
"""

import ast

from .moves import _arrays_before
from .nodes import Edit, _text


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
    """{stream: (name, statement)} of the norms `name = ...norm(stream, ...)` made on lines before `call`, the
    stream not assigned again in between."""
    found = {}
    for stmt in sorted((s for s in ast.walk(fdef) if isinstance(s, ast.Assign)), key=lambda s: s.lineno):
        if stmt.lineno >= call.lineno:
            break
        for target in [t for t in stmt.targets if isinstance(t, ast.Name)]:
            found = {k: v for k, v in found.items() if k != target.id}
        value = stmt.value
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and isinstance(value, ast.Call) \
                and "norm" in _text(value.func).split(".")[-1] and value.args and isinstance(value.args[0], ast.Name):
            found[value.args[0].id] = (stmt.targets[0].id, stmt)
    return found


def _stream_where_its_norm_belongs(i, node, fdef):
    """`block.self_attn.attend(x, K, V)` right after `a = rms_norm(x, g)`: a sublayer given the stream where the
    norm made for it belongs (pre-norm feeds every input of a sublayer, the queries too, from the norm)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return
    normed = _normed_before(fdef, node)
    for k, arg in enumerate(node.args):
        if not (isinstance(arg, ast.Name) and arg.id in normed):
            continue
        name, stmt = normed[arg.id]

        def apply(n, tree, k=k, name=name):
            n.args[k] = ast.Name(name, ast.Load())
            return True
        yield Edit(i, "stream_for_norm", apply, f"`{name}` in place of `{arg.id}` in `{_text(node)}`",
                   f"`{_text(node)}` reads the stream `{arg.id}` where its norm `{name}` (line {stmt.lineno}: "
                   f"`{_text(stmt)}`) belongs: in a pre-norm block every input of the sublayer, its queries too, "
                   "comes from the norm of the stream.")
