"""Exercise 6.1, shift_right: its cases, the knob model of its slips (SHIFT_PROBES) and the checker."""

import numpy as np

from ... import model as model_mod
from ...mistakes import CATALOG
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import BOS, EOS, PAD, generator, padded_tokens
from ..probes import Combos, Probes


def shift_right_cases():
    r = generator(61)
    batch = padded_tokens(r, [3, 5, 2], 6, 12)
    batch[np.arange(3), [3, 5, 2]] = EOS
    single = np.array([7, 4, 9, 5, EOS, PAD, PAD])
    deep = padded_tokens(r, [4, 2, 3, 4, 1, 2], 5, 20).reshape(2, 3, 5)
    return {
        "values": [Case("one sequence [7, 4, 9, 5, EOS, PAD, PAD], bos_id=1", (single, BOS)),
                   Case("a batch of 3 right-padded targets, shape (3, 7)", (batch, BOS)),
                   Case("bos_id=5", (batch[:2], 5)),
                   Case("one position only, shape (2, 1)", (np.array([[EOS], [8]]), BOS), hidden=True),
                   Case("leading shape (2, 3), m=5", (deep, BOS), hidden=True)],
    }


def _is_integer(value):
    return np.asarray(value).dtype.kind in "iu"


def _shift_model(k, targets, bos_id):
    """shift_right with knobs: axis (the axis shifted), by (positions shifted, -1 to the left), fill
    (what goes in the freed places: "bos", "pad" (0), "eos", "copy" (the first target kept))."""
    targets = np.asarray(targets)
    axis = k.get("axis", -1)
    by = k.get("by", 1)
    if targets.ndim == 0 or targets.shape[axis] < abs(by):
        raise ValueError("nothing to shift")
    moved = np.moveaxis(targets, axis, -1)
    fill = {"bos": bos_id, "pad": PAD, "eos": EOS}.get(k.get("fill", "bos"))
    out = np.empty_like(moved)
    if by > 0:
        out[..., by:] = moved[..., :-by]
        out[..., :by] = moved[..., :by] if fill is None else fill
    else:
        out[..., :by] = moved[..., -by:]
        out[..., by:] = moved[..., by:] if fill is None else fill
    return np.moveaxis(out, -1, axis)


SHIFT_PROBES = Probes(_shift_model, Combos("shift", [
    ("axis", [(-1, "", ""), (0, "axis0", "the shift runs along the first axis (the batch), not the last (the positions)")]),
    ("by", [(1, "", ""), (2, "by2", "the targets move two places, not one"),
            (-1, "left", "the targets move left (targets[..., 1:] first), not right")]),
    ("fill", [("bos", "", ""), ("pad", "pad_first", "the freed place holds the pad id 0, not bos_id"),
              ("eos", "eos_first", "the freed place holds EOS, not bos_id"),
              ("copy", "first_kept", "the freed place keeps the old token instead of bos_id")]),
], "The decoder input is [bos_id] + targets[..., :-1], along the last axis."))


SHIFT_RIGHT = Exercise("6.1", "shift_right", points=2, reference=model_mod.shift_right, sizes={"targets": "... m"},
                       reads=("bos_id",), weights={"BOS first, last token dropped, any batch shape": 3})


@SHIFT_RIGHT.checked_by
def check_shift_right(shift_right=None, *, points=None, hidden=False):
    """[BOS] + targets[..., :-1] along the last axis."""
    c = Checker(SHIFT_RIGHT, points, hidden)
    fn = c.find(shift_right, "shift_right")
    cases = shift_right_cases()["values"]
    common = dict(catalog=CATALOG["shift_right"], forbidden=[model_mod.shift_right])
    ref = model_mod.shift_right
    c.check_cases("BOS first, last token dropped, any batch shape", fn, ref, cases, probes=SHIFT_PROBES, **common)
    c.check_cases("the ids keep an integer dtype", fn, ref, cases, postprocess=_is_integer, **common)
    return c.result()
