"""Kinds of slip named since batch ab (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): `and` for `or`, an exponent's sign, rows
that are one list (the repair's edits), a size read from an array's first axis and a reshape that merges the
leading axes, an array walked along its batch axis by np.concatenate, a course helper the notebook does not
define, and cross-attention's values made with W_k (Lesson 10's count of the rows each weight multiplies)."""

import contextlib
import io
import inspect

import numpy as np

from encdec.attention import MultiHeadAttention, padding_mask, scaled_dot_product_attention
from encdec.attention import create_causal_mask as causal
from encdec.checks import lesson02, lesson03, lesson04, lesson08, lesson10
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)
import test_lesson10_checks


def dropout_both_conditions(x, rate, rng, training=True):
    if rate == 0 and not training:
        return x
    return x * (rng.random(x.shape) >= rate) / (1 - rate)


def test_and_where_or_belongs_is_named(no_catalog, time_enough):
    no_catalog("dropout")
    score, text = feedback(lesson08.check_dropout, dropout_both_conditions)
    assert score < lesson08.DROPOUT.points
    assert "`or` in place of `and` in `rate == 0 and (not training)`" in text, text


def schedule_growing(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model ** -0.5 * min(step ** 0.5, step / warmup_steps ** 1.5)


def test_an_exponents_sign_is_named(no_catalog):
    """With the checker's own budgets: the edit comes early among the repair's."""
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_growing)
    assert score < lesson08.WARMUP_SCHEDULE.points
    assert "`step ** -0.5` in place of `step ** 0.5`" in text, text


def causal_mask_from_one_row(seq_len):
    rows = [[0.0] * seq_len] * seq_len
    for i, row in enumerate(rows):
        for j in range(i + 1, seq_len):
            row[j] = float("-inf")
    return np.array(rows)


def test_rows_that_are_one_list_are_named(no_catalog, time_enough):
    no_catalog("create_causal_mask")
    score, text = feedback(lesson03.check_create_causal_mask, causal_mask_from_one_row)
    assert score < lesson03.CREATE_CAUSAL_MASK.points
    assert "repeats one list: every row is the same object" in text, text


class MultiHeadAttentionOneBatchAxis:
    def __init__(self, d_model, n_heads, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (rng.normal(0, d_model ** -0.5, (d_model, d_model)) for _ in range(4))

    def __call__(self, query_input, key_value_input=None, mask=None):
        kv = query_input if key_value_input is None else key_value_input
        batch = query_input.shape[0]
        q = (query_input @ self.W_q).reshape(batch, -1, self.n_heads, self.d_k).transpose(0, 2, 1, 3)
        k = (kv @ self.W_k).reshape(batch, -1, self.n_heads, self.d_k).transpose(0, 2, 1, 3)
        v = (kv @ self.W_v).reshape(batch, -1, self.n_heads, self.d_k).transpose(0, 2, 1, 3)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return heads.transpose(0, 2, 1, 3).reshape(query_input.shape) @ self.W_o, weights


def test_a_size_read_from_the_first_axis_is_named(no_catalog, time_enough):
    """`batch = x.shape[0]` on an unbatched input: the positions, and the reshape fails (or merges them)."""
    no_catalog("MultiHeadAttention")
    score, text = feedback(lesson02.check_multi_head_attention, MultiHeadAttentionOneBatchAxis)
    assert score < lesson02.MULTI_HEAD_ATTENTION.points
    assert "`batch` is `query_input.shape[0]`" in text and "Take every leading axis" in text, text


def decoder_mask_one_batch_axis(tgt_in, pad_id):
    return causal(tgt_in.shape[-1]) + padding_mask(tgt_in, pad_id).reshape(-1, 1, 1, tgt_in.shape[-1])


def test_a_reshape_that_merges_the_leading_axes_is_named(no_catalog, time_enough):
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.check_decoder_mask, decoder_mask_one_batch_axis)
    assert score < lesson03.DECODER_MASK.points
    assert "puts every leading axis into one (the -1)" in text, text


