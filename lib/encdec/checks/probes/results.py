"""What the answer's returned value itself says, before any probe computes a variant: the right results in
another order, the right numbers in another shape or with their axes in another order, an integer array
where the answer has fractions, the right array reduced over one axis (its argmax, mean, sum or max), the
largest float where the right result has an infinity (np.nan_to_num), and whole columns (or rows) left at 0,
never written (a loop over range(d // 2) pairs with d odd).
Each reads only the answer's output and the reference's on the failing case, so each is exact: it names the
slip only when the numbers say so. Always on, first in the judging order (judging.py).
"""

import ast
import itertools

import numpy as np

from .base import Probe


def _array(value):
    try:
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        arr = np.asarray(value)
    except Exception:
        return None
    return arr if arr.dtype != object else None


def _close(a, b, float32):
    if a is None or b is None or a.shape != b.shape:
        return False
    if np.issubdtype(b.dtype, np.integer) or b.dtype == bool:
        return bool(np.array_equal(a, b))
    rtol, atol = (2e-4, 1e-5) if float32 else (1e-6, 1e-9)
    with np.errstate(all="ignore"):
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))


def _pairs(attempt):
    """[(label, the answer's item, the reference's item)] of the output as arrays (one pair for a single array;
    None for an item that is not an array)."""
    got, expected = attempt.got, attempt.expected
    if isinstance(expected, tuple) and isinstance(got, (tuple, list)) and len(got) == len(expected):
        names = attempt.names or tuple(f"item {i}" for i in range(len(expected)))
        return [(names[i], _array(got[i]), _array(expected[i])) for i in range(len(expected))]
    return [("your result", _array(got), _array(expected))]


class Reordered(Probe):
    """(dQ, dV, dK) returned where the docstring says (dQ, dK, dV): every item right, in another order."""

    kind = "result"

    def find(self, attempt, probes):
        got, expected = attempt.got, attempt.expected
        if attempt.error is not None or not isinstance(expected, tuple) or not isinstance(got, (tuple, list)) \
                or len(got) != len(expected) or len(expected) > 6:
            return None
        g = [_array(x) for x in got]
        e = [_array(x) for x in expected]
        if all(_close(g[i], e[i], attempt.float32) for i in range(len(e))):
            return None  # right as it is
        for order in itertools.permutations(range(len(e))):
            moved = [i for i in range(len(e)) if order[i] != i]
            if not moved or any(_close(e[i], e[order[i]], attempt.float32) for i in moved):
                continue  # two items alike on this case: their order cannot be told
            if all(_close(g[i], e[order[i]], attempt.float32) for i in range(len(e))):
                names = attempt.names or tuple(f"item {i}" for i in range(len(expected)))
                returned = ", ".join(names[k] for k in order)
                return self.finding(attempt, "reordered", (
                    f"every result is right, in another order: your function returns ({returned}); the docstring's "
                    f"order is ({', '.join(names)}). Return them in that order."))
        return None


