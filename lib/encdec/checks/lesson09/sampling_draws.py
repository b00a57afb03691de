"""Exercise 9.2's cases (SamplingCase, sampling_cases) and what judging random draws needs: the number
of draws, reading them as token ids, their frequencies, and whether frequencies agree with
probabilities (or with each other) within a few standard errors."""

import dataclasses

import numpy as np

from ..fixtures import generator
from ..running import run_student


N_DRAWS = 4000


@dataclasses.dataclass
class SamplingCase:
    label: str
    logits: np.ndarray  # (V,)
    kwargs: dict
    seed: int
    hidden: bool = False

    def describe(self):
        return ", ".join(f"{k}={v}" for k, v in self.kwargs.items()) or "temperature=1.0"


def _draws(fn, case):
    """N_DRAWS tokens from one call on N_DRAWS copies of the logits row, with a seeded generator."""
    tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
    return run_student(fn, (tiled,), dict(case.kwargs, rng=generator(case.seed)))


def _as_ids(value, V, shape):
    """The draws as an int array of `shape`, or a message saying why they are not."""
    try:
        ids = np.asarray(value)
    except Exception:
        return None, f"expected integer token ids, got {type(value).__name__}"
    if ids.shape != shape:
        return None, f"shape: expected {shape}, got {ids.shape}"
    if not (np.issubdtype(ids.dtype, np.integer) or (np.issubdtype(ids.dtype, np.floating)
                                                      and np.all(ids == np.round(ids)))):
        return None, f"expected integer token ids, got dtype {ids.dtype}"
    ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= V):
        return None, f"ids must lie in [0, {V}); got {ids.min()} ... {ids.max()}"
    return ids, None


def _frequencies(ids, V):
    return np.bincount(ids, minlength=V) / len(ids)


def _close(f, p, n, z=5.0):
    """Frequencies f (from n draws) agree with probabilities p within z standard errors."""
    return np.all(np.abs(f - p) <= z * np.sqrt(p * (1 - p) / n) + 2.0 / n)


def _close_two(f, g, n, z=5.0):
    """Two sets of empirical frequencies (n draws each) that could come from one distribution."""
    return np.all(np.abs(f - g) <= z * np.sqrt((f * (1 - f) + g * (1 - g)) / n) + 3.0 / n)


def _fmt_p(x):
    return f"{100 * x:.1f}%"


def _one_token(ids, V):
    return np.count_nonzero(np.bincount(np.asarray(ids).ravel(), minlength=V)) == 1


LOGITS = np.log(np.array([0.06, 0.40, 0.04, 0.25, 0.10, 0.15]))  # token 1 most probable, then 3, 5, 4, 0, 2
TIED = np.log(np.array([0.1, 0.4, 0.2, 0.1, 0.2]))  # top_k=2 keeps 1, 2 and 4: 2 and 4 tie at the second largest


def sampling_cases():
    r = generator(92)
    spread = r.normal(size=9) * 1.5
    flat = np.log(np.array([0.3, 0.28, 0.22, 0.12, 0.08]))
    peaked = np.log(np.array([0.02, 0.9, 0.03, 0.05]))
    return {
        "plain": [SamplingCase("6 tokens", LOGITS, {}, 1),
                  SamplingCase("9 tokens", spread, {}, 2, hidden=True)],
        "temperature": [SamplingCase("6 tokens", LOGITS, {"temperature": 0.5}, 3),
                        SamplingCase("6 tokens", LOGITS, {"temperature": 2.0}, 4),
                        SamplingCase("9 tokens", spread, {"temperature": 1.7}, 5, hidden=True)],
        # top_k 2 of 6: one token more (3) and the k-th smallest as the threshold (5 kept) draw apart
        "top_k": [SamplingCase("6 tokens", LOGITS, {"top_k": 2}, 6),
                  SamplingCase("a tie at the k-th largest: both tied tokens stay", TIED, {"top_k": 2}, 14),
                  SamplingCase("9 tokens", spread, {"temperature": 0.8, "top_k": 4}, 7, hidden=True)],
        "top_p": [SamplingCase("6 tokens", LOGITS, {"top_p": 0.7}, 8),
                  SamplingCase("6 tokens", LOGITS, {"temperature": 0.5, "top_p": 0.8}, 9),
                  SamplingCase("one token holds 90%", peaked, {"top_p": 0.8}, 10),
                  SamplingCase("5 similar tokens", flat, {"top_p": 0.9}, 11, hidden=True)],
        "both": [SamplingCase("6 tokens", LOGITS, {"top_k": 3, "top_p": 0.7}, 12),
                 SamplingCase("9 tokens", spread, {"temperature": 1.3, "top_k": 5, "top_p": 0.6}, 13, hidden=True)],
    }
