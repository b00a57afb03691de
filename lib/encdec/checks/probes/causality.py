"""Causality read by running the answer again: changing the last position of the inputs must change no earlier
output (a decoder), or must change some (an encoder, which is bidirectional). Where one output moves and
another does not, the one that stays is read too: weights that give future keys weight, and do not move with
them, had their future scores set to a finite number (0) rather than -inf; an output that is the weights
transposed times the values reads the future through the product, not the weights."""

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
            s = names.index(seen[0])
            if k < len(right) and s < len(right) and _transposed_product(before[s], before[k], right[s], rtol, atol):
                return self.finding(attempt, "weights_transposed", (
                    f"your {seen[0]} is the {kept[0]} transposed times the values (swapaxes({kept[0]}, -1, -2) @ V): "
                    f"row i of the {seen[0]} then mixes the values by column i of the {kept[0]} (how much each query "
                    f"reads key i), so an early position reads every later value. Row i of the {kept[0]} says how "
                    f"much query i reads each key: the {seen[0]} is {kept[0]} @ V."),
                    f"the earlier {seen[0]} moved by up to {moved:.3g}.")
            return self.finding(attempt, "future_visible_in_one_output", (
                f"changing only the last position of {self.what} changed the {' and '.join(seen)} at earlier "
                f"positions, but not the {' and '.join(kept)}: the {kept[0]} is computed with the causal mask, but "
                f"what you return as the {seen[0]} is not made from it as the formula makes it (a value from before "
                f"the mask, or one made otherwise, reads the later positions). Return the {seen[0]} that the "
                f"{kept[0]} gives: {kept[0]} @ V."), f"the earlier {seen[0]} moved by up to {moved:.3g}.")
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


def _transposed_product(output, weights, right_output, rtol, atol):
    """True where `output` is swapaxes(weights) @ V, V being the values that the right output was made from
    (weights @ V = right_output: the right causal weights are triangular with a positive diagonal, so V is
    solved for)."""
    if (weights.ndim < 2 or weights.shape[-1] != weights.shape[-2] or output.shape != right_output.shape
            or output.shape[:-1] != weights.shape[:-1]):
        return False
    try:
        with np.errstate(all="ignore"):
            values = np.linalg.solve(np.asarray(weights, dtype=np.float64), np.asarray(right_output, dtype=np.float64))
            made = np.swapaxes(weights, -1, -2) @ values
    except (np.linalg.LinAlgError, ValueError):
        return False
    return bool(np.all(np.isfinite(made)) and np.allclose(made, output, rtol=max(rtol, 1e-6), atol=max(atol, 1e-9)))


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
