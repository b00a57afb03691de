"""Lesson 8's checkers say what is true: the dropout checker accepts both exact single-draw conventions
(and then checks everything against the one the answer uses), names a mask drawn from np.random, and the
schedule and smoothing diagnoses state what the catalogued code computes.
(tests/test_checkers.py proves every catalog entry and variant.)"""

import contextlib
import io

import numpy as np
import pytest

from encdec import optim
from encdec.checks import lesson08 as L
from encdec.mistakes import CATALOG

pytestmark = pytest.mark.lesson08


def run(checker, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = checker(*args, **kwargs)
    return score, out.getvalue()


def single_draw(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    return x * (rng.random(x.shape) < 1 - rate) / (1 - rate)


def single_draw_unscaled(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    return x * (rng.random(x.shape) < 1 - rate)


@pytest.mark.parametrize("hidden", [False, True])
def test_the_u_below_one_minus_rate_convention_gets_full_marks_and_a_note(hidden):
    score, text = run(L.check_dropout, single_draw, points=2, hidden=hidden)
    assert score == 2, text
    assert "you keep the entries where u < 1 - rate" in text


def test_a_mistake_in_the_other_convention_is_still_named():
    score, text = run(L.check_dropout, single_draw_unscaled, points=2, hidden=True)
    assert score < 2
    assert "you keep the entries where u < 1 - rate" in text
    assert CATALOG.find("dropout", "no_rescale").diagnosis in text


def test_both_conventions_give_the_same_distribution_but_different_masks():
    u = np.random.default_rng(0).random(100_000)
    a, b = u >= 0.3, u < 0.7
    assert abs(a.mean() - b.mean()) < 0.01 and not np.array_equal(a, b)


def test_a_mask_from_the_global_generator_is_named():
    def global_generator(x, rate, rng, training=True):
        if not training or rate == 0:
            return x
        return x * (np.random.random(x.shape) >= rate) / (1 - rate)

    score, text = run(L.check_dropout, global_generator, points=2)
    assert score < 2
    assert "draws no numbers from `rng`" in text


def test_the_linear_ramp_diagnosis_states_where_it_peaks_and_how_high():
    """'meets the decay branch at step = warmup^(2/3) ... warmup^(1/6) times the intended peak (at step 252,
    about 4 times too high)'."""
    mistake = CATALOG.find("warmup_schedule", "linear_ramp_to_one")
    for warmup in (20000, 4000):  # integer steps: the peak is exact only up to rounding the step
        steps = np.arange(1, 2 * warmup)
        rates = np.array([mistake.impl(int(s), 512, warmup) for s in steps])
        peak_step = steps[rates.argmax()]
        assert abs(peak_step - warmup ** (2 / 3)) < 1
        ratio = rates.max() / optim.warmup_schedule(warmup, 512, warmup)
        assert ratio == pytest.approx(warmup ** (1 / 6), rel=2e-3)
    assert "at step 252, about 4 times too high" in mistake.diagnosis and peak_step == 252 and round(ratio) == 4
