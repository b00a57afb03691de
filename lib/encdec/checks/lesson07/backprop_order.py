"""Exercise 7.6: the order backpropagation visits the model, put in order."""

from ..ordering import Ordering, Step


BACKPROP_ORDER = Ordering(
    "7.6", "the order backpropagation visits the model", "backprop_order", points=1,
    steps=[
        Step("the loss gradient at the logits: dz = (p̂ - y) / N",
             "Backpropagation starts where the forward pass ended: the gradient of the loss with respect "
             "to the logits."),
        Step("through the tied head z = h Eᵀ: dh = dz E, and the head's share of dE",
             "The head was the last operation of the forward pass, so it is the first one the gradient "
             "goes back through, as soon as dz exists."),
        Step("through the decoder's final RMSNorm",
             "The final norm fed the head, so its backward pass needs dh, which the head's backward produces."),
        Step("through the decoder blocks, last block first (FFN, cross-attention, self-attention in each)",
             "The decoder blocks fed the final norm, so their gradient comes out of the norm's backward pass."),
        Step("through the encoder's final RMSNorm, with dH_enc summed over every decoder block's cross-attention",
             "H_enc was read by the cross-attention of every decoder block: its gradient is complete only "
             "once backpropagation has passed through all of the decoder blocks."),
        Step("through the encoder blocks, last block first",
             "The encoder blocks fed the encoder's final norm, so they wait for its backward pass, which "
             "waits for the whole decoder."),
        Step("dE complete: the head's share plus the rows of the source and target tokens (times sqrt(d))",
             "E was used three times (source, target, head); its gradient is the sum of all three shares, "
             "and the source share is known only at the very end, after the encoder blocks."),
    ],
    shown=[4, 1, 6, 2, 5, 0, 3],
)


@BACKPROP_ORDER.checked_by
def check_backprop_order(backprop_order=None, *, points=None):
    """All or nothing."""
    return BACKPROP_ORDER.check(backprop_order, points)
