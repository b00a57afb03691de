"""The repair's edits of Python's containers, where the numbers are right and the container is not (tried with
streams.py's, each as one change): a list made outside the function that each call appends to, a generator (or
`model.parameters()`, `zip(...)`) read twice, one list with two names (`outs = ws = []`), rows that are one list
(`[[0.0] * n] * n`), and one array appended at every step of a loop that writes into it in place (`token[:] = ...`
then `out.append(token)`). Same contract as edits.py: each kind yields Edit(index, kind, apply, said, why).
"""

import ast
import copy

from .nodes import Edit, _text


def _outer_lists(fdef):
    """The names the function appends to (`.append`, `.extend`) that it neither assigns nor takes: lists made
    outside it, which keep what earlier calls put in them."""
    args = fdef.args
    own = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    own |= {t.id for n in ast.walk(fdef) if isinstance(n, (ast.Assign, ast.For, ast.With, ast.comprehension))
            for t in ast.walk(n.targets[0] if isinstance(n, ast.Assign) else n.target if not isinstance(n, ast.With)
                              else n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    return sorted({c.func.value.id for c in ast.walk(fdef) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                   and c.func.attr in ("append", "extend") and isinstance(c.func.value, ast.Name)
                   and c.func.value.id not in own})


def _state_between_calls(i, node, fdef):
    """Lists made outside the function and appended to in it: each made afresh at the start of the call."""
    if node is not fdef:
        return
    names = _outer_lists(fdef)
    if not names:
        return

    def apply(n, tree):
        n.body[:0] = [ast.Assign([ast.Name(name, ast.Store())], ast.List([], ast.Load()), lineno=n.body[0].lineno)
                      for name in names]
        return True
    listed = " and ".join(f"`{name}`" for name in names)
    yield Edit(i, "outer_state", apply, f"{listed} made inside the function (`{names[0]} = []` first)",
               f"{listed} {'are lists' if len(names) > 1 else 'is a list'} made outside the function, so each call "
               "appends to what earlier calls left in it, and only the first call starts empty.",
               min(c.lineno for c in ast.walk(fdef) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                   and isinstance(c.func.value, ast.Name) and c.func.value.id in names))


def _generator_read_twice(i, node, fdef):
    """`steps = (f(t) for t in ...)` then two passes over `steps`: a generator is used up by the first pass, and the
    second finds nothing; a list keeps its items for both."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and (isinstance(node.value, ast.GeneratorExp) or _one_pass_call(node.value))):
        return
    name = node.targets[0].id
    passes = sorted([n.iter.lineno for n in ast.walk(fdef) if isinstance(n, (ast.For, ast.comprehension))
                     and isinstance(n.iter, ast.Name) and n.iter.id == name]
                    + [a.lineno for n in ast.walk(fdef) if isinstance(n, ast.Call)  # a call reads it through too
                       for a in n.args if isinstance(a, ast.Name) and a.id == name])
    if len(passes) < 2:
        return
    if isinstance(node.value, ast.GeneratorExp):
        def apply(n, tree):
            n.value = ast.ListComp(n.value.elt, n.value.generators)
            return True
        yield Edit(i, "generator", apply, f"a list, `[...]`, in place of the generator `(...)` in `{name} = ...`",
                   f"`{name}` is a generator: the first pass over it uses it up, and the second finds nothing. A "
                   "list keeps its items for every pass.")
        return

    def wrap(n, tree):
        n.value = ast.Call(ast.Name("list", ast.Load()), [n.value], [])
        return True
    call = _text(node.value)
    yield Edit(i, "generator", wrap, f"`{name} = list({call})` in place of `{name} = {call}`",
               f"`{call}` returns a generator (an iterator), not a list: the first pass over `{name}` (line "
               f"{passes[0]}) uses it up, and the second (line {passes[1]}) finds nothing. "
               "list(...) keeps the items for every pass.")


_ITERATOR_METHODS = {"parameters", "named_parameters", "children", "named_children", "modules", "named_modules",
                     "buffers"}


_ITERATOR_FUNCTIONS = {"map", "filter", "zip", "iter", "reversed"}


def _one_pass_call(node):
    """`model.parameters()`, `map(f, xs)`, `zip(a, b)`...: a call that returns an iterator, good for one pass."""
    return isinstance(node, ast.Call) and (
        isinstance(node.func, ast.Attribute) and node.func.attr in _ITERATOR_METHODS
        or isinstance(node.func, ast.Name) and node.func.id in _ITERATOR_FUNCTIONS)


def _one_list_two_names(i, node, fdef):
    """`outs = ws = []`: one list with two names, so what is appended to either lands in both; a list each."""
    if not (isinstance(node, ast.Assign) and len(node.targets) > 1
            and all(isinstance(t, ast.Name) for t in node.targets)
            and (isinstance(node.value, (ast.List, ast.Dict, ast.Set)) or isinstance(node.value, ast.Call)
                 and _text(node.value.func) in ("list", "dict", "set"))):
        return
    names = [t.id for t in node.targets]

    def apply(n, tree):
        holder = next((h for h in ast.walk(tree) for field in ("body", "orelse") if n in getattr(h, field, [])), None)
        if holder is None:
            return False
        body = holder.body if n in holder.body else holder.orelse
        k = body.index(n)
        body[k:k + 1] = [ast.Assign([ast.Name(name, ast.Store())], copy.deepcopy(n.value), lineno=n.lineno)
                         for name in names]
        return True
    listed = " and ".join(f"`{name}`" for name in names)
    yield Edit(i, "one_object", apply, f"a new `{_text(node.value)}` for each of {listed}",
               f"`{_text(node)}` makes one object with two names: what is added through either lands in both. Make "
               "one for each name.")


def _rows_one_list(i, node, fdef):
    """`[[0.0] * n] * m`: one row list repeated, so every row is the same list; rows made anew, one per pass."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.left, ast.List)
            and len(node.left.elts) == 1 and isinstance(node.left.elts[0], (ast.List, ast.BinOp, ast.ListComp))):
        return

    def apply(n, tree):
        rows = ast.ListComp(n.left.elts[0], [ast.comprehension(ast.Name("_", ast.Store()),
                                                               ast.Call(ast.Name("range", ast.Load()), [n.right], []),
                                                               [], 0)])
        holder = next((h for h in ast.walk(tree) for _, v in ast.iter_fields(h)
                       if v is n or isinstance(v, list) and any(x is n for x in v)), None)
        if holder is None:
            return False
        for field, value in ast.iter_fields(holder):
            if value is n:
                setattr(holder, field, rows)
                return True
            if isinstance(value, list) and any(x is n for x in value):
                value[[k for k, x in enumerate(value) if x is n][0]] = rows
                return True
        return False
    row = _text(node.left.elts[0])
    yield Edit(i, "one_object", apply, f"`[{row} for _ in range({_text(node.right)})]` in place of `{_text(node)}`",
               f"`{_text(node)}` repeats one list: every row is the same object, so writing one entry of a row writes "
               "it in every row. Make each row anew, in a comprehension.")



def _one_array_appended(i, node, fdef):
    """`out.append(token)` in a loop that writes into `token` in place (`token[:] = ...`, `token += ...`): the list
    holds one array many times, and at the end each entry shows the last step's values; a copy each step."""
    if not isinstance(node, (ast.For, ast.While)):
        return
    targets = [t for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Subscript)]
    targets += [n.target for n in ast.walk(node) if isinstance(n, ast.AugAssign)]
    written = {_base_name(t) for t in targets}
    rebound = {t.id for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for call in ast.walk(node):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
                and len(call.args) == 1 and isinstance(call.args[0], ast.Name)):
            continue
        name = call.args[0].id
        if name not in written or name in rebound:
            continue

        def apply(n, tree, name=name):
            for c in ast.walk(n):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "append" \
                        and len(c.args) == 1 and isinstance(c.args[0], ast.Name) and c.args[0].id == name:
                    c.args[0] = ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "copy", ast.Load()), [], [])
                    return True
            return False
        yield Edit(i, "one_array_appended", apply, f"`{_text(call.func)}({name}.copy())` in place of `{_text(call)}`",
                   f"`{_text(call)}` (line {call.lineno}) puts the array `{name}` itself in the list, not its values, "
                   f"and the loop writes into that same array in place at every step: the list holds one array many "
                   f"times, and at the end each entry shows the last step's values. Append a copy "
                   f"(`{name}.copy()`), or make a new array each step (`{name} = ...`, not `{name}[:] = ...`).",
                   call.lineno)
        return


def _base_name(target):
    """`token` of `token[:]`, `token[0, 1]` or `token`, else None."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


CONTAINER_KINDS = [_one_list_two_names, _rows_one_list, _generator_read_twice, _state_between_calls,
                   _one_array_appended]
