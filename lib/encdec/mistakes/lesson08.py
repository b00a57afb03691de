"""Lesson 08: the padding-aware, label-smoothed loss, the Adam step, the warm-up schedule,
one teacher-forced training step and inverted dropout.

The train_step mistakes call the reference loss (`loss_`), forward pass and backward pass, so each
one shows exactly one wrong idea about the training step itself.
"""

import numpy as np

from ..loss import log_softmax as log_softmax_
from ..loss import softmax_cross_entropy as loss_
from ..loss import token_accuracy
from ..model import shift_right
from ..training import backward, forward_with_cache
from . import mistake


# -- Exercise 8.1 sequence_cross_entropy -------------------------------------------------------------------
def _smoothed(targets, V, label_smoothing):
    """q = (1 - eps) * one_hot(targets) + eps / V, with pads mapped to id 0 (masked later)."""
    return np.eye(V)[targets] * (1.0 - label_smoothing) + label_smoothing / V


@mistake("sequence_cross_entropy", "pads_counted",
         "pad positions are trained like real tokens: they add to the loss and to the count. A pad "
         "is not part of the sentence: with the mask of real positions, targets != pad_id, sum the loss "
         "over those positions only and divide by their number.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):
    V = logits.shape[-1]
    q = _smoothed(targets, V, label_smoothing)
    logp = log_softmax_(logits)
    n = targets.size
    return float(-np.sum(q * logp) / n), (np.exp(logp) - q) / n


@mistake("sequence_cross_entropy", "divides_by_all_positions",
         "pads are left out of the sum but still counted in the mean: the loss is divided by every "
         "position, pads included, so batches with more padding look better than they are. Divide "
         "by the number of non-pad targets, N = (targets != pad_id).sum().")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = _smoothed(np.where(keep, targets, 0), V, label_smoothing)
    logp = log_softmax_(logits)
    n = targets.size
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - q) * keep[..., None] / n


@mistake("sequence_cross_entropy", "gradient_not_masked",
         "the loss ignores the pads but the gradient does not: dlogits is (p_hat - q) / N at the "
         "pad positions too, so backpropagation still trains the model to predict something there. "
         "Multiply the gradient by the mask of real positions (targets != pad_id) as well: zero rows at pads.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = _smoothed(np.where(keep, targets, 0), V, label_smoothing)
    logp = log_softmax_(logits)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - q) / n


@mistake("sequence_cross_entropy", "per_sequence_mean",
         "the loss is averaged within each sequence and then over the sequences, so a token of a "
         "short sentence weighs more than a token of a long one. Average over all non-pad tokens of "
         "the batch at once: sum everything, divide by the total count N.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = _smoothed(np.where(keep, targets, 0), V, label_smoothing)
    logp = log_softmax_(logits)
    per_seq = np.maximum(keep.sum(axis=-1, keepdims=True), 1)  # (..., 1)
    n_seq = int(np.prod(targets.shape[:-1]))
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep / per_seq) / n_seq
    return float(loss), (np.exp(logp) - q) * (keep / per_seq)[..., None] / n_seq


@mistake("sequence_cross_entropy", "smoothing_over_the_others",
         "the smoothing mass goes to the other V - 1 tokens only (target 1 - eps, others eps/(V-1)). "
         "That is a real convention (fairseq's), but not this exercise's: like PyTorch's label_smoothing, "
         "spread eps over all V tokens, q = (1 - eps) * y + eps / V, so the target gets 1 - eps + eps/V.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    y = np.eye(V)[np.where(keep, targets, 0)]
    q = y * (1.0 - label_smoothing) + (1.0 - y) * label_smoothing / (V - 1)
    logp = log_softmax_(logits)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - q) * keep[..., None] / n


@mistake("sequence_cross_entropy", "smoothing_not_divided",
         "eps is added to every token without dividing by V, so q sums to 1 + eps (V - 1), not 1: "
         "it is no longer a distribution. Spread eps evenly: q = (1 - eps) * y + eps / V.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = np.eye(V)[np.where(keep, targets, 0)] * (1.0 - label_smoothing) + label_smoothing
    logp = log_softmax_(logits)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - q) * keep[..., None] / n


