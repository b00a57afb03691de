import numpy as np

ALTERNATIVES = {}


def alternative(exercise):
    def register(fn):
        ALTERNATIVES.setdefault(exercise, []).append(fn)
        return fn
    return register


@alternative("softmax")
def softmax(x, axis=-1):
    """log-sum-exp form."""
    x = np.asarray(x, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)


@alternative("softmax")
def softmax(x, axis=-1):  # noqa: F811
    """float32 stays float32; moveaxis instead of keepdims."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    e = np.exp(x - x.max(-1)[..., None])
    return np.moveaxis(e / e.sum(-1)[..., None], -1, axis)


@alternative("scaled_dot_product_attention")
def scaled_dot_product_attention(Q, K, V, mask=None):
    """einsum, scaling the queries first."""
    scores = np.einsum("...md,...nd->...mn", Q / np.sqrt(Q.shape[-1]), K)
    if mask is not None:
        scores = scores + mask
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w = w / w.sum(axis=-1, keepdims=True)
    return np.einsum("...mn,...nd->...md", w, V), w


@alternative("scaled_dot_product_attention")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    """calls the student's own softmax (a global name in the notebook)."""
    d_k = K.shape[-1]
    scores = np.matmul(Q, K.swapaxes(-1, -2)) / d_k**0.5
    if mask is not None:
        scores += mask
    weights = softmax(scores)
    return weights @ V, weights


@alternative("sinusoidal_positions")
def sinusoidal_positions(n, d):
    """two nested loops, straight from the formula."""
    pe = np.zeros((n, d))
    for pos in range(n):
        for j in range(d):
            angle = pos / 10000 ** ((j - j % 2) / d)
            pe[pos, j] = np.sin(angle) if j % 2 == 0 else np.cos(angle)
    return pe


@alternative("sinusoidal_positions")
def sinusoidal_positions(n, d):  # noqa: F811
    """exp/log form of the frequencies."""
    pos = np.arange(n)[:, None]
    freq = np.exp(-np.log(10000.0) * np.arange(0, d, 2) / d)
    pe = np.empty((n, d))
    pe[:, 0::2] = np.sin(pos * freq)
    pe[:, 1::2] = np.cos(pos * freq[: d // 2])
    return pe


# -- forms that the probes (encdec.checks.probes) must not mistake for slips ---------------------------------
@alternative("softmax")
def softmax(x, axis=-1):  # noqa: F811
    """the axis moved to the end and back, the log-sum-exp subtracted in log space."""
    z = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    z = z - z.max(axis=-1, keepdims=True)
    out = np.exp(z - np.log(np.exp(z).sum(axis=-1, keepdims=True)))
    return np.moveaxis(out, -1, axis)


@alternative("scaled_dot_product_attention")
def scaled_dot_product_attention(Q, K, V, mask=None):  # noqa: F811
    """one query at a time, in a loop; einsum for the scores, a boolean keep-mask."""
    m = Q.shape[-2]
    outputs, weights = [], []
    for i in range(m):
        s = np.einsum("...k,...nk->...n", Q[..., i, :], K) / np.sqrt(Q.shape[-1])
        if mask is not None:
            row = np.broadcast_to(mask, np.broadcast_shapes(np.shape(mask), Q.shape[:-2] + (m, K.shape[-2])))[..., i, :]
            s = np.where(np.isneginf(row), -np.inf, s)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
        weights.append(w)
        outputs.append(np.einsum("...n,...nv->...v", w, V))
    return np.stack(outputs, axis=-2), np.stack(weights, axis=-2)


@alternative("sinusoidal_positions")
def sinusoidal_positions(n, d):  # noqa: F811
    """the frequencies as exp(-log(10000) 2i/d), sin and cos stacked pairwise then flattened."""
    freq = np.exp(-np.log(10000.0) * np.arange(0, d, 2) / d)
    angles = np.arange(n)[:, None] * freq[None, :]
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n, -1)[:, :d]
