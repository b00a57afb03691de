"""Lesson 02: RMSNorm, GELU, the padding mask, multi-head attention, the feed-forward network and
the pre-norm encoder block.

Mistakes that need an earlier exercise call the reference under a trailing-underscore name
(`softmax_`, `rms_norm_`, `gelu_`, ...), so that pasting one into a notebook never replaces the
student's own function of the plain name.
"""

import math

import numpy as np

from ..attention import create_causal_mask as create_causal_mask_
from ..attention import softmax as softmax_
from ..layers import gelu as gelu_
from ..layers import rms_norm as rms_norm_
from . import mistake

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _split(x, n_heads):
    """(..., T, d_model) -> (..., h, T, d_k), written out here (the reference's is off limits)."""
    *lead, T, d = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d // n_heads), -2, -3)


def _merge(x):
    """(..., h, T, d_k) -> (..., T, h * d_k)."""
    x = np.swapaxes(x, -2, -3)
    *lead, T, h, d_k = x.shape
    return x.reshape(*lead, T, h * d_k)


# -- Exercise 2.1 rms_norm -----------------------------------------------------------------------------
@mistake("rms_norm", "layer_norm",
         "this is LayerNorm: it subtracts the mean and divides by the standard deviation. RMSNorm "
         "does not centre: divide x by sqrt(mean(x**2) + eps) along the last axis, then multiply by gamma.")
def rms_norm(x, gamma, eps=1e-6):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma


@mistake("rms_norm", "no_sqrt",
         "x is divided by the mean square, not by its square root. RMS means root-mean-square: "
         "divide by sqrt(mean(x**2) + eps).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


@mistake("rms_norm", "gamma_forgotten",
         "the gain gamma is never applied. After dividing by the RMS, multiply by gamma: it is the "
         "[LEARNED] per-feature scale that lets the model undo the normalisation where it helps.")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


@mistake("rms_norm", "eps_ignored",
         "eps is never used. For an all-zero vector the RMS is 0 and 0/0 gives nan; a near-zero "
         "vector is blown up to unit size, noise included. Add eps inside the square root: "
         "sqrt(mean(x**2) + eps).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) * gamma


@mistake("rms_norm", "eps_outside_sqrt",
         "eps is added after the square root: sqrt(mean(x**2)) + eps. The course (like T5 and "
         "Llama) adds it inside: sqrt(mean(x**2) + eps). The two differ for small inputs.")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps) * gamma


@mistake("rms_norm", "whole_array",
         "the mean of x**2 is taken over the whole array. Each token's vector is normalised on its "
         "own: np.mean(x**2, axis=-1, keepdims=True).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x) + eps) * gamma


@mistake("rms_norm", "std_not_rms",
         "x is divided by its standard deviation (np.std subtracts the mean first). RMSNorm uses the "
         "root of the plain mean square, with no mean subtracted: sqrt(mean(x**2) + eps).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps) * gamma


@mistake("rms_norm", "mean_abs",
         "x is divided by the mean of |x| instead of the root mean square sqrt(mean(x^2) + eps). RMSNorm "
         "squares first, averages, then takes the square root.")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.mean(np.abs(x), axis=-1, keepdims=True) + eps) * gamma


@mistake("rms_norm", "sum_not_mean",
         "the squares are summed instead of averaged, so x is divided by its length sqrt(sum(x^2)), which "
         "grows with d_model. RMSNorm takes the mean: np.mean(x**2, axis=-1, keepdims=True).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps) * gamma


# -- Exercise 2.2 gelu ---------------------------------------------------------------------------------
@mistake("gelu", "relu",
         "this is ReLU (max(0, x)). GELU is smooth and lets small negative inputs through a little: "
         "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")
def gelu(x):
    return np.maximum(0.0, x)


@mistake("gelu", "sigmoid_gelu",
         "this is the sigmoid approximation x * sigmoid(1.702 x). The course uses the tanh form: "
         "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")
def gelu(x):  # noqa: F811
    return x / (1.0 + np.exp(-1.702 * x))


@mistake("gelu", "erf_gelu",
         "this is the exact GELU, x * Phi(x) with the error function, not the tanh form the exercise asks "
         "for (the form of GPT-2 and of the course's models). The two differ by up to 5e-4, far more than the "
         "test's tolerance: write 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + _erf(np.asarray(x, dtype=np.float64) / np.sqrt(2.0)))


@mistake("gelu", "cube_as_square",
         "the correction term is 0.044715 x^2; it is 0.044715 x^3 (cubed, so it keeps the sign of x).")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**2)))


@mistake("gelu", "no_sqrt_2_over_pi",
         "the factor sqrt(2/pi) inside the tanh is missing: tanh(sqrt(2/pi) (x + 0.044715 x^3)).")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(x + 0.044715 * x**3))


