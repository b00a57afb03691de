"""Causes read from the answer's own code: an axis of size 1 dropped by an integer index (size_one_axes.py), a
division by a count that is 0 on the case (divergence.py), an array cut to a length it is shorter than
(shape_causes.py), a dropout mask drawn by another method of the generator (8.6), a second forward pass
that draws its own dropout masks (8.4, on its dropout part), and boolean masks joined with `&` (the catalog's
entry for masks that hide a key only where both hide it). Each slip is written as a student would; each
diagnosis is read from the checker, with the catalog emptied where a probe is what is proven; right answers
written otherwise keep full marks and get none of these words."""

import numpy as np
import torch

from encdec.attention import create_causal_mask, padding_mask
from encdec.checks import lesson03, lesson08
from encdec.checks.lesson10 import EXERCISES as LESSON10
from encdec.model import shift_right
from encdec.training import backward, forward_with_cache
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


# -- an axis of size 1 dropped by an integer index ------------------------------------------------------------
def mask_head_axis_dropped(tgt_in, pad_id):
    keys = padding_mask(tgt_in, pad_id)[..., 0, :, :]
    return create_causal_mask(np.shape(tgt_in)[-1]) + keys


def mask_head_axis_kept(tgt_in, pad_id):
    tokens = np.asarray(tgt_in)
    hidden = (tokens == pad_id)[..., None, None, :] | np.triu(np.ones((tokens.shape[-1],) * 2, bool), 1)
    return np.where(hidden, -np.inf, 0.0)


def mask_joined_with_and(tgt_in, pad_id):
    tokens = np.asarray(tgt_in)
    future = np.triu(np.ones((tokens.shape[-1],) * 2, dtype=bool), k=1)
    return np.where(future & (tokens == pad_id)[..., None, None, :], -np.inf, 0.0)


def test_an_integer_index_that_drops_the_heads_axis_is_mended_by_a_slice(no_catalog, time_enough):
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.check_decoder_mask, mask_head_axis_dropped)
    assert score == 0
    assert "`0:1` in place of `0` in `padding_mask(tgt_in, pad_id)[..., 0, :, :]`" in text, text
    assert "an integer index drops its axis" in text


def test_a_mask_that_keeps_its_axes_gets_full_marks_and_no_such_words(time_enough):
    score, text = feedback(lesson03.check_decoder_mask, mask_head_axis_kept)
    assert score == lesson03.DECODER_MASK.points, text
    assert "in place of" not in text and "Likely cause" not in text


def test_boolean_masks_joined_with_and_are_named_by_the_catalog():
    score, text = feedback(lesson03.check_decoder_mask, mask_joined_with_and)
    assert score == 0
    assert "`&` of boolean ones" in text and "join boolean ones with `|`" in text, text


# -- a division by a count that is 0 ----------------------------------------------------------------------------
def cross_entropy_without_empty_case(logits, targets, pad_id=None, label_smoothing=0.0):
    V = logits.shape[-1]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    keep = np.ones(targets.shape) if pad_id is None else (targets != pad_id).astype(float)
    N = keep.sum()
    q = np.eye(V)[targets] * (1 - label_smoothing) + label_smoothing / V
    loss = -np.sum((q * log_p).sum(axis=-1) * keep) / N
    return float(loss), (np.exp(log_p) - q) * keep[..., None] / N


def cross_entropy_with_empty_case(logits, targets, pad_id=None, label_smoothing=0.0):
    V = logits.shape[-1]
    real = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    count = int(real.sum())
    if count == 0:
        return 0.0, np.zeros_like(logits, dtype=np.float64)
    z = logits - logits.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    smooth = np.full(logits.shape, label_smoothing / V)
    np.put_along_axis(smooth, targets[..., None], 1 - label_smoothing + label_smoothing / V, axis=-1)
    loss = -np.einsum("...v,...v->...", smooth, log_p)[real].sum() / count
    return float(loss), np.where(real[..., None], np.exp(log_p) - smooth, 0.0) / count


def test_a_division_by_a_count_of_zero_is_named_with_the_count(no_catalog, time_enough):
    no_catalog("sequence_cross_entropy")
    score, text = feedback(lesson08.check_sequence_cross_entropy, cross_entropy_without_empty_case)
    assert score < lesson08.SEQUENCE_CROSS_ENTROPY.points
    assert "divides by `N`, which is 0 on this case" in text, text
    assert "needs its own answer, returned before any division" in text


def test_an_answer_that_returns_early_on_an_empty_batch_gets_full_marks(time_enough):
    score, text = feedback(lesson08.check_sequence_cross_entropy, cross_entropy_with_empty_case)
    assert score == lesson08.SEQUENCE_CROSS_ENTROPY.points, text
    assert "divides by" not in text


# -- a dropout mask drawn another way --------------------------------------------------------------------------
def dropout_binomial(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    return x * rng.binomial(1, 1 - rate, size=x.shape) / (1 - rate)


def dropout_uniform(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    u = rng.uniform(size=np.shape(x))  # uniform on [0, 1): the same numbers as random()
    return np.where(u >= rate, x / (1 - rate), 0.0)


def test_a_mask_drawn_with_binomial_is_named_with_its_call(time_enough):
    score, text = feedback(lesson08.check_dropout, dropout_binomial)
    assert score < lesson08.DROPOUT.points
    assert "your mask comes from `rng.binomial(1, 1 - rate, size=x.shape)`" in text, text


def test_a_mask_drawn_with_uniform_is_right_and_not_named(time_enough):
    score, text = feedback(lesson08.check_dropout, dropout_uniform)
    assert score == lesson08.DROPOUT.points, text
    assert "your mask comes from" not in text


# -- a second forward pass, with dropout ----------------------------------------------------------------------
def train_step_two_passes(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    pad = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    guesses = model(src, tgt_in).argmax(axis=-1)
    real = targets != pad
    accuracy = float((guesses[real] == targets[real]).mean())
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = sequence_cross_entropy(logits, targets, pad, label_smoothing)  # noqa: F821 (rebound)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return float(loss), accuracy


def test_a_second_forward_pass_is_named_on_the_dropout_part(time_enough):
    """Without dropout both passes give the same logits: only the dropout part tells them apart."""
    score, text = feedback(lesson08.check_train_step, train_step_two_passes)
    parts = lesson08.TRAIN_STEP.points / 4
    assert abs(score - 3 * parts) < 1e-9, text
    assert "the accuracy comes from a forward pass of its own, before the loss's" in text.lower(), text


# -- an array cut to a length it is shorter than ------------------------------------------------------------------
def exact_match_cut_not_padded(model, src, tgt, bos_id, eos_id, max_len):
    pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    m = tgt.shape[1]
    pred = pred[:, :m]
    ended_before = torch.cumsum((tgt == eos_id).long(), dim=1) - (tgt == eos_id).long() > 0
    return ((pred == tgt) | ended_before).all(dim=1).float().mean().item()


def test_a_prediction_cut_but_not_padded_is_named_with_its_slice(no_catalog, time_enough):
    no_catalog("exact_match")
    exercise = next(e for e in LESSON10 if e.number == "10.5")
    score, text = feedback(exercise.checker, exact_match_cut_not_padded)
    assert score < exercise.points
    assert "`pred = pred[:, :m]` (line " in text and "cuts `pred` to at most" in text, text
    assert "a slice never makes an array longer" in text
