"""Exercise 7.1, softmax_cross_entropy: the mistakes of the loss and its gradient."""

import numpy as np

from ...loss import log_softmax as log_softmax_
from .. import mistake


def _targets_one_hot(logits, targets, pad_id):
    """(log p (..., m, V), one-hot y (..., m, V), keep (..., m)) as a correct implementation has them."""
    logits = np.asarray(logits, dtype=np.float64)
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    y = np.eye(logits.shape[-1])[np.where(keep, targets, 0)]
    return log_softmax_(logits), y, keep


# -- Exercise 7.1 softmax_cross_entropy ---------------------------------------------------------------------
# Listed first: with no real token every other mistake divides by zero as well, and this is
# the misconception such a batch shows.
NO_TOKENS_NAN = ("with no non-pad target at all, N = 0 and the mean is 0/0 = nan. Return a loss of 0.0 and a "
                 "zero gradient in that case (there is nothing to learn from).")


@mistake("softmax_cross_entropy", "no_tokens_nan", NO_TOKENS_NAN)
def softmax_cross_entropy(logits, targets, pad_id=None):
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - y) * keep[..., None] / n


@mistake("softmax_cross_entropy", "no_tokens_nan_loss", NO_TOKENS_NAN)
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    """The same slip where the pads' gradient is set to 0 after the division: only the loss is nan."""
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    grad = (np.exp(logp) - y) / n
    grad[~keep] = 0.0
    return loss, grad


@mistake("softmax_cross_entropy", "log_sum_exp_without_shift",
         "log p̂ = z - log(sum(exp(z))) is computed without first subtracting the row's largest logit: for large "
         "logits exp(z) overflows to inf, and the loss and gradient become inf or nan. Shift first, "
         "log p̂ = (z - max z) - log(sum(exp(z - max z))): the same numbers, and exp never exceeds 1.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logits = np.asarray(logits, dtype=np.float64)
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    y = np.eye(logits.shape[-1])[np.where(keep, targets, 0)]
    with np.errstate(over="ignore", invalid="ignore"):
        logp = logits - np.log(np.sum(np.exp(logits), axis=-1, keepdims=True))
        n = max(int(keep.sum()), 1)
        picked = np.take_along_axis(logp, np.where(keep, targets, 0)[..., None], axis=-1)[..., 0]
        loss = float(-np.sum(np.where(keep, picked, 0.0)) / n)
        return loss, (np.exp(logp) - y) * keep[..., None] / n


@mistake("softmax_cross_entropy", "sign_flipped",
         "the gradient has the wrong sign: it is y - p̂. The derivative of -log p̂_y with respect to the "
         "logits is p̂ - y: raising the correct token's logit must lower the loss, so its gradient entry "
         "(p̂_y - 1) is negative.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    return loss, (y - np.exp(logp)) * keep[..., None] / n


@mistake("softmax_cross_entropy", "gradient_not_divided",
         "the loss is a mean over the N non-pad tokens but the gradient is not divided by N. The "
         "gradient of a mean is the mean of the gradients: (p̂ - y) / N at every non-pad position.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / keep.sum())
    return loss, (np.exp(logp) - y) * keep[..., None]


@mistake("softmax_cross_entropy", "sum_not_mean",
         "the loss and its gradient are sums over the tokens, not means. Divide both by N, the number "
         "of non-pad target positions, so the loss does not grow with the batch size.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep))
    return loss, (np.exp(logp) - y) * keep[..., None]


@mistake("softmax_cross_entropy", "pads_counted",
         "the pad positions are treated as real targets (pad_id is ignored). Positions whose target is "
         "pad_id must add nothing to the loss, get a zero gradient, and not be counted in N.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, None)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * logp, axis=-1)) / n)
    return loss, (np.exp(logp) - y) / n


@mistake("softmax_cross_entropy", "pads_in_denominator",
         "the pad positions are left out of the sum but counted in N: the mean divides by every "
         "position, pads included. N is the number of non-pad targets.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.size
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - y) * keep[..., None] / n


@mistake("softmax_cross_entropy", "pad_gradient_kept",
         "the loss ignores the pads but the gradient does not: pad positions get p̂ - y too. Multiply "
         "the gradient by the non-pad mask, so pad positions get exactly 0.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - y) / n


@mistake("softmax_cross_entropy", "mean_over_vocabulary",
         "the mean runs over every entry of the (positions x V) array, so everything is also divided "
         "by V. Sum over the vocabulary at each position, then average over the N non-pad positions.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.sum() * logp.shape[-1]
    loss = float(np.sum(-y * logp * keep[..., None]) / n)
    return loss, (np.exp(logp) - y) * keep[..., None] / n


@mistake("softmax_cross_entropy", "unstable_log_softmax",
         "log(softmax(z)) is computed from exp(z) without subtracting the maximum: large logits overflow "
         "to inf and the loss becomes nan. Use log p = z - max - log(sum(exp(z - max))).")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logits = np.asarray(logits, dtype=np.float64)
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    y = np.eye(logits.shape[-1])[np.where(keep, targets, 0)]
    e = np.exp(logits)
    p = e / np.sum(e, axis=-1, keepdims=True)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * np.log(p), axis=-1) * keep) / n)
    return loss, (p - y) * keep[..., None] / n


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("softmax_cross_entropy", "gradient_without_the_target",
         "dlogits is p̂ / N: the one-hot target y is not subtracted. The derivative of -log p̂_y with respect "
         "to the logits is p̂ - y, so every entry but the target's is p̂ / N and the target's is (p̂_y - 1) / N.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = max(int(keep.sum()), 1)
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    return loss, np.exp(logp) * keep[..., None] / n


@mistake("softmax_cross_entropy", "loss_sign_flipped",
         "the loss has the wrong sign: it is the mean of log p̂_y, a negative number. The cross-entropy is "
         "-log p̂_y (positive, 0 only for a certain, correct prediction), averaged over the real tokens.")
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = max(int(keep.sum()), 1)
    loss = float(np.sum(np.sum(y * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - y) * keep[..., None] / n
