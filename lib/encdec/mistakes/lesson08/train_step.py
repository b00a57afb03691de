"""Exercise 8.4, train_step: the mistakes of one teacher-forced training step, each calling the
reference loss (`loss_`), forward pass and backward pass."""

import numpy as np

from ...loss import softmax_cross_entropy as loss_
from ...loss import token_accuracy
from ...model import shift_right
from ...training import backward, forward_with_cache
from .. import mistake


# -- Exercise 8.4 train_step -------------------------------------------------------------------------------
@mistake("train_step", "targets_fed_unshifted",
         "the decoder reads the targets themselves, not the targets shifted right. Position t then "
         "sees y_t, the very token it must predict, and learns to copy it: a low training loss and a "
         "model that cannot generate. Feed tgt_in = shift_right(targets, bos_id).")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    pad_id = model.config.pad_id
    logits, cache = forward_with_cache(model, src, targets)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, targets, pad_id)


@mistake("train_step", "loss_against_inputs",
         "the loss compares the logits with the decoder inputs (BOS, y1, ...) instead of the targets "
         "(y1, y2, ...): off by one position. Position t reads y_<t and must predict y_t, the target "
         "at t, so the loss takes `targets`.")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, tgt_in, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, tgt_in, pad_id)


@mistake("train_step", "pads_not_ignored",
         "the loss is called without pad_id, so padding positions are trained as if they were words. "
         "Pass pad_id=model.config.pad_id to the loss (and to the accuracy).")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, None, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, targets, None)


@mistake("train_step", "no_update",
         "the parameters never change: the gradients are computed but optimizer.step(grads, lr=lr) "
         "is never called.")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    backward(model, dlogits, cache)
    return loss, token_accuracy(logits, targets, pad_id)


@mistake("train_step", "smoothing_ignored",
         "label_smoothing is never passed to the loss, so the model is trained on one-hot targets "
         "whatever the caller asked for.")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, targets, pad_id)


@mistake("train_step", "lr_ignored",
         "the learning rate of this step is dropped: optimizer.step(grads) uses the optimizer's "
         "default rate, so the warm-up schedule never takes effect. Pass it on: "
         "optimizer.step(grads, lr=lr).")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache))
    return loss, token_accuracy(logits, targets, pad_id)


@mistake("train_step", "accuracy_counts_pads",
         "the accuracy counts pad positions, where any prediction is meaningless. Measure it over "
         "the non-pad targets only, like the loss.")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, float(np.mean(np.argmax(logits, axis=-1) == targets))


@mistake("train_step", "accuracy_mean_of_sequences",
         "the accuracy is the mean of each sequence's own accuracy, so a short target weighs as much as a long "
         "one. It is the fraction of all the batch's non-pad target positions that are right: count the right "
         "ones over the whole batch, then divide by the number of non-pad positions (one division, not one "
         "per row).")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    right, real = np.argmax(logits, axis=-1) == targets, targets != pad_id
    per_row = (right & real).sum(axis=-1) / np.maximum(real.sum(axis=-1), 1)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, float(np.mean(per_row))


@mistake("train_step", "loss_after_update",
         "the loss and accuracy are measured again after the update. Report those of the forward "
         "pass the gradients came from, before the parameters moved; the update must not be "
         "followed by a second forward pass.")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    logits, _ = forward_with_cache(model, src, tgt_in)
    loss, _ = loss_(logits, targets, pad_id, label_smoothing)
    return loss, token_accuracy(logits, targets, pad_id)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("train_step", "decoder_starts_with_pad",
         "the decoder inputs start with the pad id instead of BOS: shift_right(targets, pad_id). The first "
         "decoder input is bos_id, the token that says \"start\": shift_right(targets, bos_id).")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, pad_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, targets, pad_id)


@mistake("train_step", "accuracy_against_inputs",
         "the accuracy compares the predictions with the decoder inputs (targets shifted right), not with "
         "the targets: position t predicts targets[t], which is tgt_in[t + 1].")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = loss_(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, tgt_in, pad_id)
