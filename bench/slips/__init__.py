"""Realistic slips: wrong answers written as a student would write them, to measure the feedback.

Each slip is a function with the exercise's own name and signature (a method exercise's slip is the
method alone, `def __call__(self, ...)`), registered with

    @slip(exercise, key, description, expect=("head",), preserves_shape=True)

- `exercise`: the answer's name in the notebook ("softmax", "MultiHeadAttention", ...);
- `key`: a short name for the slip, unique within the exercise;
- `description`: one line, what the student did;
- `expect`: phrases, any of which (case-insensitive) a good diagnosis of this slip contains: the
  words any correct explanation of it would use, whatever its exact wording;
- `preserves_shape`: True when the answer runs without error and returns arrays of the right shape
  with wrong values (the slips a student cannot find by printing shapes). Read strictly: a decoding
  slip whose wrong tokens make the output end at another step, on any of the checker's cases, is not
  shape-preserving.

The slips were written from the lessons' exercise statements and the reference library alone,
without looking at the catalog's wrong implementations or at the checkers' probes, so they measure
how the feedback does on wrong answers nobody designed it around. Each module imports what the
lesson's setup cell imports, as a notebook would.
"""

import importlib
from dataclasses import dataclass

LESSONS = [f"lesson{k:02d}" for k in range(1, 11)]


@dataclass(frozen=True)
class Slip:
    exercise: str
    key: str
    description: str
    expect: tuple
    preserves_shape: bool
    impl: object

    @property
    def name(self):
        return f"{self.exercise}:{self.key}"


SLIPS = []


def slip(exercise, key, description, *, expect, preserves_shape=True):
    """Register the decorated function as a slip in answer to `exercise`."""
    if not expect or isinstance(expect, str):
        raise ValueError(f"{exercise}:{key}: expect is a tuple of phrases, got {expect!r}")
    if any(len(phrase) < 2 for phrase in expect):
        raise ValueError(f"{exercise}:{key}: a one-letter phrase would match almost any text: {expect!r}")

    def register(fn):
        entry = Slip(exercise, key, description, tuple(expect), preserves_shape, fn)
        if any(s.name == entry.name for s in SLIPS):
            raise ValueError(f"slip {entry.name} is registered twice")
        SLIPS.append(entry)
        return fn
    return register


def all_slips():
    """Every slip of the ten lessons, in lesson order."""
    for lesson in LESSONS:
        importlib.import_module(f"{__name__}.{lesson}")
    return list(SLIPS)
