"""Attention: softmax, dropout, masks, scaled dot-product attention and multi-head attention.

Shapes use the course's letters: m target (query) positions, n source (key/value) positions,
d_model the model width, d_k the width of one head, h the number of heads. Every function
accepts any leading batch dimensions `...`. Masks are additive: 0.0 where a position is
visible and -inf where it is hidden, broadcastable to the scores `(..., m, n)` (or to
`(..., h, m, n)` inside multi-head attention).

Fully masked rows: when every key of a query row is hidden, softmax returns zeros for that
row (not NaN), so the row's attention output is the zero vector. No NaN ever leaks out.
"""

import numbers

import numpy as np

from ._shapes import as_float, as_tokens, check_last_dim, check_mask


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`.

    Inputs:  x of any shape, float.
    Returns: an array of the same shape, non-negative, summing to 1 along `axis`
             (a slice that is entirely -inf gives zeros).
    """
    x = as_float(x, "x", min_ndim=0)
    x_max = np.max(x, axis=axis, keepdims=True)
    x_max = np.where(np.isfinite(x_max), x_max, 0.0)  # all -inf slice: avoid inf - inf
    e = np.exp(x - x_max)
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total == 0.0, 1.0, total)


def dropout(x, rate, rng, training=True):
    """Inverted dropout: zero each entry with probability `rate`, scale the kept ones by 1 / (1 - rate).

    One uniform number per entry, u = rng.random(x.shape); an entry is kept where u >= rate.
    The expectation is unchanged: E[dropout(x)] = x, so nothing needs rescaling at inference.
    Inputs:  x of any shape; rate [CONFIG] in [0, 1); rng a numpy Generator; training: False for
             eval mode.
    Returns: an array shaped like x. With training=False or rate=0, x itself (nothing drawn).
    """
    if not (isinstance(rate, numbers.Real) and 0 <= rate < 1):
        raise ValueError(f"dropout rate must lie in [0, 1), got {rate!r}")
    if not training or rate == 0:
        return x
    x = as_float(x, "x", min_ndim=0)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    keep = rng.random(x.shape) >= rate
    return x * keep / (1.0 - rate)


def create_causal_mask(seq_len):
    """Mask out subsequent positions.

    Returns: (seq_len, seq_len) additive mask, 0.0 on and below the diagonal, -inf above it:
             query i may look at keys j <= i.
    """
    if int(seq_len) != seq_len or seq_len < 1:
        raise ValueError(f"seq_len must be a positive integer, got {seq_len!r}")
    seq_len = int(seq_len)
    future = np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)
    return np.where(future, -np.inf, 0.0)


def padding_mask(tokens, pad_id):
    """Hide the pad tokens among the keys.

    Inputs:  tokens (..., n) integer ids; pad_id the id used for padding.
    Returns: (..., 1, 1, n) additive mask, -inf at pad keys, broadcastable to the multi-head
             scores (..., h, m, n). For single-head scores (..., m, n) use mask[..., 0, :, :].
    """
    tokens = as_tokens(tokens)
    return np.where(tokens == pad_id, -np.inf, 0.0)[..., None, None, :]


def _attention_shapes(Q, K, V):
    Q, K, V = as_float(Q, "Q", 2), as_float(K, "K", 2), as_float(V, "V", 2)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q {Q.shape} and K {K.shape} must share the last dimension d_k")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K {K.shape} and V {V.shape} must have the same number of positions n")
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch dimensions of Q {Q.shape}, K {K.shape} and V {V.shape} do not broadcast"
        ) from None
    return Q, K, V


def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V.

    Inputs:  Q (..., m, d_k), K (..., n, d_k), V (..., n, d_v), mask broadcastable to (..., m, n).
    Returns: (output (..., m, d_v), weights (..., m, n)); each row of weights sums to 1.
    """
    Q, K, V = _attention_shapes(Q, K, V)
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., m, n)
    mask = check_mask(mask, scores.shape)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def cross_attention(Q, K, V, mask=None):
    """Decoder queries attend to encoder keys and values: a rectangular m x n attention.

    Inputs:  Q (..., m, d_k) from the decoder; K (..., n, d_k) and V (..., n, d_v) from the
             encoder; mask (usually the encoder padding mask) broadcastable to (..., m, n).
             No causal mask: every target position may read the whole source.
    Returns: (output (..., m, d_v), weights (..., m, n)), rows of weights summing to 1.
    """
    return scaled_dot_product_attention(Q, K, V, mask)


def split_heads(x, n_heads):
    """(..., T, d_model) -> (..., h, T, d_k) with d_k = d_model // h."""
    *lead, T, d = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d // n_heads), -2, -3)


def merge_heads(x):
    """(..., h, T, d_k) -> (..., T, h * d_k): the inverse of split_heads."""
    x = np.swapaxes(x, -2, -3)  # (..., T, h, d_k)
    *lead, T, h, d_k = x.shape
    return x.reshape(*lead, T, h * d_k)


def _init_matrix(rng, d_in, d_out):
    return rng.normal(0.0, 1.0 / np.sqrt(d_in), size=(d_in, d_out))


class MultiHeadAttention:
    """Multi-head attention for self-attention and cross-attention.

    Attributes: W_q, W_k, W_v, W_o each (d_model, d_model) [LEARNED], used as x @ W;
    n_heads, d_model, d_k = d_model // n_heads [CONFIG].
    """

    def __init__(self, d_model, n_heads, rng=None):
        if d_model < 1 or n_heads < 1 or d_model % n_heads:
            raise ValueError(
                f"n_heads={n_heads} must divide d_model={d_model} (each head gets d_model // n_heads)"
            )
        rng = np.random.default_rng(rng)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q = _init_matrix(rng, d_model, d_model)
        self.W_k = _init_matrix(rng, d_model, d_model)
        self.W_v = _init_matrix(rng, d_model, d_model)
        self.W_o = _init_matrix(rng, d_model, d_model)

    def project_kv(self, key_value_input):
        """(..., n, d_model) -> K, V each (..., h, n, d_k). Cross-attention does this once."""
        kv = as_float(key_value_input, "key_value_input", 2)
        check_last_dim(kv, self.d_model, "key_value_input")
        return split_heads(kv @ self.W_k, self.n_heads), split_heads(kv @ self.W_v, self.n_heads)

    def attend(self, query_input, K, V, mask=None, dropout_rate=0.0, dropout_rng=None):
        """Attention of (..., m, d_model) queries over already projected K, V (..., h, n, d_k).

        Attention dropout (training only): with dropout_rate > 0 the weights are dropped after the
        softmax, before they multiply V; the weights returned are always those before dropout.
        """
        q = as_float(query_input, "query_input", 2)
        check_last_dim(q, self.d_model, "query_input")
        Q = split_heads(q @ self.W_q, self.n_heads)  # (..., h, m, d_k)
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # (..., h, m, d_k)
        if dropout_rate:
            heads = dropout(weights, dropout_rate, dropout_rng) @ V  # (..., h, m, d_k)
        return merge_heads(heads) @ self.W_o, weights

    def __call__(self, query_input, key_value_input=None, mask=None, dropout_rate=0.0, dropout_rng=None):
        """Self-attention (key_value_input=None) or cross-attention.

        Inputs:  query_input (..., m, d_model); key_value_input (..., n, d_model) or None for
                 self-attention; mask broadcastable to (..., h, m, n); dropout_rate [CONFIG] and
                 dropout_rng (a numpy Generator): attention dropout, training only (default 0: none).
        Returns: (output (..., m, d_model), weights (..., h, m, n)), the weights before dropout.
        """
        check_last_dim(as_float(query_input, "query_input", 2), self.d_model, "query_input")
        if key_value_input is None:
            key_value_input = query_input
        K, V = self.project_kv(key_value_input)
        if dropout_rate:
            return self.attend(query_input, K, V, mask, dropout_rate, dropout_rng)
        return self.attend(query_input, K, V, mask)  # as in Lesson 4, for subclasses that override attend

    def parameters(self):
        return {"W_q": self.W_q, "W_k": self.W_k, "W_v": self.W_v, "W_o": self.W_o}