class Reshaped(Probe):
    """A gradient returned flat (12,) where x is (3, 4): the right numbers, laid out in another shape."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        for label, g, e in _pairs(attempt):
            if g is None or e is None or g.shape == e.shape or g.size != e.size or e.size < 2:
                continue
            if [n for n in g.shape if n != 1] == [n for n in e.shape if n != 1]:
                continue  # only axes of size 1 in other places (a mask's None axes): the shape explains it
            if _close(g.reshape(e.shape), e, attempt.float32):
                how = "flat, in one axis" if g.ndim == 1 else f"in the shape {g.shape}"
                merged = _leading_minus_one(attempt) if g.ndim != e.ndim else None
                if merged is not None:
                    return self.finding(attempt, "leading_axes_merged", (
                        f"`{ast.unparse(merged)}` (line {merged.lineno}) puts every leading axis into one (the -1), so "
                        f"{label} has the shape {g.shape} where the answer has {e.shape}: right only where exactly one "
                        "batch axis comes. Keep the leading axes as they are: add the new axes with None "
                        "(`x[..., None, None, :]`), or reshape to `x.shape[:-1] + (...)`."))
                return self.finding(attempt, "reshaped", (
                    f"{label} holds the right numbers, in the right order, but {how} where the answer has the shape "
                    f"{e.shape}: the result was made (np.zeros(x.size), a ravel, a reshape) in another shape and not "
                    f"given the input's shape back. Return it reshaped to {e.shape} (`.reshape(x.shape)`), or make "
                    "it in that shape from the start (np.zeros_like(x))."))
        return None


def _leading_minus_one(attempt):
    """The answer's first `.reshape(-1, ...)` with more than one size (a reshape that merges the leading axes), or
    None."""
    from .repair import answer_function
    fdef = answer_function(attempt.student) if attempt.student is not None else None
    for node in ast.walk(fdef) if fdef is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reshape" \
                and len(node.args) > 1 and ast.unparse(node.args[0]) == "-1":
            return node
    return None


class Permuted(Probe):
    """Decoded ids stacked step by step along dim 0, (L, B) where (B, L) belongs: the right numbers with their
    axes in another order."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        for label, g, e in _pairs(attempt):
            if g is None or e is None or g.shape == e.shape or g.ndim != e.ndim or not 2 <= g.ndim <= 4 \
                    or sorted(g.shape) != sorted(e.shape):
                continue
            if [n for n in g.shape if n != 1] == [n for n in e.shape if n != 1]:
                continue  # only axes of size 1 in other places (a mask's None axes): the shape explains it
            for order in itertools.permutations(range(g.ndim)):
                if tuple(g.shape[k] for k in order) == e.shape and _close(np.transpose(g, order), e, attempt.float32):
                    return self.finding(attempt, "permuted", (
                        f"{label} holds the right numbers with its axes in another order: shape {g.shape} where "
                        f"the answer has {e.shape}. A stack along another axis (np.stack or torch.stack of the "
                        "steps puts the steps first, axis 0) or a transpose too many or too few does that: build it "
                        "along the right axis (axis=-1 / dim=-1 for one column per step), or move the axes back."),
                        weak=True)  # what is off, not where: the repair, which quotes the line, first
        return None


class Truncated(Probe):
    """np.zeros((n, d), dtype=int) filled with sines: an integer array where the answer has fractions."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        for label, g, e in _pairs(attempt):
            if g is None or e is None or g.shape != e.shape or not np.issubdtype(e.dtype, np.floating) \
                    or not (np.issubdtype(g.dtype, np.integer) or g.dtype == bool):
                continue
            with np.errstate(all="ignore"):
                fractional = np.isfinite(e) & (e != np.round(e))
            if not fractional.any():
                continue
            how = next((name for name, f in (("toward zero", np.trunc), ("down", np.floor), ("to the nearest whole "
                        "number", np.round)) if np.array_equal(g, f(e).astype(g.dtype))), None)
            said = (f"each number of the answer rounded {how}: exactly what an integer array does to the numbers "
                    "written into it" if how else "an integer array cannot hold the answer's fractions")
            return self.finding(attempt, "integer", (
                f"{label} is an integer array ({g.dtype}) where the answer has fractions; its values are {said}. "
                "The array it was built in has an integer dtype: np.zeros(..., dtype=int), np.zeros_like or "
                "np.empty_like of an integer array (token ids, positions from np.arange), or int() around a value. "
                "Make it a float array (dtype=float, or np.zeros_like(x, dtype=float))."))
        return None


_REDUCTIONS = (("argmax", np.argmax, "the index of its largest entry"), ("mean", np.mean, "its mean"),
               ("sum", np.sum, "its sum"), ("max", np.max, "its largest entry"))


class Reduced(Probe):
    """Token ids where the logits belong (their argmax), or attention weights averaged over the heads: the right
    array reduced over one of its axes, a step the exercise does not take. Weak (judging.py): it says what the
    result is, not where it was made, so an edit the repair finds has the first word."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        for label, g, e in _pairs(attempt):
            if g is None or e is None or e.ndim < 2 or g.ndim != e.ndim - 1:
                continue
            for axis in range(-1, -e.ndim - 1, -1):
                if e.shape[:axis % e.ndim] + e.shape[axis % e.ndim + 1:] != g.shape or e.shape[axis] < 2:
                    continue
                for name, reduce, what in _REDUCTIONS:
                    with np.errstate(all="ignore"):
                        value = reduce(e, axis=axis)
                    if _close(g.astype(value.dtype) if name != "argmax" else g, value, attempt.float32):
                        return self.finding(attempt, f"reduced:{name}", (
                            f"{label} is the right array reduced over its axis {axis} (of size {e.shape[axis]}): "
                            f"at each place, {what} along that axis, shape {g.shape} where the answer is the array "
                            f"itself, {e.shape}. The `{name}` over that axis is a step the exercise does not take "
                            "here: return the array before it (the docstring gives the shape)."), weak=True)
        return None


