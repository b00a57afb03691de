"""Three kinds of finding, proven on slips written apart from them, with the catalog emptied: a parameter the
answer never reads (probes/unread.py), named only where the right result needs it on the failing case; a
mask applied after the softmax (probes/masking.py); and a shape error between arrays of which some are split
into heads and one is not (probes/shapes.py). Each is
silent where it does not apply: a right answer, a parameter the case does not need, an answer that reads its
inputs through **kwargs."""

import numpy as np

from encdec.attention import cross_attention, merge_heads, split_heads
from encdec.checks import lesson01, lesson04, lesson05
from encdec.checks.core import Attempt, Case, run_student
from encdec.checks.probes.unread import UnreadParameter
from encdec.layers import rms_norm
from test_probes import check, no_catalog  # noqa: F401  (a fixture)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention_ref(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = _softmax(s if mask is None else s + mask)
    return w @ V, w


def attention_mask_unread(Q, K, V, mask=None):
    """Inputs: Q (..., m, d_k), K (..., n, d_k), V (..., n, d_v); mask added to the scores."""
    weights = _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return weights @ V, weights


def _attempt(student, case):
    outcome = run_student(student, case.args, case.kwargs)
    return Attempt("scaled_dot_product_attention", case, got=outcome.value, error=outcome.error,
                   expected=attention_ref(*case.args, **case.kwargs), student=student, reference=attention_ref,
                   names=("output", "weights"))


r = np.random.default_rng(5)
Q, K, V = r.normal(size=(4, 3)), r.normal(size=(5, 3)), r.normal(size=(5, 2))
PADS = np.array([0.0, 0.0, 0.0, -np.inf, -np.inf])


def test_a_parameter_never_read_is_named_with_its_docstring_line():
    found = UnreadParameter().find(_attempt(attention_mask_unread, Case("pads", (Q, K, V, PADS))), None)
    assert found is not None and found.key == "probe:unread:mask", found
    assert "never reads its parameter `mask`" in found.diagnosis and "left out" in found.diagnosis
    assert 'The docstring: "Inputs: Q (..., m, d_k), K (..., n, d_k), V (..., n, d_v); mask added' in found.diagnosis


def test_a_parameter_the_case_does_not_need_is_not_blamed():
    """A mask of no pads changes nothing: the answer that ignores it is not wrong there."""
    found = UnreadParameter().find(_attempt(attention_mask_unread, Case("no pads", (Q, K, V, np.zeros(5)))), None)
    assert found is None


def test_a_right_answer_and_one_that_reads_through_kwargs_are_left_alone():
    def through_kwargs(Q, K, V, **rest):
        return attention_ref(Q, K, V, rest.get("mask"))
    case = Case("pads", (Q, K, V), {"mask": PADS})
    assert UnreadParameter().find(_attempt(attention_ref, Case("pads", (Q, K, V, PADS))), None) is None
    assert UnreadParameter().find(_attempt(through_kwargs, case), None) is None


def test_a_wrapped_answer_is_not_read_for_its_parameters():
    """8.3's checker calls the answer through a wrapper (one step at a time): the case's arguments are the
    wrapper's, whose names need not be the answer's, so nothing is said of which one the answer leaves unread."""
    from encdec import optim
    from encdec.checks.lesson08 import _over_steps

    def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # factor never read
        return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
    case = Case("factor 2", ([1, 5, 50], 64, 10, 2.0))
    student, reference = _over_steps(warmup_schedule), _over_steps(optim.warmup_schedule)
    outcome = run_student(student, case.args, case.kwargs)
    attempt = Attempt("warmup_schedule", case, got=outcome.value, expected=reference(*case.args), student=student,
                      reference=reference)
    assert UnreadParameter().find(attempt, None) is None


def test_cross_attention_given_no_encoder_output_is_named_by_the_input_it_never_reads(no_catalog):
    """Before: the causal probe named it (a position that reads later ones), which is only its effect."""
    no_catalog("decoder_block_post_norm")

    def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        out, _ = block.self_attn(x, mask=self_attn_mask)
        x = rms_norm(x + out, block.norm1_gamma)
        out, weights = block.cross_attn(x, mask=cross_attn_mask)  # attends to x itself
        x = rms_norm(x + out, block.norm2_gamma)
        return rms_norm(x + block.ffn(x), block.norm3_gamma), weights

    score, text, keys = check(lesson05.check_decoder_block_post_norm, decoder_block_post_norm, hidden=True)
    assert score == 0 and "probe:unread:encoder_output" in keys, text
    assert not any(k.startswith("probe:causal") for k in keys), text


