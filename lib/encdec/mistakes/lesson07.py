"""Lesson 07: softmax_cross_entropy, numerical_gradient, softmax_backward, attention_backward,
rms_norm_backward."""

import numpy as np

from ..backward import softmax_backward as softmax_backward_
from ..loss import log_softmax as log_softmax_
from . import mistake


def _targets_one_hot(logits, targets, pad_id):
    """(log p (..., m, V), one-hot y (..., m, V), keep (..., m)) as a correct implementation has them."""
    logits = np.asarray(logits, dtype=np.float64)
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    y = np.eye(logits.shape[-1])[np.where(keep, targets, 0)]
    return log_softmax_(logits), y, keep


# -- Exercise 7.1 softmax_cross_entropy ---------------------------------------------------------------------
# Listed first: with no real token every other mistake divides by zero as well, and this is
# the misconception such a batch shows.
@mistake("softmax_cross_entropy", "no_tokens_nan",
         "with no non-pad target at all, N = 0 and the mean is 0/0 = nan. Return a loss of 0.0 and a "
         "zero gradient in that case (there is nothing to learn from).")
def softmax_cross_entropy(logits, targets, pad_id=None):
    logp, y, keep = _targets_one_hot(logits, targets, pad_id)
    n = keep.sum()
    loss = float(np.sum(-np.sum(y * logp, axis=-1) * keep) / n)
    return loss, (np.exp(logp) - y) * keep[..., None] / n


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


# -- Exercise 7.2 numerical_gradient ------------------------------------------------------------------------
@mistake("numerical_gradient", "forward_difference",
         "this is a forward difference (f(x + h) - f(x)) / h, whose error shrinks only like h. Use the "
         "central difference (f(x + h e_i) - f(x - h e_i)) / (2h): its error shrinks like h².")
def numerical_gradient(f, x, h=1e-5):
    grad = np.zeros_like(x)
    f0 = float(f())
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        grad[i] = (float(f()) - f0) / h
        x[i] = old
    return grad


