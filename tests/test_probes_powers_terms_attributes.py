"""Kinds of slip the repair and the probes name since batch u (each written as a student would, each
diagnosis read from the checker with its catalog emptied; right answers written otherwise keep full marks):
the square of a mean where the formula takes the mean of the squares (arithmetic.py), a term added to what a
call returns at every place where it belongs inside (everywhere.py), two `None`s that add axes the result does
not have (size_one_axes.py), a method that never reads the attribute the course's own method reads
(unread.py), weights returned from before the mask while the output is causal (properties.py), and an array
made with a shape that counts on one batch axis (shape_causes.py)."""

import numpy as np

from encdec.attention import MultiHeadAttention, create_causal_mask, merge_heads, softmax, split_heads
from encdec.attention import cross_attention as cross_attention_
from encdec.checks import lesson02, lesson03, lesson04, lesson05, lesson06
from encdec.layers import rms_norm
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def rms_of_the_mean(x, gamma, eps=1e-6):
    scale = (x.mean(axis=-1, keepdims=True) ** 2 + eps) ** -0.5
    return x * scale * gamma


def rms_by_einsum(x, gamma, eps=1e-6):
    squares = np.einsum("...d,...d->...", x, x)[..., None] / x.shape[-1]
    return gamma * x / np.sqrt(squares + eps)


def test_the_square_of_a_mean_is_named(no_catalog, time_enough):
    no_catalog("rms_norm")
    score, text = feedback(lesson02.check_rms_norm, rms_of_the_mean)
    assert score < lesson02.RMS_NORM.points
    assert "the mean of `x ** 2` in place of" in text and "not the square of the mean" in text, text


def test_rms_by_einsum_keeps_full_marks(time_enough):
    score, text = feedback(lesson02.check_rms_norm, rms_by_einsum)
    assert score == lesson02.RMS_NORM.points, text


def post_norm_added_after(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x, block.norm1_gamma) + out
    out, weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(x, block.norm2_gamma) + out
    return rms_norm(x, block.norm3_gamma) + block.ffn(x), weights


def test_terms_added_after_every_norm_are_named(no_catalog, time_enough):
    no_catalog("decoder_block_post_norm")
    score, text = feedback(lesson05.check_decoder_block_post_norm, post_norm_added_after)
    assert score < lesson05.DECODER_BLOCK_POST_NORM.points
    assert "each term moved into the call it is added to" in text, text


def mask_with_two_new_axes(seq_len):
    return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)[None, None]


def test_two_nones_that_add_axes_are_named(no_catalog, time_enough):
    no_catalog("create_causal_mask")
    score, text = feedback(lesson03.check_create_causal_mask, mask_with_two_new_axes)
    assert score < lesson03.CREATE_CAUSAL_MASK.points
    assert "without its 2 `None`s" in text, text


class CrossAttention(MultiHeadAttention):
    def project_kv(self, key_value_input):
        return (split_heads(key_value_input @ self.W_k, self.n_heads),
                split_heads(key_value_input @ self.W_v, self.n_heads))

    def attend(self, query_input, K, V, mask=None):
        heads, weights = cross_attention_(split_heads(query_input, self.n_heads), K, V, mask)
        return merge_heads(heads) @ self.W_o, weights


def test_an_attribute_the_courses_method_reads_is_named(no_catalog, time_enough):
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, CrossAttention)
    assert score < lesson04.CROSS_ATTENTION_CLASS.points
    assert "never reads `self.W_q`" in text, text


def weights_before_the_mask(x, W_q, W_k, W_v):
    scores = (x @ W_q) @ np.swapaxes(x @ W_k, -1, -2) / np.sqrt(W_q.shape[-1])
    first = softmax(scores)
    masked = softmax(scores + create_causal_mask(x.shape[-2]))
    return masked @ (x @ W_v), first


def test_weights_from_before_the_mask_are_named(no_catalog, time_enough):
    no_catalog("causal_self_attention")
    score, text = feedback(lesson03.check_causal_self_attention, weights_before_the_mask)
    assert score < lesson03.CAUSAL_SELF_ATTENTION.points
    assert "changed the weights at earlier positions, but not the output" in text, text


def bos_column_for_one_batch_axis(targets, bos_id):
    column = np.full((targets.shape[0], 1), bos_id, dtype=targets.dtype)
    return np.concatenate([column, targets[..., :-1]], axis=-1)


def test_an_array_shaped_for_one_batch_axis_is_named(no_catalog, time_enough):
    no_catalog("shift_right")
    score, text = feedback(lesson06.check_shift_right, bos_column_for_one_batch_axis)
    assert score < lesson06.SHIFT_RIGHT.points
    assert "counts on exactly one leading (batch) axis of `targets`" in text, text
    assert "`targets.shape[:-1] + (1,)`" in text, text
