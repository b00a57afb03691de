"""A setting lost on its way in (probes/settings.py: `if pad_id:` where pad_id is 0, a notebook's `PAD` where the
model has its own pad id), a sibling attribute never read (`norm3_gamma`, unread.py), and the repair's edits of
one line or one call: a shift made at one place of a line and not another, a reduced axis put back at the end
through a name, tensordot's and np.pad's axes, a parameter made again by a weight (K through W_k). Also the
tracer, which takes a value near an input only within the tolerance for a computed one, and 7.2's part on x
restored by arithmetic (it loses that part). Each slip is written as a student would; each diagnosis is read from the checker with
its catalog emptied; right answers written otherwise keep full marks and get none of these words."""

import numpy as np

from encdec.attention import MultiHeadAttention, merge_heads, split_heads
from encdec.checks import lesson01, lesson03, lesson04, lesson05, lesson06, lesson07, lesson08
from encdec.checks.core import Attempt
from encdec.checks.probes import NO_PROBES, divergence
from encdec.checks.probes.unread import UnreadSibling
from encdec.layers import DecoderBlock, rms_norm
from encdec.loss import softmax_cross_entropy
from encdec.model import shift_right
from encdec.training import backward, forward_with_cache
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)

PAD = 0  # a notebook's constant, as the toy task's pad id


# -- a setting lost on its way in ------------------------------------------------------------------------------
def cross_entropy_truthy_pad(logits, targets, pad_id=None):
    V = logits.shape[-1]
    keep = targets != pad_id if pad_id else np.ones(targets.shape, bool)
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits, dtype=float)
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    y = np.eye(V)[targets]
    return float(-(y * logp).sum(-1)[keep].sum() / n), (np.exp(logp) - y) * keep[..., None] / n


def cross_entropy_none_tested(logits, targets, pad_id=None):
    keep = np.ones(np.shape(targets), bool) if pad_id is None else np.asarray(targets) != pad_id
    if not keep.any():
        return 0.0, np.zeros(np.shape(logits))
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    p = np.exp(logp)
    picked = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    onehot = np.zeros_like(p)
    np.put_along_axis(onehot, targets[..., None], 1.0, -1)
    return float(-picked[keep].mean()), np.where(keep[..., None], p - onehot, 0.0) / keep.sum()


def test_a_pad_id_tested_for_truth_is_named_before_the_catalog(time_enough):
    """The catalog's entry (the pads counted as targets) names the effect; the code's `if` is what to change."""
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_truthy_pad)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "`targets != pad_id if pad_id else np.ones(targets.shape, bool)` (line" in text, text
    assert "tests `pad_id` for truth, and pad_id=0, as in this case, is false" in text


def test_a_pad_id_tested_against_none_gets_full_marks(time_enough):
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_none_tested)
    assert score == lesson07.SOFTMAX_CROSS_ENTROPY.points, text
    assert "for truth" not in text


def train_step_notebook_pad(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    logits, cache = forward_with_cache(model, src, shift_right(targets, bos_id))
    loss, dlogits = sequence_cross_entropy(logits, targets, PAD, label_smoothing)  # noqa: F821 (rebound)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    real = targets != model.config.pad_id
    return float(loss), float(((logits.argmax(-1) == targets) & real).sum() / real.sum())


def test_a_notebook_constant_read_where_the_model_has_its_own_is_named(no_catalog, time_enough):
    no_catalog("train_step")
    score, text = feedback(lesson08.check_train_step, train_step_notebook_pad)
    assert score < lesson08.TRAIN_STEP.points
    assert "your code reads `PAD` = 0 (line" in text and "this case has model.config.pad_id = 3" in text, text


# -- a sibling attribute never read ----------------------------------------------------------------------------
class BlockWithoutThirdNorm(DecoderBlock):
    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None, dropout_rate=0.0,
                 dropout_rng=None):
        a, _ = self.self_attn(rms_norm(x, self.norm1_gamma, self.eps), mask=self_attn_mask)
        x = x + a
        c, weights = self.cross_attn(rms_norm(x, self.norm2_gamma, self.eps), key_value_input=encoder_output,
                                     mask=cross_attn_mask)
        x = x + c
        return x + self.ffn(x), weights


