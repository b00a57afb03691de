"""A model given to an answer is not copied: its parameters are held, compared after the call and put back.

An answer that scales `model.embedding` in place returns the right vectors on its first call; the check
must say that it changed the model (with its line), and neither the expected values nor a later case may
see the changed model (before, the reference ran on the scaled model, and the answer was told that its
rows were not scaled at all)."""
import numpy as np
import pytest

import encdec
from encdec.checks import inputs
from encdec.checks import lesson06 as L
from encdec.layers import sinusoidal_positions

pytestmark = pytest.mark.lesson06

def scales_through_a_name(model, tokens):
    d = model.config.d_model
    E = model.embedding
    E *= np.sqrt(d)
    return E[tokens] + sinusoidal_positions(tokens.shape[-1], d)

def scales_the_attribute(model, tokens):
    d = model.config.d_model
    model.embedding = model.embedding * np.sqrt(d)
    return model.embedding[tokens] + sinusoidal_positions(tokens.shape[-1], d)

def copies_then_scales(model, tokens):
    rows = np.take(model.embedding, tokens, axis=0).copy()
    rows *= model.config.d_model ** 0.5
    rows += sinusoidal_positions(tokens.shape[-1], model.config.d_model)
    return rows

def _graded(answer, capsys):
    score = L.check_embed(answer, hidden=True)
    return float(score), capsys.readouterr().out

@pytest.mark.parametrize("answer,line", [(scales_through_a_name, "E *= np.sqrt(d)"),
                                         (scales_the_attribute, "model.embedding = model.embedding * np.sqrt(d)")])
def test_an_answer_that_changes_the_models_parameters_is_told_so_with_its_line(answer, line, capsys):
    score, text = _graded(answer, capsys)
    number = answer.__code__.co_firstlineno + (3 if answer is scales_through_a_name else 2)
    assert score == 0, text
    assert f"changed `model.embedding` in place (line {number}: `{line}`)" in text, text
    assert "not multiplied" not in text, text

def test_an_answer_that_scales_its_own_copy_keeps_full_marks(capsys):
    score, text = _graded(copies_then_scales, capsys)
    assert score == 2, text

def test_the_model_is_put_back_whatever_the_answer_did():
    model = encdec.Seq2Seq(vocab_size=7, d_model=4, n_heads=2, d_ff=8, n_encoder_layers=1, n_decoder_layers=1, rng=0)
    before = {k: v.copy() for k, v in model.parameters().items()}
    held = inputs.held_parameters(scales_through_a_name, (model, np.array([1, 2])), {})
    scales_through_a_name(model, np.array([1, 2]))
    assert inputs.put_back(held) == ["model.embedding"]
    assert all(np.array_equal(model.parameters()[k], v) for k, v in before.items())
    held = inputs.held_parameters(scales_the_attribute, (model, np.array([1, 2])), {})
    scales_the_attribute(model, np.array([1, 2]))
    assert inputs.put_back(held) == ["model.embedding"]
    assert all(np.array_equal(model.parameters()[k], v) for k, v in before.items())
    assert inputs.put_back(held) == []
