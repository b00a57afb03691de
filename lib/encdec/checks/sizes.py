"""The sizes a case gives an exercise's answer, named as the course names them (B, m, n, d_k, d_v, h,
d_model, d_ff, V, ...), and the values of the arguments it must read: both declared with the exercise.

    Exercise("1.2", "scaled_dot_product_attention", points=4, reference=...,
             sizes={"Q": "... m d_k", "K": "... n d_k", "V": "... n d_v", "mask": "... m n"})

A key names a parameter of the reference (of the function, or of the method the exercise asks for),
optionally followed by attributes ("model.config.d_model"), or "self.n_heads" for the object whose
method it is. A value names the axes of an array, right-aligned: "..." for any leading batch axes
(named B, B2, ... from the right), "_" for an axis not named; an axis of size 1 broadcasts and names
nothing. For a number, the value is the name of the size it is. What the check builds for a case
and does not pass to the answer (the heads of a layer it makes) the case gives itself (Case.given).

Two rules use them (tests/test_visible_cases.py): in every visible case the named sizes are pairwise
distinct, so that an axis or size confused for another fails a visible case; and every size and every
value in `reads` takes at least two values across the visible cases, so that no constant written in
place of reading it passes them all.
"""

import inspect

import numpy as np


def _lookup(path, bound, owner):
    """The value at `path` ("model.config.d_model", "self.n_heads") in a case's bound arguments."""
    head, *attrs = path.split(".")
    if head == "self" and owner is not None:
        value = owner
    elif head in bound:
        value = bound[head]
    else:
        return None
    for attr in attrs:
        value = getattr(value, attr, None)
        if value is None:
            return None
    return value


def bind(reference, case):
    """{parameter: value} of a case's arguments, as the reference (function or object) receives them,
    and the object a method exercise belongs to (None for a function)."""
    if inspect.isfunction(reference) or inspect.ismethod(reference) or inspect.isbuiltin(reference):
        fn, owner = reference, getattr(reference, "__self__", None)
    else:
        fn, owner = reference.__call__, reference
    signature = inspect.signature(fn)
    try:
        arguments = signature.bind(*case.args, **case.kwargs)
    except TypeError:
        return {}, owner
    arguments.apply_defaults()
    bound = dict(arguments.arguments)
    for name, parameter in signature.parameters.items():  # **kwargs: each keyword by its own name
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            bound.update(bound.pop(name, {}))
    return bound, owner


def case_sizes(spec, reference, case):
    """{size name: value} that one case gives, per the `sizes` declaration `spec`. A ValueError says
    where the declaration and the case disagree (a size bound to two values)."""
    bound, owner = bind(reference, case)
    sizes, ones = {}, set()

    def put(name, value):
        if name == "_":
            return
        if value == 1:
            ones.add(name)
            return
        if sizes.setdefault(name, value) != value:
            raise ValueError(f"case {case.label!r}: {name} is {sizes[name]} and {value}")

    for name, value in getattr(case, "given", {}).items():
        put(name, value)
    for path, axes in spec.items():
        value = _lookup(path, bound, owner)
        if value is None:
            continue
        names = axes.split()
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            put(names[0], int(value))
            continue
        shape = np.shape(value)
        batch = names[0] == "..."
        fixed = names[1:] if batch else names
        if (len(shape) < len(fixed)) if batch else (len(shape) != len(fixed)):
            raise ValueError(f"case {case.label!r}: {path} has shape {shape}, declared {axes!r}")
        for name, size in zip(reversed(fixed), reversed(shape)):
            put(name, int(size))
        if batch:
            leading = shape[:len(shape) - len(fixed)]
            for k, size in enumerate(reversed(leading)):
                put("B" if k == 0 else f"B{k + 1}", int(size))
    for name in ones - set(sizes):
        sizes[name] = 1
    return sizes


def read_values(reads, reference, case):
    """{path: value} of the `reads` declaration's paths in one case; None where the case leaves it out (the
    answer's default then applies, which counts as one more value)."""
    bound, owner = bind(reference, case)
    return {path: _lookup(path, bound, owner) for path in reads}


def collisions(sizes, alike=()):
    """The pairs of different size names that have the same value, except the pairs in `alike`."""
    allowed = {frozenset(pair) for pair in alike}
    names = sorted(sizes)
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
            if sizes[a] == sizes[b] and frozenset((a, b)) not in allowed]