def test_a_norm_never_read_is_named_by_its_siblings():
    """Lesson 5's own variant names this block's slip first; the probe is proven alone, as Lesson 10's cached
    decoding (which has no such variant) meets it."""
    block = BlockWithoutThirdNorm(d_model=8, n_heads=2, d_ff=16, rng=0)
    x, enc = np.random.default_rng(1).normal(size=(2, 3, 8)), np.random.default_rng(2).normal(size=(2, 4, 8))
    right = DecoderBlock.__call__.__get__(block)
    case = lesson05.Case("a batch", (x, enc))
    attempt = Attempt("5.2", case, got=block(x, enc), expected=right(x, enc), student=block.__call__, reference=right)
    found = UnreadSibling().find(attempt, NO_PROBES)
    assert found is not None and "never `norm3_gamma`" in found.diagnosis, found
    assert "reads `norm1_gamma` and `norm2_gamma` by name" in found.diagnosis
    whole = Attempt("5.2", case, got=right(x, enc), expected=right(x, enc), student=right, reference=right)
    assert UnreadSibling().find(whole, NO_PROBES) is None  # the library's block reads every norm


# -- one line, one call ----------------------------------------------------------------------------------------
def cross_entropy_shifted_once(logits, targets, pad_id=None):
    top = np.max(logits, axis=-1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits - top), axis=-1, keepdims=True))
    keep = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits, dtype=float)
    y = np.eye(logits.shape[-1])[targets]
    return float(-(y * logp).sum(-1)[keep].sum() / n), (np.exp(logp) - y) * keep[..., None] / n


def test_a_shift_made_at_one_place_of_a_line_is_named(no_catalog, time_enough):
    no_catalog("softmax_cross_entropy")
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_shifted_once)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "the line shifts `logits` by `top` inside one term (`logits - top`) and reads it unshifted" in text, text


def softmax_max_put_back_at_end(x, axis=-1):
    top = np.max(x, axis=axis)
    e = np.exp(x - top[..., None])
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_max_expanded_in_place(x, axis=-1):
    e = np.exp(x - np.expand_dims(x.max(axis=axis), axis))
    return e / e.sum(axis=axis, keepdims=True)


def test_a_reduced_axis_put_back_at_the_end_through_a_name_is_named(no_catalog, time_enough):
    no_catalog("softmax")
    score, text = feedback(lesson01.check_softmax, softmax_max_put_back_at_end)
    assert score < lesson01.SOFTMAX.points
    assert "With keepdims=True in place of `[..., None]` after each reduction over `axis`" in text, text


def test_a_max_expanded_where_it_was_gets_full_marks(time_enough):
    score, text = feedback(lesson01.check_softmax, softmax_max_expanded_in_place)
    assert score == lesson01.SOFTMAX.points, text


def logits_tensordot_from_the_front(h, E):
    return np.tensordot(h, E, axes=([1], [1]))


def logits_tensordot_from_the_end(h, E):
    return np.tensordot(h, E, axes=([-1], [-1]))


def test_tensordot_axes_counted_from_the_front_are_named(no_catalog, time_enough):
    no_catalog("output_logits")
    score, text = feedback(lesson03.check_output_logits, logits_tensordot_from_the_front)
    assert score < lesson03.OUTPUT_LOGITS.points
    assert "axes=([-1], [1]) in place of `([1], [1])`" in text, text


def test_tensordot_axes_counted_from_the_end_get_full_marks(time_enough):
    score, text = feedback(lesson03.check_output_logits, logits_tensordot_from_the_end)
    assert score == lesson03.OUTPUT_LOGITS.points, text


def shift_right_padded_every_axis(targets, bos_id):
    return np.pad(np.asarray(targets)[..., :-1], (1, 0), constant_values=bos_id)


