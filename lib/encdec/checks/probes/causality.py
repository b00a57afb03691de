"""Causality read by running the answer again: changing the last position of the inputs must change no earlier
output (a decoder), or must change some (an encoder, which is bidirectional). Where one output moves and
another does not, the one that stays is read too: weights that give future keys weight, and do not move with
them, had their future scores set to a finite number (0) rather than -inf."""

import numpy as np

from .base import Property, _arrays, _at, _tol


def _edit_last(x, axis):
    x = np.array(x, dtype=np.float64, copy=True)
    index = [slice(None)] * x.ndim
    index[axis] = -1
    x[tuple(index)] = x[tuple(index)] * -1.5 + 0.75
    return x


class Causal(Property):
    """Changing the last position of the inputs `edit` (argument indices) changes no earlier output:
    runs the student's code again and compares outputs(value) (arrays with positions on `axis`)
    before the last position. when(args, kwargs) says whether the case is causal at all.
    With expect=False the property is the opposite (bidirectional: an encoder)."""

    kind = "causal"

    def __init__(self, edit=(0,), outputs=None, axis=-2, when=None, expect=True, what="x"):
        self.edit, self.outputs, self.axis, self.when = edit, outputs, axis, when
        self.expect, self.what = expect, what

    def inspect(self, attempt, probes):
        args, kwargs = attempt.args(), attempt.kwargs()
        if self.when is not None and not self.when(*args, **kwargs):
            return None
        edited = list(args)
        for i in self.edit:
            edited[i] = _edit_last(edited[i], self.axis)
        outcome = attempt.rerun(tuple(edited), kwargs)
        if outcome.error is not None:
            return None
        before = [a for a in _arrays(self.outputs(attempt.got) if self.outputs else attempt.got)]
        value = attempt.output(outcome.value)
        after = [a for a in _arrays(self.outputs(value) if self.outputs else value)]
        if not before or len(before) != len(after):
            return None
        each = []
        for a, b in zip(before, after):
            if a.shape != b.shape or a.ndim == 0 or a.shape[self.axis] < 2:
                return None
            index = [slice(None)] * a.ndim
            index[self.axis] = slice(0, -1)
            with np.errstate(all="ignore"):
                diff = np.abs(a[tuple(index)] - b[tuple(index)])
            diff = np.where(np.isnan(diff), np.inf, diff)
            each.append(float(np.max(diff)) if diff.size else 0.0)
        moved = max(each)
        rtol, atol = _tol(attempt)
        names = attempt.names if not self.outputs and attempt.names and len(attempt.names) == len(each) else None
        if self.expect and moved > max(atol, 1e-9) * 10 and names and min(each) <= max(atol, 1e-9) * 10:
            seen = [n for n, m in zip(names, each) if m > max(atol, 1e-9) * 10]
            kept = [n for n, m in zip(names, each) if m <= max(atol, 1e-9) * 10]
            right, k = _arrays(attempt.expected), names.index(kept[0])
            finite = _future_weighted(before[k], right[k]) if k < len(right) else None
            if finite is not None:
                return self.finding(attempt, "future_scores_finite", (
                    f"the {kept[0]} give future keys weight, and that weight does not move when they change: their "
                    "scores were set to a finite number (0, say) instead of -inf. A finite score still gets weight "
                    "e^s / sum(e^s). Hide every key j > i with -inf (add the causal mask, or np.where(future, "
                    f"-np.inf, scores)), so that exp gives exactly 0."), f"{kept[0]}{_at(finite[0])} is {finite[1]:.4g}.")
            return self.finding(attempt, "future_visible_in_one_output", (
                f"changing only the last position of {self.what} changed the {' and '.join(seen)} at earlier "
                f"positions, but not the {' and '.join(kept)}: the {kept[0]} is computed with the causal mask, and "
                f"what you return as the {seen[0]} is another value, one from before the mask (or without it). Return the "
                f"{seen[0]} that the {kept[0]} was computed from."), f"the earlier {seen[0]} moved by up to {moved:.3g}.")
        if self.expect and moved > max(atol, 1e-9) * 10:
            return self.finding(attempt, "future_visible", (
                f"changing only the last position of {self.what} changed the outputs at earlier positions: "
                "a position reads positions after it. Hide every key j > i with the causal mask, added to "
                "the scores before the softmax, so that position i sees only positions 0..i."),
                f"the earlier outputs moved by up to {moved:.3g}.")
        if not self.expect and moved == 0.0:
            return self.finding(attempt, "encoder_is_causal", (
                f"changing the last position of {self.what} changed no earlier output: the earlier positions "
                "never read it. The encoder is bidirectional: every token may look at every other (only "
                "padding is hidden), so no causal mask here."))
        return None


def _future_weighted(mine, right):
    """(index, value) of the first entry above the diagonal of the last two axes that is 0 in the right weights
    and not in `mine`; None where there is none or the arrays are not square weights."""
    if mine.shape != right.shape or mine.ndim < 2 or mine.shape[-1] != mine.shape[-2]:
        return None
    above = np.triu(np.ones(mine.shape[-2:], dtype=bool), k=1)
    bad = above & (right == 0.0) & (mine != 0.0) & np.isfinite(mine)
    if not np.any(bad):
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return first, float(mine[first])
