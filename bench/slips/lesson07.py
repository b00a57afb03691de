"""Slips in Lesson 7: cross-entropy and its gradient, the numerical gradient, the backward passes of
softmax, attention and RMSNorm."""

import numpy as np

from encdec import softmax_backward  # noqa: F401  (a right Exercise 7.3; the checker of 7.4 swaps in the reference)

from . import slip


# -- 7.1 softmax_cross_entropy ---------------------------------------------------------------------------------
def _xent(logits, targets, pad_id, *, sign=1.0, divide=True, count_pads=False, zero_pads=True, grad_divide=True):
    z = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    V = z.shape[-1]
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    N = targets.size if count_pads else int(keep.sum())
    if int(keep.sum()) == 0:
        return 0.0, np.zeros_like(z)
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    y = np.eye(V)[np.where(keep, targets, 0)]
    total = -(y * log_p).sum(axis=-1)[keep].sum()
    loss = float(total / N) if divide else float(total)
    grad = sign * (np.exp(log_p) - y)
    if zero_pads:
        grad = grad * keep[..., None]
    return loss, (grad / N if (divide and grad_divide) else grad)


@slip("softmax_cross_entropy", "gradient_sign", "returns y - p_hat as the gradient",
      expect=("sign",))
def softmax_cross_entropy(logits, targets, pad_id=None):
    return _xent(logits, targets, pad_id, sign=-1.0)


@slip("softmax_cross_entropy", "sum_not_mean", "sums the loss and the gradient over the positions (no 1/N)",
      expect=("mean", "average", "divid", "/ n"))
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    return _xent(logits, targets, pad_id, divide=False)


@slip("softmax_cross_entropy", "pads_in_N", "divides by every position, pads included",
      expect=("pad",))
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    return _xent(logits, targets, pad_id, count_pads=True)


@slip("softmax_cross_entropy", "gradient_not_divided", "takes the mean for the loss but not for the gradient",
      expect=("divid", "/ n", "mean", "scale"))
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    return _xent(logits, targets, pad_id, grad_divide=False)


@slip("softmax_cross_entropy", "pad_gradient_kept", "ignores the pads in the loss but leaves p_hat - y at their rows",
      expect=("pad",))
def softmax_cross_entropy(logits, targets, pad_id=None):  # noqa: F811
    return _xent(logits, targets, pad_id, zero_pads=False)


# -- 7.2 numerical_gradient --------------------------------------------------------------------------------------
@slip("numerical_gradient", "forward_difference", "uses the one-sided (f(x + h) - f(x)) / h",
      expect=("central", "one-sided", "forward"))
def numerical_gradient(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        f0 = float(f())
        x[i] = old + h
        grad[i] = (float(f()) - f0) / h
        x[i] = old
    return grad


@slip("numerical_gradient", "not_restored", "never puts the entry back: x keeps old - h",
      expect=("restore", "put back", "unchanged", "as it was", "in place"))
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = float(f())
        x[i] = old - h
        grad[i] = (f_plus - float(f())) / (2 * h)
    return grad


@slip("numerical_gradient", "divided_by_h", "divides the central difference by h instead of 2h",
      expect=("2h", "2 h", "2 * h", "factor", "twice"))
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


@slip("numerical_gradient", "perturbs_a_copy", "perturbs a copy of x, which f never reads: every entry comes out 0",
      expect=("in place", "copy", "zero"))
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = (float(f()) - float(f())) / (2 * h)
    return grad


# -- 7.3 softmax_backward -------------------------------------------------------------------------------------------
@slip("softmax_backward", "diagonal_only", "keeps only the diagonal of the Jacobian: p (1 - p) dout",
      expect=("diagonal", "jacobian"))
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (1.0 - probs) * dout


@slip("softmax_backward", "axis_ignored", "sums <dout, p> over axis 0 whatever `axis` says",
      expect=("axis",))
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout * probs, axis=0, keepdims=True))


