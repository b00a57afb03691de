"""Layers: RMSNorm, GELU, sinusoidal positions, dropout, the feed-forward network, encoder and decoder blocks.

Both blocks are pre-norm: each sublayer reads RMSNorm(x) and adds its result back to x
(the residual). The decoder block has three sublayers in this order:
masked causal self-attention, cross-attention to the encoder output, feed-forward.

Dropout, in training only: the blocks take a dropout_rate [CONFIG] and the generator of the masks
per call (Seq2Seq passes them in training mode). Residual dropout drops each sublayer's output before
it is added to x; attention dropout drops the attention weights after the softmax. With the default
dropout_rate=0 a block computes exactly what it computes without dropout.
"""

import numpy as np

from ._shapes import as_float, check_last_dim
from .attention import MultiHeadAttention, _init_matrix, dropout


def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm: x / sqrt(mean(x^2) + eps) * gamma, over the last axis (no mean subtracted, no bias).

    Inputs:  x (..., d); gamma (d,) [LEARNED]; eps [CONFIG].
    Returns: (..., d).
    """
    x = as_float(x, "x")
    gamma = as_float(gamma, "gamma")
    if gamma.shape != x.shape[-1:]:
        raise ValueError(f"gamma of shape {gamma.shape} must have shape ({x.shape[-1]},) for x {x.shape}")
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return x / rms * gamma


def gelu(x):
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Elementwise, any shape."""
    x = as_float(x, "x", min_ndim=0)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def sinusoidal_positions(n, d):
    """Fixed sinusoidal position encodings.

    PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/d)).
    Returns: (n, d); works for odd d (the last column is a sine).
    """
    if int(n) != n or int(d) != d or n < 0 or d < 1:
        raise ValueError(f"n and d must be non-negative integers (d >= 1), got n={n!r}, d={d!r}")
    pos = np.arange(int(n), dtype=np.float64)[:, None]  # (n, 1)
    two_i = np.arange(0, int(d), 2, dtype=np.float64)  # (ceil(d/2),)
    angles = pos / np.power(10000.0, two_i / d)  # (n, ceil(d/2))
    pe = np.zeros((int(n), int(d)))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : int(d) // 2])
    return pe


