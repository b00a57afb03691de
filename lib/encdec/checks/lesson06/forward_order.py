"""Exercise 6.6: the forward pass, from token ids to logits, put in order."""

from ..ordering import Ordering, Step


FORWARD_ORDER = Ordering(
    "6.6", "the forward pass, from token ids to logits", "forward_order", points=1,
    steps=[
        Step("look up each source token's row of E and multiply it by sqrt(d_model)",
             "Everything starts from the source token ids: their rows of E are the first vectors there are."),
        Step("add the sinusoidal position encodings",
             "The positions are added to the already scaled rows: the sqrt(d_model) factor is for E alone, "
             "and attention needs the positions before any block runs."),
        Step("run the N encoder blocks, each on the previous block's output",
             "The encoder blocks read position-aware vectors, so the embedding and the positions come first."),
        Step("apply the encoder's final RMSNorm: the result is H_enc",
             "The final norm closes the encoder stack: it normalises the output of the last encoder block."),
        Step("embed the target inputs the same way (rows of E times sqrt(d_model), plus the positions), and run "
             "the N decoder blocks on them; each cross-attends to H_enc",
             "Every decoder block reads H_enc in its cross-attention, so the whole encoder, final norm "
             "included, must be finished first (the target inputs may be embedded at any time before)."),
        Step("apply the decoder's final RMSNorm",
             "The decoder's final norm normalises the output of the last decoder block, so the whole "
             "decoder stack (which needs the finished encoder) comes first."),
        Step("multiply by E transposed (the tied output head): logits over the vocabulary",
             "The head turns normalised top decoder states into logits: it is the very last step, after "
             "the decoder's final norm."),
    ],
    shown=[3, 6, 1, 4, 0, 5, 2],
)


@FORWARD_ORDER.checked_by
def check_forward_order(forward_order=None, *, points=None):
    """All or nothing."""
    return FORWARD_ORDER.check(forward_order, points)
