"""Slips in Lesson 2: RMSNorm, GELU, the padding mask, multi-head attention, the FFN, the encoder block.

Method exercises are written as the method alone; the checker puts it in the class."""

import numpy as np

from encdec import gelu, rms_norm, scaled_dot_product_attention, softmax  # noqa: F401  (the setup cell's)

from . import slip


# -- 2.1 rms_norm ------------------------------------------------------------------------------------------
@slip("rms_norm", "eps_outside_sqrt", "adds eps after the square root, not inside it",
      expect=("eps",))
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps) * gamma


@slip("rms_norm", "mean_over_axis_0", "takes the mean square over the first axis (across tokens)",
      expect=("axis", "last"))
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x, axis=0, keepdims=True) + eps) * gamma


@slip("rms_norm", "layer_norm", "subtracts the mean and divides by the standard deviation (LayerNorm)",
      expect=("mean", "layernorm", "layer norm", "centre", "center"))
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    centred = x - np.mean(x, axis=-1, keepdims=True)
    return centred / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps) * gamma


@slip("rms_norm", "gamma_forgotten", "forgets to multiply by the gain gamma",
      expect=("gamma", "gain"))
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


@slip("rms_norm", "sum_not_mean", "divides by the root of the sum of squares, not of their mean",
      expect=("mean", "sqrt(d)", "factor", "scale"))
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps) * gamma


# -- 2.2 gelu ----------------------------------------------------------------------------------------------
@slip("gelu", "square_not_cube", "writes 0.044715 x^2 instead of 0.044715 x^3",
      expect=("cube", "x^3", "x³", "x**3", "0.044715"))
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**2)))


@slip("gelu", "no_half", "forgets the factor 1/2 in front",
      expect=("0.5", "1/2", "half", "factor"))
def gelu(x):  # noqa: F811
    return x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


@slip("gelu", "sigmoid_form", "uses the sigmoid approximation x * sigmoid(1.702 x), not the tanh form",
      expect=("tanh", "sigmoid", "activation"))
def gelu(x):  # noqa: F811
    return x / (1.0 + np.exp(-1.702 * x))


@slip("gelu", "relu", "returns ReLU, max(x, 0)",
      expect=("relu", "activation", "tanh"))
def gelu(x):  # noqa: F811
    return np.maximum(x, 0.0)


@slip("gelu", "pi_over_2", "writes sqrt(pi/2) instead of sqrt(2/pi)",
      expect=("2/pi", "2 / pi", "pi"))
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(np.pi / 2.0) * (x + 0.044715 * x**3)))


# the right rms_norm and gelu again, for the later exercises (their checkers swap in the reference anyway)
from encdec import gelu, rms_norm  # noqa: E402,F811


# -- 2.3 padding_mask -----------------------------------------------------------------------------------------
@slip("padding_mask", "inverted", "puts -inf at the real tokens and 0 at the pads",
      expect=("invert", "revers", "opposite", "swapped", "real token"))
def padding_mask(tokens, pad_id):
    tokens = np.asarray(tokens)
    return np.where(tokens == pad_id, 0.0, -np.inf)[..., None, None, :]


@slip("padding_mask", "boolean_mask", "returns the boolean tokens == pad_id, not an additive 0/-inf mask",
      expect=("bool", "additive", "-inf"))
def padding_mask(tokens, pad_id):  # noqa: F811
    return (np.asarray(tokens) == pad_id)[..., None, None, :]


@slip("padding_mask", "minus_1e9", "uses -1e9 instead of -inf for the hidden positions",
      expect=("-inf", "1e9", "finite", "infinity"))
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -1e9, 0.0)[..., None, None, :]


@slip("padding_mask", "axes_missing", "returns the (..., n) mask without the two broadcasting axes",
      expect=("shape", "axes", "axis", "broadcast"), preserves_shape=False)
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)


# -- 2.4 MultiHeadAttention.__call__ ---------------------------------------------------------------------------
def _mha(self, query_input, key_value_input, mask, split, merge, Wq=None, Wk=None, Wv=None, Wo=None, scale=None):
    """Multi-head attention with pieces a slip can replace."""
    if key_value_input is None:
        key_value_input = query_input
    Wq = self.W_q if Wq is None else Wq
    Wk = self.W_k if Wk is None else Wk
    Wv = self.W_v if Wv is None else Wv
    Q, K, V = split(self, query_input @ Wq), split(self, key_value_input @ Wk), split(self, key_value_input @ Wv)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k if scale is None else scale)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    out = merge(self, weights @ V)
    return (out if Wo is False else out @ (self.W_o if Wo is None else Wo)), weights


def _split(self, x):  # (..., T, d_model) -> (..., h, T, d_k)
    return np.swapaxes(x.reshape(*x.shape[:-1], self.n_heads, self.d_k), -2, -3)


def _merge(self, x):  # (..., h, T, d_k) -> (..., T, d_model)
    x = np.swapaxes(x, -2, -3)
    return x.reshape(*x.shape[:-2], self.d_model)


def _split_no_swap(self, x):  # a bare reshape: legal, but not a split into heads
    return x.reshape(*x.shape[:-2], self.n_heads, x.shape[-2], self.d_k)


