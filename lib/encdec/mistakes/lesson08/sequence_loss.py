"""Exercise 8.1, sequence_cross_entropy: the mistakes of the padding-aware, label-smoothed loss."""

import numpy as np

from ...loss import log_softmax as log_softmax_
from .. import mistake


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
