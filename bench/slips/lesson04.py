"""Slips in Lesson 4: cross-attention, CrossAttention.attend, cross-attention one step at a time."""

import numpy as np

from encdec import merge_heads, softmax, split_heads  # noqa: F401  (the setup cell's)
from encdec import cross_attention  # noqa: F401  (a right Exercise 4.1; the checker swaps in the reference)

from . import slip


# -- 4.1 cross_attention -------------------------------------------------------------------------------------
def _attention(Q, K, V, mask, scale, axis=-1):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(scale)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=axis)
    return weights @ V, weights


@slip("cross_attention", "sqrt_n", "scales by sqrt(n), the number of source positions, instead of sqrt(d_k)",
      expect=("sqrt(d_k)", "scale", "factor"))
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    return _attention(Q, K, V, mask, K.shape[-2])


@slip("cross_attention", "d_v_scale", "takes d_k from V (d_v) instead of from Q and K",
      expect=("d_k", "scale", "factor"))
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    return _attention(Q, K, V, mask, V.shape[-1])


@slip("cross_attention", "softmax_over_targets", "takes the softmax over the target (query) axis",
      expect=("axis", "quer", "target", "source"))
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    return _attention(Q, K, V, mask, Q.shape[-1], axis=-2)


@slip("cross_attention", "mask_ignored", "never adds the encoder padding mask",
      expect=("mask", "pad"))
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    return _attention(Q, K, V, None, Q.shape[-1])


# -- 4.2 CrossAttention.attend -----------------------------------------------------------------------------------
def _split_no_swap(x, n_heads):
    return x.reshape(*x.shape[:-2], n_heads, x.shape[-2], x.shape[-1] // n_heads)


def _merge_no_swap(x):
    return x.reshape(*x.shape[:-3], x.shape[-2], x.shape[-3] * x.shape[-1])


@slip("CrossAttention", "split_without_swap", "splits the queries into heads with a bare reshape, no axis swap",
      expect=("head",))
def attend(self, query_input, K, V, mask=None):
    Q = _split_no_swap(query_input @ self.W_q, self.n_heads)
    heads, weights = cross_attention(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


@slip("CrossAttention", "merge_without_swap", "merges the heads with a bare reshape, no axis swap",
      expect=("head", "merge"))
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    heads, weights = cross_attention(Q, K, V, mask)
    return _merge_no_swap(heads) @ self.W_o, weights


@slip("CrossAttention", "W_q_transposed", "projects the queries with query_input @ W_q.T",
      expect=("transpos",))
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q.T, self.n_heads)
    heads, weights = cross_attention(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


@slip("CrossAttention", "no_W_o", "returns the merged heads without W_o",
      expect=("W_o",))
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    heads, weights = cross_attention(Q, K, V, mask)
    return merge_heads(heads), weights


@slip("CrossAttention", "queries_with_W_k", "makes the queries with W_k instead of W_q",
      expect=("W_q", "W_k"))
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_k, self.n_heads)
    heads, weights = cross_attention(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


@slip("CrossAttention", "W_o_transposed", "projects the merged heads with W_o.T",
      expect=("transpos", "W_o"))
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    heads, weights = cross_attention(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o.T, weights


# -- 4.3 cross_attention_step_by_step -------------------------------------------------------------------------------
@slip("cross_attention_step_by_step", "mask_dropped", "calls attend without the source padding mask",
      expect=("mask", "pad"))
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    steps = [mha.attend(H_dec[..., t:t + 1, :], K, V) for t in range(H_dec.shape[-2])]
    return np.concatenate([o for o, _ in steps], axis=-2), np.concatenate([w for _, w in steps], axis=-2)


@slip("cross_attention_step_by_step", "kv_from_decoder", "projects the keys and values from H_dec, not H_enc",
      expect=("H_enc", "encoder"), preserves_shape=False)
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_dec)
    steps = [mha.attend(H_dec[..., t:t + 1, :], K, V) for t in range(H_dec.shape[-2])]
    return np.concatenate([o for o, _ in steps], axis=-2), np.concatenate([w for _, w in steps], axis=-2)


@slip("cross_attention_step_by_step", "whole_prefix", "attends with the whole prefix H_dec[..., :t+1, :] at each "
      "step and keeps every row of the last step", expect=("one position", "prefix", "t:t+1", "each step", "attend"))
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    out = w = None
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., : t + 1, :], K, V, mask)
    return out, w