class FeedForward:
    """Position-wise feed-forward network: GELU(x W1 + b1) W2 + b2.

    Attributes: W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,) [LEARNED].
    """

    def __init__(self, d_model, d_ff, rng=None):
        if d_model < 1 or d_ff < 1:
            raise ValueError(f"d_model and d_ff must be positive, got d_model={d_model}, d_ff={d_ff}")
        rng = np.random.default_rng(rng)
        self.d_model, self.d_ff = d_model, d_ff
        self.W1 = _init_matrix(rng, d_model, d_ff)
        self.b1 = np.zeros(d_ff)
        self.W2 = _init_matrix(rng, d_ff, d_model)
        self.b2 = np.zeros(d_model)

    def __call__(self, x):
        """(..., T, d_model) -> (..., T, d_model), each position independently."""
        x = as_float(x, "x")
        check_last_dim(x, self.d_model, "x")
        return gelu(x @ self.W1 + self.b1) @ self.W2 + self.b2

    def parameters(self):
        return {"W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2}


class EncoderBlock:
    """Pre-norm encoder block: bidirectional self-attention, then feed-forward, each with a residual.

    Attributes: self_attn (MultiHeadAttention), ffn (FeedForward), norm1_gamma, norm2_gamma (d_model,);
    eps [CONFIG], the RMSNorms' constant (Seq2Seq passes ModelConfig.eps).
    """

    eps = 1e-6

    def __init__(self, d_model, n_heads, d_ff, rng=None, eps=1e-6):
        rng = np.random.default_rng(rng)
        self.d_model, self.eps = d_model, eps
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.ffn = FeedForward(d_model, d_ff, rng)
        self.norm1_gamma = np.ones(d_model)
        self.norm2_gamma = np.ones(d_model)

    def __call__(self, x, mask=None, dropout_rate=0.0, dropout_rng=None):
        """x (..., n, d_model); mask: the source padding mask, broadcastable to (..., h, n, n);
        dropout_rate [CONFIG] and dropout_rng (a numpy Generator): residual and attention dropout
        (training only; the default 0 drops nothing).

        Returns: (..., n, d_model). No causal mask: every source token sees every other.
        """
        x = as_float(x, "x", 2)
        check_last_dim(x, self.d_model, "x")
        attn_out, _ = self.self_attn(rms_norm(x, self.norm1_gamma, self.eps), mask=mask,
                                     dropout_rate=dropout_rate, dropout_rng=dropout_rng)
        x = x + dropout(attn_out, dropout_rate, dropout_rng)
        return x + dropout(self.ffn(rms_norm(x, self.norm2_gamma, self.eps)), dropout_rate, dropout_rng)

    def parameters(self):
        params = {"norm1_gamma": self.norm1_gamma, "norm2_gamma": self.norm2_gamma}
        params.update({f"self_attn.{k}": v for k, v in self.self_attn.parameters().items()})
        params.update({f"ffn.{k}": v for k, v in self.ffn.parameters().items()})
        return params


class DecoderBlock:
    """Pre-norm decoder block with three sublayers, in this order:

    1. masked causal self-attention over the decoder positions, plus residual;
    2. cross-attention: queries from the decoder, keys and values from the encoder output, plus residual;
    3. position-wise feed-forward, plus residual.

    Attributes: self_attn, cross_attn (MultiHeadAttention), ffn (FeedForward),
    norm1_gamma, norm2_gamma, norm3_gamma (d_model,), one norm per sublayer.
    """

    eps = 1e-6

    def __init__(self, d_model, n_heads, d_ff, rng=None, eps=1e-6):
        rng = np.random.default_rng(rng)
        self.d_model, self.eps = d_model, eps
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.ffn = FeedForward(d_model, d_ff, rng)
        self.norm1_gamma = np.ones(d_model)
        self.norm2_gamma = np.ones(d_model)
        self.norm3_gamma = np.ones(d_model)

    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None,
                 dropout_rate=0.0, dropout_rng=None):
        """x (..., m, d_model) decoder states; encoder_output (..., n, d_model), used as it is
        (it was normalised once, at the end of the encoder); self_attn_mask the causal mask
        (plus target padding), broadcastable to (..., h, m, m); cross_attn_mask the source
        padding mask, broadcastable to (..., h, m, n); dropout_rate [CONFIG] and dropout_rng (a
        numpy Generator): residual and attention dropout (training only; the default 0 drops nothing).

        Returns: (output (..., m, d_model), cross_weights (..., h, m, n)), the weights before dropout.
        """
        x = as_float(x, "x", 2)
        H_enc = as_float(encoder_output, "encoder_output", 2)
        check_last_dim(x, self.d_model, "x")
        check_last_dim(H_enc, self.d_model, "encoder_output")
        self_out, _ = self.self_attn(rms_norm(x, self.norm1_gamma, self.eps), mask=self_attn_mask,
                                     dropout_rate=dropout_rate, dropout_rng=dropout_rng)
        x = x + dropout(self_out, dropout_rate, dropout_rng)
        cross_out, cross_weights = self.cross_attn(
            rms_norm(x, self.norm2_gamma, self.eps), key_value_input=H_enc, mask=cross_attn_mask,
            dropout_rate=dropout_rate, dropout_rng=dropout_rng,
        )
        x = x + dropout(cross_out, dropout_rate, dropout_rng)
        x = x + dropout(self.ffn(rms_norm(x, self.norm3_gamma, self.eps)), dropout_rate, dropout_rng)
        return x, cross_weights

    def parameters(self):
        params = {
            "norm1_gamma": self.norm1_gamma,
            "norm2_gamma": self.norm2_gamma,
            "norm3_gamma": self.norm3_gamma,
        }
        for name in ("self_attn", "cross_attn", "ffn"):
            params.update({f"{name}.{k}": v for k, v in getattr(self, name).parameters().items()})
        return params


def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    """The 2017 post-norm ordering with a DecoderBlock's weights: x = Norm(x + Sublayer(x)).

    Same sublayers in the same order; the norm comes after each residual add instead of before
    each sublayer. Returns (output (..., m, d_model), cross_weights (..., h, m, n)).
    """
    x = as_float(x, "x", 2)
    self_out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + self_out, block.norm1_gamma, block.eps)
    cross_out, cross_weights = block.cross_attn(x, key_value_input=encoder_output, mask=cross_attn_mask)
    x = rms_norm(x + cross_out, block.norm2_gamma, block.eps)
    return rms_norm(x + block.ffn(x), block.norm3_gamma, block.eps), cross_weights
