"""Kinds of slip named since batches ag and ah (each written as a student would, each diagnosis read from the checker
with its catalog emptied; right answers written otherwise keep full marks): a fix withdrawn because it breaks a later
part is looked for again on every part's cases (the shift dropped from a softmax, then the shift taken into its sum),
the exp that overflows quoted of two on a line, a GELU applied to the whole output layer, tensordot's axes written
as plain ints, a loop's last pass returned where every pass's belongs, a schedule divided by its peak, a norm read
after its stream moved on, a post-norm block's first norm on the sublayer's input, a factor outside a sum kept in a
name, a length penalty written as a factor, a beam's results read as the part reads them, the torch training step's
mean over every position, and a shape check by counting entries."""

import numpy as np
import torch
import torch.nn.functional as F

import encdec
from encdec.checks import lesson01, lesson02, lesson03, lesson04, lesson05, lesson06, lesson07, lesson08, lesson09
from encdec.checks import lesson10 as L
from encdec.layers import DecoderBlock, EncoderBlock, FeedForward, gelu, rms_norm
from encdec.loss import log_softmax
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def _points(lesson, number):
    return next(e for e in lesson.EXERCISES if e.number == number).points


# -- a softmax whose denominator is not shifted -------------------------------------------------------------------
def softmax_unshifted_sum(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return np.exp(shifted) / np.sum(np.exp(x), axis=axis, keepdims=True)


def test_a_fix_withdrawn_for_a_later_part_is_looked_for_again_on_every_part(no_catalog, time_enough):
    """On the small logits, dropping the shift mends the answer; the large logits' part withdraws that fix. The
    repair is run again on every part's cases and finds the one that mends them all."""
    no_catalog("softmax")
    score, text = feedback(lesson01.check_softmax, softmax_unshifted_sum)
    assert score == 0.0
    assert "With `shifted` in place of `x` there, your code gives the right result on all" in text, text
    assert "`np.exp(x)` overflows" in text and "`np.exp(shifted)` overflows" not in text, text


# -- Lesson 2: a GELU on the output layer; the FFN reading the norm of the stream before the residual ------------------
class FeedForwardGeluOutside(FeedForward):
    def __call__(self, x):
        hidden = x @ self.W1 + self.b1
        return gelu(hidden @ self.W2 + self.b2)


class FeedForwardGeluInside(FeedForward):
    def __call__(self, x):
        hidden = gelu(np.matmul(x, self.W1) + self.b1)
        return np.matmul(hidden, self.W2) + self.b2


def test_an_activation_applied_to_the_whole_layer_is_moved_onto_its_input(no_catalog, time_enough):
    no_catalog("FeedForward")
    score, text = feedback(lesson02.check_feed_forward, FeedForwardGeluOutside)
    assert score == 0.0
    assert "With `gelu(hidden) @ self.W2 + self.b2` in place of `gelu(hidden @ self.W2 + self.b2)`" in text, text
    score, text = feedback(lesson02.check_feed_forward, FeedForwardGeluInside)
    assert score == _points(lesson02, "2.5"), text


class EncoderBlockStaleNorm(EncoderBlock):
    def __call__(self, x, mask=None):
        h = rms_norm(x, self.norm1_gamma)
        a, _ = self.self_attn(h, mask=mask)
        out = x + a
        out = out + self.ffn(h)
        return out


def test_a_norm_read_after_its_stream_moved_on_is_made_again(no_catalog, time_enough):
    no_catalog("EncoderBlock")
    score, text = feedback(lesson02.check_encoder_block, EncoderBlockStaleNorm)
    assert score < _points(lesson02, "2.6")
    assert "With `h = rms_norm(out, self.norm2_gamma)` added before `self.ffn(h)`" in text, text


# -- Lesson 3: tensordot's axes as two ints ---------------------------------------------------------------------------
def output_logits_tensordot(h, E):
    return np.tensordot(h, E, axes=(1, 1))


def output_logits_tensordot_from_the_end(h, E):
    return np.tensordot(h, E, axes=(-1, 1))


def test_tensordot_axes_written_as_two_ints_are_counted_from_the_end(no_catalog, time_enough):
    no_catalog("output_logits")
    score, text = feedback(lesson03.check_output_logits, output_logits_tensordot)
    assert score < _points(lesson03, "3.4")
    assert "With axes=(-1, 1) in place of `(1, 1)`" in text, text
    score, text = feedback(lesson03.check_output_logits, output_logits_tensordot_from_the_end)
    assert score == _points(lesson03, "3.4"), text


# -- Lesson 4: the last step's weights returned ------------------------------------------------------------------
def step_by_step_last_weights(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    rows = []
    for t in range(H_dec.shape[-2]):
        step_out, step_w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        rows.append(step_out)
    return np.concatenate(rows, axis=-2), step_w


def step_by_step_every_weight(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    outs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outs.append(out)
        weights.append(w)
    return np.concatenate(outs, axis=-2), np.concatenate(weights, axis=-2)


def test_a_loops_last_pass_returned_where_every_pass_belongs_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, step_by_step_last_weights)
    assert score < _points(lesson04, "4.3")
    assert "`step_w`, which your function returns as the weights, is assigned on line" in text, text
    assert "Collect it at each pass, as `rows` is," in text, text
    score, text = feedback(lesson04.check_cross_attention_step_by_step, step_by_step_every_weight)
    assert score == _points(lesson04, "4.3"), text


# -- Lesson 5: the cross-attention's query from the first norm; one sublayer of a post-norm block pre-norm ---------
class DecoderBlockStaleQuery(DecoderBlock):
    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        h = rms_norm(x, self.norm1_gamma, self.eps)
        sa_out, _ = self.self_attn(h, mask=self_attn_mask)
        x = x + sa_out
        ca_out, cross_weights = self.cross_attn(h, encoder_output, mask=cross_attn_mask)
        x = x + ca_out
        h = rms_norm(x, self.norm3_gamma, self.eps)
        x = x + self.ffn(h)
        return x, cross_weights


def test_a_sublayer_given_the_first_norm_of_the_stream_is_given_its_own(no_catalog, time_enough):
    no_catalog("DecoderBlock")
    score, text = feedback(lesson05.check_decoder_block, DecoderBlockStaleQuery)
    assert score < _points(lesson05, "5.2")
    assert "With `h = rms_norm(x, self.norm2_gamma, self.eps)` added before `self.cross_attn(h" in text, text


def post_norm_first_sublayer_pre_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    out, _ = block.self_attn(rms_norm(x, block.norm1_gamma, block.eps), mask=self_attn_mask)
    x = x + out
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma, block.eps)
    x = rms_norm(x + block.ffn(x), block.norm3_gamma, block.eps)
    return x, cross_weights


def test_a_post_norm_blocks_norm_on_a_sublayers_input_is_moved_after_the_sum(no_catalog, time_enough):
    no_catalog("decoder_block_post_norm")
    score, text = feedback(lesson05.check_decoder_block_post_norm, post_norm_first_sublayer_pre_norm)
    assert score < _points(lesson05, "5.3")
    assert "the post-norm block gives the sublayer `x` itself and normalises the residual sum after it: " \
           "`x = rms_norm(x + out, block.norm1_gamma, block.eps)`" in text, text


# -- Lesson 7: p outside a sum kept in a name --------------------------------------------------------------------
def softmax_backward_p_outside_named_sum(dout, probs, axis=-1):
    inner = np.sum(dout, axis=axis, keepdims=True)
    return probs * dout - probs * inner * probs


def test_a_factor_outside_a_sum_kept_in_a_name_is_moved_inside(no_catalog, time_enough):
    no_catalog("softmax_backward")
    score, text = feedback(lesson07.check_softmax_backward, softmax_backward_p_outside_named_sum)
    assert score == 0.0
    assert "With the sum of `dout * probs` on line" in text and "and `inner` in place of `probs * inner`" in text, text


# -- Lesson 8: a schedule divided by its peak ----------------------------------------------------------------------
def warmup_schedule_divided_by_peak(step, d_model, warmup_steps, factor=1.0):
    if step < warmup_steps:
        shape = step / warmup_steps
    else:
        shape = (warmup_steps / step) ** 0.5
    return factor * d_model ** -0.5 * shape


def test_a_schedule_whose_branches_are_divided_by_the_peak_is_named(no_catalog, time_enough):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, warmup_schedule_divided_by_peak)
    assert score == 0.0
    assert "each branch is divided by its value at the peak" in text.lower(), text


