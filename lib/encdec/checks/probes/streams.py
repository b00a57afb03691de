"""The repair's edits of a value carried from step to step (tried with everywhere.py's, each as one change): a
residual that adds the block's input where the stream so far belongs (`h2 = norm(x + ca)` after
`h1 = norm(x + sa)`), a flag overwritten in a loop where it accumulates (`done = nxt == eos` for
`done = done | (nxt == eos)`), a loop counted from 1 where positions count from 0 (`range(1, n + 1)`), and the
same call made on a shifted value at one place and on the unshifted one at another (`np.exp(x - m)` and
`np.exp(x)`), a `return` indented into a loop, and a cache read before the step's row is appended to it (attention over `self_k[i]` before `self_k[i] = torch.cat([self_k[i], k])`). The edits of Python's containers (containers.py) are
tried among them. Same contract as edits.py: each kind yields Edit(index, kind, apply, said, why).
"""

import ast
import copy

from .containers import CONTAINER_KINDS
from .nodes import Edit, _const_int, _int_node, _text


def _residual_sums(fdef):
    """[(statement, the Add node, the name it assigns or None)] of `h = f(x + ...)` (or `return f(x + ...)`) in the
    function body, in order, x a parameter."""
    params = {a.arg for a in fdef.args.args}
    found = []
    for stmt in fdef.body:
        named = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        if named or isinstance(stmt, ast.Return) and stmt.value is not None:
            add = next((n for n in ast.walk(stmt.value) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add)
                        and isinstance(n.left, ast.Name) and n.left.id in params), None)
            if add is not None:
                found.append((stmt, add, stmt.targets[0].id if named else None))
    return found


def _stale(found):
    """[(statement, Add node, the name the one before assigned)] of the residuals after the first that still add
    the first one's input."""
    return [(stmt, add, found[k - 1][2]) for k, (stmt, add, _) in enumerate(found)
            if k and add.left.id == found[0][1].left.id and found[k - 1][2] not in (None, add.left.id)]


def _residual_from_input(i, node, fdef):
    """`h1 = norm(x + sa)`, then `h2 = norm(x + ca)`: each later residual reads the block's input `x` where the
    stream so far (`h1`) belongs; every such residual mended as one change."""
    if node is not fdef:
        return
    stale = _stale(_residual_sums(fdef))
    if not stale:
        return

    def apply(n, tree):
        for _, add, name in _stale(_residual_sums(n)):
            add.left = ast.Name(name, ast.Load())
        return True
    said = ", ".join(f"`{new}` in place of `{add.left.id}` in `{_text(add)}`" for _, add, new in stale)
    yield Edit(i, "residual_input", apply, said,
               f"each residual adds the block's input `{stale[0][1].left.id}` where the stream so far belongs: a "
               "sublayer's output is added to what the sublayers before it left (x = norm(x + sublayer(x)), with "
               "the newest x).", stale[0][0].lineno)


def _flag_overwritten(i, node, fdef):
    """`done = nxt == eos_id` inside a loop, where `done` was set before it: each step forgets the rows that ended
    before; `done = done | (nxt == eos_id)` keeps them."""
    if not isinstance(node, (ast.For, ast.While)):
        return
    before = {t.id for s in ast.walk(fdef) if isinstance(s, ast.Assign) and s.lineno < node.lineno
              for t in s.targets if isinstance(t, ast.Name)}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.Compare) and stmt.targets[0].id in before \
                and not any(isinstance(n, ast.Name) and n.id == stmt.targets[0].id for n in ast.walk(stmt.value)):
            name, line = stmt.targets[0].id, stmt.lineno

            def apply(n, tree, line=line):
                target = next(s for s in ast.walk(n) if isinstance(s, ast.Assign) and s.lineno == line)
                target.value = ast.BinOp(ast.Name(target.targets[0].id, ast.Load()), ast.BitOr(), target.value)
                return True
            yield Edit(i, "accumulate", apply, f"`{name} = {name} | ({_text(stmt.value)})` in place of `{_text(stmt)}`",
                       f"`{name}` is set again at every pass, so it holds only this step's test and forgets what earlier "
                       f"steps found (a row that ended before counts as not done). `{name} | (...)` keeps them.", line)


def _counted_from_one(i, node, fdef):
    """`for t in range(1, n + 1)` where the positions count from 0: `range(0, n)`."""
    if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and _text(node.iter.func) == "range"
            and len(node.iter.args) == 2 and _const_int(node.iter.args[0]) == 1):
        return
    stop = node.iter.args[1]
    if not (isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Add) and _const_int(stop.right) == 1):
        return  # n steps counted 1..n; range(1, n) leaves a step out, the off-by-one edit's matter
    new_stop = stop.left

    def apply(n, tree):
        n.iter.args = [_int_node(0), copy.deepcopy(new_stop)]
        return True
    yield Edit(i, "counted_from_one", apply, f"`range(0, {_text(new_stop)})` in place of `{_text(node.iter)}`",
               f"`{_text(node.iter)}` counts from 1, and `{_text(node.target)}` is read as a position, which counts from "
               "0: the first step is position 0.")


