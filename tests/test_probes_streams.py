"""The repair's edits of a value carried from step to step (probes/streams.py: a residual that adds the block's
input where the stream so far belongs, a flag overwritten in a loop, a loop counted from 1, a call on a shifted
value at one place and on the unshifted one at another, lists made outside the function), and three of one
call or one line: a squeeze() that drops the axes a mask keeps (size_one_axes.py), every division by a norm
(everywhere.py), two parameters in each other's place (arithmetic.py). Rows that do not sum to one and a row
written after its EOS name only an effect: the repair's line comes first. Each slip is written as a student
would; each diagnosis is read from the checker with its catalog emptied; right answers written otherwise keep
full marks."""

import numpy as np

from encdec.attention import create_causal_mask, padding_mask
from encdec.checks import lesson01, lesson03, lesson04, lesson05, lesson08, lesson09
from encdec.layers import rms_norm
from encdec.checks.core import Case
from encdec.checks.probes.repair import repair
from test_repair import attempt_for, feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def softmax_denominator_unshifted(x, axis=-1):
    top = np.max(x, axis=axis, keepdims=True)
    numerator = np.exp(x - top)
    return numerator / np.sum(np.exp(x), axis=axis, keepdims=True)


def test_a_call_on_the_unshifted_value_is_named(no_catalog, time_enough):
    no_catalog("softmax")
    score, text = feedback(lesson01.check_softmax, softmax_denominator_unshifted)
    assert score < lesson01.SOFTMAX.points
    assert "With `np.exp(x - top)` in place of `np.exp(x)` there" in text, text


def mask_squeezed(tgt_in, pad_id):
    return create_causal_mask(np.shape(tgt_in)[-1]) + padding_mask(tgt_in, pad_id).squeeze()


def test_a_squeeze_that_drops_the_masks_axes_is_named(no_catalog, time_enough):
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.check_decoder_mask, mask_squeezed)
    assert score < lesson03.DECODER_MASK.points
    assert "squeeze() with no axis drops every axis of size 1" in text, text


def logits_of_unit_vectors(h, E):
    h = h / np.linalg.norm(h, axis=-1, keepdims=True)
    return h @ (E / np.linalg.norm(E, axis=-1, keepdims=True)).T


def logits_by_einsum(h, E):
    return np.einsum("...md,vd->...mv", h, E)


def test_vectors_divided_by_their_norms_are_named(no_catalog, time_enough):
    no_catalog("output_logits")
    score, text = feedback(lesson03.check_output_logits, logits_of_unit_vectors)
    assert score < lesson03.OUTPUT_LOGITS.points
    assert "the product is the cosine of their angle" in text, text


def test_logits_by_einsum_get_full_marks(time_enough):
    score, text = feedback(lesson03.check_output_logits, logits_by_einsum)
    assert score == lesson03.OUTPUT_LOGITS.points, text


outputs_so_far, weights_so_far = [], []


def steps_into_outer_lists(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs_so_far.append(out)
        weights_so_far.append(w)
    return np.concatenate(outputs_so_far, axis=-2), np.concatenate(weights_so_far, axis=-2)


def test_lists_made_outside_the_function_are_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, steps_into_outer_lists)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "`outputs_so_far` and `weights_so_far` are lists made outside the function" in text, text


