"""Slips in Lesson 1: softmax, scaled dot-product attention, sinusoidal positions."""

import numpy as np

from . import slip


# -- 1.1 softmax ---------------------------------------------------------------------------------------
@slip("softmax", "axis_ignored", "normalises over axis 0 whatever `axis` says",
      expect=("axis",))
def softmax(x, axis=-1):  # noqa: F811
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


@slip("softmax", "mean_shift", "subtracts the row mean instead of the row maximum (overflows far from the mean)",
      expect=("max", "overflow"))
def softmax(x, axis=-1):  # noqa: F811
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.mean(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@slip("softmax", "global_max", "subtracts the maximum of the whole array, not of each row (underflow to 0/0)",
      expect=("max", "underflow", "each row", "per row"))
def softmax(x, axis=-1):  # noqa: F811
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)


@slip("softmax", "log_probabilities", "returns the log-softmax (log-probabilities), not the probabilities",
      expect=("log",))
def softmax(x, axis=-1):  # noqa: F811
    x = np.asarray(x, dtype=np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# -- 1.2 scaled_dot_product_attention ------------------------------------------------------------------
from encdec import softmax  # noqa: E402,F811  (a right softmax; the checker swaps in the reference anyway)

@slip("scaled_dot_product_attention", "divide_by_d_k", "divides the scores by d_k instead of sqrt(d_k)",
      expect=("sqrt(d_k)", "scale", "factor", "1/d_k"))
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


@slip("scaled_dot_product_attention", "sqrt_n", "scales by sqrt(n), the number of keys, instead of sqrt(d_k)",
      expect=("sqrt(d_k)", "scale", "factor"))
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


@slip("scaled_dot_product_attention", "softmax_over_queries", "takes the softmax over the query axis (-2)",
      expect=("axis", "quer"))
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-2)
    return weights @ V, weights


@slip("scaled_dot_product_attention", "zeroed_after_softmax",
      "zeroes the hidden weights after the softmax instead of adding the mask before it (rows no longer sum to 1)",
      expect=("before the softmax", "sum to 1", "renormal", "mask"))
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    weights = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    if mask is not None:
        weights = np.where(np.isneginf(mask), 0.0, weights)
    return weights @ V, weights


@slip("scaled_dot_product_attention", "returns_scores", "returns the scaled scores in place of the weights",
      expect=("weights", "softmax", "scores"))
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return softmax(scores, axis=-1) @ V, scores


@slip("scaled_dot_product_attention", "batched_K_T", "uses K.T, which reverses every axis of a batched K",
      expect=("swapaxes", "K.T", "transpos", "last two axes"), preserves_shape=False)
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


# -- 1.3 sinusoidal_positions --------------------------------------------------------------------------
def _angles(n, d, base=10000.0, first=0):
    pos = np.arange(first, first + n)[:, None]
    return pos / np.power(base, np.arange(0, d, 2) / d)


@slip("sinusoidal_positions", "sin_cos_swapped", "cosines in the even columns, sines in the odd ones",
      expect=("sin", "cos"))
def sinusoidal_positions(n, d):
    angles = _angles(n, d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.cos(angles)
    pe[:, 1::2] = np.sin(angles[:, : d // 2])
    return pe


@slip("sinusoidal_positions", "pair_index_exponent", "uses the pair index i, not 2i, in the exponent 10000^(2i/d)",
      expect=("2i", "exponent", "frequenc", "wavelength"))
def sinusoidal_positions(n, d):  # noqa: F811
    pos = np.arange(n)[:, None]
    angles = pos / np.power(10000.0, np.arange((d + 1) // 2) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return pe


@slip("sinusoidal_positions", "positions_from_1", "counts positions from 1 instead of 0",
      expect=("from 0", "start at 0", "starts at 0", "position 0", "off by one", "offset", "shifted"))
def sinusoidal_positions(n, d):  # noqa: F811
    angles = _angles(n, d, first=1)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return pe


@slip("sinusoidal_positions", "halves_not_interleaved", "puts all the sines in the first half and the cosines in the "
      "second, instead of interleaving them", expect=("interleav", "half", "halves", "even", "concatenat"))
def sinusoidal_positions(n, d):  # noqa: F811
    angles = _angles(n, d)
    return np.concatenate([np.sin(angles), np.cos(angles[:, : d // 2])], axis=1)


@slip("sinusoidal_positions", "base_1000", "uses 1000 instead of 10000 as the base of the wavelengths",
      expect=("10000", "base"))
def sinusoidal_positions(n, d):  # noqa: F811
    angles = _angles(n, d, base=1000.0)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return pe
