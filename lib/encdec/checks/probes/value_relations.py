"""How an answer's value relates to a value of the right computation, for the tracer's report (divergence.py):
the same numbers (equal, transposed, reshaped, broadcast, reciprocal, one pass of a loop), and where they differ,
how (a constant factor, a missing term or one too many, an axis split the other way round, the entries that
differ); and the right value nearest to a wrong one.
"""

import itertools

import numpy as np

# how difference() starts where it says how the value is wrong, not only that it is
EXPLAINED = ("it is the right value times", "it lacks a term", "it has a term too many",
             "it holds the right numbers, split the other way")


def _close(a, b):
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True)


def relation(mine, right):
    """How `mine` holds the same numbers as `right`: "equal", "transposed", "reshaped", "broadcast",
    "reciprocal" (1 / the right value: a product where the formula divides), "sliced" (the right value at some
    positions of one axis: one pass of a loop), or None."""
    if _close(mine, right):
        return "equal"
    if mine.shape == right.shape and np.all(np.isfinite(mine)) and np.all(mine != 0) and np.all(np.isfinite(right)):
        with np.errstate(all="ignore"):
            if _close(1.0 / mine, right):
                return "reciprocal"
    if mine.size == right.size:
        if mine.ndim == right.ndim and mine.ndim <= 5 and sorted(mine.shape) == sorted(right.shape):
            for axes in itertools.permutations(range(mine.ndim)):
                if axes != tuple(range(mine.ndim)) and _close(np.transpose(right, axes), mine):
                    return "transposed"
        if _close(mine.reshape(-1), right.reshape(-1)):
            return "reshaped"
    for small, big in ((right, mine), (mine, right)):
        try:
            if small.size < big.size and _close(np.broadcast_to(small, big.shape), big):
                return "broadcast"
        except ValueError:
            pass
    return SLICE if _slice_of(mine, right) else None


SLICE = "sliced"  # one step of a loop: the numbers of some positions of the right value


def _slice_of(mine, right):
    """True when `mine` is the right value at some consecutive positions along one axis (`right[..., t:t+k, :]`)
    or at one position, the axis dropped (`right[..., t, :]`): what one pass of a loop over that axis makes."""
    if not 0 < mine.size < right.size or right.size > 200_000 or mine.ndim not in (right.ndim, right.ndim - 1):
        return False
    for k in range(right.ndim):
        if mine.ndim == right.ndim:
            if mine.shape[:k] + mine.shape[k + 1:] != right.shape[:k] + right.shape[k + 1:] \
                    or mine.shape[k] >= right.shape[k]:
                continue
            n = mine.shape[k]
            if any(_close(np.take(right, range(t, t + n), axis=k), mine) for t in range(right.shape[k] - n + 1)):
                return True
        elif right.shape[:k] + right.shape[k + 1:] == mine.shape:
            if any(_close(np.take(right, t, axis=k), mine) for t in range(right.shape[k])):
                return True
    return False


_NAMED_FACTORS = [(-1.0, "-1 (a sign)"), (2.0, "2"), (0.5, "1/2")]


def difference(mine, right, pool):
    """In words, how `mine` differs from `right` (same shape): a constant factor, a sign, a missing term
    (another reference value), another axis's reduction, or the entries that differ."""
    a, b = mine.reshape(-1), right.reshape(-1)
    if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.dot(b, b) > 0:
        c = float(np.dot(a, b) / np.dot(b, b))
        if np.allclose(a, c * b, rtol=1e-5, atol=1e-8) and not np.isclose(c, 1.0):
            named = next((text for value, text in _NAMED_FACTORS if np.isclose(c, value)), None)
            return f"it is the right value times a constant factor, {c:.5g}" + (f" = {named}" if named else "")
        for term in pool:
            t = term.array
            if t is right or not term.name.isidentifier() or t.size > right.size:
                continue
            try:
                t = np.broadcast_to(t, right.shape)
            except ValueError:
                continue
            if _close(mine + t, right):
                return f"it lacks a term: adding `{term.name}` would give the right value"
            if _close(mine - t, right):
                return f"it has a term too many: it is the right value plus `{term.name}`"
    split = _split_other_way(mine, right)
    if split:
        return split
    bad = ~np.isclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True)
    if bad.any():
        idx = np.unravel_index(int(np.argmax(bad)), mine.shape)
        return (f"{int(bad.sum())} of {bad.size} entries differ, the first at index {tuple(int(i) for i in idx)}: "
                f"{mine[idx]:.6g} where the right value has {right[idx]:.6g}")
    return "its values differ"


def _split_other_way(mine, right):
    """Words where `mine` is `right` with one axis of n = a * b split as (b, a) where the right value splits it as
    (a, b) (heads taken as (d_k, h) for (h, d_k)): each of the a then gets every a-th entry, not a block in a
    row; "" otherwise."""
    if mine.shape != right.shape or mine.ndim < 2 or mine.ndim > 5 or mine.size > 1_000_000 \
            or not np.allclose(np.sort(mine, axis=None), np.sort(right, axis=None), rtol=1e-5, atol=1e-8):
        return ""
    for i, j in itertools.permutations(range(mine.ndim), 2):
        a, b = right.shape[i], right.shape[j]
        if a < 2 or b < 2:
            continue
        lined = np.moveaxis(right, (i, j), (-2, -1))
        other = np.swapaxes(lined.reshape(*lined.shape[:-2], b, a), -1, -2)
        if _close(np.moveaxis(other, (-2, -1), (i, j)), mine):
            n = mine.ndim
            return (f"{EXPLAINED[3]}: the right value takes axes {i - n} (size {a}) and {j - n} (size {b}) from one "
                    f"axis of {a * b} as ({a}, {b}), a block of {b} entries in a row for each of the {a} (entries "
                    f"k*{b} to k*{b} + {b - 1}); yours splits it as ({b}, {a}), so each of the {a} gets every {_nth(a)} "
                    f"entry (k, k + {a}, ...). A reshape to (..., {b}, {a}) where (..., {a}, {b}) was meant, "
                    "before the axes were moved")
    return ""


def _nth(n):
    """'2nd', '3rd', '4th', '11th', '21st'."""
    last = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{last}"


def nearest(value, pool):
    """The reference value of the same shape closest to `value`: one it is proportional to first (a factor
    is the likeliest slip), else the one with the smallest largest difference; None when no shape fits."""
    same = [right for right in pool if right.array.shape == value.array.shape]
    for right in same:
        a, b = value.array.reshape(-1), right.array.reshape(-1)
        if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and np.dot(b, b) > 0:
            c = float(np.dot(a, b) / np.dot(b, b))
            if not np.isclose(c, 1.0) and np.allclose(a, c * b, rtol=1e-5, atol=1e-8):
                return right
    best, score = None, None
    for right in same:  # the most entries equal first, then the smallest largest difference
        equal = int(np.sum(np.isclose(value.array, right.array, rtol=1e-5, atol=1e-8, equal_nan=True)))
        with np.errstate(all="ignore"):
            gap = float(np.nanmax(np.abs(value.array - right.array))) if value.array.size else np.inf
        key = (-equal, gap if np.isfinite(gap) else np.inf)
        if score is None or key < score:
            best, score = right, key
    return best
