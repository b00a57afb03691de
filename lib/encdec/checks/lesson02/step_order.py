"""Exercise 2.7, the steps of a pre-norm encoder block, in order."""

from ..ordering import Ordering, Step


# -- Exercise 2.7 -------------------------------------------------------------------------------------
ENCODER_BLOCK_ORDER = Ordering(
    "2.7", "the steps of a pre-norm encoder block, in order", "encoder_block_order", points=1,
    steps=[
        Step("normalise the block's input x with RMSNorm (norm1_gamma)",
             "In a pre-norm block the attention reads a normalised copy of the input, so this norm "
             "comes first, straight off the block's input x."),
        Step("multi-head self-attention over the normalised states, with the padding mask",
             "Self-attention reads the normalised copy of x, so the first norm must come before it; "
             "its output is what the first residual adds."),
        Step("add the attention output back to x (the first residual)",
             "The residual adds the attention's output to x, so the attention must already have run; "
             "everything in the second half of the block starts from this sum."),
        Step("normalise the sum with RMSNorm (norm2_gamma)",
             "The second norm normalises x + attention output, so the first residual must be complete; "
             "the feed-forward network then reads what it returns."),
        Step("the feed-forward network, on each position separately",
             "The feed-forward network reads the second norm's output, which already holds what "
             "attention gathered from the other tokens: tokens talk first, then each one thinks alone."),
        Step("add the feed-forward output back (the second residual) and pass the result on",
             "The last residual adds the feed-forward network's output, so that output must exist "
             "first; this sum is what leaves the block."),
    ],
    shown=[3, 5, 1, 0, 2, 4],
)


@ENCODER_BLOCK_ORDER.checked_by
def check_encoder_block_order(encoder_block_order=None, *, points=None):
    """All or nothing."""
    return ENCODER_BLOCK_ORDER.check(encoder_block_order, points)