def test_an_exact_variant_of_the_exercise_is_said_first(no_catalog):
    """1.2 declares the mask left out as a variant: its words, not the unread parameter's."""
    no_catalog("scaled_dot_product_attention")
    score, text, keys = check(lesson01.check_scaled_dot_product_attention, attention_mask_unread)
    assert score < 4 and keys == ["probe:missing:mask"], text


class _CrossAttention:
    def __init__(self, d_model, n_heads):
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads


class QueriesNotSplit(_CrossAttention):
    def attend(self, query_input, K, V, mask=None):
        Q = query_input @ self.W_q  # never split into heads
        heads, weights = cross_attention(Q, K, V, mask)
        return merge_heads(heads) @ self.W_o, weights


class OutputProjectionBeforeMerge(_CrossAttention):
    def attend(self, query_input, K, V, mask=None):
        Q = split_heads(query_input @ self.W_q, self.n_heads)
        heads, weights = cross_attention(Q, K, V, mask)
        return merge_heads(heads @ self.W_o), weights


def test_an_array_left_unsplit_among_split_ones_is_named(no_catalog, monkeypatch):
    no_catalog("CrossAttention")
    from encdec.checks.probes import judging
    monkeypatch.setattr(judging, "REPAIR", UnreadParameter())  # the repair off: the shape probe's own words
    _, text, keys = check(lesson04.check_attend, QueriesNotSplit, hidden=True)
    assert "probe:shape_error:heads_split" in keys, text
    assert "`Q` has its 8 features in one axis, where `K` is split into 2 heads of 4" in text, text
    _, text, keys = check(lesson04.check_attend, OutputProjectionBeforeMerge, hidden=True)
    assert "probe:shape_error:heads_split" in keys, text
    assert "still split into 2 heads of 4" in text and "Merge the heads first" in text, text


def test_a_product_of_two_split_arrays_is_not_said_to_need_merging(no_catalog, monkeypatch):
    """Q (B, h, 1, d_k) @ K.T (B, h, 2 d_k, 1) (a cache joined along the features): both are split; the
    message is the product's own, not 'merge the heads'."""
    from encdec.checks.probes import judging
    monkeypatch.setattr(judging, "REPAIR", UnreadParameter())

    def scaled_dot_product_attention(Q, K, V, mask=None):
        K2 = np.concatenate([K, K], axis=-1)  # joined along the features
        scores = Q @ np.swapaxes(K2, -1, -2) / np.sqrt(Q.shape[-1])
        return attention_ref(Q, K, V, mask) if scores is None else (scores, scores)

    no_catalog("scaled_dot_product_attention")
    _, text, keys = check(lesson01.check_scaled_dot_product_attention, scaled_dot_product_attention)
    assert "probe:shape_error:heads_split" not in keys, text


def attention_masked_after_softmax(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    weights = _softmax(scores)
    if mask is not None:
        weights = np.where(np.isneginf(mask), 0.0, weights)  # hidden keys zeroed after the softmax
    return weights @ V, weights


def test_a_mask_applied_after_the_softmax_is_named_before_the_rows_that_do_not_sum_to_one(no_catalog):
    no_catalog("scaled_dot_product_attention")
    score, text, keys = check(lesson01.check_scaled_dot_product_attention, attention_masked_after_softmax)
    assert score < 4 and keys[0] == "probe:mask_after_softmax", text
    assert "Add the mask to the scores before the softmax" in text, text


def test_weights_renormalised_after_zeroing_are_right_and_not_told_anything(no_catalog):
    """Zeroing the hidden keys and dividing each row by its sum is the masked softmax itself."""
    def renormalised(Q, K, V, mask=None):
        out, w = attention_masked_after_softmax(Q, K, V, mask)
        w = w / w.sum(-1, keepdims=True)
        return w @ V, w
    no_catalog("scaled_dot_product_attention")
    score, text, keys = check(lesson01.check_scaled_dot_product_attention, renormalised)
    assert score == 4 and not keys, text
