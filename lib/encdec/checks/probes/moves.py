"""The edits of an answer's code that move or exchange whole pieces, tried by the repair probe after the
one-token edits of edits.py: two arguments of a call in each other's place, a call around a value that
should not be there, a statement in another order, out of or into a loop, one too many, a variable read
where another belongs, and an argument where a number is written. Same contract as edits.py: each kind
yields Edit(index, kind, apply, said, why).
"""

import ast

from .nodes import (_NOT_WRAPPERS, Edit, _axis_values, _const_int, _inside_unary, _parameters, _parent, _replace_child,
                    _text)

_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)


def _movable(stmt):
    """A statement the moves may take: an assignment or a call, not a docstring."""
    return isinstance(stmt, _SIMPLE) and not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def _bodies(node):
    """The statement lists a node holds (a function's, a loop's, an if's and its else's)."""
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield name


def _exchangeable(arg):
    """An argument that may have been given in another's place: a value the code computes or names (a
    variable, an attribute, a call such as rms_norm(x, gamma), an expression), not a literal."""
    return not isinstance(arg, (ast.Constant, ast.Starred)) and not (
        isinstance(arg, ast.UnaryOp) and isinstance(arg.operand, ast.Constant))


def _swap_arguments(i, node, fdef):
    if not isinstance(node, ast.Call):
        return
    named = [k for k in node.keywords if k.arg and _exchangeable(k.value)]
    for a in range(len(named)):
        for b in range(a + 1, len(named)):
            first, second = named[a].arg, named[b].arg

            def apply(n, tree, first=first, second=second):
                kws = {k.arg: k for k in n.keywords}
                kws[first].value, kws[second].value = kws[second].value, kws[first].value
                return True
            yield Edit(i, "arguments", apply,
                       f"`{first}={_text(named[b].value)}` and `{second}={_text(named[a].value)}` in `{_text(node)}`",
                       f"the values given as {first} and {second} are in each other's place.")
    plain = [k for k, arg in enumerate(node.args) if _exchangeable(arg)]
    for a in range(len(plain)):
        for b in range(a + 1, len(plain)):
            p, q = plain[a], plain[b]

            def apply(n, tree, p=p, q=q):
                n.args[p], n.args[q] = n.args[q], n.args[p]
                return True
            yield Edit(i, "arguments", apply,
                       f"`{_text(node.args[q])}` and `{_text(node.args[p])}` exchanged in `{_text(node)}`",
                       f"`{_text(node.args[p])}` and `{_text(node.args[q])}` are in each other's place in that call "
                       "(the order of its parameters is in its docstring).")


def _mask_by_keyword(i, node, fdef):
    """`self.self_attn(h, mask)` where the second parameter is the keys' input: the mask given by position
    lands in another parameter; `mask=mask` gives it by name. Any last argument named as a setting is tried
    so too (`loss(logits, targets, label_smoothing)`, where the third parameter is pad_id): a call that takes
    no parameter of that name fails, and the edit with it."""
    if not (isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[-1], ast.Name)
            and not any(isinstance(a, ast.Starred) for a in node.args)):
        return
    name = node.args[-1].id
    keyword = "mask" if "mask" in name else name
    if any(k.arg == keyword for k in node.keywords) or keyword in ("x", "h", "self") or len(keyword) < 3:
        return

    def apply(n, tree):
        n.args = n.args[:-1]
        n.keywords = [*n.keywords, ast.keyword(keyword, ast.Name(name, ast.Load()))]
        return True
    yield Edit(i, "arguments", apply, f"`{keyword}={name}` in place of `{name}` given by position in `{_text(node)}`",
               f"given by position, `{name}` lands in the parameter in that place, not in `{keyword}` (the order of "
               "the parameters is in the docstring): give it by name.")


def _stack_for_concatenate(i, node, fdef):
    """`np.stack(steps, axis=-2)` where each step already has its length-1 axis: every stack of the function
    made a concatenate at once (a function that stacks its outputs and its weights alike)."""
    stacks = [n for n in ast.walk(fdef) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr == "stack"]
    if not stacks or node is not stacks[0]:
        return
    joined = {"np": "concatenate", "numpy": "concatenate", "torch": "cat"}

    def apply(n, tree):
        changed = False
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "stack" \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id in joined:
                call.func.attr, changed = joined[call.func.value.id], True
        return changed
    owner = _text(node.func.value)
    yield Edit(i, "join", apply, f"`{owner}.{joined.get(owner, 'concatenate')}` in place of `{owner}.stack`"
               + (" (each one)" if len(stacks) > 1 else ""),
               "a stack adds a new axis for the pieces; each piece already has its axis of size 1 (a step's "
               "position), so they are joined along it.")