@mistake("gelu", "cdf_only",
         "this returns only the gate 0.5 (1 + tanh(...)), a number between 0 and 1. GELU multiplies "
         "the input by it: 0.5 x (1 + tanh(...)).")
def gelu(x):  # noqa: F811
    return 0.5 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


@mistake("gelu", "minus_cubic_term",
         "the cubic term is subtracted: the tanh form reads tanh(sqrt(2/pi) (x + 0.044715 x^3)), with a plus.")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x - 0.044715 * x ** 3)))


@mistake("gelu", "no_half",
         "the factor 0.5 is missing: GELU is 0.5 x (1 + tanh(...)), x times a number between 0 and 1. "
         "Without it, large positive inputs come out doubled.")
def gelu(x):  # noqa: F811
    return x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


# -- Exercise 2.3 padding_mask -------------------------------------------------------------------------
@mistake("padding_mask", "boolean",
         "the mask is boolean (True at pads). Masks in this course are additive, added to the "
         "scores: 0.0 where a key is visible and -inf where it is hidden. Use np.where(tokens == pad_id, -np.inf, 0.0).")
def padding_mask(tokens, pad_id):
    return (np.asarray(tokens) == pad_id)[..., None, None, :]


@mistake("padding_mask", "inverted",
         "the mask is inverted: it hides the real tokens and shows the pads. -inf goes where "
         "tokens == pad_id, 0.0 everywhere else.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, 0.0, -np.inf)[..., None, None, :]


@mistake("padding_mask", "no_new_axes",
         "the mask has shape (..., n), which lines up with the scores' last axis but not with their "
         "batch axis: (B, n) against scores (B, h, m, n) pairs batch row b with query row b. Add "
         "two axes before the last: mask[..., None, None, :] has shape (..., 1, 1, n).")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)


@mistake("padding_mask", "one_new_axis",
         "the mask has shape (..., 1, n): enough for single-head scores (B, m, n), but against "
         "multi-head scores (B, h, m, n) the batch axis lines up with the heads. Return shape "
         "(..., 1, 1, n): one axis for the heads, one for the queries.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)[..., None, :]


@mistake("padding_mask", "hides_queries",
         "the pads are hidden as queries (rows), shape (..., 1, n, 1). A pad must never be looked "
         "at, so hide it as a key: a column of the scores, shape (..., 1, 1, n).")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)[..., None, :, None]


