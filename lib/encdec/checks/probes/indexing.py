"""Errors of an index written for one sequence, read from the student's failing line (failed_lines.py asks): an
index with more axes than the array has (a batch axis taken for granted, `targets[:, :-1]` of one sequence), a
boolean array of a batch used to index one (m, m) array (`mask[:, tgt_in == pad_id]`), and a gather whose first
index walks one axis (`logp[np.arange(m), targets]` on a batch). Each names the array, its shape and the usual
cause, in the student's names.
"""

import ast

import numpy as np

from .base import Probe
from .failing import _failed
from .shapes import _resolve


def _indexed(subscript):
    """How many axes an index takes (None and ... take none)."""
    elts = subscript.slice.elts if isinstance(subscript.slice, ast.Tuple) else [subscript.slice]
    return sum(1 for e in elts if not (isinstance(e, ast.Constant) and e.value in (None, Ellipsis)))


def _boolean_index(subscript, frame):
    """(its text, the array) of a boolean array of more than one axis among the subscript's indices, else None."""
    elts = subscript.slice.elts if isinstance(subscript.slice, ast.Tuple) else [subscript.slice]
    for e in elts:
        value = _resolve(e, frame) if isinstance(e, (ast.Name, ast.Attribute)) else _evaluated(e, frame)
        if isinstance(value, np.ndarray) and value.dtype == bool and value.ndim > 1:
            return ast.unparse(e), value
    return None


def _evaluated(node, frame):
    """A comparison of the frame's names (`tgt_in == pad_id`) evaluated again, else None."""
    if not isinstance(node, ast.Compare) or not all(isinstance(n, (ast.Name, ast.Attribute, ast.Constant, ast.Load,
                                                                     ast.cmpop)) or n is node for n in ast.walk(node)):
        return None  # only names and numbers compared: nothing of the answer's runs
    try:
        return eval(compile(ast.Expression(node), "<index>", "eval"), {"np": np}, dict(frame.f_locals))
    except Exception:
        return None


class TooManyIndices(Probe):
    """`targets[:, :-1]` on one sequence (m,): the index takes a batch axis the input does not have."""

    kind = "indexing"

    def find(self, attempt, probes):
        found = _failed(attempt, IndexError, "too many indices")
        if found is None:
            return None
        frame, line, tree = found
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript):
                a = _resolve(node.value, frame)
                boolean = _boolean_index(node, frame)
                if a is not None and boolean is not None and _indexed(node) - 1 + boolean[1].ndim > a.ndim:
                    expr, mask = boolean
                    return self.finding(attempt, "boolean_index", (
                        f"`{ast.unparse(node)}` indexes `{ast.unparse(node.value)}` {a.shape} with the boolean array "
                        f"`{expr}`, which has shape {mask.shape}: a boolean index takes as many axes as it has, here "
                        f"one for each axis of the batch too, and `{ast.unparse(node.value)}` has none of those. Build "
                        "the result by broadcasting instead of by indexing: np.where(condition[..., None, :], value, "
                        "array), or add an additive mask made from the condition."))
                if a is not None and _indexed(node) > a.ndim and _from_the_end(node) \
                        and _is_argument(node.value, frame):
                    name = ast.unparse(node.value)
                    return self.finding(attempt, "axis_it_lacks", (
                        f"`{ast.unparse(node)}` takes {_indexed(node)} axes from the end of `{name}`, but `{name}` "
                        f"came with shape {a.shape}: {a.ndim} axis{'es' if a.ndim != 1 else ''}. The index counts on "
                        f"a shape of `{name}` that the docstring does not promise (an axis of size 1 to drop, say). "
                        f"`{name}` is an argument: where the docstring says it broadcasts, use it as it is given "
                        f"(`+ {name}`), and let broadcasting line up its axes from the right."))
                if a is not None and _indexed(node) > a.ndim:
                    name = ast.unparse(node.value)
                    return self.finding(attempt, "too_many_indices", (
                        f"`{ast.unparse(node)}` indexes {_indexed(node)} axes, but `{name}` has shape {a.shape}: "
                        f"{a.ndim} axis{'es' if a.ndim != 1 else ''}, without the leading (batch) axis the line counts "
                        "on. Inputs come with any number of leading axes (the docstring's `...`): index from the end, "
                        "with `...` for whatever leads (`x[..., :-1]`), and give axes as negative numbers."))
        return None


def _from_the_end(node):
    """True where a subscript's first index is `...`: it counts its axes from the end."""
    first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
    return isinstance(first, ast.Constant) and first.value is Ellipsis


def _is_argument(node, frame):
    """True where `node` is a name of one of the frame's function's parameters."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    return isinstance(node, ast.Name) and node.id in code.co_varnames[:count]


def _counts_up(node, frame):
    """`np.arange(m)` (or `range(m)`), or a name that holds 0, 1, ..., k - 1: an index that walks one axis."""
    if isinstance(node, ast.Call):
        return ast.unparse(node.func).split(".")[-1] in ("arange", "range")
    value = _resolve(node, frame) if isinstance(node, ast.Name) else None
    return value is not None and value.ndim == 1 and value.dtype.kind in "iu" \
        and bool(np.array_equal(value, np.arange(value.size)))


class GatherForOneSequence(Probe):
    """`logp[np.arange(m), targets]` on a batch (B, m, V): the index arrays take the first axes, the batch and the
    positions, where one sequence's (m, V) has positions and the vocabulary."""

    kind = "indexing"

    def find(self, attempt, probes):
        found = _failed(attempt, IndexError, "out of bounds")
        if found is None:
            return None
        frame, line, tree = found
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and node.slice.elts
                    and _counts_up(node.slice.elts[0], frame)):
                continue
            a = _resolve(node.value, frame)
            if a is None or a.ndim <= len(node.slice.elts):
                continue
            name, picked = ast.unparse(node.value), ast.unparse(node.slice.elts[-1])
            return self.finding(attempt, "gather_for_one_sequence", (
                f"`{ast.unparse(node)}` is a gather written for one sequence: its index arrays take the first "
                f"{len(node.slice.elts)} axes of `{name}`, which has shape {a.shape} here, so `{ast.unparse(node.slice.elts[0])}` "
                f"runs along the batch. Pick along the last axis whatever axes lead: "
                f"`np.take_along_axis({name}, {picked}[..., None], axis=-1)[..., 0]` (and, to change those entries, "
                f"`np.put_along_axis`, or subtract a one-hot array)."))
        return None


INDEXING_PROBES = [TooManyIndices(), GatherForOneSequence()]
