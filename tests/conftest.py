import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import encdec  # noqa: E402
# Every parameter random, no all-ones gammas or zero biases that hide mistakes: the checkers' own
# randomize, which the tests import from here.
from encdec.checks.fixtures import randomize  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def small_model(rng):
    model = encdec.Seq2Seq(vocab_size=17, d_model=16, n_heads=4, d_ff=24,
                           n_encoder_layers=2, n_decoder_layers=2, pad_id=0, rng=7)
    randomize(model.parameters(), rng)
    return model


@pytest.fixture
def batch():
    """Right-padded source and target ids (pad 0, BOS 1, EOS 2), n != m."""
    src = np.array([[3, 4, 5, 6, 7, 0, 0], [8, 9, 10, 11, 12, 13, 14]])
    tgt = np.array([[5, 6, 7, 2, 0], [9, 10, 11, 12, 2]])
    return src, tgt


@pytest.fixture(scope="session")
def small_model_session():
    model = encdec.Seq2Seq(vocab_size=17, d_model=16, n_heads=4, d_ff=24,
                           n_encoder_layers=2, n_decoder_layers=2, pad_id=0, rng=7)
    randomize(model.parameters(), np.random.default_rng(99))
    return model


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory):
    """The fixture class (tests/grading_class.py), graded once through the real driver."""
    from grading_class import build_and_grade
    return build_and_grade(tmp_path_factory)

