"""Exercise 8.5: the steps of one training step, put in order."""

from ..ordering import Ordering, Step


TRAINING_STEP_ORDER = Ordering(
    "8.5", "one training step, in order", "training_step_order", points=1,
    steps=[
        Step("draw a batch of (source, target) pairs, padded to a common length",
             "Everything else in the step works on the batch, so it is drawn first."),
        Step("shift the targets right, prepending BOS: the decoder's inputs",
             "The decoder inputs are made from the batch's targets, so the batch must be drawn first."),
        Step("run the model once over all m target positions, under the causal mask: the logits",
             "The forward pass reads the source and the shifted decoder inputs, so both must exist before it runs."),
        Step("cross-entropy of the logits against the targets, ignoring pads, with smoothed labels",
             "The loss compares the logits with the targets, so the batch, its decoder inputs and the "
             "forward pass that makes the logits all come before it."),
        Step("backpropagate: the gradient of the loss for every parameter",
             "Backpropagation starts from dL/dlogits, which the loss computes, so the loss (and everything "
             "it needs) comes before it."),
        Step("update Adam's running averages m and v with the new gradient",
             "Adam's running averages take in this step's gradient, so backpropagation, and everything it "
             "depends on, must have run first."),
        Step("move every parameter by −lr · m̂ / (√v̂ + ε), with this step's rate lr from the warm-up schedule",
             "The move uses m̂ and v̂, which must already hold this step's gradient, so everything that "
             "produces them (the forward pass, the loss, the gradient, the running averages) comes first. "
             "Changing the parameters ends the step."),
    ],
    shown=[3, 6, 1, 4, 0, 5, 2],
)


@TRAINING_STEP_ORDER.checked_by
def check_training_step_order(training_step_order=None, *, points=None):
    """All or nothing."""
    return TRAINING_STEP_ORDER.check(training_step_order, points)
