"""The catalog of known mistakes: wrong implementations, each with the misconception it shows.

`encdec.mistakes` fills one Catalog with `@mistake(exercise, key, diagnosis)`; the checkers look
an answer up in it. This module knows nothing of the checkers, so the mistakes can depend on it
alone.
"""

import dataclasses
import re
import types
import warnings
from dataclasses import dataclass

import numpy as np

_NONFINITE_WORDS = re.compile(r"\b(nan|inf|-inf|overflows?|infinite|infinity)\b", re.IGNORECASE)


@dataclass
class Mistake:
    exercise: str  # the name the exercise's answer has in the notebook, e.g. "scaled_dot_product_attention"
    key: str  # what reports count by, e.g. "no_scale"
    diagnosis: str  # the words the student reads
    impl: object  # a function (or a method to put in place of the exercise's method)

    @property
    def nonfinite(self):
        """True where the slip shows as nan or inf (its words say so: an overflow, 0/0 = nan): a match with an
        answer only through nan or inf is then its evidence, not a coincidence of dividing by zero."""
        return bool(_NONFINITE_WORDS.search(self.diagnosis))

    def run(self, args, kwargs):
        """(value, None), or (None, the exception) when the mistake fails on this input."""
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                return self.impl(*args, **(kwargs or {})), None
            except Exception as exc:  # a mistake may fail the way the student's code fails
                return None, exc


class Catalog:
    """Known-wrong implementations of each exercise, each with the misconception it shows."""

    def __init__(self):
        self.entries = {}

    def mistake(self, exercise, key, diagnosis):
        """Decorator: register the function as mistake `key` of `exercise`."""
        def register(fn):
            self.entries.setdefault(exercise, []).append(Mistake(exercise, key, diagnosis, fn))
            return fn
        return register

    def __getitem__(self, exercise):
        return self.entries.get(exercise, [])

    def find(self, exercise, key):
        for m in self[exercise]:
            if m.key == key:
                return m
        raise KeyError(f"{exercise}: no mistake {key!r}")


def wrapped(mistakes, wrapper):
    """The mistakes run through the same harness as the student's answer: impl -> wrapper(impl)."""
    return [dataclasses.replace(m, impl=wrapper(m.impl)) for m in mistakes]


def bind_catalog(mistakes, obj):
    """Mistakes written as methods (def __call__(self, ...)) bound to an instance `obj`."""
    return wrapped(mistakes, lambda impl: types.MethodType(impl, obj))
