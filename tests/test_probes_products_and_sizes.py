"""Kinds of slip named since batch ae (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): the queries split into heads before they
are projected (`split_heads(x, h) @ W_q`, the repair moves the product into the call), and a size read from
another input (`H_enc.shape[-2]`, the source's length, where the target's belongs)."""

import numpy as np

from encdec.attention import MultiHeadAttention, create_causal_mask, cross_attention, padding_mask, split_heads
from encdec.checks import lesson04, lesson06
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
