"""Kinds of slip named since batch z (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): a column never written (results.py), future
scores set to a finite number (causality.py), an argument sliced with a loop's variable, a swap or a squeeze too
many (the repair's edits), and a product where the formula raises to a power, at every place."""

import numpy as np

from encdec.attention import MultiHeadAttention, cross_attention, merge_heads, padding_mask, softmax, split_heads
from encdec.attention import create_causal_mask
from encdec.checks import lesson01, lesson03, lesson04, lesson08
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def positions_by_pairs(n, d):
    table = np.zeros((n, d))
    for pos in range(n):
        for i in range(d // 2):
            rate = pos / 10000 ** (2 * i / d)
            table[pos, 2 * i], table[pos, 2 * i + 1] = np.sin(rate), np.cos(rate)
    return table


def positions_with_the_lone_sine(n, d):
    table = positions_by_pairs(n, d)
    if d % 2:
        table[:, d - 1] = np.sin(np.arange(n) / 10000 ** ((d - 1) / d))
    return table


def test_a_column_never_written_is_named(no_catalog, time_enough):
    no_catalog("sinusoidal_positions")
    score, text = feedback(lesson01.check_sinusoidal_positions, positions_by_pairs)
    assert score < lesson01.SINUSOIDAL_POSITIONS.points
    assert "holds 0 where the answer has numbers" in text and "has no partner and needs a step of its own" in text, text
    score, text = feedback(lesson01.check_sinusoidal_positions, positions_with_the_lone_sine)
    assert score == lesson01.SINUSOIDAL_POSITIONS.points and "holds 0" not in text, text


def causal_attention_future_scores_minus_ten(x, W_q, W_k, W_v):
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(W_k.shape[-1])
    m = s.shape[-1]
    s[..., np.triu_indices(m, 1)[0], np.triu_indices(m, 1)[1]] = -10.0
    w = softmax(s, axis=-1)
    return w @ v, w


def test_future_scores_set_to_a_finite_number_are_named(no_catalog, time_enough):
    no_catalog("causal_self_attention")
    score, text = feedback(lesson03.check_causal_self_attention, causal_attention_future_scores_minus_ten)
    assert score < lesson03.CAUSAL_SELF_ATTENTION.points
    assert "their scores were set to a finite number" in text and "one from before the mask" not in text, text


def steps_with_the_mask_cut_per_step(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    pieces = []
    for step in range(H_dec.shape[-2]):
        here = mask if mask is None else mask[..., step:step + 1]
        pieces.append(mha.attend(H_dec[..., step:step + 1, :], K, V, here))
    return tuple(np.concatenate(part, axis=-2) for part in zip(*pieces))


def test_an_argument_sliced_with_the_loops_variable_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, steps_with_the_mask_cut_per_step)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "takes a slice of `mask` with the loop's `step`" in text and "pass `mask` whole" in text, text


class CrossAttention(MultiHeadAttention):
    def project_kv(self, key_value_input):
        return (split_heads(key_value_input @ self.W_k, self.n_heads),
                split_heads(key_value_input @ self.W_v, self.n_heads))

    def attend(self, query_input, K, V, mask=None):
        out, weights = cross_attention(split_heads(query_input @ self.W_q, self.n_heads), K, V, mask)
        out = out.swapaxes(-3, -2)
        return merge_heads(out) @ self.W_o, weights


def test_a_swap_before_merge_heads_is_named_as_a_step_too_many(no_catalog, time_enough):
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, CrossAttention)
    assert score < lesson04.CROSS_ATTENTION_CLASS.points
    assert "a step too many" in text and "`out` in place of `out.swapaxes(-3, -2)`" in text, text


def decoder_mask_squeezed(tgt_in, pad_id):
    pads = np.squeeze(padding_mask(tgt_in, pad_id), axis=-3)
    return pads + create_causal_mask(tgt_in.shape[-1])


def test_a_squeeze_of_an_axis_the_result_keeps_is_named(no_catalog, time_enough):
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.check_decoder_mask, decoder_mask_squeezed)
    assert score < lesson03.DECODER_MASK.points
    assert "removes an axis of size 1 that the result keeps" in text, text


def adam_multiplied_corrections(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    m1 = beta1 * m + (1 - beta1) * grad
    v1 = beta2 * v + (1 - beta2) * grad * grad
    step = lr * (m1 / (1 - beta1 * t)) / (np.sqrt(v1 / (1 - beta2 * t)) + eps)
    return param - step, m1, v1


def test_products_where_the_formula_raises_to_a_power_are_named(no_catalog, time_enough):
    no_catalog("adam_update")
    score, text = feedback(lesson08.check_adam_update, adam_multiplied_corrections)
    assert score < lesson08.ADAM_UPDATE.points
    assert "`b ** t` in place of every `b * t` (`beta1 * t`, `beta2 * t`)" in text, text
