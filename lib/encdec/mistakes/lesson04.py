"""Lesson 04: cross-attention, multi-head cross-attention split in two, K/V computed once."""

import numpy as np

from ..attention import cross_attention as xattn_
from ..attention import merge_heads, softmax as softmax_, split_heads
from . import mistake


def _causal_(m, n):
    """(m, n) additive mask hiding key j from query i when j > i: a causal mask made rectangular."""
    return np.where(np.arange(n)[None, :] > np.arange(m)[:, None], -np.inf, 0.0)


# -- Exercise 4.1 cross_attention ----------------------------------------------------------------------
@mistake("cross_attention", "causal_mask",
         "a causal mask is applied: target position i only sees source positions j <= i. The whole "
         "source sentence is known before the first target word is written, so cross-attention has no "
         "causal mask; only the encoder padding mask (the `mask` argument) hides keys.")
def cross_attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = scores + _causal_(Q.shape[-2], K.shape[-2])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("cross_attention", "softmax_over_decoder_axis",
         "the softmax runs over the decoder axis (axis=-2, down the columns), so each source position "
         "spreads its weight over the target positions. Each target position (a row) needs a "
         "distribution over the n source positions: softmax along the last axis, rows summing to 1.")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-2)
    return weights @ V, weights


@mistake("cross_attention", "padding_ignored",
         "the encoder padding mask is never used, so pad tokens of the source get attention weight. "
         "Add `mask` to the scores before the softmax: pad columns must come out exactly 0.")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    return weights @ V, weights


@mistake("cross_attention", "keys_from_queries",
         "the queries are scored against themselves (Q Q^T) and mix the queries: that is "
         "self-attention over the decoder. In cross-attention the keys K and the values V come from "
         "the encoder: scores Q K^T of shape (m, n), output weights @ V.")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ Q, weights


@mistake("cross_attention", "scale_by_source_length",
         "the scores are divided by sqrt(n), the number of source positions (K.shape[-2]), instead of "
         "sqrt(d_k), the width of a query and key (Q.shape[-1]). In self-attention tests n and d_k are "
         "easy to confuse; here they differ.")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("cross_attention", "no_scale",
         "the scores are not divided by sqrt(d_k): dot products of width d_k grow like sqrt(d_k) and "
         "saturate the softmax. Scale Q K^T by 1/sqrt(d_k).")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("cross_attention", "mask_after_softmax",
         "the padding mask is added after the softmax. Add it to the scores before: exp(-inf) = 0 gives "
         "a pad token exactly zero weight while the real source tokens still sum to 1.")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    if mask is not None:
        weights = weights + mask
    return weights @ V, weights


@mistake("cross_attention", "transpose_all_axes",
         "K.T reverses *all* axes of a batched K, (B, n, d_k) -> (d_k, n, B). Swap only the last two: "
         "np.swapaxes(K, -1, -2).")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("cross_attention", "scale_by_target_length",
         "the scores are divided by sqrt(m), the number of target positions (Q.shape[-2]), instead of "
         "sqrt(d_k), the width of a query and a key (Q.shape[-1]).")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-2])
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("cross_attention", "scaled_twice",
         "the scores are scaled twice, Q and K each divided by sqrt(d_k), which divides Q K^T by d_k. "
         "Scale once: Q K^T / sqrt(d_k).")
def cross_attention(Q, K, V, mask=None):  # noqa: F811
    d_k = Q.shape[-1]
    scores = (Q / np.sqrt(d_k)) @ np.swapaxes(K / np.sqrt(d_k), -1, -2)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


# -- Exercise 4.2 CrossAttention.attend ------------------------------------------------------------------
@mistake("CrossAttention", "kv_from_decoder",
         "attend projects its own keys and values from query_input, the decoder states: that is "
         "self-attention. In cross mode K and V arrive already projected from the encoder output "
         "(project_kv(H_enc)); attend only makes the queries, Q = query_input @ W_q.")
def attend(self, query_input, K, V, mask=None):
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    K, V = self.project_kv(query_input)
    heads, weights = xattn_(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


@mistake("CrossAttention", "causal_mask",
         "a causal mask is added: decoder position i only sees source positions j <= i. Every target "
         "position may read the whole source; only the encoder padding mask hides keys.")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    causal = _causal_(Q.shape[-2], K.shape[-2])
    heads, weights = xattn_(Q, K, V, causal if mask is None else causal + mask)
    return merge_heads(heads) @ self.W_o, weights


@mistake("CrossAttention", "softmax_over_decoder_axis",
         "the softmax runs over the decoder axis (axis=-2). Each decoder position needs a distribution "
         "over the n source positions: softmax along the last axis of the (..., h, m, n) scores.")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax_(scores, axis=-2)
    return merge_heads(weights @ V) @ self.W_o, weights


@mistake("CrossAttention", "padding_ignored",
         "the encoder padding mask is never passed on, so pad tokens of the source get weight. Pass "
         "`mask` to the attention: it broadcasts from (..., 1, 1, n) to the (..., h, m, n) scores.")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    heads, weights = xattn_(Q, K, V)
    return merge_heads(heads) @ self.W_o, weights


@mistake("CrossAttention", "no_output_projection",
         "the heads are merged but never projected with W_o. The output is merge_heads(heads) @ W_o.")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    heads, weights = xattn_(Q, K, V, mask)
    return merge_heads(heads), weights


@mistake("CrossAttention", "merge_without_transpose",
         "the heads are merged by a plain reshape of (..., h, m, d_k) to (..., m, h*d_k), which mixes "
         "positions of different heads. Swap the head and position axes first (merge_heads does): "
         "(..., h, m, d_k) -> (..., m, h, d_k) -> (..., m, d_model).")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q, self.n_heads)
    heads, weights = xattn_(Q, K, V, mask)
    merged = heads.reshape(heads.shape[:-3] + (heads.shape[-2], self.d_model))
    return merged @ self.W_o, weights


