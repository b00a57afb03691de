"""Correct implementations of lesson 03's exercises that differ from the reference: every checker
must give them full marks."""
import numpy as np

from encdec import padding_mask, softmax  # noqa: F401  (the lesson's setup cell imports them)

ALTERNATIVES = {}


def alternative(exercise):
    def register(fn):
        ALTERNATIVES.setdefault(exercise, []).append(fn)
        return fn
    return register


# -- 3.1 create_causal_mask -----------------------------------------------------------------------------
@alternative("create_causal_mask")
def create_causal_mask(seq_len):
    """compare row and column indices."""
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.where(j > i, -np.inf, 0.0)


@alternative("create_causal_mask")
def create_causal_mask(seq_len):  # noqa: F811
    """two loops, filled in place."""
    mask = np.zeros((seq_len, seq_len))
    for i in range(seq_len):
        for j in range(i + 1, seq_len):
            mask[i, j] = float("-inf")
    return mask


@alternative("create_causal_mask")
def create_causal_mask(seq_len):  # noqa: F811
    """np.triu of a matrix full of -inf keeps 0 below the diagonal (np.triu zeroes, it does not multiply)."""
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)


# -- 3.2 decoder_mask -----------------------------------------------------------------------------------
@alternative("decoder_mask")
def decoder_mask(tgt_in, pad_id):
    """the notebook's own functions, combined with np.minimum (the same as adding for 0/-inf masks)."""
    tgt_in = np.asarray(tgt_in)
    return np.minimum(create_causal_mask(tgt_in.shape[-1]), padding_mask(tgt_in, pad_id))


@alternative("decoder_mask")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    """one boolean 'hidden' array, turned into an additive mask at the end."""
    tgt_in = np.asarray(tgt_in)
    m = tgt_in.shape[-1]
    future = np.arange(m)[None, :] > np.arange(m)[:, None]  # (m, m)
    pad_key = (tgt_in == pad_id)[..., None, None, :]  # (..., 1, 1, m)
    return np.where(future | pad_key, -np.inf, 0.0)


# -- 3.3 causal_self_attention --------------------------------------------------------------------------
@alternative("causal_self_attention")
def causal_self_attention(x, W_q, W_k, W_v):
    """scale after masking (the two commute), einsum, the notebook's softmax and mask."""
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = np.einsum("...id,...jd->...ij", Q, K)
    scores = (scores + create_causal_mask(x.shape[-2])) / np.sqrt(W_q.shape[1])
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


@alternative("causal_self_attention")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    """-inf written in with np.where, a hand-made stable softmax."""
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    m = x.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    scores = np.where(np.triu(np.ones((m, m), dtype=bool), 1), -np.inf, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return np.matmul(weights, V), weights


# -- 3.4 output_logits ----------------------------------------------------------------------------------
@alternative("output_logits")
def output_logits(h, E):
    """einsum over the model width."""
    return np.einsum("...md,vd->...mv", h, E)


@alternative("output_logits")
def output_logits(h, E):  # noqa: F811
    """np.matmul with an explicit transpose, h as given (float32 stays float32)."""
    return np.matmul(h, np.transpose(E))


# -- forms that the probes (encdec.checks.probes) must not mistake for slips ---------------------------------
@alternative("create_causal_mask")
def create_causal_mask(seq_len):  # noqa: F811
    """a loop filling each row's future with -inf."""
    mask = np.zeros((seq_len, seq_len))
    for i in range(seq_len):
        mask[i, i + 1:] = -np.inf
    return mask


@alternative("decoder_mask")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    """one np.where over the broadcast 'future or pad key' condition."""
    tgt_in = np.asarray(tgt_in)
    m = tgt_in.shape[-1]
    hidden = (np.arange(m)[None, :] > np.arange(m)[:, None]) | (tgt_in == pad_id)[..., None, :]
    return np.where(hidden, -np.inf, 0.0)[..., None, :, :]


@alternative("causal_self_attention")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    """position by position: query i only ever meets keys 0..i (no mask needed)."""
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    m = x.shape[-2]
    weights = np.zeros(x.shape[:-2] + (m, m))
    for i in range(m):
        s = np.einsum("...k,...jk->...j", Q[..., i, :], K[..., : i + 1, :]) / np.sqrt(W_q.shape[-1])
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        weights[..., i, : i + 1] = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights


@alternative("output_logits")
def output_logits(h, E):  # noqa: F811
    """einsum over the model width."""
    return np.einsum("...md,vd->...mv", h, E)
