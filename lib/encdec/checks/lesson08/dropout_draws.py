"""Exercise 8.6's two accepted conventions and the counting of draws: _Flipped (a generator whose
random() gives 1 - u), _draws (how many rng.random() numbers a generator has drawn since its seed),
_seeded (dropout run on default_rng(seed), with the numbers it drew), the other exact convention
(_dropout_single_draw: keep where u < 1 - rate) and _probe, which finds out which convention an
answer uses and whether it draws from `rng` at all."""

import numpy as np

from ... import layers, training
from ..core import run_student


# The convention: u = rng.random(x.shape), drawn once; keep where u >= rate; x * keep / (1 - rate); with
# training=False or rate == 0, x itself and nothing drawn. keep = u < 1 - rate (the same distribution from
# the same single draw) is accepted too: the checker finds out which one the answer uses and checks every
# case against that one, exactly.
class _Flipped:
    """A generator whose random() gives 1 - u: the catalog's mistakes, run in the u < 1 - rate convention."""

    def __init__(self, rng):
        self.rng = rng

    def random(self, size=None):
        return 1.0 - self.rng.random(size)

    def __getattr__(self, name):
        return getattr(self.rng, name)


def _draws(rng, seed, limit):
    """How many rng.random() numbers `rng` has drawn since default_rng(seed); -1 if not a whole number of them."""
    target = rng.bit_generator.state
    fresh = np.random.default_rng(seed)
    for k in range(limit + 1):
        if fresh.bit_generator.state == target:
            return k
        fresh.random()
    return -1


def _seeded(dropout, flipped=False):
    """Run dropout(x, rate, rng, ...) with rng = default_rng(seed); return (output, numbers drawn from rng)."""
    def run(x, rate, seed, **kwargs):
        rng = np.random.default_rng(seed)
        out = dropout(x, rate, _Flipped(rng) if flipped else rng, **kwargs)
        return out, _draws(rng, seed, 3 * np.size(x) + 8)
    return run


def _dropout_single_draw(x, rate, rng, training=True):
    """The other exact convention: keep where u < 1 - rate."""
    if not training or rate == 0:
        return x
    u = rng.random(np.shape(x))
    return np.asarray(x, dtype=np.float64) * (u < 1.0 - rate) / (1.0 - rate)


def _probe(fn):
    """(keeps u < 1 - rate, draws nothing from rng) of the answer on one training-mode input; both
    False when it fails or returns something else than an array of x's shape."""
    x, rate, seed = np.arange(1.0, 25.0).reshape(4, 6), 0.3, 808
    rng = np.random.default_rng(seed)
    out = run_student(fn, (x.copy(), rate, rng), forbidden=[layers.dropout, training._dropout])
    got = out.value
    if out.error is not None or not isinstance(got, np.ndarray) or got.shape != x.shape:
        return False, False
    u = np.random.default_rng(seed).random(x.shape)
    single_draw = np.array_equal(got != 0, u < 1 - rate) and not np.array_equal(got != 0, u >= rate)
    return bool(single_draw), _draws(rng, seed, 0) == 0 and bool(np.any(got != x))
