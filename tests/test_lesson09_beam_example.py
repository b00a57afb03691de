"""Lesson 9's worked beam-search example (section 9.4): every number the lesson states by hand is what
the course's beam_search computes, and Exercise 9.3's test checks it first."""

import contextlib
import io

import numpy as np
import pytest

from encdec.checks.lesson09 import WORKED_EXAMPLE, WorkedExampleModel, check_beam_search
from encdec.decoding import beam_search, greedy_decode
from encdec.mistakes import CATALOG

pytestmark = pytest.mark.lesson09

BOS, EOS = 1, 2
MODEL = WorkedExampleModel()
SRC = np.array([3, 4])


def results(**kwargs):
    settings = dict(beam_width=2, max_len=5, alpha=1.0) | kwargs
    return [(MODEL.spell(t), round(float(s), 4)) for t, s in beam_search(MODEL, SRC, BOS, EOS, **settings)]


def test_the_traced_search_returns_what_the_lesson_computes_by_hand():
    assert results() == [("b a <eos>", -0.5716), ("a <eos>", -0.6931)]


def test_the_table_of_totals_is_the_log_of_the_products():
    def total(path):
        return sum(np.log(WORKED_EXAMPLE[path[:i]][tok]) for i, tok in enumerate(path))
    stated = {"a": -0.6931, "b": -0.9163, "<eos>": -2.3026, "b a": -1.0217, "a <eos>": -1.3863,
              "a a": -1.8971, "a b": -2.3026, "b b": -3.9120, "b <eos>": -3.9120, "b a <eos>": -1.7148,
              "b a a": -2.2256, "a a <eos>": -2.4079, "b a b": -2.6311, "a a b": -3.1011, "a a a": -4.1997}
    for text, value in stated.items():
        assert round(total(tuple(text.split())), 4) == value, text


def test_the_settings_of_the_self_checks():
    assert results(alpha=0.0) == [("a <eos>", -1.3863), ("b a <eos>", -1.7148)]
    assert results(beam_width=1) == [("a <eos>", -0.6931)]
    assert results(beam_width=3) == [("b a <eos>", -0.5716), ("a <eos>", -0.6931), ("a a <eos>", -0.8026)]
    assert results(max_len=2) == [("a <eos>", -0.6931), ("b a", -0.5108)]
    assert MODEL.spell(greedy_decode(MODEL, SRC, BOS, EOS, 5, use_cache=False)) == "a <eos>"


def test_the_stopping_rule_misses_a_better_hypothesis():
    missed = np.log(0.4 * 0.9 * 0.3 * 0.99) / 4
    assert round(missed, 4) == -0.5589 and missed > results()[0][1]


def test_exercise_9_3_checks_the_worked_example_first():
    no_norm = next(m for m in CATALOG["beam_search"] if m.key == "no_length_normalisation")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check_beam_search(no_norm.impl)
    first = out.getvalue().splitlines()[1]
    assert first.startswith("  ✗ [0 / 0.75] the worked example of section 9.4"), first