@mistake("numerical_gradient", "divided_by_h",
         "the central difference is divided by h instead of 2h, so every entry is twice too large: the "
         "two evaluations are 2h apart.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = float(f())
        x[i] = old - h
        f_minus = float(f())
        x[i] = old
        grad[i] = (f_plus - f_minus) / h
    return grad


@mistake("numerical_gradient", "not_restored",
         "x[i] is not put back after it is perturbed, so each later entry is measured at a shifted point "
         "and x comes back changed. Save old = x[i] and restore x[i] = old after the two evaluations.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = float(f())
        x[i] = old - h
        f_minus = float(f())
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad


@mistake("numerical_gradient", "perturbs_a_copy",
         "a copy of x is perturbed, but f reads x itself, so f never sees the change and every entry "
         "is 0. Perturb x in place (x[i] = old + h), call f(), then restore x[i] = old.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp = x.copy()
        xp[i] += h
        f_plus = float(f())
        xp[i] -= 2 * h
        f_minus = float(f())
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad


@mistake("numerical_gradient", "all_entries_at_once",
         "all entries of x are moved together, which measures one directional derivative (the sum of "
         "the gradient's entries), not each entry. Perturb one entry at a time, e_i being the i-th unit vector.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    old = x.copy()
    x += h
    f_plus = float(f())
    x[...] = old - h
    f_minus = float(f())
    x[...] = old
    return np.full_like(x, (f_plus - f_minus) / (2 * h))


@mistake("numerical_gradient", "ignores_h",
         "the step h is fixed at 1e-5 instead of using the `h` argument. Use the h the caller passes.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    step = 1e-5
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + step
        f_plus = float(f())
        x[i] = old - step
        f_minus = float(f())
        x[i] = old
        grad[i] = (f_plus - f_minus) / (2 * step)
    return grad


@mistake("numerical_gradient", "passes_x_to_f",
         "f takes no arguments: it reads the array x itself. Change x in place (x[i] = old + h), call "
         "f(), and put x[i] back afterwards.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = (float(f(xp)) - float(f(xm))) / (2 * h)
    return grad


# -- Exercise 7.3 softmax_backward ---------------------------------------------------------------------------
@mistake("softmax_backward", "diagonal_only",
         "only the diagonal of the softmax Jacobian is used (dx = p(1 - p) dout). Every output depends on "
         "every input: J = diag(p) - p pᵀ, so dx = p * (dout - sum(dout * p)) along the axis.")
def softmax_backward(dout, probs, axis=-1):
    return probs * (1.0 - probs) * dout


@mistake("softmax_backward", "no_leading_p",
         "the factor p in front is missing: dx = dout - sum(dout * p). Each row of the Jacobian is "
         "p_j (δ_jk - p_k), so the whole bracket is multiplied by p: dx = p * (dout - sum(dout * p)).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return dout - np.sum(dout * probs, axis=axis, keepdims=True)


@mistake("softmax_backward", "unweighted_sum",
         "the sum is not weighted by p: dx = p * (dout - sum(dout)). The subtracted term is the "
         "p-weighted average of dout, sum(dout * p).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout, axis=axis, keepdims=True))


@mistake("softmax_backward", "sign_flipped",
         "the sign is flipped: dx = p * (sum(dout * p) - dout). It is p * (dout - sum(dout * p)): "
         "raising an input raises its own probability.")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (np.sum(dout * probs, axis=axis, keepdims=True) - dout)


@mistake("softmax_backward", "ignores_axis",
         "the `axis` argument is ignored: the sum always runs over the last axis. Sum along `axis`, "
         "the axis the forward softmax normalised.")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout * probs, axis=-1, keepdims=True))


@mistake("softmax_backward", "no_keepdims",
         "the sum is taken without keepdims=True, so it does not line up with the array it is "
         "subtracted from (an error, or wrong numbers when the shapes happen to broadcast). Use "
         "np.sum(dout * probs, axis=axis, keepdims=True).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout * probs, axis=axis))


# -- Exercise 7.4 attention_backward -------------------------------------------------------------------------
def _T(a):
    return np.swapaxes(a, -1, -2)


@mistake("attention_backward", "no_scale",
         "the gradient of the scores is not multiplied by 1/sqrt(d_k). The forward pass divided the "
         "scores by sqrt(d_k), so the chain rule multiplies their gradient by 1/sqrt(d_k) too.")
def attention_backward(dout, Q, K, V, weights):
    dV = _T(weights) @ dout
    dscores = softmax_backward_(dout @ _T(V), weights)
    return dscores @ K, _T(dscores) @ Q, dV


@mistake("attention_backward", "scale_multiplied",
         "the gradient of the scores is multiplied by sqrt(d_k) instead of 1/sqrt(d_k): the forward "
         "pass divided by sqrt(d_k), and the backward pass applies the same factor.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    dV = _T(weights) @ dout
    dscores = softmax_backward_(dout @ _T(V), weights) * np.sqrt(Q.shape[-1])
    return dscores @ K, _T(dscores) @ Q, dV


@mistake("attention_backward", "softmax_skipped",
         "the softmax is skipped in the backward pass: the gradient of the weights, dout @ V^T, is scaled by "
         "1/sqrt(d_k) and used as the gradient of the scores. The weights are softmax(scores): pass the "
         "weights' gradient g back through the softmax first, p * (g - sum(g * p)) along the key axis.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dscores = dout @ _T(V) * scale
    return dscores @ K, _T(dscores) @ Q, _T(weights) @ dout


@mistake("attention_backward", "diagonal_softmax",
         "the softmax backward uses only the Jacobian's diagonal, p(1 - p) g, where g = dout @ V^T is the "
         "gradient of the weights. Use the full Jacobian-vector product p * (g - sum(g * p)) along the key axis.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dscores = weights * (1.0 - weights) * (dout @ _T(V)) * scale
    return dscores @ K, _T(dscores) @ Q, _T(weights) @ dout


@mistake("attention_backward", "wrong_order",
         "the gradients come back in the wrong order. Return (dQ, dK, dV), in the order of the inputs Q, K, V.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dscores = softmax_backward_(dout @ _T(V), weights) * scale
    return _T(dscores) @ Q, dscores @ K, _T(weights) @ dout


@mistake("attention_backward", "dV_not_transposed",
         "dV is computed as weights @ dout. With out = A V, the gradient for V is Aᵀ dout: (n, m) "
         "times (m, d_v) gives (n, d_v), V's shape. Transpose the last two axes of the weights.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dscores = softmax_backward_(dout @ _T(V), weights) * scale
    return dscores @ K, _T(dscores) @ Q, weights @ dout


@mistake("attention_backward", "transpose_only_2d",
         ".T reverses *all* axes of a batched array. Transpose only the last two: "
         "np.swapaxes(a, -1, -2).")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dscores = softmax_backward_(dout @ V.T, weights) * scale
    return dscores @ K, dscores.T @ Q, weights.T @ dout


# -- Exercise 7.5 rms_norm_backward --------------------------------------------------------------------------
@mistake("rms_norm_backward", "rms_treated_as_constant",
         "1/rms(x) is treated as a constant, so dx = gamma * dout / rms misses a term. The rms depends "
         "on x too: dx = r ĝ - x r³ mean(ĝ x) along the last axis, with ĝ = dout * gamma and r = 1/rms(x).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    return r * dout * gamma, dgamma


@mistake("rms_norm_backward", "dgamma_not_summed",
         "dgamma keeps one row per position. gamma is shared by every position, so its gradient is the "
         "sum over all leading axes: dgamma has shape (d,), like gamma.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    return r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True), dout * x * r


@mistake("rms_norm_backward", "dgamma_unnormalised",
         "dgamma sums dout * x. The gain multiplies the *normalised* x, so dgamma = sum(dout * x / rms(x)) "
         "over all positions.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "gamma_forgotten",
         "gamma is left out of dx. The output is gamma * x / rms(x), so the gradient reaching the "
         "normalised x is dout * gamma; use it in both terms of dx.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dx = r * dout - x * r**3 * np.mean(dout * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "sum_instead_of_mean",
         "the second term uses a sum over the last axis where the mean belongs: rms(x)² is the *mean* of "
         "x², so its derivative brings a 1/d. Use np.mean(g * x, axis=-1, keepdims=True).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    dx = r * g - x * r**3 * np.sum(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "eps_left_out",
         "eps is left out of the rms: r = 1/sqrt(mean(x²)). The forward pass used sqrt(mean(x²) + eps), "
         "and the backward pass must use the same r (it matters when x is near zero).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True))
    g = dout * gamma
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "eps_argument_ignored",
         "eps is fixed at 1e-6 instead of using the `eps` argument. Use the eps the caller passes, the "
         "one the forward pass used.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)
    g = dout * gamma
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


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


@mistake("numerical_gradient", "backward_difference",
         "this is the one-sided difference (f(x) - f(x - h)) / h: its error shrinks like h, not h². Use the "
         "central difference (f(x + h) - f(x - h)) / (2h), restoring x afterwards.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        base = float(f())
        flat[i] = old - h
        g[i] = (base - float(f())) / h
        flat[i] = old
    return grad


@mistake("numerical_gradient", "plus_and_minus_swapped",
         "the difference is taken the wrong way round, (f(x - h) - f(x + h)) / (2h): every entry has the "
         "wrong sign. The slope is (f(x + h) - f(x - h)) / (2h).")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        plus = float(f())
        flat[i] = old - h
        minus = float(f())
        flat[i] = old
        g[i] = (minus - plus) / (2 * h)
    return grad


@mistake("softmax_backward", "sums_probabilities_only",
         "the inner term sums p alone, sum(p) = 1, instead of ⟨dout, p⟩ = sum(dout * p): dx = p (dout - 1) "
         "is wrong. dx = p * (dout - sum(dout * p, axis, keepdims=True)).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(probs, axis=axis, keepdims=True))


@mistake("softmax_backward", "mean_instead_of_sum",
         "the inner term is a mean, mean(dout * p), not the sum ⟨dout, p⟩ = sum(dout * p): the Jacobian "
         "diag(p) - p pᵀ gives the full sum along the axis.")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.mean(dout * probs, axis=axis, keepdims=True))


@mistake("attention_backward", "scale_applied_twice",
         "dQ and dK come out divided by d_k where the forward pass divided the scores by sqrt(d_k): the factor "
         "is applied twice (to the gradient of the scores, then again in dQ and dK), or the gradient of the "
         "scores is divided by d_k itself. The scores were scaled once, by 1/sqrt(d_k): scale their gradient "
         "once, by the same factor.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dV = _T(weights) @ dout
    dscores = softmax_backward_(dout @ _T(V), weights) * scale
    return dscores @ K * scale, _T(dscores) @ Q * scale, dV


@mistake("attention_backward", "dV_scaled",
         "dV is divided by sqrt(d_k) too. The 1/sqrt(d_k) scales the scores, not the values: dV = weightsᵀ "
         "dout, unscaled; only the gradient of the scores carries the factor.")
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dscores = softmax_backward_(dout @ _T(V), weights) * scale
    return dscores @ K, _T(dscores) @ Q, _T(weights) @ dout * scale


@mistake("rms_norm_backward", "second_term_without_gamma",
         "the second term of dx uses dout where dx̂ = dout * gamma belongs: - x r³ mean(dx̂ · x). The "
         "gradient reaching x̂ is dout * gamma in both terms.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    return r * dout * gamma - x * r**3 * np.mean(dout * x, axis=-1, keepdims=True), dgamma


@mistake("rms_norm_backward", "r_squared_in_second_term",
         "the second term uses r², not r³: differentiating r = (mean(x²) + eps)^(-1/2) gives "
         "-r³ x / d, so dx = r dx̂ - x r³ mean(dx̂ · x).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    dxhat = dout * gamma
    return r * dxhat - x * r**2 * np.mean(dxhat * x, axis=-1, keepdims=True), dgamma
