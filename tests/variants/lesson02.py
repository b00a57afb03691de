"""Correct implementations of lesson 02's exercises that differ from the reference: every checker
must give them full marks. Method variants are written as the method alone (def __call__(self, ...))."""
import numpy as np

from encdec import scaled_dot_product_attention, softmax  # noqa: F401  (the lesson's setup cell imports them)
from encdec import gelu as gelu_
from encdec import rms_norm as rms_norm_

ALTERNATIVES = {}


def alternative(exercise):
    def register(fn):
        ALTERNATIVES.setdefault(exercise, []).append(fn)
        return fn
    return register


# -- 2.1 rms_norm ---------------------------------------------------------------------------------------
@alternative("rms_norm")
def rms_norm(x, gamma, eps=1e-6):
    """np.linalg.norm: the RMS is ||x|| / sqrt(d)."""
    d = x.shape[-1]
    rms = np.sqrt(np.linalg.norm(x, axis=-1, keepdims=True) ** 2 / d + eps)
    return gamma * x / rms


@alternative("rms_norm")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    """float32 stays float32; reciprocal square root, einsum for the mean square."""
    ms = np.einsum("...d,...d->...", x, x)[..., None] / x.shape[-1]
    return x * (1.0 / np.sqrt(ms + eps)) * gamma


# -- 2.2 gelu -------------------------------------------------------------------------------------------
@alternative("gelu")
def gelu(x):
    """tanh written as a sigmoid: 0.5 (1 + tanh(u)) = sigmoid(2u)."""
    x = np.asarray(x, dtype=np.float64)
    u = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)
    return x / (1.0 + np.exp(-2.0 * u))


@alternative("gelu")
def gelu(x):  # noqa: F811
    """the constants spelled out, float32 kept."""
    c = 0.7978845608028654  # sqrt(2 / pi)
    return 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x * x * x)))


# -- 2.3 padding_mask -----------------------------------------------------------------------------------
@alternative("padding_mask")
def padding_mask(tokens, pad_id):
    """a float array filled in place; np.expand_dims for the two new axes."""
    tokens = np.asarray(tokens)
    mask = np.zeros(tokens.shape)
    mask[tokens == pad_id] = -np.inf
    return np.expand_dims(mask, axis=(-3, -2))


@alternative("padding_mask")
def padding_mask(tokens, pad_id):  # noqa: F811
    """multiply a 0/1 indicator by -inf... safely, with np.where; reshape for the new axes."""
    tokens = np.asarray(tokens)
    hidden = (tokens == pad_id)
    mask = np.where(hidden, -np.inf, 0.0)
    return mask.reshape(tokens.shape[:-1] + (1, 1, tokens.shape[-1]))


# -- 2.4 MultiHeadAttention.__call__ --------------------------------------------------------------------
@alternative("MultiHeadAttention")
def __call__(self, query_input, key_value_input=None, mask=None):
    """einsum with the heads as an explicit axis, no helper functions."""
    kv = query_input if key_value_input is None else key_value_input
    h, d_k = self.n_heads, self.d_k
    Q = (query_input @ self.W_q).reshape(*query_input.shape[:-1], h, d_k)  # (..., m, h, d_k)
    K = (kv @ self.W_k).reshape(*kv.shape[:-1], h, d_k)
    V = (kv @ self.W_v).reshape(*kv.shape[:-1], h, d_k)
    scores = np.einsum("...mhd,...nhd->...hmn", Q, K) / np.sqrt(d_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    heads = np.einsum("...hmn,...nhd->...mhd", weights, V)
    return heads.reshape(*heads.shape[:-2], h * d_k) @ self.W_o, weights


@alternative("MultiHeadAttention")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    """a loop over the heads with lesson 1's attention, then concatenate."""
    kv = query_input if key_value_input is None else key_value_input
    Q, K, V = query_input @ self.W_q, kv @ self.W_k, kv @ self.W_v
    outs, ws = [], []
    for i in range(self.n_heads):
        cols = slice(i * self.d_k, (i + 1) * self.d_k)
        if mask is None or np.ndim(mask) < 3:
            head_mask = mask  # None, or one (m, n) mask for every head
        else:
            mask_ = np.asarray(mask)
            head_mask = mask_[..., i if mask_.shape[-3] > 1 else 0, :, :]
        out, w = scaled_dot_product_attention(Q[..., cols], K[..., cols], V[..., cols], head_mask)
        outs.append(out)
        ws.append(w)
    return np.concatenate(outs, axis=-1) @ self.W_o, np.stack(ws, axis=-3)


# -- 2.5 FeedForward.__call__ ---------------------------------------------------------------------------
@alternative("FeedForward")
def __call__(self, x):
    """einsum for both linear maps; the GELU inline."""
    a = np.einsum("...d,df->...f", x, self.W1) + self.b1
    hidden = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3)))
    return np.einsum("...f,fd->...d", hidden, self.W2) + self.b2