@mistake("padding_mask", "large_negative",
         "pads get a large negative number (like -1e9) instead of -inf, which the exercise asks for. "
         "The difference shows where every key is a pad: with -1e9 such a row gets the softmax of its raw "
         "scores, weight on the pads, instead of zeros; and the course's masks, which later exercises add "
         "to yours, are exactly 0.0 and -np.inf. Use -np.inf.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -1e9, 0.0)[..., None, None, :]


@mistake("padding_mask", "multiplicative",
         "this is a multiplicative 1/0 mask (1 to keep, 0 to hide). Masks here are added to the "
         "scores before the softmax: 0.0 to keep, -inf to hide, so exp(-inf) = 0.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, 0.0, 1.0)[..., None, None, :]


@mistake("padding_mask", "pad_id_ignored",
         "the pad id is taken to be 0 whatever `pad_id` says. Compare the tokens with the "
         "`pad_id` argument: vocabularies put padding at different ids.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == 0, -np.inf, 0.0)[..., None, None, :]


@mistake("padding_mask", "plus_inf",
         "the pads get +inf instead of -inf. Added to a score, +inf gives that key all the weight (and "
         "inf - inf is nan in the softmax); a hidden key gets -inf, so that exp(-inf) = 0.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, np.inf, 0.0)[..., None, None, :]


@mistake("padding_mask", "minus_one",
         "the pads get -1.0. Added to a score, -1 only lowers a pad's weight a little; a hidden key must "
         "get -inf, so that exp(-inf) = 0 gives it exactly zero weight.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -1.0, 0.0)[..., None, None, :]


# -- Exercise 2.4 MultiHeadAttention.__call__ ----------------------------------------------------------
@mistake("MultiHeadAttention", "split_without_transpose",
         "the heads are split by a bare reshape, (..., T, d_model) -> (..., h, T, d_k). That "
         "reshuffles numbers across positions: head 0 gets the first T*d_k numbers of the whole "
         "matrix, not the first d_k features of every token. Reshape to (..., T, h, d_k), then swap "
         "the T and h axes.")
def __call__(self, query_input, key_value_input=None, mask=None):
    if key_value_input is None:
        key_value_input = query_input
    h, d_k = self.n_heads, self.d_k

    def split(x):
        return x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)

    Q = split(query_input @ self.W_q)
    K = split(key_value_input @ self.W_k)
    V = split(key_value_input @ self.W_v)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("MultiHeadAttention", "merge_without_transpose",
         "the heads are merged by a bare reshape, (..., h, T, d_k) -> (..., T, d_model). Undo the "
         "split in reverse: swap the h and T axes back to (..., T, h, d_k) first, then reshape.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    heads = weights @ V
    return heads.reshape(*heads.shape[:-3], heads.shape[-2], self.d_model) @ self.W_o, weights


@mistake("MultiHeadAttention", "scale_by_d_model",
         "the scores are divided by sqrt(d_model). Each head compares vectors of width d_k = "
         "d_model / h, so divide by sqrt(d_k), the width of one head.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_model)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("MultiHeadAttention", "no_output_projection",
         "the output projection W_o is missing. After merging the heads, multiply by W_o: it is "
         "what mixes the heads' results (each head alone only filled its own d_k columns).")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V), weights


@mistake("MultiHeadAttention", "key_value_input_ignored",
         "keys and values are always computed from query_input, so cross-attention silently "
         "becomes self-attention. When key_value_input is given, K and V come from it "
         "(and Q from query_input); only when it is None does it default to query_input.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(query_input @ self.W_k, self.n_heads)
    V = _split(query_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("MultiHeadAttention", "mask_ignored",
         "the `mask` argument is never used, so padding keys still receive weight. Add the mask "
         "to every head's scores, before the softmax.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k), axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("MultiHeadAttention", "one_big_head",
         "there is a single head of width d_model: the heads were never split. Cut Q, K and V into "
         "h heads of width d_k = d_model / h, attend in each head separately (scaling by sqrt(d_k)), "
         "then merge.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q, K, V = query_input @ self.W_q, key_value_input @ self.W_k, key_value_input @ self.W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V @ self.W_o, weights


@mistake("MultiHeadAttention", "weights_averaged",
         "the returned weights are averaged over the heads, shape (..., m, n). Return every head's "
         "weights, shape (..., h, m, n): later lessons draw them head by head.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights.mean(axis=-3)


@mistake("MultiHeadAttention", "array_truth_value",
         "`key_value_input or query_input` (or `if key_value_input:`) asks NumPy for the truth value of "
         "a whole array, which raises ValueError as soon as an array is passed. Test for the default "
         "explicitly: `if key_value_input is None: key_value_input = query_input`.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    key_value_input = key_value_input or query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("MultiHeadAttention", "W_q_transposed",
         "the queries are made with W_q transposed, query_input @ W_q.T. W_q is square, so every shape "
         "still fits: weights are stored as (inputs, outputs) and used as x @ W_q.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q.T, self.n_heads)
    K = _split(key_value_input @ self.W_k, self.n_heads)
    V = _split(key_value_input @ self.W_v, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


@mistake("MultiHeadAttention", "W_k_W_v_swapped",
         "the keys are made with W_v and the values with W_k. Each projection has its own [LEARNED] "
         "matrix: K = key_value_input @ W_k, V = key_value_input @ W_v.")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    if key_value_input is None:
        key_value_input = query_input
    Q = _split(query_input @ self.W_q, self.n_heads)
    K = _split(key_value_input @ self.W_v, self.n_heads)
    V = _split(key_value_input @ self.W_k, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return _merge(weights @ V) @ self.W_o, weights


# -- Exercise 2.5 FeedForward.__call__ -----------------------------------------------------------------
@mistake("FeedForward", "relu",
         "the hidden layer uses ReLU. This course's feed-forward network uses GELU between the two "
         "linear maps: gelu(x @ W1 + b1) @ W2 + b2.")
def __call__(self, x):
    return np.maximum(0.0, x @ self.W1 + self.b1) @ self.W2 + self.b2


@mistake("FeedForward", "no_activation",
         "there is no activation between the two linear maps, so the whole network collapses to one "
         "linear map x @ (W1 W2) + const. Apply gelu to x @ W1 + b1.")
def __call__(self, x):  # noqa: F811
    return (x @ self.W1 + self.b1) @ self.W2 + self.b2


@mistake("FeedForward", "b1_forgotten",
         "the first bias b1 is missing: the hidden layer is gelu(x @ W1 + b1).")
def __call__(self, x):  # noqa: F811
    return gelu_(x @ self.W1) @ self.W2 + self.b2


@mistake("FeedForward", "b2_forgotten",
         "the second bias b2 is missing: the output is gelu(x @ W1 + b1) @ W2 + b2.")
def __call__(self, x):  # noqa: F811
    return gelu_(x @ self.W1 + self.b1) @ self.W2


@mistake("FeedForward", "activation_on_output",
         "GELU is also applied to the output. The activation sits only between the two linear maps; "
         "the output goes into a residual sum and must be free to take any sign.")
def __call__(self, x):  # noqa: F811
    return gelu_(gelu_(x @ self.W1 + self.b1) @ self.W2 + self.b2)


@mistake("FeedForward", "residual_inside",
         "the network adds its input back, x + ffn(x). The residual belongs to the block (Exercise 2.6), "
         "which adds the feed-forward output to x itself: FeedForward returns gelu(x @ W1 + b1) @ W2 + b2 alone.")
def __call__(self, x):  # noqa: F811
    return x + gelu_(x @ self.W1 + self.b1) @ self.W2 + self.b2


@mistake("FeedForward", "bias_after_activation",
         "b1 is added after the activation, gelu(x @ W1) + b1. The bias shifts the input of the "
         "activation: gelu(x @ W1 + b1).")
def __call__(self, x):  # noqa: F811
    return (gelu_(x @ self.W1) + self.b1) @ self.W2 + self.b2


# -- Exercise 2.6 EncoderBlock.__call__ ----------------------------------------------------------------
@mistake("EncoderBlock", "post_norm",
         "this is the post-norm block of 2017: x = norm(x + sublayer(x)). This course's block is "
         "pre-norm: each sublayer reads norm(x) and its result is added to the un-normalised x, "
         "x = x + sublayer(norm(x)), so the residual path stays a clean identity.")
def __call__(self, x, mask=None):
    attn_out, _ = self.self_attn(x, mask=mask)
    x = rms_norm_(x + attn_out, self.norm1_gamma)
    return rms_norm_(x + self.ffn(x), self.norm2_gamma)


@mistake("EncoderBlock", "causal_mask",
         "a causal mask is applied in the encoder. The encoder reads the whole source at once, so "
         "attention is bidirectional: every token may look at every other (only padding is hidden). "
         "The causal mask belongs to the decoder.")
def __call__(self, x, mask=None):  # noqa: F811
    n = x.shape[-2]
    causal = create_causal_mask_(n) if mask is None else create_causal_mask_(n) + mask
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=causal)
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm2_gamma))


@mistake("EncoderBlock", "no_residual",
         "the residual connections are missing: the block returns the sublayers' outputs alone. "
         "Add each sublayer's output back to its input: x = x + attention(...), then x = x + ffn(...).")
def __call__(self, x, mask=None):  # noqa: F811
    x, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    return self.ffn(rms_norm_(x, self.norm2_gamma))


@mistake("EncoderBlock", "residual_from_normed",
         "the residual adds the sublayer's output to the normalised x. It adds to the original x: "
         "x = x + attention(norm(x)), so the un-normalised signal flows through the block unchanged.")
def __call__(self, x, mask=None):  # noqa: F811
    h = rms_norm_(x, self.norm1_gamma)
    attn_out, _ = self.self_attn(h, mask=mask)
    x = h + attn_out
    h = rms_norm_(x, self.norm2_gamma)
    return h + self.ffn(h)


@mistake("EncoderBlock", "mask_ignored",
         "the padding mask is not passed to the self-attention, so real tokens attend to pads. "
         "Call self.self_attn(..., mask=mask).")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma))
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm2_gamma))


@mistake("EncoderBlock", "one_gamma_twice",
         "both norms use norm1_gamma. Each sublayer has its own [LEARNED] gain: norm1_gamma before "
         "the attention, norm2_gamma before the feed-forward network.")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm1_gamma))


@mistake("EncoderBlock", "ffn_reads_unnormalised",
         "the feed-forward network reads x without its norm. In a pre-norm block every sublayer "
         "reads a normalised copy: x + ffn(rms_norm(x, norm2_gamma)).")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    x = x + attn_out
    return x + self.ffn(x)


@mistake("EncoderBlock", "norms_swapped",
         "the two norms are swapped: norm2_gamma before the attention and norm1_gamma before the "
         "feed-forward network. norm1_gamma belongs to the first sublayer (self-attention), norm2_gamma "
         "to the second.")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm2_gamma), mask=mask)
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm1_gamma))


@mistake("EncoderBlock", "output_normalised",
         "the block's output is normalised again (with norm2_gamma). A pre-norm block returns the raw "
         "residual stream, x + ffn(rms_norm(x, norm2_gamma)); the encoder normalises once, after its last block.")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    x = x + attn_out
    return rms_norm_(x + self.ffn(rms_norm_(x, self.norm2_gamma)), self.norm2_gamma)