class CrossAttention(MultiHeadAttention):
    def project_kv(self, key_value_input):
        from encdec.attention import split_heads
        return (split_heads(key_value_input @ self.W_k, self.n_heads),
                split_heads(key_value_input @ self.W_v, self.n_heads))

    def attend(self, query_input, K, V, mask=None):
        from encdec.attention import cross_attention, split_heads
        heads, weights = cross_attention(split_heads(query_input @ self.W_q, self.n_heads), K, V, mask)
        return np.hstack(heads) @ self.W_o, weights


def test_an_array_joined_along_its_batch_axis_is_named(no_catalog, time_enough):
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, CrossAttention)
    assert score < lesson04.CROSS_ATTENTION_CLASS.points
    assert "`np.hstack(heads)` walks `heads`" in text and "which is the batch here" in text, text


class MultiHeadAttentionWithLaterHelpers(MultiHeadAttentionOneBatchAxis):
    def __call__(self, query_input, key_value_input=None, mask=None):
        kv = query_input if key_value_input is None else key_value_input
        q, k, v = (split_heads(a @ w, self.n_heads) for a, w in  # noqa: F821 (not defined in Lesson 2)
                   ((query_input, self.W_q), (kv, self.W_k), (kv, self.W_v)))
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        return merge_heads(heads) @ self.W_o, weights  # noqa: F821


def test_a_helper_the_notebook_does_not_define_is_named(no_catalog):
    no_catalog("MultiHeadAttention")
    score, text = feedback(lesson02.check_multi_head_attention, MultiHeadAttentionWithLaterHelpers)
    assert score == 0
    assert "`split_heads` is not defined where your code runs" in text, text


def test_cross_attentions_values_made_with_w_k_are_named(tmp_path):
    source = inspect.getsource(test_lesson10_checks.decode_cached_encoder_keys_from_self_attention)
    source = source.replace("H_enc @ b.self_attn.W_k, h), split_heads(H_enc @ b.self_attn.W_v",
                            "H_enc @ b.cross_attn.W_k, h), split_heads(H_enc @ b.cross_attn.W_k")
    path = tmp_path / "answer.py"
    path.write_text(source)
    namespace = dict(vars(test_lesson10_checks))
    exec(compile(source, str(path), "exec"), namespace)
    exercise = next(e for e in lesson10.EXERCISES if e.number == "10.6")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        score = exercise.checker(namespace["decode_cached_encoder_keys_from_self_attention"], hidden=True)
    text = out.getvalue()
    assert score < exercise.points
    assert "its W_v never: the values are made with W_k" in text and "computed again at every step" not in text, text


def test_an_array_tested_for_truth_is_not_told_it_is_none(no_catalog):
    """`if mask:` on a required array argument: the array's truth, not a None the caller passed."""
    no_catalog("scaled_dot_product_attention")

    def attention(Q, K, V, mask=None):
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask:
            s = s + mask
        w = np.exp(s - s.max(-1, keepdims=True))
        w = w / w.sum(-1, keepdims=True)
        return w @ V, w
    from encdec.checks import lesson01
    score, text = feedback(lesson01.check_scaled_dot_product_attention, attention)
    assert score < lesson01.SCALED_DOT_PRODUCT_ATTENTION.points
    assert "is None here" not in text and "test `if mask is not None:`" in text, text


def test_zeros_everywhere_are_not_told_columns_never_written():
    """An output of zeros only (a product with 0): no line of it was written right, so no columns are named."""
    from types import SimpleNamespace

    from encdec.checks.probes.results import Unwritten
    attempt = SimpleNamespace(error=None, got=np.zeros((3, 5)), expected=np.ones((3, 5)), names=None,
                              exercise="x.y")
    assert Unwritten().find(attempt, None) is None
    one_column = np.ones((3, 5))
    one_column[:, -1] = 0.0
    attempt.got = one_column
    found = Unwritten().find(attempt, None)
    assert found is not None and "column 4 (of 5" in found.diagnosis and "no partner" in found.diagnosis, found