@mistake("sequence_cross_entropy", "gradient_uses_one_hot",
         "the loss uses the smoothed target q but the gradient uses the one-hot y: with label "
         "smoothing the gradient of -sum q log p_hat is p_hat - q, not p_hat - y.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    y = np.eye(V)[np.where(keep, targets, 0)]
    q = y * (1.0 - label_smoothing) + label_smoothing / V
    logp = log_softmax_(logits)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - y) * keep[..., None] / n


@mistake("sequence_cross_entropy", "gradient_not_averaged",
         "the loss is a mean over N tokens but the gradient is not divided by N. Every term of the "
         "mean carries a factor 1/N, so dlogits = (p_hat - q) / N at the kept positions.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = _smoothed(np.where(keep, targets, 0), V, label_smoothing)
    logp = log_softmax_(logits)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.sum(q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - q) * keep[..., None]


@mistake("sequence_cross_entropy", "log_of_softmax",
         "log(softmax(z)) is computed literally: for large logits exp overflows (inf/inf = nan) or "
         "a probability underflows to 0 and log(0) = -inf. Use the stable form "
         "log p_hat = z - max(z) - log(sum(exp(z - max(z)))).")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = _smoothed(np.where(keep, targets, 0), V, label_smoothing)
    e = np.exp(logits)
    p = e / np.sum(e, axis=-1, keepdims=True)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.sum(q * np.log(p), axis=-1) * keep) / n
    return float(loss), (p - q) * keep[..., None] / n


