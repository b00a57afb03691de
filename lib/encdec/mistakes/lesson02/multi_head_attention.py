"""Exercise 2.4, MultiHeadAttention.__call__: the mistakes of multi-head attention (written as methods)."""

import numpy as np

from ...attention import softmax as softmax_
from .. import mistake


def _split(x, n_heads):
    """(..., T, d_model) -> (..., h, T, d_k), written out here (the reference's is off limits)."""
    *lead, T, d = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d // n_heads), -2, -3)


def _merge(x):
    """(..., h, T, d_k) -> (..., T, h * d_k)."""
    x = np.swapaxes(x, -2, -3)
    *lead, T, h, d_k = x.shape
    return x.reshape(*lead, T, h * d_k)


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
