"""Slips in Lesson 3: the causal mask, the decoder mask, causal self-attention, the tied output head."""

import numpy as np

from encdec import padding_mask, softmax  # noqa: F401  (the setup cell's)

from . import slip


# -- 3.1 create_causal_mask ------------------------------------------------------------------------------
@slip("create_causal_mask", "diagonal_hidden", "uses np.triu(..., k=0), so each position cannot see itself",
      expect=("diagonal",))
def create_causal_mask(seq_len):
    return np.where(np.triu(np.ones((seq_len, seq_len), dtype=bool), k=0), -np.inf, 0.0)


@slip("create_causal_mask", "past_hidden", "hides the past (below the diagonal) instead of the future",
      expect=("past", "future", "lower", "upper", "transpos", "below"))
def create_causal_mask(seq_len):  # noqa: F811
    return np.where(np.tril(np.ones((seq_len, seq_len), dtype=bool), k=-1), -np.inf, 0.0)


@slip("create_causal_mask", "minus_1e9", "uses -1e9 for the hidden positions instead of -inf",
      expect=("-inf", "1e9", "finite", "infinity"))
def create_causal_mask(seq_len):  # noqa: F811
    return np.where(np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1), -1e9, 0.0)


@slip("create_causal_mask", "times_minus_inf", "multiplies np.triu(ones, 1) by -inf, so 0 * -inf gives nan below",
      expect=("nan", "0 * -inf", "multipl"))
def create_causal_mask(seq_len):  # noqa: F811
    return np.triu(np.ones((seq_len, seq_len)), k=1) * -np.inf


# -- 3.2 decoder_mask --------------------------------------------------------------------------------------
def _causal(m, k=1):
    return np.where(np.triu(np.ones((m, m), dtype=bool), k=k), -np.inf, 0.0)


@slip("decoder_mask", "pads_hidden_as_queries", "puts the padding on the query axis (rows), not on the key axis",
      expect=("row", "column", "quer", "key"))
def decoder_mask(tgt_in, pad_id):
    tgt_in = np.asarray(tgt_in)
    pads = np.where(tgt_in == pad_id, -np.inf, 0.0)[..., None, :, None]  # (..., 1, m, 1)
    return _causal(tgt_in.shape[-1]) + pads


@slip("decoder_mask", "maximum", "combines the two masks with np.maximum, hiding only what both hide",
      expect=("maximum", "add", "either", "both"))
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    tgt_in = np.asarray(tgt_in)
    return np.maximum(_causal(tgt_in.shape[-1]), padding_mask(tgt_in, pad_id))


@slip("decoder_mask", "own_causal_hides_diagonal", "writes its own causal mask with k=0, hiding the diagonal",
      expect=("diagonal", "itself"))
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    tgt_in = np.asarray(tgt_in)
    return _causal(tgt_in.shape[-1], k=0) + padding_mask(tgt_in, pad_id)


@slip("decoder_mask", "pad_id_zero", "builds the padding mask with pad id 0 whatever pad_id says",
      expect=("pad_id",))
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    tgt_in = np.asarray(tgt_in)
    return _causal(tgt_in.shape[-1]) + padding_mask(tgt_in, 0)


# -- 3.3 causal_self_attention ----------------------------------------------------------------------------------
@slip("causal_self_attention", "zeroed_after_softmax",
      "zeroes the future weights after the softmax and does not renormalise (rows sum to less than 1)",
      expect=("before the softmax", "sum to 1", "renormal"))
def causal_self_attention(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    weights = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    weights = np.where(np.isneginf(_causal(x.shape[-2])), 0.0, weights)
    return weights @ V, weights


@slip("causal_self_attention", "scale_d_model", "scales the scores by 1/sqrt(d_model), the width of x",
      expect=("d_k", "scale", "factor"))
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(x.shape[-1]) + _causal(x.shape[-2])
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


@slip("causal_self_attention", "mask_transposed", "adds the transposed causal mask: each position sees the future",
      expect=("future", "past", "transpos", "causal"))
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + _causal(x.shape[-2]).T
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


@slip("causal_self_attention", "softmax_over_queries", "takes the softmax over the query axis",
      expect=("axis", "quer"))
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + _causal(x.shape[-2])
    weights = softmax(scores, axis=-2)
    return weights @ V, weights


# -- 3.4 output_logits ------------------------------------------------------------------------------------------
@slip("output_logits", "scaled_by_sqrt_d", "multiplies the logits by sqrt(d_model), as the embedding lookup does",
      expect=("sqrt(d", "scale", "factor"))
def output_logits(h, E):
    return h @ E.T * np.sqrt(E.shape[-1])


@slip("output_logits", "softmax_applied", "returns the probabilities softmax(h @ E.T), not the logits",
      expect=("softmax", "probabilit"))
def output_logits(h, E):  # noqa: F811
    return softmax(h @ E.T, axis=-1)