def _unwrap(i, node, fdef):
    """`f(x)` where `x` belongs; also `rms_norm(x, gamma)`, a call whose other arguments are settings (names,
    attributes, numbers), not values computed on the way."""
    if not (isinstance(node, ast.Call) and node.args):
        return
    one = len(node.args) == 1 and not node.keywords
    settings = len(node.args) > 1 and isinstance(node.args[0], (ast.Name, ast.Attribute)) \
        and all(isinstance(a, (ast.Attribute, ast.Name, ast.Constant)) for a in node.args[1:])
    if one or settings:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if not name or name in _NOT_WRAPPERS or isinstance(node.args[0], ast.Starred):
            return

        def apply(n, tree):
            parent = _parent(tree, n)
            return parent is not None and _replace_child(parent, n, n.args[0])
        yield Edit(i, "extra_call", apply, f"`{_text(node.args[0])}` in place of `{_text(node)}`",
                   f"the `{_text(node.func)}(...)` around `{_text(node.args[0])}` is a step the formula does not "
                   "take there.")


def _unpack(i, node, fdef):
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
            and isinstance(node.value, ast.Call):
        name = node.targets[0].id

        def apply(n, tree):
            n.targets = [ast.Tuple([ast.Name(name, ast.Store()), ast.Name("_", ast.Store())], ast.Store())]
            return True
        yield Edit(i, "unpack", apply, f"`{name}, _ = {_text(node.value)}`",
                   f"the call returns two values (an output and its weights): `{name}` keeps both as a tuple, where "
                   "the next steps need the first alone.")


def _drop_term(i, node, fdef):
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        sign = "+" if isinstance(node.op, ast.Add) else "-"
        for side in ("right", "left"):
            kept = node.left if side == "right" else node.right
            if side == "left" and sign == "-":
                continue
            dropped = getattr(node, side)

            def apply(n, tree, side=side):
                parent = _parent(tree, n)
                keep = n.left if side == "right" else n.right
                return parent is not None and _replace_child(parent, n, keep)
            yield Edit(i, "extra_term", apply, f"`{_text(kept)}` in place of `{_text(node)}`",
                       f"`{_text(dropped)}` is a term the formula does not add there.")


def _statements(i, node, fdef):
    for field in _bodies(node):
        body = getattr(node, field)
        for k, stmt in enumerate(body):
            nxt = body[k + 1] if k + 1 < len(body) else None
            if _movable(stmt) and nxt is not None and _movable(nxt):
                def apply(n, tree, field=field, k=k):
                    lst = getattr(n, field)
                    lst[k], lst[k + 1] = lst[k + 1], lst[k]
                    return True
                yield Edit(i, "order", apply, f"line {nxt.lineno} before line {stmt.lineno}",
                           f"`{_text(stmt)}` and `{_text(nxt)}` run in the other order in the right computation: "
                           "the second needs what the first would change.", stmt.lineno)
            after = body[k + 2] if k + 2 < len(body) else None
            if _movable(stmt) and after is not None and _movable(nxt) and _movable(after):
                def apply(n, tree, field=field, k=k):
                    lst = getattr(n, field)
                    lst.insert(k + 2, lst.pop(k))
                    return True
                yield Edit(i, "order", apply, f"line {stmt.lineno} after lines {nxt.lineno} and {after.lineno}",
                           f"`{_text(stmt)}` runs before `{_text(nxt)}` and `{_text(after)}`, and the right computation "
                           "runs it after them: it needs what they make (or change).", stmt.lineno)
            if isinstance(stmt, (ast.For, ast.While)) and stmt.body and _movable(stmt.body[-1]):
                last = stmt.body[-1]

                def apply(n, tree, field=field, k=k):
                    lst = getattr(n, field)
                    loop = lst[k]
                    if len(loop.body) < 2:
                        return False
                    lst.insert(k + 1, loop.body.pop())
                    return True
                yield Edit(i, "loop", apply, f"`{_text(last)}` after the loop, once",
                           "it runs in every pass of the loop; the formula takes that step once, after the loop.",
                           last.lineno)
            if isinstance(stmt, (ast.For, ast.While)) and nxt is not None and _movable(nxt):
                def apply(n, tree, field=field, k=k):
                    lst = getattr(n, field)
                    lst[k].body.append(lst.pop(k + 1))
                    return True
                yield Edit(i, "loop", apply, f"`{_text(nxt)}` inside the loop, in every pass",
                           "it runs once, after the loop; the formula takes that step in every pass.", nxt.lineno)