def post_norm_residuals_from_the_input(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    sa, _ = block.self_attn(x, mask=self_attn_mask)
    h1 = rms_norm(x + sa, block.norm1_gamma)
    ca, weights = block.cross_attn(h1, encoder_output, mask=cross_attn_mask)
    h2 = rms_norm(x + ca, block.norm2_gamma)
    return rms_norm(x + block.ffn(h2), block.norm3_gamma), weights


def test_residuals_that_add_the_blocks_input_are_named(no_catalog, time_enough):
    no_catalog("decoder_block_post_norm")
    score, text = feedback(lesson05.check_decoder_block_post_norm, post_norm_residuals_from_the_input)
    assert score < lesson05.DECODER_BLOCK_POST_NORM.points
    assert "`h1` in place of `x` in `x + ca`, `h2` in place of `x` in `x + block.ffn(h2)`" in text, text


def schedule_names_exchanged(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model ** -0.5 * min(step ** -0.5, warmup_steps * step ** -1.5)


def schedule_written_otherwise(step, d_model, warmup_steps, factor=1.0):
    return factor / np.sqrt(d_model) * min(1 / np.sqrt(step), step / warmup_steps ** 1.5)


def test_two_parameters_in_each_others_place_are_named(no_catalog, time_enough):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_names_exchanged)
    assert score < lesson08.WARMUP_SCHEDULE.points
    assert "`warmup_steps` and `step` exchanged in `warmup_steps * step ** (-1.5)`" in text, text


def test_a_schedule_written_otherwise_gets_full_marks(time_enough):
    score, text = feedback(lesson08.check_warmup_schedule, schedule_written_otherwise)
    assert score == lesson08.WARMUP_SCHEDULE.points, text


def greedy_flag_overwritten(model, src, bos_id, eos_id, max_len):
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
        done = nxt == eos_id
        if done.all():
            break
    return tgt_in[0, 1:] if one else tgt_in[:, 1:]


def test_a_flag_overwritten_in_the_loop_is_named(no_catalog, time_enough):
    no_catalog("greedy_decode")
    score, text = feedback(lesson09.check_greedy_decode, greedy_flag_overwritten)
    assert score < lesson09.GREEDY_DECODE.points
    assert "With `done = done | (nxt == eos_id)` in place of `done = nxt == eos_id`" in text, text


def ref_position_weights(table, n):
    return np.stack([table[t] * t for t in range(n)])


def slip_positions_from_one(table, n):
    rows = []
    for t in range(1, n + 1):
        rows.append(table[t] * t)
    return np.stack(rows)


def test_a_loop_counted_from_one_is_named(time_enough):
    table = np.random.default_rng(5).normal(size=(9, 3))
    cases = [Case("n = 4", (table, 4)), Case("n = 6", (table, 6))]
    found = repair(attempt_for(slip_positions_from_one, ref_position_weights, cases))
    assert found is not None and "With `range(0, n)` in place of `range(1, n + 1)`" in found.diagnosis, found


# -- batch r's kinds: every power of a difference, a fitted factor that changes, the largest float, a generator
#    read twice, another sublayer's weights ----------------------------------------------------------------------
def adam_both_corrections_grouped(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad ** 2
    step = lr * (m / (1 - beta1) ** t) / (np.sqrt(v / (1 - beta2) ** t) + eps)
    return param - step, m, v


def test_both_bias_corrections_grouped_are_named_as_one_change_not_as_a_factor(no_catalog, time_enough):
    no_catalog("adam_update")
    score, text = feedback(lesson08.check_adam_update, adam_both_corrections_grouped)
    assert score < lesson08.ADAM_UPDATE.points
    assert "in place of every `(1 - b) ** t` (`(1 - beta1) ** t`, `(1 - beta2) ** t`)" in text, text
    assert "exactly once" not in text  # a factor that changes from case to case is not lr's


def mask_by_nan_to_num(seq_len):
    return np.nan_to_num(np.triu(np.ones((seq_len, seq_len)), k=1) * -np.inf, nan=0.0)


def test_infinities_turned_into_the_largest_float_are_named(no_catalog, time_enough):
    no_catalog("create_causal_mask")
    score, text = feedback(lesson03.check_create_causal_mask, mask_by_nan_to_num)
    assert score < lesson03.CREATE_CAUSAL_MASK.points
    assert "the float of largest size, wherever the right one has -inf" in text and "np.nan_to_num" in text, text


def steps_from_a_generator(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    steps = (mha.attend(H_dec[..., t:t + 1, :], K, V, mask) for t in range(H_dec.shape[-2]))
    outputs = np.concatenate([o for o, _ in steps], axis=-2)
    return outputs, np.concatenate([w for _, w in steps], axis=-2)


def test_a_generator_read_twice_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, steps_from_a_generator)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "`steps` is a generator: the first pass over it uses it up" in text, text


def ref_encoder_keys(block, H):
    return H @ block.cross_attn.W_k, H @ block.cross_attn.W_v


def slip_encoder_keys_from_self_attention(block, H):
    pair = (H @ block.self_attn.W_k, H @ block.self_attn.W_v)
    return pair


def test_another_sublayers_weights_in_one_statement_are_named(time_enough):
    from types import SimpleNamespace
    r = np.random.default_rng(8)
    weights = [SimpleNamespace(W_k=r.normal(size=(4, 4)), W_v=r.normal(size=(4, 4))) for _ in range(2)]
    block = SimpleNamespace(self_attn=weights[0], cross_attn=weights[1])
    cases = [Case("H (3, 4)", (block, r.normal(size=(3, 4)))), Case("H (2, 5, 4)", (block, r.normal(size=(2, 5, 4))))]
    found = repair(attempt_for(slip_encoder_keys_from_self_attention, ref_encoder_keys, cases))
    assert found is not None and "With `cross_attn` in place of each `self_attn` in that statement" in found.diagnosis, \
        found


def scaled_by_lr(x, lr):
    return lr * x


def scaled_by_lr_and_length(x, lr):
    return lr * x * len(x)  # a multiple of the right steps, and another one on each length


def test_a_fitted_factor_is_named_only_where_it_is_the_same_on_the_other_cases():
    from encdec.checks.probes import Probes, Scale
    probes = Probes(lambda k, x, lr: k.get("lr", lr) * x,
                    Scale(lambda x, lr: [("lr", lr, None)], what="the steps", knob="lr"))
    r = np.random.default_rng(2)
    same = [Case("x of 3", (r.normal(size=3), 0.1)), Case("x of 3 again", (r.normal(size=3), 0.2))]
    other = [Case("x of 3", (r.normal(size=3), 0.1)), Case("x of 5", (r.normal(size=5), 0.2))]
    named = probes.probes[0].find(attempt_for(scaled_by_lr_and_length, scaled_by_lr, same), probes)
    assert named is not None and "multiplied by 0.3 where lr = 0.1 is right" in named.diagnosis, named
    assert probes.probes[0].find(attempt_for(scaled_by_lr_and_length, scaled_by_lr, other), probes) is None


# -- batch s's kinds: one list with two names, a factor outside a sum, a factor one branch lacks, a batch axis
#    kept for one source (the shape says it; no line is blamed) ------------------------------------------------------
def steps_into_one_list_with_two_names(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    outs = ws = []
    for t in range(H_dec.shape[-2]):
        o, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outs.append(o)
        ws.append(w)
    return np.concatenate(outs, axis=-2), np.concatenate(ws, axis=-2)


def test_one_list_with_two_names_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, steps_into_one_list_with_two_names)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "`outs = ws = []` makes one object with two names" in text, text


def softmax_backward_sum_then_product(dout, probs, axis=-1):
    return probs * (dout - dout.sum(axis=axis, keepdims=True) * probs)


def test_a_factor_outside_the_sum_is_named(no_catalog, time_enough):
    from encdec.checks import lesson07
    no_catalog("softmax_backward")
    score, text = feedback(lesson07.check_softmax_backward, softmax_backward_sum_then_product)
    assert score < lesson07.SOFTMAX_BACKWARD.points
    assert "`probs` multiplies the sum, where the formula sums the products" in text, text


def schedule_decay_without_d_model(step, d_model, warmup_steps, factor=1.0):
    if step < warmup_steps:
        return factor * d_model ** -0.5 * step * warmup_steps ** -1.5
    return factor * step ** -0.5


def test_a_factor_one_branch_lacks_is_named(no_catalog, time_enough):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_decay_without_d_model)
    assert score < lesson08.WARMUP_SCHEDULE.points
    assert "has the factor `d_model ** (-0.5)`" in text and "does not: the formula applies it to both" in text, text


def cached_decode_keeps_the_batch_axis(model, src, bos_id, eos_id, max_len):
    from encdec.decoding import KVCache, decode_step
    src = np.atleast_2d(src)
    H_enc, src_mask = model.encode(src)
    cache = KVCache(model, H_enc, src_mask)
    token, done, steps = np.full(len(src), bos_id), np.zeros(len(src), bool), []
    for _ in range(max_len):
        logits = decode_step(model, token, cache)
        logits[:, bos_id] = -np.inf
        logits[:, model.config.pad_id] = -np.inf
        token = np.where(done, model.config.pad_id, np.argmax(logits, axis=-1))
        steps.append(token)
        done |= token == eos_id
        if done.all():
            break
    return np.stack(steps, axis=1)


def test_a_batch_axis_kept_for_one_source_blames_no_line(time_enough):
    score, text = feedback(lesson09.check_cached_greedy_decode, cached_decode_keeps_the_batch_axis)
    assert score < lesson09.CACHED_GREEDY_DECODE.points
    assert "an unbatched input was given a batch axis" in text and "first value that goes wrong" not in text, text
