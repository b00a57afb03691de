"""Kinds of slip named since batch ac (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): heads split as (d_k, h) where they are
(h, d_k) (the tracer's report of a value split the other way), an output made from the weights transposed
(causality.py), a mask indexed with an axis it does not have (indexing.py, and the repair's edit that uses an
argument as it is given), and np.min given two values (library_errors.py, and the repair's np.minimum)."""

import numpy as np

from encdec.attention import create_causal_mask, scaled_dot_product_attention, softmax
from encdec.checks import lesson02, lesson03, lesson04, lesson08
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


class HeadsByColumnsModuloH:
    """Head k reads columns k, k + h, k + 2h, ...: the reshape to (..., T, d_k, h)."""

    interleaved = True

    def __init__(self, d_model, n_heads, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (rng.normal(0, d_model ** -0.5, (d_model, d_model)) for _ in range(4))

    def _heads(self, t):
        shape = (self.d_k, self.n_heads) if self.interleaved else (self.n_heads, self.d_k)
        t = t.reshape(*t.shape[:-1], *shape)
        return np.swapaxes(np.swapaxes(t, -1, -2) if self.interleaved else t, -2, -3)

    def _merged(self, t):
        t = np.swapaxes(t, -2, -3)
        t = np.swapaxes(t, -1, -2) if self.interleaved else t
        return t.reshape(*t.shape[:-2], self.d_model)

    def __call__(self, query_input, key_value_input=None, mask=None):
        source = query_input if key_value_input is None else key_value_input
        heads, weights = scaled_dot_product_attention(self._heads(query_input @ self.W_q),
                                                      self._heads(source @ self.W_k), self._heads(source @ self.W_v), mask)
        return self._merged(heads) @ self.W_o, weights


class HeadsByBlocks(HeadsByColumnsModuloH):
    interleaved = False


def test_heads_split_the_other_way_are_named(no_catalog, time_enough):
    no_catalog("MultiHeadAttention")
    score, text = feedback(lesson02.check_multi_head_attention, HeadsByColumnsModuloH)
    assert score < lesson02.MULTI_HEAD_ATTENTION.points
    assert "it holds the right numbers, split the other way" in text and "every 2nd entry" in text, text
    assert "A reshape to (..., 4, 2) where (..., 2, 4) was meant" in text, text
    score, text = feedback(lesson02.check_multi_head_attention, HeadsByBlocks)
    assert score == lesson02.MULTI_HEAD_ATTENTION.points, text


def causal_attention_read_by_columns(x, W_q, W_k, W_v, by_rows=False):
    scores = np.einsum("...id,...jd->...ij", x @ W_q, x @ W_k) / np.sqrt(W_q.shape[-1])
    weights = softmax(scores + create_causal_mask(x.shape[-2]), axis=-1)
    product = "...ij,...jd->...id" if by_rows else "...ji,...jd->...id"
    return np.einsum(product, weights, x @ W_v), weights


def causal_attention_read_by_rows(x, W_q, W_k, W_v):
    return causal_attention_read_by_columns(x, W_q, W_k, W_v, by_rows=True)


def causal_attention_output_unmasked(x, W_q, W_k, W_v):
    scores = (x @ W_q) @ np.swapaxes(x @ W_k, -1, -2) / np.sqrt(W_q.shape[-1])
    weights = softmax(scores + create_causal_mask(x.shape[-2]), axis=-1)
    return softmax(scores, axis=-1) @ (x @ W_v), weights


def test_an_output_made_from_the_weights_transposed_is_named(no_catalog):
    no_catalog("causal_self_attention")
    score, text = feedback(lesson03.check_causal_self_attention, causal_attention_read_by_columns)
    assert score < lesson03.CAUSAL_SELF_ATTENTION.points
    assert "is the weights transposed times the values" in text, text
    score, text = feedback(lesson03.check_causal_self_attention, causal_attention_output_unmasked)
    assert score < lesson03.CAUSAL_SELF_ATTENTION.points
    assert "transposed" not in text and "is computed with the causal mask" in text, text
    score, text = feedback(lesson03.check_causal_self_attention, causal_attention_read_by_rows)
    assert score == lesson03.CAUSAL_SELF_ATTENTION.points, text


def cross_attention_mask_without_its_query_axis(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = scores + mask[..., 0, :]
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def cross_attention_mask_as_given(Q, K, V, mask=None):
    scores = np.einsum("...md,...nd->...mn", Q, K) / K.shape[-1] ** 0.5
    weights = softmax(scores if mask is None else scores + mask, axis=-1)
    return np.einsum("...mn,...nd->...md", weights, V), weights


def test_a_mask_indexed_with_an_axis_it_lacks_is_named(no_catalog, time_enough):
    no_catalog("cross_attention")
    score, text = feedback(lesson04.check_cross_attention, cross_attention_mask_without_its_query_axis)
    assert score < lesson04.CROSS_ATTENTION.points
    assert "takes 2 axes from the end of `mask`, but `mask` came with shape (5,)" in text, text
    assert "With `mask` in place of `mask[..., 0, :]` there" in text, text
    score, text = feedback(lesson04.check_cross_attention, cross_attention_mask_as_given)
    assert score == lesson04.CROSS_ATTENTION.points, text


def schedule_with_the_smaller_by_np_min(step, d_model, warmup_steps, factor=1.0):
    warm, decay = step / warmup_steps ** 1.5, 1 / np.sqrt(step)
    return float(factor / np.sqrt(d_model) * np.amin(warm, decay))


def schedule_with_the_smaller_of_an_array(step, d_model, warmup_steps, factor=1.0):
    warm, decay = step / warmup_steps ** 1.5, 1 / np.sqrt(step)
    return float(factor / np.sqrt(d_model) * np.amin([warm, decay]))


def test_np_min_of_two_values_is_named(no_catalog):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_the_smaller_by_np_min)
    assert score == 0
    assert "np.amin reduces one array, and its second argument is the axis" in text, text
    assert "`min(warm, decay)` or `np.minimum(warm, decay)`" in text, text
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_the_smaller_of_an_array)
    assert score == lesson08.WARMUP_SCHEDULE.points, text


