"""A default argument that keeps what earlier calls put in it: `def _collect(..., outs=[])`, in the answer or in a
function of the student's own that it calls. Python makes a default once, when the `def` runs, so every call that
leaves the argument out appends to the same list: the first call is right, and later ones see what earlier calls
left. Read from the source (a default that is a list, a dict or a set), then confirmed: with a fresh default
for every call, the answer gives the right result on the failing case. Always on, before the repair (judging.py).
"""

import contextlib
import types

from .base import Probe
from .repair import _target
from .tracer import student_code

_MUTABLE = (list, dict, set)
_EMPTY = {list: "[]", dict: "{}", set: "set()"}


def _own_functions(fn):
    """The answer's function and the functions of the student's own that it names (its globals), once each."""
    found = [fn]
    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value not in found and student_code(value.__code__.co_filename):
            found.append(value)
    return found


def _mutable_defaults(fn):
    """The names of `fn`'s parameters whose default is a list, a dict or a set."""
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    defaults = fn.__defaults__ or ()
    return [name for name, value in zip(names[len(names) - len(defaults):], defaults) if isinstance(value, _MUTABLE)]


@contextlib.contextmanager
def _fresh_defaults(fn):
    """`fn` with each of its mutable defaults made anew for every call (its code unchanged)."""
    saved = fn.__defaults__
    kinds = [type(d) if isinstance(d, _MUTABLE) else None for d in saved]
    code, outer = fn.__code__, fn

    def fresh(*args, **kwargs):
        outer.__defaults__ = tuple(k() if k else d for k, d in zip(kinds, saved))
        try:
            return types.FunctionType(code, outer.__globals__, outer.__name__, outer.__defaults__,
                                      outer.__closure__)(*args, **kwargs)
        finally:
            outer.__defaults__ = saved
    holder, name = fn.__globals__, fn.__name__
    before = holder.get(name)
    if before is fn:
        holder[name] = fresh
    try:
        yield
    finally:
        if before is fn:
            holder[name] = fn
        fn.__defaults__ = saved


class MutableDefault(Probe):
    """probe:mutable_default:<parameter>: a list (dict, set) default that earlier calls fill."""

    kind = "mutable_default"

    def find(self, attempt, probes):
        fn, _ = _target(attempt.student) if attempt.student is not None else (None, None)
        if fn is None or attempt.right():
            return None
        for own in _own_functions(fn):
            names = _mutable_defaults(own)
            if not names or own is fn:
                continue  # the answer's own defaults are made fresh by nothing here: only a helper's
            with _fresh_defaults(own):
                outcome = attempt.rerun(attempt.args(), attempt.kwargs())
            if outcome.error is None and attempt.is_expected(outcome.value):
                shown = ", ".join(f"`{n}={_EMPTY[type(d)]}`" for n, d in zip(
                    names, [d for d in own.__defaults__ if isinstance(d, _MUTABLE)]))
                return self.finding(attempt, names[0], (
                    f"`{own.__name__}` has the default {shown}: Python makes a default once, when the `def` runs, so "
                    f"every call that leaves `{names[0]}` out adds to the same object, and a later call sees what "
                    f"earlier calls left in it (the first call is right). Default to None and make a new one inside: "
                    f"`{names[0]}=None`, then `if {names[0]} is None: {names[0]} = []`."))
        return None


DEFAULT_PROBES = [MutableDefault()]
