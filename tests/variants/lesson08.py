"""Correct implementations of lesson 08's exercises that differ from the reference."""
import numpy as np

from encdec.training import backward, forward_with_cache

ALTERNATIVES = {}


def alternative(exercise):
    def register(fn):
        ALTERNATIVES.setdefault(exercise, []).append(fn)
        return fn
    return register


# -- 8.1 ----------------------------------------------------------------------------------------------------
@alternative("sequence_cross_entropy")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):
    """Flattened to (N, V) rows, fancy indexing for the target term, the smoothing term as a mean."""
    logits = np.asarray(logits, dtype=np.float64)
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = np.asarray(targets).reshape(-1)
    keep = np.ones(t.shape, bool) if pad_id is None else t != pad_id
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows = np.arange(len(t))
    safe = np.where(keep, t, 0)
    nll = -logp[rows, safe]
    smooth = -logp.mean(axis=1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * smooth
    loss = per_token[keep].sum() / n
    grad = np.exp(logp) - label_smoothing / V
    grad[rows, safe] -= 1 - label_smoothing
    grad[~keep] = 0.0
    return float(loss), (grad / n).reshape(logits.shape)


@alternative("sequence_cross_entropy")
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):  # noqa: F811
    """einsum with an explicit smoothed target distribution; float32 stays float32."""
    V = logits.shape[-1]
    targets = np.asarray(targets)
    mask = np.ones(targets.shape) if pad_id is None else (targets != pad_id).astype(float)
    one_hot = (targets[..., None] == np.arange(V)).astype(logits.dtype)
    q = one_hot * (1 - label_smoothing) + label_smoothing / V
    shifted = logits - logits.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    logp = shifted - lse
    count = max(mask.sum(), 1.0)
    loss = -np.sum(np.einsum("...v,...v->...", q, logp) * mask) / count
    dlogits = (np.exp(logp) - q) * mask[..., None] / count
    return loss, dlogits


# -- 8.2 ----------------------------------------------------------------------------------------------------
@alternative("adam_update")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """Running averages written as m + (1 - beta)(g - m); the step size folded into one rate."""
    m = m + (1 - beta1) * (grad - m)
    v = v + (1 - beta2) * (grad * grad - v)
    step = lr / (1 - beta1**t)
    return param - step * m / (np.sqrt(v / (1 - beta2**t)) + eps), m, v


@alternative("adam_update")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    """Copies updated in place with NumPy's out= arguments; the inputs are left untouched."""
    new_m, new_v = np.multiply(m, beta1), np.multiply(v, beta2)
    new_m += (1 - beta1) * grad
    new_v += (1 - beta2) * np.square(grad)
    m_hat = new_m / (1 - np.power(beta1, t))
    v_hat = new_v / (1 - np.power(beta2, t))
    new_param = np.array(param, copy=True)
    new_param -= lr * m_hat / (np.sqrt(v_hat) + eps)
    return new_param, new_m, new_v


# -- 8.3 ----------------------------------------------------------------------------------------------------
@alternative("warmup_schedule")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    """Two branches written out with an if."""
    if step < warmup_steps:
        rate = step / warmup_steps**1.5
    else:
        rate = 1 / np.sqrt(step)
    return factor * rate / np.sqrt(d_model)


@alternative("warmup_schedule")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    """np.minimum and negative powers of floats; returns a NumPy scalar."""
    step = float(step)
    return factor * np.power(float(d_model), -0.5) * np.minimum(np.power(step, -0.5), step * np.power(float(warmup_steps), -1.5))


# -- 8.4 ----------------------------------------------------------------------------------------------------
@alternative("train_step")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    """Calls the notebook's own sequence_cross_entropy; builds the decoder input by hand; accuracy by hand."""
    pad_id = model.config.pad_id
    targets = np.asarray(targets)
    tgt_in = np.empty_like(targets)
    tgt_in[:, 0] = bos_id
    tgt_in[:, 1:] = targets[:, :-1]
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = sequence_cross_entropy(logits, targets, pad_id, label_smoothing)  # noqa: F821
    grads = backward(model, dlogits, cache)
    optimizer.step(grads, lr=lr)
    real = targets != pad_id
    accuracy = ((logits.argmax(-1) == targets) & real).sum() / real.sum()
    return loss, float(accuracy)


@alternative("train_step")
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):  # noqa: F811
    """Adam written out with adam_update over the optimizer's own state (no optimizer.step)."""
    from encdec import adam_update, shift_right, softmax_cross_entropy, token_accuracy
    pad_id = model.config.pad_id
    logits, cache = forward_with_cache(model, src, shift_right(targets, bos_id))
    loss, dlogits = softmax_cross_entropy(logits, targets, pad_id=pad_id, label_smoothing=label_smoothing)
    grads = backward(model, dlogits, cache)
    optimizer.t += 1
    rate = optimizer.lr if lr is None else lr
    for name, p in optimizer.params.items():
        p[...], optimizer.m[name], optimizer.v[name] = adam_update(
            p, grads[name], optimizer.m[name], optimizer.v[name], optimizer.t, rate, *optimizer.betas, optimizer.eps)
    return loss, token_accuracy(logits, targets, pad_id)


# -- 8.6 ----------------------------------------------------------------------------------------------------
@alternative("dropout")
def dropout(x, rate, rng, training=True):
    """np.where on the kept entries, the scale computed once; a float32 input stays float32."""
    if not training or rate == 0:
        return x
    x = np.asarray(x)
    u = rng.random(size=x.shape)
    scale = np.asarray(1.0 / (1.0 - rate), dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    return np.where(u >= rate, x * scale, 0.0).astype(scale.dtype)


@alternative("dropout")
def dropout(x, rate, rng, training=True):  # noqa: F811
    """The other exact convention, from the same single draw: keep where u < 1 - rate (same distribution)."""
    if training and rate > 0:
        keep_probability = 1.0 - rate
        keep = rng.uniform(size=np.shape(x)) < keep_probability
        return x * keep / keep_probability
    return x


@alternative("dropout")
def dropout(x, rate, rng, training=True):  # noqa: F811
    """Entry by entry over a flat copy, one rng.random() at a time, in C order (the same stream of numbers)."""
    if rate == 0 or not training:
        return x
    flat = np.array(x, dtype=np.float64).ravel()
    for i in range(flat.size):
        flat[i] = flat[i] / (1 - rate) if rng.random() >= rate else 0.0
    return flat.reshape(np.shape(x))


@alternative("adam_update")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    """the paper's efficient form: the corrections folded into a step size and an adjusted eps."""
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * np.square(grad)
    c2 = np.sqrt(1 - beta2**t)
    step = lr * c2 / (1 - beta1**t)
    return param - step * m / (np.sqrt(v) + eps * c2), m, v


@alternative("warmup_schedule")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    """the two branches written apart, with an if."""
    if step < warmup_steps:
        return factor * step / (np.sqrt(d_model) * warmup_steps * np.sqrt(warmup_steps))
    return factor / np.sqrt(d_model * step)
