"""A concept item and how an answer to it is read and marked.

Every concept of a lesson is asked twice: a PRE item in the check before the lesson and a parallel
POST item in the check after it (the same idea in other words, with another number or in another
situation). Items are data:

    Concept("scale-sqrt-dk",
            pre=choice("Why does attention divide the scores by $\\sqrt{d_k}$?",
                       ["to make each row of weights sum to one", "...", ...], answer="b",
                       explanation="...", mistakes=["scaled_dot_product_attention/no_scale"]),
            post=number("... what is the standard deviation of one score?", 16, tolerance=0.5,
                        explanation="...", compute=lambda: ...))

A choice has 3 to 5 options, shown as (a), (b), ...; its answer is a letter. A number has a
tolerance: any answer within it is right. `mistakes` names the catalog entries
(encdec.mistakes, "exercise/key") whose misconceptions the distractors come from. `compute`, where
the answer can be computed, computes it with the library: a number for a numeric item; for a
choice, the value of the right option, and `values` gives every option's value (the tests check
that the right option's value is the computed one and no distractor's is).
"""

import numbers
from dataclasses import dataclass, field, replace

import numpy as np

LETTERS = "abcde"


@dataclass(frozen=True)
class Item:
    prompt: str  # Markdown; may use $...$
    answer: object  # a letter ("b") for a choice, a number for a numeric item
    explanation: str  # plain text, shown under the check after the lesson
    options: tuple = ()  # the choices, in the order shown; empty for a numeric item
    tolerance: float = 0.0  # a numeric answer within it is right (and how close computed values must be)
    mistakes: tuple = ()  # "exercise/key" of the catalog entries the distractors come from
    compute: object = field(default=None, compare=False)  # () -> the answer (or the right option's value)
    values: tuple = field(default=(), compare=False)  # each option's value, for a choice with `compute`
    concept: str = ""  # the concept's id, set by Concept

    def __post_init__(self):
        if self.options:
            if not 3 <= len(self.options) <= 5:
                raise ValueError(f"{self.prompt[:40]!r}: a choice has 3 to 5 options, got {len(self.options)}")
            if self.answer not in LETTERS[:len(self.options)]:
                raise ValueError(f"{self.prompt[:40]!r}: the answer must be one of {LETTERS[:len(self.options)]}")
            if self.values and len(self.values) != len(self.options):
                raise ValueError(f"{self.prompt[:40]!r}: one value per option")
        elif isinstance(self.answer, bool) or not isinstance(self.answer, numbers.Real):
            raise ValueError(f"{self.prompt[:40]!r}: a numeric item needs a number as its answer")

    @property
    def kind(self):
        return "choice" if self.options else "number"

    @property
    def letters(self):
        return LETTERS[:len(self.options)]

    def answer_text(self):
        """The right answer as students read it: the text of the right option, or the number."""
        if self.options:
            return self.options[self.letters.index(self.answer)]
        return f"{self.answer:g}"

    def shown_answer(self):
        """'(b)' or '16' (with its tolerance when there is one)."""
        if self.options:
            return f"({self.answer})"
        return f"{self.answer:g}" + (f" (± {self.tolerance:g})" if self.tolerance else "")

    def read(self, given):
        """(value, problem): the answer as this item reads it ('b', or a float), or None and why not."""
        if self.options:
            if isinstance(given, str):
                letter = given.strip().strip("()").strip().lower()
                if len(letter) == 1 and letter in self.letters:
                    return letter, ""
            return None, (f"{given!r} is not one of the letters {', '.join(repr(x) for x in self.letters)}: "
                          "write the letter in quotes")
        if isinstance(given, bool):
            return None, f"{given!r} is not a number"
        if isinstance(given, numbers.Real):
            return float(given), ""
        if isinstance(given, str):
            try:
                return float(given.strip()), ""
            except ValueError:
                pass
        return None, f"{given!r} is not a number: write a number, like 6 or 0.25"

    def is_right(self, value):
        """Whether a value read by read() is the right answer."""
        if self.options:
            return value == self.answer
        return bool(abs(value - self.answer) <= self.tolerance + 1e-12 * max(1.0, abs(self.answer)))

    def computed_matches(self):
        """(matches, message) of the answer against `compute`, where the item has one."""
        got = self.compute()
        if not self.options:
            ok = abs(float(got) - self.answer) <= self.tolerance + 1e-9 * max(1.0, abs(self.answer))
            return ok, f"computed {got!r}, the key says {self.answer!r}"
        right = self.letters.index(self.answer)
        if not same(self.values[right], got, self.tolerance):
            return False, f"computed {got!r}, the right option's value is {self.values[right]!r}"
        wrong = [self.letters[i] for i, v in enumerate(self.values) if i != right and same(v, got, self.tolerance)]
        if wrong:
            return False, f"the distractors {wrong} have the computed value {got!r} too"
        return True, ""


def same(a, b, tolerance=0.0):
    """Equal values: numbers and arrays within the tolerance, anything else by ==."""
    try:
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        if a_arr.dtype.kind in "iuf" and b_arr.dtype.kind in "iuf":
            return a_arr.shape == b_arr.shape and bool(np.allclose(a_arr, b_arr, rtol=0, atol=tolerance + 1e-9))
    except (TypeError, ValueError):
        pass
    return a == b


def choice(prompt, options, answer, explanation, mistakes=(), compute=None, values=(), tolerance=0.0):
    return Item(prompt, answer, explanation, tuple(options), tolerance, tuple(mistakes), compute, tuple(values))


def number(prompt, answer, explanation, tolerance=0.0, mistakes=(), compute=None):
    return Item(prompt, answer, explanation, (), tolerance, tuple(mistakes), compute)


@dataclass(frozen=True)
class Concept:
    """One concept of a lesson: its id (a short slug), asked before the lesson (`pre`) and after (`post`)."""

    id: str
    pre: Item
    post: Item

    def __post_init__(self):
        object.__setattr__(self, "pre", replace(self.pre, concept=self.id))
        object.__setattr__(self, "post", replace(self.post, concept=self.id))
