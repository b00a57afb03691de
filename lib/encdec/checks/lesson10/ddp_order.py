"""Exercise 10.7: the steps of one data-parallel training step, put in order."""

from ..ordering import Ordering, Step


DDP_STEP_ORDER = Ordering(
    "10.7", "one data-parallel training step, in order", "ddp_step_order", points=1,
    steps=[
        Step("every process builds the step's global batch from the step number",
             "Every process must agree on the batch before any of them can take its share, so the same "
             "global batch, rebuilt from the step number alone, comes first."),
        Step("each process keeps its own slice of the batch's rows",
             "A process can only take its slice of a batch that exists: the global batch comes first, "
             "and the forward pass then reads only this slice."),
        Step("forward pass and loss on the slice, scaled so that the average over processes is the global mean",
             "The loss is computed from this process's rows, so the slice must be taken before; the "
             "gradients then come from this loss."),
        Step("backward pass: each process's gradients of its own loss",
             "Backpropagation needs the loss, so it comes after the forward pass; it produces the local "
             "gradients the processes then average."),
        Step("all-reduce: DDP averages every gradient over the processes (started bucket by bucket during "
             "the backward pass, complete when it returns)",
             "Only gradients that exist can be averaged: DDP starts each bucket's all-reduce as soon as the "
             "backward pass has produced its gradients, and clipping and the update must wait for the average."),
        Step("clip the averaged gradients by their global norm, the same on every process",
             "Clipping must see the gradients the update will use, the averaged ones: their norm is the same "
             "on every process, so every process scales by the same factor. Clipped before the average, each "
             "process would scale its own gradients by its own factor, and the update would no longer be "
             "the clipped gradient of the global batch."),
        Step("optimizer step, the same update on every process, so the weights stay identical",
             "The update uses the averaged, clipped gradients; applied to identical weights, it leaves every "
             "process with the same model for the next step."),
    ],
    shown=[4, 2, 0, 6, 1, 5, 3],
)


@DDP_STEP_ORDER.checked_by
def check_ddp_step_order(ddp_step_order=None, *, points=None):
    """All or nothing."""
    return DDP_STEP_ORDER.check(ddp_step_order, points)
