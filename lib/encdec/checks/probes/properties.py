"""Property probes on attention: the student's own output read for the rules attention weights keep
(rows summing to one, masked keys at zero, each head, an additive mask, finite values); causality is
causality.py's."""


import inspect

import numpy as np

from .base import Property, _arrays, _at, _pick, _tol
from .constants import name_number


# -- property probes ---------------------------------------------------------------------------------------
class RowsSumToOne(Property):
    """Attention weights (or any distribution): each row sums to 1 along `axis` (rows that the mask
    hides entirely are all zero). weights(output) picks them; axis(args, kwargs) or an int."""

    kind = "weights"

    def __init__(self, weights=None, axis=-1, what="weights", over="the keys"):
        self.weights, self.axis, self.what, self.over = weights, axis, what, over

    def inspect(self, attempt, probes):
        w = _pick(self.weights, attempt.got)
        if w is None or w.ndim == 0:
            return None
        axis = self.axis(*attempt.case.args, **attempt.case.kwargs) if callable(self.axis) else self.axis
        rtol, atol = _tol(attempt)
        with np.errstate(all="ignore"):
            sums = np.sum(w, axis=axis)
        ok = np.isclose(sums, 1.0, rtol=rtol, atol=max(atol, 1e-7)) | (sums == 0.0)
        if np.all(ok | np.isnan(sums)):  # rows of nan: a symptom (NotFinite), the repair may find its cause
            return None
        first = tuple(np.argwhere(~ok)[0])
        detail = f"{self.what}: the {'row' if axis in (-1, w.ndim - 1) else 'slice'} at {_at(first)} sums to {float(sums[first]):.4g}."
        if w.ndim >= 2:
            other = -2 if axis in (-1, w.ndim - 1) else -1
            with np.errstate(all="ignore"):
                cols = np.sum(w, axis=other)
            if np.all(np.isclose(cols, 1.0, rtol=rtol, atol=max(atol, 1e-7))) and axis in (-1, w.ndim - 1):
                return self.finding(attempt, "wrong_axis", (
                    f"each column of the {self.what} sums to 1, not each row: the normalisation ran over "
                    f"the wrong axis (axis={other}). Each row must be a distribution over {self.over}: "
                    f"normalise along axis={axis}."), detail)
            if np.all(np.isclose(cols, 1.0, rtol=rtol, atol=max(atol, 1e-7))):
                given = "axis" in _parameters(attempt.student)
                return self.finding(attempt, "wrong_axis", (
                    f"the sums of the {self.what} along axis {other} are 1, not those along axis {axis}, the one this "
                    f"case asks for: the normalisation ran over a fixed axis. Each distribution runs over {self.over}: "
                    + ("use the `axis` argument in every step that takes an axis (the max, the sum), not a fixed "
                       "axis=-1, which is right only for the default." if given else f"normalise along axis={axis}.")),
                    detail)
            with np.errstate(all="ignore"):
                whole = np.sum(w, axis=(-2, -1))
            if np.all(np.isclose(whole, 1.0, rtol=rtol, atol=max(atol, 1e-7))):
                return self.finding(attempt, "whole_matrix", (
                    f"the whole matrix of {self.what} sums to 1, not each row: the sum ran over every "
                    f"axis at once. Each row must be a distribution over {self.over}: sum along "
                    f"axis={axis} with keepdims=True."), detail)
        factor = _one_factor(sums, ok, rtol)
        if factor is not None:
            named = name_number(factor, attempt.sizes)
            return self.finding(attempt, "rows_scaled", (
                f"every row of the {self.what} sums to {factor:.4g}" + (f" = {named}" if named else "") + ", not 1: "
                "a factor is applied to the weights after the softmax. Each row must be a distribution over "
                f"{self.over}; a factor the formula has belongs on the scores, before the softmax."), detail,
                weak=True)
        return self.finding(attempt, "rows_do_not_sum_to_one", (
            f"the rows of the {self.what} do not sum to 1: each must be a distribution over {self.over}. "
            "Normalise with a softmax along that axis, and change nothing in the weights after it."), detail,
            weak=True)  # what is off, not where: the repair's line first


