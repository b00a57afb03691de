"""Backward passes of the building blocks, and a central-difference gradient checker.

Each function takes the upstream gradient `dout` (same shape as the forward output) and what
the forward pass saw, and returns the gradients of the inputs and parameters. Leading batch
dimensions `...` are allowed everywhere; parameter gradients are summed over them.
"""

import numpy as np

from ._shapes import as_float


def _sum_to(grad, shape):
    """Sum a broadcast gradient back down to `shape` (undo numpy broadcasting)."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def softmax_backward(dout, probs, axis=-1):
    """Backward of p = softmax(x): dx = p * (dout - sum(dout * p)) along `axis`.

    The Jacobian is diag(p) - p p^T; this applies its transpose without building it.
    """
    dout, probs = as_float(dout, "dout", 0), as_float(probs, "probs", 0)
    if dout.shape != probs.shape:
        raise ValueError(f"dout {dout.shape} and probs {probs.shape} must have the same shape")
    return probs * (dout - np.sum(dout * probs, axis=axis, keepdims=True))


def attention_backward(dout, Q, K, V, weights):
    """Backward of out = softmax(Q K^T / sqrt(d_k) + mask) V, given the forward's weights.

    Inputs:  dout (..., m, d_v); Q (..., m, d_k); K (..., n, d_k); V (..., n, d_v);
             weights (..., m, n) as returned by the forward (masked entries are 0, so the mask
             needs no gradient and is not needed here).
    Returns: (dQ, dK, dV) with the shapes of Q, K, V.
    """
    dout, Q, K, V, weights = (as_float(a, n, 2) for a, n in
                              zip((dout, Q, K, V, weights), ("dout", "Q", "K", "V", "weights")))
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(weights, -1, -2) @ dout  # (..., n, d_v)
    dweights = dout @ np.swapaxes(V, -1, -2)  # (..., m, n)
    dscores = softmax_backward(dweights, weights) * scale
    dQ = dscores @ K
    dK = np.swapaxes(dscores, -1, -2) @ Q
    return _sum_to(dQ, Q.shape), _sum_to(dK, K.shape), _sum_to(dV, V.shape)


def rms_norm_backward(dout, x, gamma, eps=1e-6):
    """Backward of y = x / rms(x) * gamma with rms(x) = sqrt(mean(x^2) + eps).

    Returns: (dx (..., d), dgamma (d,)).
    """
    dout, x, gamma = as_float(dout, "dout"), as_float(x, "x"), as_float(gamma, "gamma")
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    dxhat = dout * gamma
    dx = r * dxhat - x * r**3 * np.mean(dxhat * x, axis=-1, keepdims=True)
    return dx, dgamma


def linear_backward(dout, x, W):
    """Backward of y = x @ W + b.

    Inputs:  dout (..., d_out); x (..., d_in); W (d_in, d_out).
    Returns: (dx (..., d_in), dW (d_in, d_out), db (d_out,)).
    """
    dout, x, W = as_float(dout, "dout"), as_float(x, "x"), as_float(W, "W", 2)
    dx = dout @ W.T
    dW = x.reshape(-1, x.shape[-1]).T @ dout.reshape(-1, dout.shape[-1])
    db = dout.reshape(-1, dout.shape[-1]).sum(axis=0)
    return dx, dW, db


def gelu_backward(dout, x):
    """Backward of the tanh-form GELU, elementwise."""
    dout, x = as_float(dout, "dout", 0), as_float(x, "x", 0)
    c = np.sqrt(2.0 / np.pi)
    t = np.tanh(c * (x + 0.044715 * x**3))
    return dout * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x))


def dropout_backward(dout, keep, rate):
    """Backward of inverted dropout y = x * keep / (1 - rate): the same mask, the same scale.

    Inputs:  dout (...); keep the boolean mask the forward pass drew (shaped like dout), or None
             when nothing was dropped; rate in [0, 1).
    Returns: dx shaped like dout (dout itself when keep is None).
    """
    if keep is None:
        return dout
    return dout * keep / (1.0 - rate)


def numerical_gradient(f, x, h=1e-5):
    """Central differences: df/dx_i ~ (f(x + h e_i) - f(x - h e_i)) / (2h), for scalar f.

    `x` is a float64 array that f reads; it is perturbed in place and put back exactly.
    Returns: an array shaped like x.
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        raise ValueError(f"x must be a float64 numpy array that f reads, got {type(x).__name__}")
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    if not np.shares_memory(flat, x):
        raise ValueError("x must be contiguous so it can be perturbed in place")
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        f_plus = float(f())
        flat[i] = old - h
        f_minus = float(f())
        flat[i] = old
        gflat[i] = (f_plus - f_minus) / (2 * h)
    return grad


def relative_error(a, b):
    """||a - b|| / (||a|| + ||b||), between 0 and 1: 0 for equal arrays, 1 for opposite ones or when
    exactly one is zero, about 0.7 for unrelated ones of similar size."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"cannot compare gradients of shapes {a.shape} and {b.shape}")
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a) + np.linalg.norm(b), 1e-300))


def gradient_check(f, x, analytic, h=1e-5):
    """Compare an analytic gradient with central differences; returns the relative error of the two
    whole arrays (one number).

    In float64, for a smooth f: below about 1e-7 the analytic gradient is almost surely right; above
    1e-3 it is almost surely wrong.
    """
    return relative_error(analytic, numerical_gradient(f, x, h))