def shift_right_padded_last_axis(targets, bos_id):
    targets = np.asarray(targets)
    return np.pad(targets[..., :-1], [(0, 0)] * (targets.ndim - 1) + [(1, 0)], constant_values=bos_id)


def test_a_pad_width_for_every_axis_is_named(no_catalog, time_enough):
    no_catalog("shift_right")
    score, text = feedback(lesson06.check_shift_right, shift_right_padded_every_axis)
    assert score < lesson06.SHIFT_RIGHT.points
    assert "np.pad applies a single pair of widths, `(1, 0)`, to every axis" in text, text


def test_a_pad_width_for_the_last_axis_gets_full_marks(time_enough):
    score, text = feedback(lesson06.check_shift_right, shift_right_padded_last_axis)
    assert score == lesson06.SHIFT_RIGHT.points, text


class CrossAttentionProjectedTwice(MultiHeadAttention):  # at module level: the repair compiles its methods
    def attend(self, query_input, K, V, mask=None, dropout_rate=0.0, dropout_rng=None):
        h = self.n_heads
        Q = split_heads(query_input @ self.W_q, h)
        K = split_heads(merge_heads(K) @ self.W_k, h)
        V = split_heads(merge_heads(V) @ self.W_v, h)
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + (0 if mask is None else mask)
        w = np.exp(s - s.max(-1, keepdims=True))
        w = w / w.sum(-1, keepdims=True)
        return merge_heads(w @ V) @ self.W_o, w


def test_keys_and_values_made_again_are_named(no_catalog, time_enough):
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, CrossAttentionProjectedTwice)
    assert score < lesson04.CROSS_ATTENTION_CLASS.points
    assert "`K` and `V` arrive as parameters, already made" in text and "self.W_k and self.W_v again" in text, text


# -- the tracer and 7.2's note ---------------------------------------------------------------------------------
def test_a_value_near_an_input_only_within_the_tolerance_is_not_taken_for_it():
    """For logits about 1000, each row's largest 15 to 30 above the rest, z - log(sum(exp(z - max))) is z to
    within 1e-5 relative, yet computed: the tracer names that line, not the later one that reads it."""
    big = 1000.0 - np.random.default_rng(3).uniform(15, 30, size=(2, 5, 7))
    big[..., 0] = 1000.0
    targets = np.random.default_rng(4).integers(0, 7, size=(2, 5))

    def cross_entropy(logits, targets, pad_id=None):
        mx = np.max(logits, axis=-1, keepdims=True)
        logp = logits - np.log(np.sum(np.exp(logits - mx), axis=-1, keepdims=True))
        picked = np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
        return float(-picked.mean()), np.exp(logp)

    case = lesson07.Case("large logits", (big, targets))
    found = divergence.locate(Attempt("7.1", case, student=cross_entropy, reference=softmax_cross_entropy),
                              softmax_cross_entropy, 5.0)
    assert found is not None and found.detail == "The first value that goes wrong is `logp`.", found


def gradient_restored_by_arithmetic(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        x[idx] += h
        up = f()
        x[idx] -= 2 * h
        down = f()
        x[idx] += h
        grad[idx] = (up - down) / (2 * h)
    return grad


def gradient_written_back(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + h
        up = f()
        x[idx] = old - h
        down = f()
        x[idx] = old
        grad[idx] = (up - down) / (2 * h)
    return grad


def test_x_restored_by_arithmetic_loses_the_part_that_asks_for_x_exactly(time_enough):
    score, text = feedback(lesson07.check_numerical_gradient, gradient_restored_by_arithmetic)
    assert score == lesson07.NUMERICAL_GRADIENT.points * 3 / 4, text  # the gradient's part (weight 3 of 4) is kept
    assert "x is not put back exactly" in text and "write it back (x[idx] = old)" in text, text


def test_x_written_back_gets_no_note(time_enough):
    score, text = feedback(lesson07.check_numerical_gradient, gradient_written_back)
    assert score == lesson07.NUMERICAL_GRADIENT.points and "not exactly" not in text, text