def _one_factor(sums, ok, rtol):
    """The one sum every row that is not all zero has, when it is not 1 (a factor applied after the softmax)."""
    rows = sums[(sums != 0.0) & np.isfinite(sums)]
    if rows.size < 2 or np.all(ok):
        return None
    factor = float(rows.flat[0])
    return factor if factor > 0 and np.allclose(rows, factor, rtol=max(rtol, 1e-6), atol=0) else None


class MaskedKeysZero(Property):
    """Keys hidden by the mask (-inf) get exactly zero weight. weights(output) and
    mask(args, kwargs) pick the arrays; the mask is broadcast to the weights' shape."""

    kind = "weights"

    def __init__(self, mask, weights=None, what="weights"):
        self.mask, self.weights, self.what = mask, weights, what

    def inspect(self, attempt, probes):
        w = _pick(self.weights, attempt.got)
        mask = self.mask(*attempt.case.args, **attempt.case.kwargs)
        right = _pick(self.weights, attempt.expected)
        if w is None or mask is None or right is not None and w.shape != right.shape:
            return None  # weights of another shape (an extra axis): the mask cannot be read against them
        try:
            hidden = np.broadcast_to(np.isneginf(np.asarray(mask, dtype=np.float64)), w.shape)
        except ValueError:
            return None
        bad = hidden & ~(w == 0.0) & ~np.isnan(w)  # nan: a symptom (NotFinite); the repair may find its cause
        if not np.any(bad):
            return None
        first = tuple(np.argwhere(bad)[0])
        return self.finding(attempt, "masked_key_gets_weight", (
            "keys that the mask hides get weight. The mask must be added to the scores before the "
            "softmax: exp(-inf) = 0 gives every hidden key exactly zero weight, and the visible ones "
            "still sum to 1."),
            f"{self.what}{_at(first)} is {float(w[first]):.4g} where the mask is -inf.",
            weak=True)  # an effect with a guess at its cause: the repair's line first


class HeadsCompared(Property):
    """Each head's result compared with the reference heads: names heads in the wrong order, or the
    heads that are right when others are not. heads(value) -> [arrays with the heads on axis -3]
    (weights (..., h, m, n), head outputs (..., h, m, d_k)), for the student's and the reference's."""

    kind = "heads"

    def __init__(self, heads, hint=""):
        self.heads, self.hint = heads, hint

    def inspect(self, attempt, probes):
        try:
            mine, right = self.heads(attempt.got), self.heads(attempt.expected)
        except Exception:
            return None
        rtol, atol = _tol(attempt)
        for name, s, r in zip(("weights", "outputs"), mine, right):
            if s is None or r is None:
                continue
            s, r = np.asarray(s, dtype=np.float64), np.asarray(r, dtype=np.float64)
            if s.shape != r.shape or s.ndim < 3 or s.shape[-3] < 2:
                continue
            h = s.shape[-3]
            match = [[i for i in range(h) if np.allclose(s[..., j, :, :], r[..., i, :, :], rtol=rtol, atol=atol,
                                                         equal_nan=True)] for j in range(h)]
            right_heads = [j for j in range(h) if j in match[j]]
            if len(right_heads) == h:
                continue
            if all(match) and sorted(m[0] for m in match) == list(range(h)):
                pairs = ", ".join(f"your head {j} is head {m[0]}" for j, m in enumerate(match) if m[0] != j)
                return self.finding(attempt, "order", (
                    f"every head's {name} are right, but the heads come out in the wrong order ({pairs}). "
                    "Keep head i in place i, when splitting (columns i*d_k to (i+1)*d_k) and when merging "
                    "(swap the h and position axes back before the reshape)."))
            if right_heads:
                wrong = [j for j in range(h) if j not in right_heads]
                return self.finding(attempt, "some_wrong", (
                    f"some heads' {name} are right and others are not: each head must use its own d_k "
                    "columns of Q, K and V (head i: columns i*d_k to (i+1)*d_k of every position)."
                    + (f" {self.hint}" if self.hint else "")),
                    f"right: head{'s' if len(right_heads) > 1 else ''} {', '.join(map(str, right_heads))}; "
                    f"wrong: head{'s' if len(wrong) > 1 else ''} {', '.join(map(str, wrong))}.")
        return None


