"""Slips in Lesson 8: the smoothed loss, Adam, the warm-up schedule, one training step, inverted dropout."""

import numpy as np

from encdec import shift_right  # noqa: F401  (the setup cell's)
from encdec.loss import softmax_cross_entropy as sequence_cross_entropy  # a right 8.1 for train_step
from encdec.training import backward, forward_with_cache

from . import slip


# -- 8.1 sequence_cross_entropy -----------------------------------------------------------------------------------
def _smoothed(logits, targets, pad_id, eps, *, target_share=None, others=None, count_pads=False, grad_q=True):
    z = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    V = z.shape[-1]
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    if int(keep.sum()) == 0:
        return 0.0, np.zeros_like(z)
    N = targets.size if count_pads else int(keep.sum())
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    y = np.eye(V)[np.where(keep, targets, 0)]
    share = (1.0 - eps) if target_share is None else target_share
    rest = eps / V if others is None else others
    q = share * y + rest * (1.0 - y) + (eps / V if others is None else 0.0) * y
    loss = float(-(q * log_p).sum(axis=-1)[keep].sum() / N)
    dlogits = (np.exp(log_p) - (q if grad_q else y)) * keep[..., None] / N
    return loss, dlogits


@slip("sequence_cross_entropy", "eps_over_V_minus_1", "spreads eps over the V - 1 other tokens and gives the target "
      "1 - eps", expect=("eps / v", "eps/v", "v - 1", "v-1", "smooth"))
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    V = np.shape(logits)[-1]
    return _smoothed(logits, targets, pad_id, label_smoothing, target_share=1.0 - label_smoothing,
                     others=label_smoothing / (V - 1))


@slip("sequence_cross_entropy", "gradient_without_smoothing", "smooths the loss but keeps the one-hot y in the "
      "gradient", expect=("gradient", "smooth"))
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    return _smoothed(logits, targets, pad_id, label_smoothing, grad_q=False)


@slip("sequence_cross_entropy", "pads_in_N", "divides by every position, pads included",
      expect=("pad",))
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    return _smoothed(logits, targets, pad_id, label_smoothing, count_pads=True)


@slip("sequence_cross_entropy", "eps_not_divided", "adds eps, not eps / V, to every token: q = (1 - eps) y + eps",
      expect=("/ v", "/v", "smooth"))
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    return _smoothed(logits, targets, pad_id, label_smoothing, target_share=1.0, others=label_smoothing)


from encdec.loss import softmax_cross_entropy as sequence_cross_entropy  # noqa: E402,F811  (right again)


# -- 8.2 adam_update -------------------------------------------------------------------------------------------------
def _adam(param, grad, m, v, t, lr, beta1, beta2, eps, *, correct=True, eps_inside=False, keep_hat=False,
          square=True, t_shift=0):
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * (grad * grad if square else grad)
    m_hat = m / (1.0 - beta1 ** (t + t_shift)) if correct else m
    v_hat = v / (1.0 - beta2 ** (t + t_shift)) if correct else v
    step = m_hat / (np.sqrt(v_hat + eps) if eps_inside else (np.sqrt(v_hat) + eps))
    new = param - lr * step
    return (new, m_hat, v_hat) if keep_hat else (new, m, v)


@slip("adam_update", "no_bias_correction", "skips the bias correction: steps with m / (sqrt(v) + eps)",
      expect=("bias correction", "bias-correct", "1 - beta"))
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    return _adam(param, grad, m, v, t, lr, beta1, beta2, eps, correct=False)


@slip("adam_update", "eps_inside_sqrt", "puts eps inside the square root: sqrt(v_hat + eps)",
      expect=("eps",))
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    return _adam(param, grad, m, v, t, lr, beta1, beta2, eps, eps_inside=True)


@slip("adam_update", "returns_corrected_state", "returns m_hat and v_hat as the new state instead of m and v",
      expect=("uncorrected", "m_hat", "state", "corrected"))
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    return _adam(param, grad, m, v, t, lr, beta1, beta2, eps, keep_hat=True)


@slip("adam_update", "v_not_squared", "averages the gradient, not its square, into v",
      expect=("square", "g^2", "g²", "grad**2", "grad * grad"))
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    return _adam(param, grad, m, v, t, lr, beta1, beta2, eps, square=False)


@slip("adam_update", "betas_swapped", "uses beta2 for m and beta1 for v",
      expect=("beta1", "beta2"))
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    return _adam(param, grad, m, v, t, lr, beta2, beta1, eps)