class LargestFloat(Probe):
    """±1.797e308 (the largest float) where the right result has ±inf: np.nan_to_num, which replaces the
    infinities too unless told otherwise, or a clip to the float range."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        for label, mine, right in _pairs(attempt):
            if mine is None or right is None or mine.shape != right.shape or not np.issubdtype(mine.dtype, np.floating):
                continue
            big = np.finfo(mine.dtype).max
            swapped = np.isinf(right) & (np.abs(mine) == big) & (np.sign(mine) == np.sign(right))
            if swapped.any() and np.array_equal(np.where(swapped, right, mine), right, equal_nan=True):
                return self.finding(attempt, "largest_float", (
                    f"{label} holds {float(mine[swapped][0]):.4g}, the float of largest size, wherever the right one has "
                    f"{float(right[swapped][0]):g}: something turned the infinities into finite numbers. np.nan_to_num "
                    "does that to ±inf as well as to nan unless it is given posinf=np.inf and neginf=-np.inf; make "
                    "only the entries you mean with np.where."))
        return None


class Unwritten(Probe):
    """Every entry right but whole columns (or rows) that are exactly 0 where the answer's are not: the array was
    made with zeros and nothing wrote them."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        for label, g, e in _pairs(attempt):
            if g is None or e is None or g.shape != e.shape or g.ndim < 2 or not np.issubdtype(e.dtype, np.floating):
                continue
            with np.errstate(all="ignore"):
                wrong = ~np.isclose(g.astype(np.float64), e, rtol=1e-6, atol=1e-9)
            if not wrong.any() or np.any(g[wrong] != 0) or not np.all(np.isfinite(e[wrong])) \
                    or not np.any(~wrong & (g != 0)):  # an output of zeros only: nothing says which were written
                continue
            for axis, word in ((-1, "column"), (-2, "row")):
                lines = np.flatnonzero(np.moveaxis(wrong, axis, -1).reshape(-1, g.shape[axis]).any(axis=0))
                taken = np.take(g, lines, axis=axis)
                if np.any(taken != 0) or len(lines) * (g.size // g.shape[axis]) > 2 * wrong.sum() \
                        or len(lines) == g.shape[axis]:
                    continue  # not whole lines of zeros (or mostly right there, or every line)
                size = g.shape[axis]
                shown = ", ".join(str(int(k)) for k in lines[:4]) + (", ..." if len(lines) > 4 else "")
                said = (f"{label}'s {word}{'s' if len(lines) > 1 else ''} {shown} (of {size}, along axis {axis}) "
                        f"hold{'' if len(lines) > 1 else 's'} 0 where the answer has numbers, and every other entry "
                        "is right: nothing writes "
                        f"{'them' if len(lines) > 1 else 'it'}, so it keeps the 0 the array was made with.")
                if size % 2 == 1 and size > 2 and list(lines) == [size - 1]:
                    said += (f" With {size} odd, a loop over the pairs, range({size} // 2), stops at {word}s "
                             f"{size - 3} and {size - 2}; {word} {size - 1} has no partner and needs a step of its own.")
                return self.finding(attempt, "unwritten", said)
        return None


RESULT_PROBES = [Reordered(), Reshaped(), Permuted(), Truncated(), Reduced(), LargestFloat(), Unwritten()]
