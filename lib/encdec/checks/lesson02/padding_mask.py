"""Exercise 2.3, padding_mask: its probes, cases and checker."""

import numpy as np

from ... import attention
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..probes import AdditiveMask, Probes


# -- probes: the kinds of slip the answer may show (encdec.checks.probes) -------------------------------------
def _pad_where(idx):
    return (f"sentence {_at_lead(idx[:-3])}, " if len(idx) > 3 else "") + f"key {idx[-1]}"


def _at_lead(lead):
    return ", ".join(str(int(i)) for i in lead)


PADDING_MASK_PROBES = Probes(None, AdditiveMask(_pad_where, what="the padding mask"))


# -- Exercise 2.3 -------------------------------------------------------------------------------------
def padding_mask_cases():
    return {
        "one": [Case("one sentence [5, 7, 3, 9, 0, 0] with pad_id=0", (np.array([5, 7, 3, 9, 0, 0]), 0)),
                Case("one sentence without padding", (np.array([4, 2, 8]), 0), hidden=True)],
        "batch": [Case("a batch of 2 sentences, padded to length 5", (np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7]]), 0)),
                  Case("leading shape (2, 2), length 4",
                       (np.array([[[1, 2, 0, 0], [3, 0, 0, 0]], [[5, 6, 7, 8], [9, 9, 0, 0]]]), 0), hidden=True)],
        "pad_id": [Case("pad_id=1, where 0 is a real token: [0, 4, 2, 1, 1]", (np.array([0, 4, 2, 1, 1]), 1)),
                   Case("pad_id=9 in a batch", (np.array([[0, 1, 9, 9], [2, 0, 3, 9]]), 9), hidden=True)],
    }


PADDING_MASK = Exercise("2.3", "padding_mask", points=2, reference=attention.padding_mask,
                        sizes={"tokens": "... n"}, reads=("pad_id",))


@PADDING_MASK.checked_by
def check_padding_mask(padding_mask=None, *, points=None, hidden=False):
    """An additive (..., 1, 1, n) mask, -inf at pad keys, 0.0 elsewhere."""
    c = Checker(PADDING_MASK, points, hidden)
    fn = c.find(padding_mask, "padding_mask")
    cases = padding_mask_cases()
    common = dict(catalog=CATALOG["padding_mask"], forbidden=[attention.padding_mask], probes=PADDING_MASK_PROBES)
    ref = attention.padding_mask
    c.check_cases("one sentence: -inf at the pads, shape (1, 1, n)", fn, ref, cases["one"], **common)
    c.check_cases("a batch: shape (B, 1, 1, n)", fn, ref, cases["batch"], **common)
    c.check_cases("the pad_id argument", fn, ref, cases["pad_id"], **common)
    return c.result()