def _shifted_elsewhere(i, node, fdef):
    """`np.exp(x - m)` at one place and `np.exp(x)` at another: the same call on the shifted value, as the formula
    has it, at each place."""
    if node is not fdef:
        return
    calls = [c for c in ast.walk(fdef) if isinstance(c, ast.Call) and len(c.args) == 1 and not c.keywords]
    for shifted in calls:
        arg = shifted.args[0]
        if not (isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Sub) and isinstance(arg.left, ast.Name)):
            continue
        bare = [c for c in calls if _text(c.func) == _text(shifted.func) and isinstance(c.args[0], ast.Name)
                and c.args[0].id == arg.left.id]
        if not bare:
            continue
        text, func = _text(arg), _text(shifted.func)

        def apply(n, tree, text=text, func=func, name=arg.left.id):
            for c in ast.walk(n):
                if isinstance(c, ast.Call) and _text(c.func) == func and len(c.args) == 1 and not c.keywords \
                        and isinstance(c.args[0], ast.Name) and c.args[0].id == name:
                    c.args[0] = ast.parse(text, mode="eval").body
            return True
        yield Edit(i, "shifted_once", apply, f"`{func}({text})` in place of `{_text(bare[0])}`",
                   f"`{func}` is taken of `{text}` at one place and of `{arg.left.id}` unshifted at another: the "
                   "formula shifts it the same at both.", bare[0].lineno)
        return


def _return_in_loop(i, node, fdef):
    """`return` as the last statement of a loop's body (indented one level too deep): the function returns after
    the first pass; the return moved after the loop."""
    if not (isinstance(node, (ast.For, ast.While)) and node.body and isinstance(node.body[-1], ast.Return)
            and len(node.body) > 1):
        return

    def apply(n, tree):
        holder = next((h for h in ast.walk(tree) for field in ("body", "orelse") if n in getattr(h, field, [])), None)
        if holder is None or not isinstance(n.body[-1], ast.Return):
            return False
        body = holder.body if n in holder.body else holder.orelse
        back = n.body.pop()
        body.insert(body.index(n) + 1, back)
        return True
    yield Edit(i, "return_in_loop", apply, f"`{_text(node.body[-1])}` after the loop, not inside it",
               f"`{_text(node.body[-1])}` is indented inside the loop, so the function returns during the first pass "
               "and the other steps never run. Return once, after the loop (one indentation level out).",
               node.body[-1].lineno)


_JOINS = ("cat", "concatenate", "stack", "hstack", "vstack", "append")


def _updated_from_itself(stmt):
    """The text of what `stmt` appends a row to (`c = torch.cat([c, new], -2)`, `c = np.concatenate([c, k])`,
    `c.append(x)`), else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Call) \
            and _text(stmt.value.func).split(".")[-1] in _JOINS and stmt.value.args:
        target, first = _text(stmt.targets[0]), stmt.value.args[0]
        parts = first.elts if isinstance(first, (ast.List, ast.Tuple)) else [first]
        if parts and _text(parts[0]) == target:
            return target
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
            and stmt.value.func.attr in ("append", "extend"):
        return _text(stmt.value.func.value)
    return None


def _read_before_update(i, node, fdef):
    """In a loop's body, a statement that reads a cache (`attend(q, self_k[i], self_v[i])`) before one of the next
    three statements appends this step's row to it: the step attends without its own row."""
    if not isinstance(node, (ast.For, ast.While)):
        return
    body = node.body
    for k, stmt in enumerate(body):
        reads = {_text(n) for n in ast.walk(stmt) if isinstance(n, (ast.Name, ast.Subscript))
                 and isinstance(n.ctx, ast.Load)}
        later = [t for t in body[k + 1:k + 4] if _updated_from_itself(t)]
        updated = [t for t in later if _updated_from_itself(t) in reads]
        if not updated or isinstance(stmt, (ast.For, ast.While, ast.If)) or _updated_from_itself(stmt) in reads \
                and _updated_from_itself(stmt) in {_updated_from_itself(t) for t in updated}:
            continue
        last = updated[-1]
        at = body.index(last)

        def apply(n, tree, k=k, at=at):
            n.body.insert(at, n.body.pop(k))
            return True
        names = " and ".join(f"`{_updated_from_itself(t)}`" for t in updated)
        yield Edit(i, "read_before_update", apply, f"line {stmt.lineno} after line {last.lineno}",
                   f"`{_text(stmt)}` reads {names} before this step's row is added to "
                   f"{'them' if len(updated) > 1 else 'it'} (line {updated[0].lineno}): the step then works without its "
                   "own row. Add the row first, then read.", stmt.lineno)


STREAM_KINDS = [_read_before_update, _return_in_loop, *CONTAINER_KINDS, _residual_from_input, _flag_overwritten,
                _counted_from_one, _shifted_elsewhere]
