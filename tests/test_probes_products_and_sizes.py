"""Kinds of slip named since batches ae and af (each written as a student would, each diagnosis read from the
checker with its catalog emptied; right answers written otherwise keep full marks): the queries split into heads
before they are projected (`split_heads(x, h) @ W_q`, the repair moves the product into the call), a size read
from another input (`H_enc.shape[-2]`, the source's length, where the target's belongs), a merge that counts on
one batch axis (`out.reshape(out.shape[0], -1, d)`), `.T` of a batched result (the right numbers in another
order of axes is weak: the repair quotes the line first), and the shape's words for decoded rows of another
length and for an extra leading axis."""

import numpy as np

from encdec.attention import MultiHeadAttention, create_causal_mask, cross_attention, padding_mask, split_heads
from encdec.checks import lesson03, lesson04, lesson06
from encdec.checks.probes.shape_reasons import explain_shape
from encdec.layers import rms_norm
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


class CrossAttentionSplitFirst(MultiHeadAttention):
    project_first = False

    def project_kv(self, key_value_input):
        return tuple(split_heads(key_value_input @ W, self.n_heads) for W in (self.W_k, self.W_v))

    def attend(self, query_input, K, V, mask=None):
        if self.project_first:
            queries = split_heads(np.matmul(query_input, self.W_q), self.n_heads)
        else:
            queries = split_heads(query_input, self.n_heads) @ self.W_q
        heads, weights = cross_attention(queries, K, V, mask)
        merged = np.swapaxes(heads, -2, -3)
        return merged.reshape(*merged.shape[:-2], -1) @ self.W_o, weights


class CrossAttentionProjectFirst(CrossAttentionSplitFirst):
    project_first = True


def test_a_product_made_after_the_call_it_belongs_in_is_named(no_catalog, time_enough):
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, CrossAttentionSplitFirst)
    assert score < lesson04.CROSS_ATTENTION_CLASS.points
    assert "With `split_heads(query_input @ self.W_q, self.n_heads)` in place of" in text, text
    assert "the product first, on the whole width, then the call" in text, text
    score, text = feedback(lesson04.check_attend, CrossAttentionProjectFirst)
    assert score == lesson04.CROSS_ATTENTION_CLASS.points, text


def decode_with_the_source_length(model, tgt_in, H_enc, src_mask):
    length = H_enc.shape[-2]
    mask = create_causal_mask(length) + padding_mask(tgt_in, model.config.pad_id)
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


def decode_with_the_target_length(model, tgt_in, H_enc, src_mask):
    mask = padding_mask(tgt_in, model.config.pad_id) + create_causal_mask(np.shape(tgt_in)[-1])
    x = model.embed(tgt_in)
    for block in model.decoder:
        x = block(x, H_enc, self_attn_mask=mask, cross_attn_mask=src_mask)[0]
    return np.einsum("...md,vd->...mv", rms_norm(x, model.decoder_norm_gamma, model.config.eps), model.embedding)


def test_a_size_read_from_another_input_is_named(no_catalog, time_enough):
    no_catalog("decode")
    score, text = feedback(lesson06.check_decode, decode_with_the_source_length)
    assert score < lesson06.DECODE.points
    assert "With `tgt_in.shape[-1]` in place of `H_enc.shape[-2]` there" in text, text
    score, text = feedback(lesson06.check_decode, decode_with_the_target_length)
    assert score == lesson06.DECODE.points, text


class CrossAttentionMergedForOneBatchAxis(CrossAttentionProjectFirst):
    def attend(self, query_input, K, V, mask=None):
        heads, weights = cross_attention(split_heads(query_input @ self.W_q, self.n_heads), K, V, mask)
        merged = np.swapaxes(heads, -3, -2)
        return merged.reshape(merged.shape[0], -1, self.d_model) @ self.W_o, weights


def test_a_merge_that_counts_on_one_batch_axis_is_named(no_catalog, time_enough):
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, CrossAttentionMergedForOneBatchAxis)
    assert score < lesson04.CROSS_ATTENTION_CLASS.points
    assert "With `merged.reshape(*merged.shape[:-2], self.d_model)` in place of" in text, text
    assert "counts on exactly one batch axis in front" in text, text


def logits_transposed_whole(h, E):
    return (E @ np.swapaxes(h, -1, -2)).T


def logits_transposed_last_two(h, E):
    return np.swapaxes(E @ np.swapaxes(h, -1, -2), -1, -2)


def test_a_transpose_of_every_axis_is_named_by_its_line(no_catalog, time_enough):
    no_catalog("output_logits")
    score, text = feedback(lesson03.check_output_logits, logits_transposed_whole)
    assert score < lesson03.OUTPUT_LOGITS.points
    assert "`(E @ np.swapaxes(h, -1, -2)).swapaxes(-1, -2)` in place of" in text and ".T reverses every axis" in text
    score, text = feedback(lesson03.check_output_logits, logits_transposed_last_two)
    assert score == lesson03.OUTPUT_LOGITS.points, text


def test_the_shape_of_decoded_rows_and_of_an_extra_leading_axis_are_said_as_they_are():
    rows = explain_shape((3, 7), (3, 4), tokens=True)
    assert "the rows are 7 tokens long where 4 are expected" in rows and "another axis" not in rows, rows
    assert "a size read from another axis" in explain_shape((3, 7), (3, 4))
    lead = explain_shape((4, 6), (6,), {"n": 4})
    assert "extra leading axis of size 4 (n)" in lead and "x.shape[0] or len(x)" in lead, lead


def greedy_running_to_max_len(model, src, bos_id, eos_id, max_len):
    one = src.ndim == 1
    batch = src[None] if one else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(batch)
    tgt_in = np.full((batch.shape[0], 1), bos_id)
    done = np.zeros(batch.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1].copy()
        logits[:, [bos_id, pad]] = -np.inf
        nxt = np.where(done, pad, logits.argmax(axis=-1))
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
    return tgt_in[0, 1:] if one else tgt_in[:, 1:]


def test_decoded_rows_of_another_length_are_said_to_be_other_tokens(no_catalog):
    from encdec.checks import lesson09
    no_catalog("greedy_decode")
    score, text = feedback(lesson09.check_greedy_decode, greedy_running_to_max_len)
    assert score < lesson09.GREEDY_DECODE.points
    assert "tokens long where" in text and "a size read from another axis" not in text, text