@slip("adam_update", "t_plus_one", "corrects with 1 - beta^(t + 1), as if t counted from 0",
      expect=("t + 1", "t+1", "off by one", "from 1", "count"))
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    return _adam(param, grad, m, v, t, lr, beta1, beta2, eps, t_shift=1)


# -- 8.3 warmup_schedule -----------------------------------------------------------------------------------------------
@slip("warmup_schedule", "step_from_0", "evaluates the schedule at step + 1, as if steps counted from 0",
      expect=("off by one", "step + 1", "from 1", "one step"))
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    step = step + 1
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@slip("warmup_schedule", "warmup_power_half", "writes warmup_steps^-0.5 in the warm-up branch instead of ^-1.5",
      expect=("-1.5", "exponent", "warm-up", "warmup"))
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


@slip("warmup_schedule", "max_not_min", "takes the max of the two branches instead of the min",
      expect=("min", "max"))
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@slip("warmup_schedule", "factor_ignored", "leaves out the factor",
      expect=("factor",))
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@slip("warmup_schedule", "d_model_inverse", "scales by 1 / d_model instead of 1 / sqrt(d_model)",
      expect=("d_model", "-0.5", "sqrt"))
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor / d_model * min(step**-0.5, step * warmup_steps**-1.5)


# -- 8.4 train_step --------------------------------------------------------------------------------------------------------
def _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, *, shift=True, pads_in_accuracy=False,
          use_pad=True, smoothing=True, pass_lr=True, accuracy_after=False):
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id) if shift else targets
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = sequence_cross_entropy(logits, targets, pad_id if use_pad else None,
                                           label_smoothing if smoothing else 0.0)
    grads = backward(model, dlogits, cache)
    if pass_lr:
        optimizer.step(grads, lr=lr)
    else:
        optimizer.step(grads)
    if accuracy_after:
        logits, _ = forward_with_cache(model, src, tgt_in)
    real = np.ones(targets.shape, dtype=bool) if pads_in_accuracy else targets != pad_id
    accuracy = float(np.sum((logits.argmax(axis=-1) == targets) & real) / max(np.sum(real), 1))
    return loss, accuracy


@slip("train_step", "no_shift", "feeds the targets themselves to the decoder, not the targets shifted right",
      expect=("shift",))
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    return _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, shift=False)


@slip("train_step", "pads_in_accuracy", "counts the pad positions in the accuracy",
      expect=("pad", "accuracy"))
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    return _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, pads_in_accuracy=True)


@slip("train_step", "loss_without_pad_id", "calls the loss without pad_id, so the pads are trained on",
      expect=("pad",))
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    return _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, use_pad=False)


@slip("train_step", "smoothing_dropped", "does not pass label_smoothing on to the loss",
      expect=("label_smoothing", "smooth"))
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    return _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, smoothing=False)


@slip("train_step", "lr_dropped", "calls optimizer.step(grads) without this step's lr",
      expect=("lr", "learning rate", "rate"))
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    return _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, pass_lr=False)


@slip("train_step", "accuracy_after_update", "measures the accuracy with a second forward pass after the update",
      expect=("before the update", "after the update", "after", "update"))
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    return _step(model, optimizer, src, targets, bos_id, label_smoothing, lr, accuracy_after=True)


# -- 8.6 dropout ---------------------------------------------------------------------------------------------------------
@slip("dropout", "times_keep_probability", "multiplies the survivors by 1 - rate instead of dividing by it",
      expect=("1 / (1 - rate)", "divid", "invert", "scale"))
def dropout(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    return x * (rng.random(x.shape) >= rate) * (1.0 - rate)


@slip("dropout", "no_scaling", "zeroes entries but does not scale the survivors",
      expect=("scale", "1 - rate", "invert", "1 / (1 - rate)"))
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    return x * (rng.random(x.shape) >= rate)


@slip("dropout", "keeps_with_probability_rate", "keeps the entries where u < rate, so it keeps a fraction rate",
      expect=("u >= rate", "keep", "probability"))
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    return x * (rng.random(x.shape) < rate) / (1.0 - rate)


@slip("dropout", "eval_mode_ignored", "drops entries in eval mode too (training is never read)",
      expect=("training", "eval"))
def dropout(x, rate, rng, training=True):  # noqa: F811
    if rate == 0:
        return x
    return x * (rng.random(x.shape) >= rate) / (1.0 - rate)


@slip("dropout", "global_random", "draws the mask from np.random, not from the rng it is given",
      expect=("rng", "generator", "seed"))
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    return x * (np.random.random(np.shape(x)) >= rate) / (1.0 - rate)