# -- Lesson 9: a length penalty written as a factor -----------------------------------------------------------------
def beam_search_penalty_as_factor(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    H_enc, src_mask = model.encode(src[None, :])
    pad = model.config.pad_id
    live, finished = [([], 0.0)], []
    for _ in range(max_len):
        tgt_in = np.array([[bos_id] + toks for toks, _ in live], dtype=np.int64)
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1, :].copy()
        logits[:, [bos_id, pad]] = -np.inf
        logp = log_softmax(logits, axis=-1)
        candidates = []
        for h, (toks, total) in enumerate(live):
            for tok in range(logp.shape[-1]):
                if np.isfinite(logp[h, tok]):
                    candidates.append((total + logp[h, tok], toks + [tok]))
        candidates.sort(key=lambda c: -c[0])
        live = []
        for rank, (total, toks) in enumerate(candidates):
            if len(live) == beam_width:
                break
            if toks[-1] == eos_id:
                if rank < beam_width:
                    finished.append((toks, total))
                continue
            live.append((toks, total))
        if len(finished) >= beam_width or not live:
            break

    def score(item):
        return item[1] / len(item[0]) * alpha
    results = sorted(finished, key=score, reverse=True)
    if len(results) < beam_width:
        results += sorted(live, key=score, reverse=True)[:beam_width - len(results)]
    return [(np.array(toks, dtype=np.int64), float(score((toks, total)))) for toks, total in results[:beam_width]]


