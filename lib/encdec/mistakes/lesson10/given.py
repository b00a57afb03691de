"""What the notebook of Lesson 10 gives (section 10.9), for tensors: `rms_norm_`, `split_heads_`,
`merge_heads_`, `attend_` and `embed_at_`, which the greedy_decode_cached mistakes call. The trailing
underscore keeps a mistake pasted into a notebook from replacing the student's own function."""

import math


# -- what the notebook gives (section 10.9), for tensors -------------------------------------------------
def rms_norm_(x, gamma, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis."""
    return x * (x.pow(2).mean(dim=-1, keepdim=True) + eps).rsqrt() * gamma


def split_heads_(x, n_heads):
    """(..., T, d_model) -> (..., h, T, d_k)."""
    *lead, T, d = x.shape
    return x.reshape(*lead, T, n_heads, d // n_heads).transpose(-2, -3)


def merge_heads_(x):
    """(..., h, T, d_k) -> (..., T, h * d_k)."""
    x = x.transpose(-2, -3)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def attend_(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V for every head: (..., h, m, d_k) over (..., h, n, d_k)."""
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return scores.softmax(dim=-1) @ V


def embed_at_(model, tokens, position):
    """One token per sequence, tokens (B,), embedded at `position`: (B, 1, d_model)."""
    import torch
    from encdec.layers import sinusoidal_positions
    d = model.config.d_model
    x = model.embedding[tokens[:, None]] * math.sqrt(d)
    pe = torch.from_numpy(sinusoidal_positions(position + 1, d)[position])
    return x + pe.to(device=x.device, dtype=x.dtype)