def _left_out(i, node, fdef):
    for field in _bodies(node):
        body = getattr(node, field)
        for k, stmt in enumerate(body):
            if _movable(stmt) and len(body) > 1:
                def apply(n, tree, field=field, k=k):
                    lst = getattr(n, field)
                    del lst[k]
                    return True
                yield Edit(i, "extra_step", apply, f"line {stmt.lineno} left out",
                           f"`{_text(stmt)}` is a step the right computation does not take (done twice, or not at all "
                           "in the formula).", stmt.lineno)


def _arrays_before(fdef, lineno):
    """The parameters and the names the function assigns on lines before `lineno`."""
    names = _parameters(fdef)
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno < lineno \
                and node.id not in names:
            names.append(node.id)
    return names


def _instead(i, node, fdef):
    if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
        return
    called = any(isinstance(c, ast.Call) and c.func is node for c in ast.walk(fdef))
    if called:
        return
    owners = {c.func.value.id for c in ast.walk(fdef) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
              and isinstance(c.func.value, ast.Name) and any(node is a for a in ast.walk(c) if a is not c.func.value)}
    for other in _arrays_before(fdef, node.lineno):
        if other == node.id or other in owners:  # outs.append(outs): a list holding itself
            continue

        def apply(n, tree, other=other):
            n.id = other
            return True
        yield Edit(i, "variable", apply, f"`{other}` in place of `{node.id}`",
                   f"it reads `{node.id}` where the formula uses the value in `{other}`.")


def _number_for_argument(i, node, fdef):
    """`1e-5` written where the argument `eps` belongs (a default of the formula, not the caller's value)."""
    if not (isinstance(node, ast.Constant) and type(node.value) in (int, float)):
        return
    if _inside_unary(fdef, node) or id(node) in _axis_values(fdef) or type(node.value) is int \
            and node.value in (0, 1, -1, 2):
        return
    for name in _parameters(fdef):
        yield _argument(i, name, f"`{name}` in place of the number `{_text(node)}`",
                        f"the number is written into the code where the argument `{name}` belongs: the caller's "
                        "value must be used (a test passes another one).")


def _argument(i, name, said, why):
    """The edit that puts the function's parameter `name` where the node is."""
    def apply(n, tree):
        parent = _parent(tree, n)
        return parent is not None and _replace_child(parent, n, ast.Name(name, ast.Load()))
    return Edit(i, "argument", apply, said, why)


def axis_argument(i, node, fdef):
    """`np.max(x, axis=-1)` in a function that takes `axis`: the caller's axis ignored. Tried before the other
    axes (edits._axis), one of which can mend the case that passes that axis and break every other."""
    names = [name for name in _parameters(fdef) if name in ("axis", "dim")]
    if not names or id(node) not in _axis_values(fdef) or _inside_unary(fdef, node) \
            or not (isinstance(node, ast.Constant) and type(node.value) is int or isinstance(node, ast.UnaryOp)
                    and _const_int(node) is not None):
        return
    yield _argument(i, names[0], f"`{names[0]}` in place of `{_text(node)}`",
                    f"the axis is written into the code where the argument `{names[0]}` belongs: the caller's axis "
                    "must be used (a test passes another one).")


# moves and exchanges first; what removes a step (which can also undo a right step that a second slip
# needs) after them, another variable, then an argument for a number, last (arithmetic.py's come after these)
STATEMENT_KINDS = [_swap_arguments, _mask_by_keyword, _stack_for_concatenate, _unpack, _statements, _unwrap, _drop_term, _left_out, _instead,
                   _number_for_argument]
