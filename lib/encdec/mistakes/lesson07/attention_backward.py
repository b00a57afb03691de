"""Exercise 7.4, attention_backward: the mistakes of scaled dot-product attention's backward pass."""

import numpy as np

from ...backward import softmax_backward as softmax_backward_
from .. import mistake


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


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
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
