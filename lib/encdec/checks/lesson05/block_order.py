"""Exercise 5.1, what a token meets in one decoder block, in order."""

from ..ordering import Ordering, Step


# -- Exercise 5.1 ------------------------------------------------------------------------------------------
BLOCK_ORDER = Ordering(
    "5.1", "what a token meets in one decoder block, in order", "block_order", points=1,
    steps=[
        Step("the decoder hidden states arrive from the previous block (or from the embeddings, in block 1)",
             "Every sublayer reads the hidden states, so nothing in the block can happen before they arrive."),
        Step("masked causal self-attention over the decoder positions, plus residual add",
             "Self-attention reads the incoming states and mixes in what the decoder has already written, so "
             "that in the standard block each position knows its context before it asks the source."),
        Step("cross-attention: queries from the decoder, keys and values from the encoder output, plus residual add",
             "Cross-attention asks the source with queries made from the decoder's states; in the standard "
             "block those states already carry the context of the target written so far, which self-attention "
             "has just put in."),
        Step("position-wise feed-forward network, plus residual add",
             "The feed-forward network works on each position alone; in the standard block it comes last and "
             "processes what the two attentions gathered, from the target and from the source."),
        Step("the result passes on to the next decoder block",
             "The next block takes the finished result, after all three sublayers have added their part."),
    ],
    shown=[2, 4, 0, 3, 1],
)


@BLOCK_ORDER.checked_by
def check_block_order(block_order=None, *, points=None):
    """All or nothing."""
    return BLOCK_ORDER.check(block_order, points)