@mistake("sequence_cross_entropy", "kl_divergence",
         "the loss is the KL divergence sum_v q_v (log q_v - log p_hat_v), not the cross-entropy -sum_v q_v log p_hat_v: "
         "the `q log q` term subtracts the entropy of q at every position, so with label smoothing the loss is "
         "lower by H(q) and goes to 0 (the two agree only for one-hot q). The gradient is the same, p_hat - q. "
         "Leave out the `q log q` term: loss = -sum_v q_v log p_hat_v, averaged over the non-pad positions.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    q = _smoothed(np.where(keep, targets, 0), V, label_smoothing)
    logp = log_softmax_(logits)
    n = max(int(keep.sum()), 1)
    q_log_q = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    loss = np.sum(np.sum(q_log_q - q * logp, axis=-1) * keep) / n
    return float(loss), (np.exp(logp) - q) * keep[..., None] / n


# -- Exercise 8.2 adam_update ------------------------------------------------------------------------------
@mistake("adam_update", "no_bias_correction",
         "m and v are used without bias correction. Both start at 0, so in the first steps they are "
         "far too small (m_1 = (1 - beta1) g); divide by 1 - beta1^t and 1 - beta2^t before the update.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    return param - lr * m / (np.sqrt(v) + eps), m, v


@mistake("adam_update", "eps_inside_sqrt",
         "eps is added inside the square root, sqrt(v_hat + eps). Adam adds it outside: "
         "m_hat / (sqrt(v_hat) + eps). The two differ when gradients are tiny.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / np.sqrt(v_hat + eps), m, v


@mistake("adam_update", "no_sqrt",
         "the update divides by v_hat instead of sqrt(v_hat). v averages squared gradients; its "
         "square root has the gradient's units, which is what makes the step size about lr whatever "
         "the gradient's scale.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat + eps), m, v


@mistake("adam_update", "v_not_squared",
         "v averages the gradient, not its square: v = beta2 v + (1 - beta2) g^2. Without the square, "
         "v can be negative and its square root is nan.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@mistake("adam_update", "betas_swapped_in_average",
         "the running average weights are swapped: m = (1 - beta1) m + beta1 g forgets the past "
         "almost at once. beta is the weight of the old average: m = beta1 m + (1 - beta1) g.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = (1 - beta1) * m + beta1 * grad
    v = (1 - beta2) * v + beta2 * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@mistake("adam_update", "returns_corrected_moments",
         "the bias-corrected m_hat and v_hat are returned as the new state. The corrections only "
         "scale this step's update; the running averages to keep are the uncorrected m and v "
         "(otherwise the correction is applied again, and again, on every later step).")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m_hat, v_hat


@mistake("adam_update", "gradient_ascent",
         "the step goes up the gradient (param + lr * ...). To lower the loss move against it: "
         "param - lr * m_hat / (sqrt(v_hat) + eps).")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param + lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@mistake("adam_update", "correction_with_t_plus_one",
         "the bias correction uses t + 1 (as if t counted from 0). Here t is the number of the "
         "step being taken, starting at 1: divide by 1 - beta1^t and 1 - beta2^t.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1 ** (t + 1)), v / (1 - beta2 ** (t + 1))
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


# -- Exercise 8.3 warmup_schedule --------------------------------------------------------------------------
@mistake("warmup_schedule", "max_instead_of_min",
         "max(...) picks the larger branch: the rate then falls at first and rises without bound. "
         "The schedule follows the smaller of the two: min(step^-0.5, step * warmup_steps^-1.5).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "warmup_exponent_half",
         "the warm-up branch uses warmup_steps^-0.5 instead of warmup_steps^-1.5. The two branches "
         "must meet at step = warmup_steps: step * warmup^-1.5 = warmup^-0.5 there.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


@mistake("warmup_schedule", "linear_ramp_to_one",
         "the warm-up ramp is step / warmup_steps. It meets the decay branch step^-0.5 far too early, at "
         "step = warmup_steps^(2/3), and there the rate is warmup_steps^(1/6) times the intended peak (for "
         "a warm-up of 4000: at step 252, about 4 times too high). Use step * warmup_steps^-1.5: it "
         "meets step^-0.5 exactly at step = warmup_steps.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(step**-0.5, step / warmup_steps)


@mistake("warmup_schedule", "no_d_model_scale",
         "the factor d_model^-0.5 is missing, so wider models get the same, too large, rate. "
         "Multiply by d_model**-0.5.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * min(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "d_model_scale_inverted",
         "the rate is multiplied by sqrt(d_model) instead of divided by it: d_model**-0.5, with the "
         "minus sign, so wider models take smaller steps.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "factor_ignored",
         "the `factor` argument is never used. It scales the whole schedule: "
         "lr = factor * d_model^-0.5 * min(...).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "step_from_zero",
         "step is shifted by one (step + 1), as if steps counted from 0. In this schedule steps count "
         "from 1: the first update uses step = 1.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    s = step + 1
    return factor * d_model**-0.5 * min(s**-0.5, s * warmup_steps**-1.5)


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


# -- Exercise 8.6 dropout ----------------------------------------------------------------------------------
# The checker calls each one with a seeded generator (or, for an answer that keeps u < 1 - rate, a generator
# that gives 1 - u), so every entry below is one wrong idea in either convention.
@mistake("dropout", "no_rescale",
         "the kept entries are not scaled up: x * keep. Then the expected output is (1 - rate) * x, not x, "
         "and the model would see larger activations at evaluation than in training. Inverted dropout "
         "divides the kept entries by the keep probability: x * keep / (1 - rate).")
def dropout(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep


@mistake("dropout", "scaled_by_one_over_rate",
         "the kept entries are divided by rate, not by 1 - rate. An entry is kept with probability "
         "1 - rate, so x * keep / (1 - rate) has expectation x; dividing by rate only works at rate 0.5.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep / rate


@mistake("dropout", "scaled_by_keep_probability",
         "the kept entries are multiplied by 1 - rate instead of divided by it, which shrinks the "
         "expectation to (1 - rate)^2 * x. Divide: x * keep / (1 - rate).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep * (1 - rate)


@mistake("dropout", "keeps_with_probability_rate",
         "an entry is kept where u < rate, so it survives with probability rate: at rate 0.1 nine entries "
         "in ten are dropped instead of one. rate is the probability of dropping: keep where u >= rate.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) < rate
    return x * keep / (1 - rate)


@mistake("dropout", "applied_in_eval_mode",
         "entries are dropped in eval mode too (training=False is ignored). Evaluation and decoding must "
         "see the whole, deterministic model: with training=False return x unchanged and draw nothing.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep / (1 - rate)


@mistake("dropout", "rescaled_at_evaluation",
         "this is the original, non-inverted dropout: kept entries unscaled in training and x * (1 - rate) "
         "at evaluation. The exercise asks for inverted dropout, which scales by 1 / (1 - rate) in "
         "training, so that eval mode (and decoding) is simply x, untouched.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training:
        return x * (1 - rate)
    if rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep


@mistake("dropout", "mask_broadcast_over_rows",
         "the mask is drawn with shape x.shape[-1:] and broadcast, so every row (every position of every "
         "sequence) drops the same features. Draw one independent number per entry: "
         "u = rng.random(x.shape).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape[-1:]) >= rate
    return x * keep / (1 - rate)


@mistake("dropout", "draws_when_off",
         "the output is right, but your function draws random numbers even when it returns x unchanged "
         "(training=False or rate 0). That moves the generator on, so every later mask differs from the "
         "reference. Return x before drawing anything when dropout is off.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    u = rng.random(x.shape)
    if not training or rate == 0:
        return x
    return x * (u >= rate) / (1 - rate)


@mistake("dropout", "two_draws",
         "the generator is drawn twice (2 * x.size numbers) and the mask comes from the second draw. Draw "
         "u = rng.random(x.shape) exactly once: the same seed must give the same mask as the reference.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    u = rng.random(x.shape)
    keep = rng.random(u.shape) >= rate
    return x * keep / (1 - rate)


@mistake("dropout", "one_number_for_the_whole_array",
         "one random number decides for the whole array, so either every entry is dropped or none is. "
         "Dropout decides entry by entry, independently: one number per entry, u = rng.random(x.shape).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    if rng.random() < rate:
        return np.zeros_like(x)
    return x / (1 - rate)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("sequence_cross_entropy", "smoothing_skips_pad",
         "the smoothing mass skips the pad token: eps/(V-1) on every other token. The course spreads it over "
         "the whole vocabulary, q = (1 - eps) one_hot + eps / V (the pad included: it is one of the V ids).")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    spread = np.full(V, label_smoothing / (V - 1))
    spread[0 if pad_id is None else pad_id] = 0.0
    q = np.eye(V)[np.where(keep, targets, 0)] * (1.0 - label_smoothing) + spread
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits)
    logp = log_softmax_(logits)
    loss = float(np.sum(-np.sum(q * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - q) * keep[..., None] / n


@mistake("sequence_cross_entropy", "target_not_reduced",
         "eps / V is added to the one-hot target without taking eps from the target: q sums to 1 + eps. "
         "q = (1 - eps) one_hot(target) + eps / V, a distribution.")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = logits.shape[-1]
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    q = np.eye(V)[np.where(keep, targets, 0)] + label_smoothing / V
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits)
    logp = log_softmax_(logits)
    loss = float(np.sum(-np.sum(q * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - q) * keep[..., None] / n


@mistake("adam_update", "v_not_corrected",
         "only m is bias-corrected: v̂ = v / (1 - beta2^t) is missing, so early steps are far too large "
         "(v starts at 0 and is tiny for many steps). Correct both moments.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    return param - lr * (m / (1.0 - beta1**t)) / (np.sqrt(v) + eps), m, v


@mistake("adam_update", "raw_gradient_in_the_step",
         "the step uses the gradient itself, lr * g / (sqrt(v̂) + eps), not the running average m̂: that "
         "is RMSprop, without Adam's momentum. The step is lr * m̂ / (sqrt(v̂) + eps).")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    return param - lr * grad / (np.sqrt(v / (1.0 - beta2**t)) + eps), m, v


@mistake("warmup_schedule", "decay_one_over_step",
         "after the warm-up the rate decays as 1/step, not 1/sqrt(step): min(step^-0.5, step * warmup^-1.5).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(1.0 / step, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "d_model_on_one_branch",
         "d_model^-0.5 multiplies only the decay branch, inside the min: it scales the whole schedule, "
         "factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * min(d_model**-0.5 * step**-0.5, step * warmup_steps**-1.5)


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


@mistake("dropout", "keeps_where_u_at_least_keep_probability",
         "an entry is kept where u >= 1 - rate: it survives with probability rate, not 1 - rate. Keep "
         "where u >= rate (probability 1 - rate), then scale by 1 / (1 - rate).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    u = rng.random(np.shape(x))
    return x * (u >= 1.0 - rate) / (1.0 - rate)


@mistake("dropout", "rescaled_by_kept_fraction",
         "the kept entries are divided by the fraction actually kept in this draw, not by 1 - rate: the "
         "scale then changes from call to call. Inverted dropout divides by the keep probability 1 - rate.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(np.shape(x)) >= rate
    return x * keep / max(float(np.mean(keep)), 1e-12)