@mistake("CrossAttention", "queries_with_W_k",
         "the queries are made with W_k. Each projection has its own matrix: Q = query_input @ W_q "
         "(K and V were made with W_k and W_v in project_kv).")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_k, self.n_heads)
    heads, weights = xattn_(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


@mistake("CrossAttention", "split_without_transpose",
         "the heads are split with a reshape alone, (..., m, d_model) -> (..., h, m, d_k), without the axis "
         "swap, so each \"head\" takes whole rows of several positions instead of its own d_k columns of "
         "every position. With one head nothing shows. Reshape to (..., m, h, d_k), then swap the m and h "
         "axes (split_heads does).")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = query_input @ self.W_q
    Q = Q.reshape(*Q.shape[:-2], self.n_heads, Q.shape[-2], self.d_k)
    heads, weights = xattn_(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


@mistake("CrossAttention", "W_q_transposed",
         "the queries are made with W_q transposed, query_input @ W_q.T. W_q is square, so every shape "
         "still fits: weights are stored as (inputs, outputs) and used as x @ W_q.")
def attend(self, query_input, K, V, mask=None):  # noqa: F811
    Q = split_heads(query_input @ self.W_q.T, self.n_heads)
    heads, weights = xattn_(Q, K, V, mask)
    return merge_heads(heads) @ self.W_o, weights


# -- Exercise 4.3 cross_attention_step_by_step ------------------------------------------------------------
@mistake("cross_attention_step_by_step", "recompute_every_step",
         "K and V are projected again at every decoding step. They depend only on H_enc, which does not "
         "change while the target is written: call mha.project_kv(H_enc) once, before the loop, and "
         "reuse K and V at every step.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        K, V = mha.project_kv(H_enc)
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


@mistake("cross_attention_step_by_step", "kv_from_decoder",
         "K and V are projected from the decoder states written so far (H_dec[..., :t+1, :]), the way "
         "decoder self-attention grows its cache. Cross-attention reads the encoder: K, V = "
         "mha.project_kv(H_enc), the same n source positions at every step.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        K, V = mha.project_kv(H_dec[..., : t + 1, :])
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


@mistake("cross_attention_step_by_step", "causal_over_source",
         "step t only sees source positions 0..t, as if a causal mask applied across the two sequences. "
         "At every step the decoder may read the whole source: use the padding mask alone.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    n = K.shape[-2]
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        step_mask = np.where(np.arange(n) > t, -np.inf, 0.0)
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, step_mask if mask is None else step_mask + mask)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


@mistake("cross_attention_step_by_step", "padding_ignored",
         "the source padding mask is not passed to attend, so pad tokens get weight at every step. "
         "Pass `mask` to every mha.attend call.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


@mistake("cross_attention_step_by_step", "concatenate_last_axis",
         "the steps are joined along the last axis. Each step adds one decoder position, so "
         "concatenate along the position axis: axis=-2 for both outputs and weights.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-1), np.concatenate(weights, axis=-1)


@mistake("cross_attention_step_by_step", "first_step_only",
         "every step uses the first decoder state H_dec[..., 0:1, :]. Step t asks with its own state: "
         "H_dec[..., t:t+1, :].")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., 0:1, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


@mistake("cross_attention_step_by_step", "position_axis_dropped",
         "H_dec[..., t, :] drops the position axis: a (B, d_model) slice looks like B positions of one "
         "sequence, and an unbatched (d_model,) slice is not a sequence at all. Keep the axis with a "
         "slice, H_dec[..., t:t+1, :], of shape (..., 1, d_model).")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
    return np.stack(outputs, axis=-2), np.stack(weights, axis=-2)


@mistake("cross_attention_step_by_step", "keys_values_swapped",
         "K and V are unpacked in the wrong order (V, K = mha.project_kv(H_enc)), so the scores use the "
         "values and the output mixes the keys. project_kv returns K first, then V.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    V, K = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


@mistake("cross_attention_step_by_step", "steps_reversed",
         "the steps come out in reverse order: the last decoder position first. Step t's output belongs at "
         "position t: append the steps in order, t = 0, 1, ..., m-1, and concatenate along axis=-2.")
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):  # noqa: F811
    K, V = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs.insert(0, out)
        weights.insert(0, w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)
