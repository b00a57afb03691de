"""Cross-entropy over the vocabulary, padding-aware, with optional label smoothing, and its gradient.

For one position with logits z (V,), probabilities p = softmax(z) and target distribution q:

    loss = -sum_v q_v log p_v            dloss/dz = p - q

q is the one-hot target y, or with label smoothing eps: q = (1 - eps) y + eps / V (the same
convention as torch.nn.functional.cross_entropy(label_smoothing=eps)). The batch loss is the
mean over non-pad target positions, so the gradient is (p - q) / N_tokens there and 0 at pads.
"""

import numpy as np

from ._shapes import as_float, as_tokens


def log_softmax(x, axis=-1):
    """log(softmax(x)) computed stably as x - max - log(sum(exp(x - max)))."""
    x = as_float(x, "x", min_ndim=0)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def softmax_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):
    """Mean cross-entropy over non-pad positions and its gradient.

    Inputs:  logits (..., m, V); targets (..., m) integer ids; pad_id: positions whose target
             is pad_id are ignored (None: none ignored); label_smoothing eps in [0, 1).
    Returns: (loss: float, dlogits (..., m, V)) with dlogits = (p_hat - q) / N_tokens at non-pad
             positions and 0 at pad positions. With no non-pad position the loss is 0.0.
    """
    logits = as_float(logits, "logits", 1)
    targets = as_tokens(targets, "targets", min_ndim=0)
    V = logits.shape[-1]
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets of shape {targets.shape} must match logits {logits.shape} without its last (vocabulary) axis")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must lie in [0, 1), got {label_smoothing}")
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    if np.any((targets[keep] < 0) | (targets[keep] >= V)):
        raise ValueError(f"targets hold ids outside [0, {V}) for logits of shape {logits.shape}")
    safe_targets = np.where(keep, targets, 0)
    q = np.eye(V)[safe_targets] * (1.0 - label_smoothing) + label_smoothing / V  # (..., m, V)
    logp = log_softmax(logits, axis=-1)
    n_tokens = int(keep.sum())
    if n_tokens == 0:
        return 0.0, np.zeros_like(logits)
    per_position = -np.sum(q * logp, axis=-1)  # (..., m)
    loss = float(np.sum(per_position * keep) / n_tokens)
    dlogits = (np.exp(logp) - q) * keep[..., None] / n_tokens
    return loss, dlogits


def token_accuracy(logits, targets, pad_id=None):
    """Fraction of non-pad positions where argmax(logits) equals the target."""
    targets = as_tokens(targets, "targets", min_ndim=0)
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    hits = (np.argmax(logits, axis=-1) == targets) & keep
    return float(hits.sum() / max(int(keep.sum()), 1))