def _merge_no_swap(self, x):
    return x.reshape(*x.shape[:-3], x.shape[-2], self.d_model)


@slip("MultiHeadAttention", "split_without_swap", "splits the heads with a reshape to (h, T, d_k) and no axis swap",
      expect=("head",))
def __call__(self, query_input, key_value_input=None, mask=None):
    return _mha(self, query_input, key_value_input, mask, _split_no_swap, _merge_no_swap)


@slip("MultiHeadAttention", "merge_without_swap", "splits the heads right but merges them with a bare reshape",
      expect=("head", "merge"))
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, key_value_input, mask, _split, _merge_no_swap)


@slip("MultiHeadAttention", "W_q_transposed", "projects the queries with query_input @ W_q.T",
      expect=("transpos",))
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, key_value_input, mask, _split, _merge, Wq=self.W_q.T)


@slip("MultiHeadAttention", "no_W_o", "returns the merged heads without the output projection W_o",
      expect=("W_o",))
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, key_value_input, mask, _split, _merge, Wo=False)


@slip("MultiHeadAttention", "scale_d_model", "scales the scores by 1/sqrt(d_model) instead of 1/sqrt(d_k)",
      expect=("d_k", "scale", "factor"))
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, key_value_input, mask, _split, _merge, scale=self.d_model)


@slip("MultiHeadAttention", "W_k_W_v_swapped", "makes the keys with W_v and the values with W_k",
      expect=("W_k", "W_v", "swap"))
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, key_value_input, mask, _split, _merge, Wk=self.W_v, Wv=self.W_k)


@slip("MultiHeadAttention", "mask_dropped", "never adds the mask to the scores",
      expect=("mask",))
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, key_value_input, None, _split, _merge)


@slip("MultiHeadAttention", "self_only", "always takes the keys and values from query_input (cross mode ignored)",
      expect=("key_value_input", "cross"), preserves_shape=False)
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    return _mha(self, query_input, None, mask, _split, _merge)


# -- 2.5 FeedForward.__call__ ---------------------------------------------------------------------------------
@slip("FeedForward", "no_b1", "forgets the first bias b1",
      expect=("b1", "bias"))
def __call__(self, x):  # noqa: F811
    return gelu(x @ self.W1) @ self.W2 + self.b2


@slip("FeedForward", "gelu_on_output_too", "applies GELU to the output as well",
      expect=("gelu", "activation", "output"))
def __call__(self, x):  # noqa: F811
    return gelu(gelu(x @ self.W1 + self.b1) @ self.W2 + self.b2)


@slip("FeedForward", "relu", "uses ReLU between the two layers instead of GELU",
      expect=("relu", "gelu", "activation"))
def __call__(self, x):  # noqa: F811
    return np.maximum(x @ self.W1 + self.b1, 0.0) @ self.W2 + self.b2


@slip("FeedForward", "residual_inside", "adds the input back inside the FFN (x + FFN(x))",
      expect=("residual",))
def __call__(self, x):  # noqa: F811
    return x + gelu(x @ self.W1 + self.b1) @ self.W2 + self.b2


# -- 2.6 EncoderBlock.__call__ -----------------------------------------------------------------------------------
@slip("EncoderBlock", "post_norm", "normalises after each residual add (post-norm) instead of before each sublayer",
      expect=("post-norm", "pre-norm", "post norm", "pre norm"))
def __call__(self, x, mask=None):  # noqa: F811
    out, _ = self.self_attn(x, mask=mask)
    x = rms_norm(x + out, self.norm1_gamma)
    return rms_norm(x + self.ffn(x), self.norm2_gamma)


@slip("EncoderBlock", "norms_swapped", "uses norm2_gamma before attention and norm1_gamma before the FFN",
      expect=("norm1_gamma", "norm2_gamma"))
def __call__(self, x, mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm2_gamma), mask=mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm1_gamma))


@slip("EncoderBlock", "residual_from_normalised", "adds each sublayer's output to the normalised x, not to x",
      expect=("residual", "normalised", "normalized"))
def __call__(self, x, mask=None):  # noqa: F811
    h = rms_norm(x, self.norm1_gamma)
    out, _ = self.self_attn(h, mask=mask)
    x = h + out
    h = rms_norm(x, self.norm2_gamma)
    return h + self.ffn(h)


@slip("EncoderBlock", "mask_not_passed", "does not pass the padding mask to the self-attention",
      expect=("mask", "pad"))
def __call__(self, x, mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma))
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm2_gamma))


@slip("EncoderBlock", "ffn_without_norm", "feeds x to the FFN without its RMSNorm (norm2_gamma unused)",
      expect=("norm2_gamma", "norm"))
def __call__(self, x, mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=mask)
    x = x + out
    return x + self.ffn(x)


@slip("EncoderBlock", "extra_final_norm", "normalises the block's output once more at the end",
      expect=("norm", "final"))
def __call__(self, x, mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=mask)
    x = x + out
    x = x + self.ffn(rms_norm(x, self.norm2_gamma))
    return rms_norm(x, self.norm2_gamma)