class AdditiveMask(Property):
    """An additive mask (0.0 visible, -inf hidden) compared with the reference's, entry by entry:
    values other than 0.0 and -inf, then keys hidden that must be visible, or visible that must be
    hidden. where(index) describes an entry in the course's words, e.g. "query 2, key 3"."""

    kind = "mask"
    symptom = True  # which entries are wrong is what, not why: the repair (a loop from 1, k=2) is tried first

    def __init__(self, where=None, what="the mask"):
        self.where, self.what = where, what

    def _describe(self, idx):
        return self.where(idx) if self.where else f"entry {_at(idx)}"

    def inspect(self, attempt, probes):
        s, r = _pick(None, attempt.got), _pick(None, attempt.expected)
        if s is None or r is None or s.shape != r.shape:
            return None
        if np.any(np.isnan(s)):
            idx = tuple(np.argwhere(np.isnan(s))[0])
            return self.finding(attempt, "nan", (
                f"{self.what} holds nan. 0 * inf and inf - inf are nan: build the mask with "
                "np.where(hidden, -np.inf, 0.0) rather than by multiplying or subtracting infinities."),
                f"nan at {self._describe(idx)}.")
        if np.any(np.isposinf(s)):
            idx = tuple(np.argwhere(np.isposinf(s))[0])
            return self.finding(attempt, "plus_inf", (
                f"{self.what} holds +inf where -inf belongs. Added to a score, +inf gives that key all the "
                "weight (and inf - inf = nan in the softmax); hidden keys get -inf, so that exp(-inf) = 0."),
                f"+inf at {self._describe(idx)}.")
        odd = ~((s == 0.0) | np.isneginf(s))
        if np.any(odd):
            idx = tuple(np.argwhere(odd)[0])
            return self.finding(attempt, "values", (
                f"{self.what} holds values other than 0.0 and -inf. The course's masks are additive: 0.0 "
                "where a key is visible and -inf where it is hidden, added to the scores before the softmax."),
                f"{float(s[idx]):.4g} at {self._describe(idx)}.")
        extra = np.isneginf(s) & ~np.isneginf(r)
        missing = ~np.isneginf(s) & np.isneginf(r)
        if np.any(extra) and np.any(missing):
            a, b = tuple(np.argwhere(extra)[0]), tuple(np.argwhere(missing)[0])
            return self.finding(attempt, "pattern", (
                f"{self.what} hides the wrong entries: some that must stay visible are hidden, and some that "
                "must be hidden are visible."),
                f"{self._describe(a)} is hidden but must be visible; {self._describe(b)} is visible but must be hidden.")
        if np.any(extra):
            a = tuple(np.argwhere(extra)[0])
            return self.finding(attempt, "hides_visible", (
                f"{self.what} hides entries that must stay visible: every other entry is right."),
                f"{self._describe(a)} is hidden ({int(np.sum(extra))} such entries).")
        if np.any(missing):
            b = tuple(np.argwhere(missing)[0])
            return self.finding(attempt, "shows_hidden", (
                f"{self.what} leaves entries visible that must be hidden: every other entry is right."),
                f"{self._describe(b)} is visible ({int(np.sum(missing))} such entries).")
        return None


class NotFinite(Property):
    """nan or inf in the output where the answer is finite."""

    kind = "not_finite"
    symptom = True  # it says what went wrong, not why: the repair, which may find why, is tried first

    def __init__(self, hint="Look for exp() of a large number (subtract the maximum first), a 0/0, "
                            "inf - inf or 0 * inf."):
        self.hint = hint

    def inspect(self, attempt, probes):
        for s, r in zip(_arrays(attempt.got), _arrays(attempt.expected)):
            if s.shape != r.shape:
                return None
            bad = ~np.isfinite(s) & np.isfinite(r)
            if np.any(bad):
                idx = tuple(np.argwhere(bad)[0])
                return self.finding(attempt, "", (
                    "your output holds nan or inf where the answer is finite: a step overflowed or divided "
                    f"by zero. {self.hint}"),
                    f"{float(s[idx]) if s.ndim == 0 else s[idx]} at index {_at(idx)} ({int(np.sum(bad))} entries).")
        return None


def _parameters(fn):
    """The names of `fn`'s parameters, or () where it has no signature."""
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()
