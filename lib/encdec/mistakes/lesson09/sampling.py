"""Exercise 9.2, sample_next_token: the mistakes of sampling the next token (and what they share:
`_probs`, `_draw`, `_top_k`, `_nucleus`)."""

import numpy as np

from .. import mistake


# -- Exercise 9.2 sample_next_token ------------------------------------------------------------------------
def _probs(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def _draw(probs, rng):
    """One id per row by the inverse CDF: the first index whose cumulative probability passes u."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum(np.sum(cdf <= u, axis=-1), probs.shape[-1] - 1)


def _top_k(z, top_k):
    if top_k is None:
        return z
    kth = np.sort(z, axis=-1)[..., -top_k][..., None]
    return np.where(z >= kth, z, -np.inf)


def _nucleus(z, top_p):
    if top_p is None:
        return z
    p = _probs(z)
    order = np.argsort(-p, axis=-1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=-1)
    keep_sorted = np.cumsum(sorted_p, axis=-1) - sorted_p < top_p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return np.where(keep, z, -np.inf)


@mistake("sample_next_token", "always_the_argmax",
         "the most probable token is returned every time: that is greedy decoding, not sampling. "
         "Draw a token at random with the probabilities softmax(logits / temperature), e.g. with "
         "rng.random() and the cumulative sum.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    return np.argmax(logits, axis=-1)


@mistake("sample_next_token", "temperature_multiplies",
         "the logits are multiplied by the temperature instead of divided by it, so T > 1 sharpens "
         "and T < 1 flattens: the opposite of what temperature means. Use softmax(logits / T).")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = _nucleus(_top_k(logits * temperature, top_k), top_p)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "temperature_ignored",
         "the temperature has no effect on the draws. Divide the logits by it before the softmax: "
         "p = softmax(logits / T). (Dividing the probabilities by T changes nothing once they are "
         "renormalised.)")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = _nucleus(_top_k(logits, top_k), top_p)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "top_k_one_short",
         "top-k keeps only k - 1 tokens: the k-th largest logit is the threshold and must itself be "
         "kept (z >= kth, not z > kth).")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = z / temperature
    if top_k is not None:
        kth = np.sort(z, axis=-1)[..., -top_k][..., None]
        z = np.where(z > kth, z, -np.inf)
    return _draw(_probs(_nucleus(z, top_p)), rng)


@mistake("sample_next_token", "nucleus_without_the_crossing_token",
         "top-p keeps the wrong set: only the tokens whose running total stays below p, so the "
         "token that carries the total over p is dropped (and with one dominant token nothing is "
         "left). The nucleus is the smallest set of most probable tokens whose probability reaches "
         "p: keep a token when the mass ranked above it is still below p.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _top_k(z / temperature, top_k)
    if top_p is not None:
        p = _probs(z)
        order = np.argsort(-p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        keep_sorted = np.cumsum(sorted_p, axis=-1) < top_p
        keep_sorted[..., 0] = True
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        z = np.where(keep, z, -np.inf)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "nucleus_before_top_k",
         "top-p is applied before top-k. This course, like the common libraries, keeps the k most "
         "probable tokens first, renormalises, and then takes the nucleus of that smaller "
         "distribution.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _top_k(_nucleus(z / temperature, top_p), top_k)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "nucleus_from_the_least_probable",
         "top-p keeps the wrong set: the tokens are ranked from least to most probable, so the "
         "nucleus collects the unlikely tail. Sort by decreasing probability (np.argsort(-p)) and "
         "keep the most probable tokens.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _top_k(z / temperature, top_k)
    if top_p is not None:
        p = _probs(z)
        order = np.argsort(p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        keep_sorted = np.cumsum(sorted_p, axis=-1) - sorted_p < top_p
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        z = np.where(keep, z, -np.inf)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "nucleus_before_temperature",
         "top-p keeps the wrong set: the nucleus is chosen from softmax(logits), before the "
         "temperature. Apply the temperature first and choose the nucleus from "
         "softmax(logits / T): that is the distribution you sample from.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _nucleus(_top_k(z, top_k), top_p)
    return _draw(_probs(z / temperature), rng)


@mistake("sample_next_token", "not_renormalised",
         "after top-k or top-p the kept probabilities are not renormalised, so they no longer sum "
         "to 1 (rng.choice refuses them). Divide the kept probabilities by their sum, or set the "
         "dropped logits to -inf and take the softmax again.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    p = _probs(z / temperature)
    kept = _probs(_nucleus(_top_k(z / temperature, top_k), top_p)) > 0
    p = np.where(kept, p, 0.0)
    flat = p.reshape(-1, p.shape[-1])
    ids = [rng.choice(p.shape[-1], p=row) for row in flat]
    return np.array(ids, dtype=np.int64).reshape(p.shape[:-1])


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("sample_next_token", "top_k_one_more",
         "one token more than top_k is kept (the k + 1 most probable). Keep exactly the top_k most probable: "
         "the k-th largest scaled logit is the threshold, z >= kth.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = logits / temperature
    z = _top_k(z, min(top_k + 1, z.shape[-1]) if top_k is not None else None)
    return _draw(_probs(_nucleus(z, top_p)), rng)


@mistake("sample_next_token", "uniform_over_the_allowed_tokens",
         "every allowed token is drawn equally often: top-k and top-p choose which tokens may be drawn, but "
         "each is still drawn with its own (renormalised) probability, softmax(z) over the kept set.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = _nucleus(_top_k(logits / temperature, top_k), top_p)
    allowed = np.isfinite(z).astype(np.float64)
    return _draw(allowed / allowed.sum(axis=-1, keepdims=True), rng)