@alternative("FeedForward")
def __call__(self, x):  # noqa: F811
    """the lesson's own gelu, named as in the notebook."""
    return gelu(x @ self.W1 + self.b1) @ self.W2 + self.b2


# -- 2.6 EncoderBlock.__call__ --------------------------------------------------------------------------
@alternative("EncoderBlock")
def __call__(self, x, mask=None):
    """named intermediate results."""
    h1 = rms_norm(x, self.norm1_gamma)
    attended, _weights = self.self_attn(h1, key_value_input=None, mask=mask)
    x1 = x + attended
    h2 = rms_norm(x1, self.norm2_gamma)
    return x1 + self.ffn(h2)


@alternative("EncoderBlock")
def __call__(self, x, mask=None):  # noqa: F811
    """explicit key_value_input = the normalised states, and the reference norm under another name."""
    h = rms_norm_(x, self.norm1_gamma)
    x = x + self.self_attn(h, h, mask)[0]
    return x + self.ffn(rms_norm_(x, self.norm2_gamma))


# -- forms that the probes (encdec.checks.probes) must not mistake for slips ---------------------------------
@alternative("rms_norm")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    """np.einsum for the sum of squares."""
    ms = np.einsum("...d,...d->...", x, x)[..., None] / np.shape(x)[-1]
    return np.einsum("...d,d->...d", x / np.sqrt(ms + eps), gamma)


@alternative("gelu")
def gelu(x):  # noqa: F811
    """the tanh written with exponentials: 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))."""
    x = np.asarray(x, dtype=np.float64)
    u = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)
    return x * 0.5 * (1.0 + np.tanh(u))


@alternative("padding_mask")
def padding_mask(tokens, pad_id):  # noqa: F811
    """np.full, then the pads set by boolean indexing."""
    tokens = np.asarray(tokens)
    mask = np.full(tokens.shape, 0.0)
    mask[tokens == pad_id] = -np.inf
    return np.expand_dims(mask, (-3, -2))


@alternative("MultiHeadAttention")
def __call__(self, query_input, key_value_input=None, mask=None):  # noqa: F811
    """a loop over the heads, each with its own columns of W_q, W_k, W_v and rows of W_o."""
    kv = query_input if key_value_input is None else key_value_input
    out, weights = 0.0, []
    for i in range(self.n_heads):
        cols = slice(i * self.d_k, (i + 1) * self.d_k)
        Q, K, V = query_input @ self.W_q[:, cols], kv @ self.W_k[:, cols], kv @ self.W_v[:, cols]
        scores = np.einsum("...mk,...nk->...mn", Q, K) / np.sqrt(self.d_k)
        if mask is not None:  # this head's slice of the mask, broadcast to (..., h, m, n)
            full = scores.shape[:-2] + (self.n_heads,) + scores.shape[-2:]
            scores = scores + np.broadcast_to(mask, np.broadcast_shapes(np.shape(mask), full))[..., i, :, :]
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        weights.append(w)
        out = out + (w @ V) @ self.W_o[cols, :]
    return out, np.stack(weights, axis=-3)


@alternative("FeedForward")
def __call__(self, x):  # noqa: F811
    """einsum for both linear maps."""
    hidden = gelu_(np.einsum("...d,df->...f", x, self.W1) + self.b1)
    return np.einsum("...f,fd->...d", hidden, self.W2) + self.b2


@alternative("EncoderBlock")
def __call__(self, x, mask=None):  # noqa: F811
    """the two sublayers as (gain, function) pairs in a loop."""
    sublayers = [(self.norm1_gamma, lambda h: self.self_attn(h, h, mask)[0]), (self.norm2_gamma, self.ffn)]
    for gamma, sublayer in sublayers:
        x = x + sublayer(rms_norm_(x, gamma))
    return x