def test_the_repair_mends_np_min_of_two_values_too(no_catalog, time_enough, monkeypatch):
    """Where no error names it (the error probe switched off here), the repair's edit np.minimum does."""
    from encdec.checks.probes import judging
    monkeypatch.setattr(judging, "LIBRARY_ERROR_PROBES", [])
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_the_smaller_by_np_min)
    assert "`np.minimum` in place of `np.amin` in `np.amin(warm, decay)`" in text, text


def schedule_with_fractions_unparenthesised(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model ** -1 / 2 * min(step ** -1 / 2, step * warmup_steps ** -3 / 2)


def schedule_with_fractions_in_parentheses(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model ** (-1 / 2) * min(step ** (-1 / 2), step * warmup_steps ** (-3 / 2))


def test_fractional_exponents_without_parentheses_are_named_at_every_place(no_catalog, time_enough):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_fractions_unparenthesised)
    assert score < lesson08.WARMUP_SCHEDULE.points
    assert "the fraction put in parentheses in every exponent like `x ** -1 / 2`" in text, text
    assert "`x ** -1 / 2` is (x ** -1) / 2" in text, text
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_fractions_in_parentheses)
    assert score == lesson08.WARMUP_SCHEDULE.points, text


def post_norm_block_gains_first(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    from encdec.layers import rms_norm
    attended = block.self_attn(x, mask=self_attn_mask)[0]
    x = rms_norm(block.norm1_gamma, x + attended)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(block.norm2_gamma, x + out)
    return rms_norm(block.norm3_gamma, x + block.ffn(x)), cross_weights


def post_norm_block_gain_first_in_a_helper(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    from encdec.layers import rms_norm

    def norm(stream, gain):
        return rms_norm(gain, stream)
    x = norm(x + block.self_attn(x, mask=self_attn_mask)[0], block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = norm(x + out, block.norm2_gamma)
    return norm(x + block.ffn(x), block.norm3_gamma), cross_weights


def post_norm_block_norms_in_order(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    from encdec.layers import rms_norm
    h = rms_norm(x + block.self_attn(x, mask=self_attn_mask)[0], gamma=block.norm1_gamma)
    out, cross_weights = block.cross_attn(h, encoder_output, mask=cross_attn_mask)
    h = rms_norm(h + out, gamma=block.norm2_gamma)
    return rms_norm(h + block.ffn(h), gamma=block.norm3_gamma), cross_weights


def test_a_call_given_its_arguments_in_another_order_is_named(no_catalog):
    """Where one exchange at one place mends every case, the repair says so (it is tried first); where the
    order is wrong at three places, the call that fails is named with the parameters each argument went in as
    (its arguments made of names and arithmetic, which are worked out again; a call in them is not run again)."""
    from encdec.checks import lesson05
    no_catalog("decoder_block_post_norm")
    score, text = feedback(lesson05.check_decoder_block_post_norm, post_norm_block_gains_first)
    assert score == 0
    assert "`rms_norm(block.norm1_gamma, x + attended)` passes its arguments in another order than rms_norm's" in text
    assert "`block.norm1_gamma` goes in as `x` and `x + attended` as `gamma`" in text, text
    score, text = feedback(lesson05.check_decoder_block_post_norm, post_norm_block_gain_first_in_a_helper)
    assert "With `stream` and `gain` exchanged in `rms_norm(gain, stream)` there" in text, text
    score, text = feedback(lesson05.check_decoder_block_post_norm, post_norm_block_norms_in_order)
    assert score == lesson05.DECODER_BLOCK_POST_NORM.points, text