@slip("softmax_backward", "sign_flipped", "returns p * (<dout, p> - dout)",
      expect=("sign",))
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (np.sum(dout * probs, axis=axis, keepdims=True) - dout)


@slip("softmax_backward", "inner_term_missing", "returns p * dout, forgetting the <dout, p> term",
      expect=("term", "<dout, p>", "sum", "missing"))
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * dout


from encdec import softmax_backward  # noqa: E402,F811  (the right one again, for Exercise 7.4)


# -- 7.4 attention_backward -------------------------------------------------------------------------------------------
def _attention_backward(dout, Q, K, V, weights, *, scale_times=1, through_softmax=True):
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(weights, -1, -2) @ dout
    dweights = dout @ np.swapaxes(V, -1, -2)
    dscores = softmax_backward(dweights, weights, axis=-1) if through_softmax else dweights
    dscores = dscores * scale**scale_times
    return dscores @ K, np.swapaxes(dscores, -1, -2) @ Q, dV


@slip("attention_backward", "no_scale", "forgets the 1/sqrt(d_k) of the forward pass",
      expect=("sqrt(d_k)", "scale", "factor"))
def attention_backward(dout, Q, K, V, weights):
    return _attention_backward(dout, Q, K, V, weights, scale_times=0)


@slip("attention_backward", "scaled_twice", "applies 1/sqrt(d_k) twice (to the scores' gradient and to dQ, dK)",
      expect=("sqrt(d_k)", "scale", "factor", "twice"))
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    return _attention_backward(dout, Q, K, V, weights, scale_times=2)


@slip("attention_backward", "softmax_skipped", "passes dweights straight to the scores, skipping the softmax backward",
      expect=("softmax",))
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    return _attention_backward(dout, Q, K, V, weights, through_softmax=False)


@slip("attention_backward", "dK_not_transposed", "computes dK = dscores @ Q without transposing dscores",
      expect=("dK",), preserves_shape=False)
def attention_backward(dout, Q, K, V, weights):  # noqa: F811
    dQ, _, dV = _attention_backward(dout, Q, K, V, weights)
    dscores = softmax_backward(dout @ np.swapaxes(V, -1, -2), weights, axis=-1) / np.sqrt(Q.shape[-1])
    return dQ, dscores @ Q, dV


# -- 7.5 rms_norm_backward ---------------------------------------------------------------------------------------------
def _rms_backward(dout, x, gamma, eps, *, r_constant=False, with_gamma=True, with_eps=True, mean=True):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + (eps if with_eps else 0.0))
    g = dout * gamma if with_gamma else dout
    reduce = np.mean if mean else np.sum
    dx = r * g if r_constant else r * g - x * r**3 * reduce(g * x, axis=-1, keepdims=True)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    return dx, dgamma


@slip("rms_norm_backward", "r_constant", "treats r = 1/RMS(x) as a constant: dx = r * gamma * dout",
      expect=("constant", "depends", "term"))
def rms_norm_backward(dout, x, gamma, eps=1e-6):
    return _rms_backward(dout, x, gamma, eps, r_constant=True)


@slip("rms_norm_backward", "gamma_forgotten_in_dx", "forgets gamma in dx (g = dout instead of dout * gamma)",
      expect=("gamma", "gain"))
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    return _rms_backward(dout, x, gamma, eps, with_gamma=False)


@slip("rms_norm_backward", "eps_forgotten", "leaves eps out of r in the backward pass",
      expect=("eps",))
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    return _rms_backward(dout, x, gamma, eps, with_eps=False)


@slip("rms_norm_backward", "sum_not_mean", "uses the sum of g * x over the row, not its mean, in the second term",
      expect=("mean", "1/d", "sum", "factor"))
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    return _rms_backward(dout, x, gamma, eps, mean=False)


@slip("rms_norm_backward", "dgamma_not_summed", "returns dgamma per position, not summed over the leading axes",
      expect=("sum", "dgamma"), preserves_shape=False)
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    dx, _ = _rms_backward(dout, x, gamma, eps)
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return dx, dout * x * r
