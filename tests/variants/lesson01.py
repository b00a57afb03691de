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
