"""Lesson 01: softmax, scaled dot-product attention, sinusoidal positions."""

import numpy as np

from ..attention import softmax as _softmax
from . import mistake

softmax_ = _softmax  # the reference softmax, used by the attention mistakes


# -- Exercise 1.1 softmax ----------------------------------------------------------------------------
@mistake("softmax", "no_max_shift",
         "exp(x) overflows for large logits (exp(1000) = inf, and inf/inf = nan). Subtract the "
         "maximum along the axis first: softmax(x) = softmax(x - max(x)), and the largest exponent becomes exp(0) = 1.")
def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


@mistake("softmax", "axis_0",
         "the softmax runs over axis 0 (down the columns). Each row of scores is one query's "
         "distribution, so normalise along `axis` (the last axis by default).")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


@mistake("softmax", "ignores_axis",
         "the `axis` argument is ignored: the softmax always runs over the last axis. "
         "Pass `axis` to np.max and np.sum.")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


@mistake("softmax", "whole_array",
         "the sum runs over the whole array, so all entries together sum to 1 instead of each "
         "row. Sum along `axis` with keepdims=True.")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


@mistake("softmax", "no_keepdims",
         "the sum is taken without keepdims=True: the row sums of shape (m,) do not line up with "
         "the (m, n) array, so NumPy broadcasts them along the last axis (an error when m != n, "
         "wrong numbers when m == n). Keep the summed axis: np.sum(e, axis=axis, keepdims=True).")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)


@mistake("softmax", "global_max",
         "the maximum is taken over the whole array, not along `axis`. Mathematically fine, but a "
         "row far below the global maximum underflows to all zeros and 0/0 = nan. Use "
         "np.max(x, axis=axis, keepdims=True).")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)


@mistake("softmax", "min_shift",
         "the minimum is subtracted instead of the maximum. Subtracting any constant leaves the softmax "
         "unchanged, but only the maximum keeps every exponent at most 0: after x - min, exp() of large "
         "logits overflows to inf and inf / inf is nan.")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.min(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@mistake("softmax", "divided_by_max",
         "the exponentials are divided by their maximum instead of their sum, so the largest entry of each "
         "row becomes 1 and the row sums to more than 1. Divide by np.sum(e, axis=axis, keepdims=True).")
def softmax(x, axis=-1):  # noqa: F811
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.max(e, axis=axis, keepdims=True)


# -- Exercise 1.2 scaled dot-product attention ---------------------------------------------------------
@mistake("scaled_dot_product_attention", "no_scale",
         "the scores are not divided by sqrt(d_k). The spread (standard deviation) of dot products of "
         "d_k-dimensional vectors grows like sqrt(d_k), which saturates the softmax; scale the scores "
         "by 1/sqrt(d_k).")
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "scale_multiplied",
         "the scores are multiplied by sqrt(d_k) instead of divided by it.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) * np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "scale_by_d_k",
         "the scores are divided by d_k instead of sqrt(d_k): the variance of a dot product grows "
         "like d_k, so its standard deviation, the right scale, grows like sqrt(d_k).")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "softmax_over_queries",
         "the softmax runs over the query axis (axis=-2). Each query needs a distribution over "
         "the keys: softmax along the last axis, so every row of weights sums to 1.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-2)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "mask_after_softmax",
         "the mask is added after the softmax. Add it to the scores before: exp(-inf) = 0 is what "
         "gives a hidden key exactly zero weight while the visible ones still sum to 1.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    if mask is not None:
        weights = weights + mask
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "mask_ignored",
         "the `mask` argument is never used, so hidden keys (future tokens, padding) still get weight.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "q_at_k",
         "the scores are Q @ K instead of Q @ K^T. Q is (m, d_k) and K is (n, d_k): transpose the "
         "last two axes of K (np.swapaxes(K, -1, -2), or K.T when unbatched) to get (m, n) scores.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ K / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "wrong_order",
         "the outputs come back in the wrong order. Return (output, weights): output first.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights, weights @ V


