"""Exercises 3.1 and 3.2, create_causal_mask and decoder_mask: their probes (where in the mask an
entry is wrong) and the checkers."""

import numpy as np

from ... import attention, model
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..probes import AdditiveMask, Probes
from ..rebinding import rebind
from .references import EARLIER, REF_DECODER_MASK


def _causal_where(idx):
    return f"query {idx[-2]}, key {idx[-1]}"


def _decoder_where(idx):
    lead = ", ".join(str(int(i)) for i in idx[:-3])
    return (f"sequence {lead}, " if lead else "") + f"query {idx[-2]}, key {idx[-1]}"


CAUSAL_MASK_PROBES = Probes(None, AdditiveMask(_causal_where, what="the causal mask"))
DECODER_MASK_PROBES = Probes(None, AdditiveMask(_decoder_where, what="the decoder mask"))


# -- Exercise 3.1 -------------------------------------------------------------------------------------
CREATE_CAUSAL_MASK = Exercise("3.1", "create_causal_mask", points=2, reference=attention.create_causal_mask)


@CREATE_CAUSAL_MASK.checked_by
def check_create_causal_mask(create_causal_mask=None, *, points=None, hidden=False):
    """(seq_len, seq_len), 0.0 on and below the diagonal, -inf above."""
    c = Checker(CREATE_CAUSAL_MASK, points, hidden)
    fn = c.find(create_causal_mask, "create_causal_mask")
    common = dict(catalog=CATALOG["create_causal_mask"], forbidden=[attention.create_causal_mask],
                  probes=CAUSAL_MASK_PROBES)
    ref = attention.create_causal_mask
    c.check_cases("0 on and below the diagonal, -inf above", fn, ref,
                  [Case("seq_len=4", (4,)), Case("seq_len=7", (7,)), Case("seq_len=12", (12,), hidden=True)],
                  **common)
    c.check_cases("the smallest cases", fn, ref,
                  [Case("seq_len=2", (2,)), Case("seq_len=1: a single position sees itself", (1,), hidden=True)],
                  **common)
    return c.result()


# -- Exercise 3.2 -------------------------------------------------------------------------------------
DECODER_MASK = Exercise("3.2", "decoder_mask", points=2, reference=REF_DECODER_MASK, sizes={"tgt_in": "... m"},
                        reads=("pad_id",))


@DECODER_MASK.checked_by
def check_decoder_mask(decoder_mask=None, *, points=None, hidden=False):
    """create_causal_mask(m) + padding_mask(tgt_in, pad_id), shape (..., 1, m, m).

    Your `create_causal_mask` and `padding_mask` run as the reference while this is checked.
    """
    c = Checker(DECODER_MASK, points, hidden)
    fn = c.find(decoder_mask, "decoder_mask")
    fn = rebind(fn, **EARLIER)
    common = dict(catalog=CATALOG["decoder_mask"], forbidden=[REF_DECODER_MASK, model.Seq2Seq.decoder_mask],
                  probes=DECODER_MASK_PROBES)
    ref = REF_DECODER_MASK
    c.check_cases("one target sequence", fn, ref,
                  [Case("[1, 5, 6, 2, 0, 0] with pad_id=0", (np.array([1, 5, 6, 2, 0, 0]), 0)),
                   Case("no padding: [1, 4, 4, 2]", (np.array([1, 4, 4, 2]), 0), hidden=True),
                   Case("a pad between real tokens (sequences packed one after another): [1, 5, 2, 0, 1, 6, 2]",
                        (np.array([1, 5, 2, 0, 1, 6, 2]), 0))], **common)
    c.check_cases("a padded batch: shape (B, 1, m, m)", fn, ref,
                  [Case("2 sequences of length 5", (np.array([[1, 7, 8, 2, 0], [1, 3, 4, 5, 2]]), 0)),
                   Case("leading shape (2, 2), length 4",
                        (np.array([[[1, 2, 0, 0], [1, 5, 6, 2]], [[1, 0, 0, 0], [1, 9, 2, 0]]]), 0), hidden=True)],
                  **common)
    c.check_cases("the pad_id argument", fn, ref,
                  [Case("pad_id=3, where 0 is a real token: [1, 0, 5, 2, 3, 3]", (np.array([1, 0, 5, 2, 3, 3]), 3))],
                  **common)
    return c.result()
