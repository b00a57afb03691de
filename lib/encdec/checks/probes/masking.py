"""A mask applied after the softmax: the hidden entries of the weights set to 0 once the softmax has run, so
the visible ones keep what they had with the hidden keys present, and no row sums to 1.

For an answer with a `mask` parameter that returns attention weights (an output named "weights"): the
reference is run on the same case without the mask, its weights zeroed where the mask hides a key, and
compared with the answer's. Exact (it reproduces the answer's weights), so it is tried with the unread
parameter, before the exercise's property probes, which would say only that the rows do not sum to 1.
"""

import inspect

import numpy as np

from .base import Probe
from .results import _array, _close


class MaskAfterSoftmax(Probe):
    """probe:mask_after_softmax: the weights are the unmasked softmax with the hidden entries zeroed."""

    kind = "mask_after_softmax"
    exact = True

    def find(self, attempt, probes):
        names = tuple(attempt.names or ())
        if attempt.error is not None or "weights" not in names or not isinstance(attempt.got, (tuple, list)):
            return None
        got = _array(attempt.got[names.index("weights")])
        signature = inspect.signature(attempt.reference)
        bound = signature.bind(*attempt.args(), **attempt.kwargs())
        mask = _array(bound.arguments.get("mask"))
        if got is None or mask is None or not np.issubdtype(mask.dtype, np.floating):
            return None
        hidden = np.isneginf(mask) | (mask < -1e8)
        if not hidden.any():
            return None
        bound.arguments["mask"] = None
        unmasked = _array(attempt.reference(*bound.args, **bound.kwargs)[names.index("weights")])
        if unmasked is None:
            return None
        zeroed = np.where(np.broadcast_to(hidden, unmasked.shape), 0.0, unmasked)
        if got.shape != zeroed.shape or not _close(got, zeroed, attempt.float32):
            return None
        return self.finding(attempt, "", (
            "the mask is applied after the softmax: your weights are the softmax of the scores without the mask, "
            "with the hidden entries then set to 0, so the visible keys keep the weights they had with the hidden "
            "ones present and no row sums to 1. Add the mask to the scores before the softmax (-inf there gives "
            "those keys a weight of exactly 0, and the visible ones share the whole row)."))


MASKING_PROBES = [MaskAfterSoftmax()]