@mistake("scaled_dot_product_attention", "transpose_only_2d",
         "K.T reverses *all* axes of a batched K (B, n, d_k) -> (d_k, n, B). Swap only the last two: "
         "np.swapaxes(K, -1, -2), which works for any number of leading axes.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "scale_by_num_keys",
         "the scores are divided by sqrt(n), the number of keys (K.shape[-2]), instead of sqrt(d_k), the "
         "width of a query and a key (Q.shape[-1]).")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("scaled_dot_product_attention", "mask_subtracted",
         "the mask is subtracted from the scores. Hidden keys hold -inf, so scores - mask gives them +inf: "
         "all the weight, or nan. Add the mask: scores + mask.")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores - mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


# -- Exercise 1.3 sinusoidal positions ------------------------------------------------------------------
def _angles(n, d, pairs):
    pos = np.arange(n)[:, None]
    return pos / np.power(10000.0, pairs / d)


@mistake("sinusoidal_positions", "sin_cos_swapped",
         "sine and cosine are swapped: even columns (2i) hold the sine, odd columns (2i+1) the cosine.")
def sinusoidal_positions(n, d):
    pe = np.zeros((n, d))
    two_i = np.arange(0, d, 2)
    pe[:, 0::2] = np.cos(_angles(n, d, two_i))
    pe[:, 1::2] = np.sin(_angles(n, d, two_i))[:, : d // 2]
    return pe


@mistake("sinusoidal_positions", "column_index_exponent",
         "each column j uses its own angle pos / 10000^(j/d). The pair of columns (2i, 2i+1) must "
         "share one angle, pos / 10000^(2i/d) (one frequency, 1/10000^(2i/d)): that is what makes "
         "PE[pos + k] a rotation of PE[pos].")
def sinusoidal_positions(n, d):  # noqa: F811
    j = np.arange(d)
    angles = _angles(n, d, j)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


@mistake("sinusoidal_positions", "halves_not_interleaved",
         "all sines come first and all cosines after ([sin | cos]); the course interleaves them: "
         "column 2i is sin, column 2i+1 is cos of the same angle.")
def sinusoidal_positions(n, d):  # noqa: F811
    angles = _angles(n, d, np.arange(0, d, 2))
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)[:, :d]


@mistake("sinusoidal_positions", "positions_from_one",
         "positions start at 1. The first token is position 0, so PE[0] = [0, 1, 0, 1, ...].")
def sinusoidal_positions(n, d):  # noqa: F811
    pos = np.arange(1, n + 1)[:, None]
    angles = pos / np.power(10000.0, np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)[:, : d // 2]
    return pe


@mistake("sinusoidal_positions", "multiplied_frequency",
         "the position is multiplied by 10000^(2i/d) instead of divided by it, so the frequencies "
         "grow instead of shrinking along the columns.")
def sinusoidal_positions(n, d):  # noqa: F811
    pos = np.arange(n)[:, None]
    angles = pos * np.power(10000.0, np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)[:, : d // 2]
    return pe


@mistake("sinusoidal_positions", "base_1000",
         "the base is 1000 instead of 10000: the angle is pos / 10000^(2i/d). The base sets the longest "
         "wavelength, and so how many positions stay distinguishable.")
def sinusoidal_positions(n, d):  # noqa: F811
    angles = np.arange(n)[:, None] / np.power(1000.0, np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)[:, : d // 2]
    return pe


@mistake("sinusoidal_positions", "exponent_without_2",
         "the exponent is i/d instead of 2i/d, with i the index of the pair of columns (2i, 2i+1): "
         "the frequencies fall only half as fast across the columns. Column 2i's frequency is "
         "1/10000^(2i/d): the exponent counts columns, not pairs.")
def sinusoidal_positions(n, d):  # noqa: F811
    angles = np.arange(n)[:, None] / np.power(10000.0, np.arange(0, d, 2) / 2 / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)[:, : d // 2]
    return pe


@mistake("sinusoidal_positions", "exponent_over_d_minus_1",
         "the exponent is 2i/(d-1) instead of 2i/d. The frequency of the pair of columns (2i, 2i+1) is "
         "1/10000^(2i/d), with d itself in the denominator.")
def sinusoidal_positions(n, d):  # noqa: F811
    angles = np.arange(n)[:, None] / np.power(10000.0, np.arange(0, d, 2) / max(d - 1, 1))
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)[:, : d // 2]
    return pe