def test_a_length_penalty_written_as_a_factor_is_named_in_a_beam_search(no_catalog, time_enough):
    """A beam's results (a list of (tokens, score) pairs) are not one array: the repair reads a copy's results as
    the part reads them. Before, every copy of a beam search failed that comparison, and no fix was ever found."""
    no_catalog("beam_search")
    score, text = feedback(lesson09.check_beam_search, beam_search_penalty_as_factor)
    assert score < _points(lesson09, "9.3")
    assert "With `item[1] / len(item[0]) ** alpha` in place of `item[1] / len(item[0]) * alpha`" in text, text


# -- Lesson 10: the loss's mean over every position; a shape check by counting ------------------------------------
def torch_train_step_mean_over_every_position(model, optimizer, src, tgt, bos_id, lr, max_norm):
    for group in optimizer.param_groups:
        group["lr"] = lr
    tgt_in = torch.from_numpy(encdec.shift_right(tgt.cpu().numpy(), bos_id)).to(src.device)
    logits = model(src, tgt_in)
    per_token = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), reduction="none")
    real = (tgt.flatten() != model.config.pad_id).to(per_token.dtype)
    loss = (per_token * real).mean()
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), norm.item()


def test_the_training_steps_mean_over_every_position_is_named_by_the_repair(no_catalog, time_enough):
    """Exercise 10.4's check compared two training steps with its catalog only; a wrong value now gets the repair
    too, confirmed on every case of the part."""
    no_catalog("torch_train_step")
    exercise = next(e for e in L.EXERCISES if e.number == "10.4")
    score, text = feedback(exercise.checker, torch_train_step_mean_over_every_position)
    assert score < exercise.points
    assert "With `(per_token * real).sum() / real.sum()` in place of `(per_token * real).mean()`" in text, text


def load_numpy_parameters_counting(module, params):
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"names differ: {sorted(set(own) ^ set(params))}")
    for name, value in params.items():
        if own[name].numel() != value.size:
            raise ValueError(f"{name}: {tuple(own[name].shape)} vs {value.shape}")
    with torch.no_grad():
        for name, value in params.items():
            own[name].copy_(torch.from_numpy(value).reshape(own[name].shape))
    return module


def test_a_shape_check_that_counts_entries_is_told_to_compare_shapes(no_catalog, time_enough):
    no_catalog("load_numpy_parameters")
    exercise = next(e for e in L.EXERCISES if e.number == "10.1")
    score, text = feedback(exercise.checker, load_numpy_parameters_counting)
    assert score < exercise.points
    assert "With `tuple(own[name].shape) != tuple(value.shape)` in place of `own[name].numel() != value.size`" \
        in text, text


# -- found on batch ai, after it was measured -------------------------------------------------------------------------
def warmup_schedule_ramp_to_one_before_the_peak(step, d_model, warmup_steps, factor=1.0):
    scale = factor * d_model ** -0.5
    if step < warmup_steps:
        return scale * step / warmup_steps
    return scale * step ** -0.5


def test_a_ramp_to_one_that_stops_before_the_peak_is_named(no_catalog, time_enough):
    """`step < warmup_steps` where the formula's min meets its decay at the peak: the if's other convention."""
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, warmup_schedule_ramp_to_one_before_the_peak)
    assert score == 0.0
    assert "the warm-up branch (step < warmup_steps) is step / warmup_steps" in text.lower(), text


