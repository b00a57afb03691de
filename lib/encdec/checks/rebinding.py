"""A copy of a function whose global names point elsewhere: the checkers run a student's function with the
reference in place of an earlier exercise it calls, and the probes with a setting in place of a constant."""

import types


def rebind(fn, **replacements):
    """A copy of function `fn` whose global names in `replacements` point elsewhere.

    Used to run a student's function with the reference in place of an earlier exercise it
    calls (charge each mistake once). Methods of a class are rebound one by one.
    """
    if isinstance(fn, type):
        methods = {name: rebind(m, **replacements) for name, m in vars(fn).items()
                   if isinstance(m, types.FunctionType)}
        return type(fn.__name__, (fn,), methods)
    if not isinstance(fn, types.FunctionType):
        return fn
    code = fn.__code__
    used, stack = set(), [code]
    while stack:  # names used by nested helper functions count too (they share these globals)
        c = stack.pop()
        used |= set(c.co_names)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    names = used & set(replacements)
    free = set(code.co_freevars) & set(replacements)
    if not names and not free:
        return fn
    env = dict(fn.__globals__)
    env.update({k: replacements[k] for k in names})
    closure = fn.__closure__
    if free:
        closure = tuple(types.CellType(replacements[name]) if name in free else cell
                        for name, cell in zip(code.co_freevars, fn.__closure__))
    new = types.FunctionType(code, env, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    return new
