"""Lesson 02: RMSNorm, GELU, the padding mask, multi-head attention, the feed-forward network and
the pre-norm encoder block.

Mistakes that need an earlier exercise call the reference under a trailing-underscore name
(`softmax_`, `rms_norm_`, `gelu_`, ...), so that pasting one into a notebook never replaces the
student's own function of the plain name.

One module per exercise, imported below in the order of the exercises; each registers its entries in
the order the checker tries them (the first that matches is named), so neither order may change:

    rms_norm              Exercise 2.1, rms_norm
    gelu                  Exercise 2.2, gelu (and `_erf`, the exact GELU's error function)
    padding_mask          Exercise 2.3, padding_mask
    multi_head_attention  Exercise 2.4, MultiHeadAttention.__call__ (and `_split`, `_merge`, the heads
                          split and merged by hand)
    feed_forward          Exercise 2.5, FeedForward.__call__
    encoder_block         Exercise 2.6, EncoderBlock.__call__
"""

from . import rms_norm  # noqa: F401  (each import fills the catalog)
from . import gelu  # noqa: F401
from . import padding_mask  # noqa: F401
from . import multi_head_attention  # noqa: F401
from . import feed_forward  # noqa: F401
from . import encoder_block  # noqa: F401