def decode_step_query_from_the_stream(model, tokens, cache):
    t = cache.length
    x = model.embed(np.asarray(tokens)[..., None], offset=t)
    eps = model.config.eps
    for i, block in enumerate(model.decoder):
        K_row, V_row = block.self_attn.project_kv(rms_norm(x, block.norm1_gamma, eps))
        K_all, V_all = cache.append(i, K_row, V_row)
        x = x + block.self_attn.attend(x, K_all, V_all)[0]
        q = rms_norm(x, block.norm2_gamma, eps)
        x = x + block.cross_attn.attend(q, cache.cross_k[i], cache.cross_v[i], mask=cache.src_mask)[0]
        x = x + block.ffn(rms_norm(x, block.norm3_gamma, eps))
    cache.length = t + 1
    logits = rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T
    return logits[..., -1, :]


def test_a_query_from_the_stream_where_an_inline_norm_belongs_is_named(no_catalog, time_enough):
    """The norm written inline, as the keys' argument, not kept in a name: the query is given that norm too."""
    no_catalog("decode_step")
    score, text = feedback(lesson09.check_decode_step, decode_step_query_from_the_stream)
    assert score < _points(lesson09, "9.4")
    assert "With `rms_norm(x, block.norm1_gamma, eps)` in place of `x` in `block.self_attn.attend(x, K_all, V_all)`" \
        in text, text


def exact_match_slicing_the_prediction(model, src, tgt, bos_id, eos_id, max_len):
    pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    m = tgt.shape[1]
    rows_equal = (pred[:, :m] == tgt).all(dim=1)
    return rows_equal.double().mean().item()


def exact_match_cut_to_the_targets(model, src, tgt, bos_id, eos_id, max_len):
    pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    pred = pred[:, : tgt.shape[1]]
    rows_ok = ((pred == tgt) | (tgt == model.config.pad_id)).all(dim=1)
    return rows_ok.float().mean().item()


def test_a_short_prediction_sliced_where_it_must_be_padded_is_named(no_catalog, time_enough):
    """The slice written in the failing line, or kept in a name with its bound an expression (`tgt.shape[1]`)."""
    no_catalog("exact_match")
    exercise = next(e for e in L.EXERCISES if e.number == "10.5")
    for answer, sliced in ((exact_match_slicing_the_prediction, "`pred[:, :m]` cuts `pred` to at most"),
                           (exact_match_cut_to_the_targets, "`pred = pred[:, :tgt.shape[1]]` (line")):
        score, text = feedback(exercise.checker, answer)
        assert score < exercise.points
        assert sliced in text and "a slice never makes an array longer" in text, text


# -- found on batch aj, after it was measured -------------------------------------------------------------------------
def shift_right_first_row_overwritten(targets, bos_id):
    shifted = np.roll(targets, 1, axis=-1)
    shifted[0] = bos_id
    return shifted


def test_one_index_written_into_the_first_axis_is_moved_to_the_last(no_catalog, time_enough):
    no_catalog("shift_right")
    exercise = next(e for e in lesson06.EXERCISES if e.number == "6.1")
    score, text = feedback(exercise.checker, shift_right_first_row_overwritten)
    assert score < exercise.points
    assert "With `shifted[..., 0]` in place of `shifted[0]`" in text, text


def warmup_schedule_trailing_comma(step, d_model, warmup_steps, factor=1.0):
    lr = (factor * d_model ** (-0.5)
          * min(step ** (-0.5), step * warmup_steps ** (-1.5))),
    return lr


def test_a_trailing_comma_that_makes_a_tuple_is_named(no_catalog, time_enough):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, warmup_schedule_trailing_comma)
    assert score == 0.0
    assert "the comma at the end makes a tuple of one value" in text, text


def torch_train_step_parameters_read_twice(model, optimizer, src, tgt, bos_id, lr, max_norm):
    for group in optimizer.param_groups:
        group["lr"] = lr
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    params = model.parameters()
    grad_norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    optimizer.step()
    return loss.item(), grad_norm.item()


def test_a_parameters_generator_used_up_before_the_clipping_is_named_before_the_catalog(no_catalog, time_enough):
    """The catalog's entry for a clipping that does not reach the update gives this answer's numbers (nothing is
    clipped), and says the clip is in the wrong place: the generator read twice is tried first, and named."""
    exercise = next(e for e in L.EXERCISES if e.number == "10.4")
    score, text = feedback(exercise.checker, torch_train_step_parameters_read_twice)
    assert score < exercise.points
    assert "With `params = list(model.parameters())` in place of `params = model.parameters()`" in text, text
    assert "the clipping does not reach the update" not in text, text
