"""Kinds of slip named since batch y (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): np.exp of an unshifted argument that
overflows (stability.py), a mean where the formula sums (the repair's edit of np.mean to np.sum), a reshape given
another array's length (shape_causes.py), a decoder that stops before the last step's tokens are kept
(behaviour.py), a top-k that keeps exactly k positions and drops a tie (Lesson 9's sampling slips), counts with
biases the course's layers do not have or of the wrong size (Lessons 5 and 6), names checked one way only and a
0-d tensor returned for a float (Lesson 10)."""

import contextlib
import io

import numpy as np
import torch

from encdec.attention import scaled_dot_product_attention
from encdec.checks import lesson02, lesson04, lesson05, lesson06, lesson07, lesson08, lesson09, lesson10
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def cross_attention_exp_unshifted(Q, K, V, mask=None):
    s = np.einsum("...md,...nd->...mn", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = s + mask
    w = np.exp(s)
    w /= w.sum(-1, keepdims=True)
    return w @ V, w


def cross_attention_shifted(Q, K, V, mask=None):
    s = np.einsum("...md,...nd->...mn", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = s + mask
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w @ V, w


def test_an_exp_that_overflows_is_named_with_its_line(no_catalog, time_enough):
    no_catalog("cross_attention")
    score, text = feedback(lesson04.check_cross_attention, cross_attention_exp_unshifted)
    assert score < lesson04.CROSS_ATTENTION.points
    assert "`w = np.exp(s)`: `np.exp(s)` overflows" in text and "Subtract each row's largest value" in text, text
    score, text = feedback(lesson04.check_cross_attention, cross_attention_shifted)
    assert score == lesson04.CROSS_ATTENTION.points and "overflows" not in text, text


def cross_entropy_log_sum_exp_unshifted(logits, targets, pad_id=None):
    targets = np.asarray(targets)
    lse = np.log(np.exp(logits).sum(axis=-1))
    picked = np.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    keep = np.ones(targets.shape) if pad_id is None else (targets != pad_id).astype(float)
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits)
    p = np.exp(logits - lse[..., None])
    at = targets[..., None]
    np.put_along_axis(p, at, np.take_along_axis(p, at, axis=-1) - 1, axis=-1)
    return float(((lse - picked) * keep).sum() / n), p * keep[..., None] / n


def test_a_log_sum_exp_that_overflows_is_named(no_catalog, time_enough):
    no_catalog("softmax_cross_entropy")
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_log_sum_exp_unshifted)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "`np.exp(logits)` overflows" in text and "m + log(sum(exp(z - m)))" in text, text


def sequence_cross_entropy_mean_over_vocabulary(logits, targets, pad_id=None, label_smoothing=0.0):
    targets = np.asarray(targets)
    V = logits.shape[-1]
    real = np.ones(targets.shape, bool) if pad_id is None else targets != pad_id
    if not real.any():
        return 0.0, np.zeros_like(logits)
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    q = (1 - label_smoothing) * (np.arange(V) == targets[..., None]) + label_smoothing / V
    loss = -(q * logp).mean(axis=-1)
    return float(loss[real].sum() / real.sum()), (np.exp(logp) - q) * real[..., None] / real.sum()


def test_a_mean_where_the_formula_sums_is_named(no_catalog, time_enough):
    no_catalog("sequence_cross_entropy")
    score, text = feedback(lesson08.check_sequence_cross_entropy, sequence_cross_entropy_mean_over_vocabulary)
    assert score < lesson08.SEQUENCE_CROSS_ENTROPY.points
    assert "a mean is the sum divided by how many entries it reduces" in text and "in place of `(q * logp).mean`" \
        in text, text


class MultiHeadAttentionSplitByQueryLength:
    def __init__(self, d_model, n_heads, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (rng.normal(0, d_model ** -0.5, (d_model, d_model)) for _ in range(4))

    def _split(self, x, length):
        return np.moveaxis(x.reshape(x.shape[:-2] + (length, self.n_heads, self.d_k)), -2, -3)

    def __call__(self, query_input, key_value_input=None, mask=None):
        kv = query_input if key_value_input is None else key_value_input
        m = query_input.shape[-2]
        heads, weights = scaled_dot_product_attention(self._split(query_input @ self.W_q, m),
                                                      self._split(kv @ self.W_k, m), self._split(kv @ self.W_v, m), mask)
        merged = np.moveaxis(heads, -3, -2).reshape(query_input.shape)
        return merged @ self.W_o, weights


def test_a_reshape_given_the_queries_length_for_the_keys_is_named(no_catalog, time_enough):
    no_catalog("MultiHeadAttention")
    score, text = feedback(lesson02.check_multi_head_attention, MultiHeadAttentionSplitByQueryLength)
    assert score < lesson02.MULTI_HEAD_ATTENTION.points
    assert "`length` is 5 here" in text and "`m = query_input.shape[-2]` (line" in text and "x.shape[-2]" in text, text


def counted_with_three_projections(d_model):
    return 3 * d_model ** 2 + d_model


def counted_with_projection_biases(d_model):
    return 4 * d_model * (d_model + 1)


def test_a_count_is_named_by_the_arrays_it_gets_wrong(no_catalog, time_enough):
    no_catalog("cross_attention_params")
    score, text = feedback(lesson05.check_cross_attention_params, counted_with_three_projections)
    assert score == 0 and "Three d x d projections are counted, but cross-attention has four" in text, text
    score, text = feedback(lesson05.check_cross_attention_params, counted_with_projection_biases)
    assert score == 0 and "norm gain (norm2_gamma, d numbers) is left out; and a bias of d is counted" in text, text


def parameter_count_biases_of_width_d(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    per_ffn = 2 * d_model * d_ff + 2 * d_model
    per_enc = 4 * d_model ** 2 + per_ffn + 2 * d_model
    per_dec = 8 * d_model ** 2 + per_ffn + 3 * d_model
    return vocab_size * d_model + n_encoder_layers * per_enc + n_dec * per_dec + 2 * d_model


def test_feed_forward_biases_of_the_wrong_width_are_named(no_catalog, time_enough):
    no_catalog("parameter_count")
    score, text = feedback(lesson06.check_parameter_count, parameter_count_biases_of_width_d)
    assert score < lesson06.PARAMETER_COUNT.points
    assert "Both feed-forward biases are counted with d entries, but b1 is added to W1's output" in text, text


def greedy_stopping_before_the_last_column(model, src, bos_id, eos_id, max_len):
    batch = src[None] if src.ndim == 1 else src
    H, src_mask = model.encode(batch)
    out, done = [], np.zeros(len(batch), bool)
    for _ in range(max_len):
        prefix = np.concatenate([np.full((len(batch), 1), bos_id)] + [o[:, None] for o in out], axis=1)
        logits = model.decode(prefix, H, src_mask)[:, -1].copy()
        logits[:, [bos_id, model.config.pad_id]] = -np.inf
        tok = np.where(done, model.config.pad_id, logits.argmax(-1))
        done |= tok == eos_id
        if np.all(done):
            break
        out.append(tok)
    ids = np.stack(out, axis=1) if out else np.zeros((len(batch), 0), int)
    return ids[0] if src.ndim == 1 else ids


def test_a_loop_that_stops_before_keeping_the_last_step_is_named(no_catalog, time_enough):
    no_catalog("greedy_decode")
    score, text = feedback(lesson09.check_greedy_decode, greedy_stopping_before_the_last_column)
    assert score < lesson09.GREEDY_DECODE.points
    assert "Your output is the right one without its last column" in text and "Keep the step's tokens first" in text, text


def sample_keeping_exactly_k(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, float)
    if temperature == 0:
        return z.argmax(-1)
    z = z / temperature
    if top_k is not None:
        best = np.argsort(-z, axis=-1, kind="stable")[..., :top_k]
        kept = np.full(z.shape, -np.inf)
        np.put_along_axis(kept, best, np.take_along_axis(z, best, -1), -1)
        z = kept
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if top_p is not None:
        order = np.argsort(-p, -1, kind="stable")
        ranked = np.take_along_axis(p, order, -1)
        keep = np.zeros(p.shape, bool)
        np.put_along_axis(keep, order, np.cumsum(ranked, -1) - ranked < top_p, -1)
        p = np.where(keep, p, 0)
        p /= p.sum(-1, keepdims=True)
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, -1) < u).sum(-1), p.shape[-1] - 1)


def test_a_top_k_that_keeps_exactly_k_positions_is_named(no_catalog, time_enough):
    no_catalog("sample_next_token")
    score, text = feedback(lesson09.check_sample_next_token, sample_keeping_exactly_k)
    assert score < lesson09.SAMPLE_NEXT_TOKEN.points
    assert "Exactly top_k positions are kept (an argsort's first k)" in text and "z >= kth" in text, text


def _checked(exercise, answer):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        score = exercise.checker(answer, hidden=True)
    return score, out.getvalue()


def load_checking_only_the_modules_names(module, params):
    own = dict(module.named_parameters())
    for name, p in own.items():
        if name not in params:
            raise ValueError(f"{name} is missing")
    with torch.no_grad():
        for name, value in params.items():
            if name in own:
                if tuple(value.shape) != tuple(own[name].shape):
                    raise ValueError(f"{name}: {value.shape} vs {tuple(own[name].shape)}")
                own[name].copy_(torch.as_tensor(value, dtype=own[name].dtype))
    return module


def test_names_checked_one_way_are_named():
    exercise = next(e for e in lesson10.EXERCISES if e.number == "10.1")
    score, text = _checked(exercise, load_checking_only_the_modules_names)
    assert score < exercise.points
    assert "goes one way only, from the module's names to the dict's" in text and "compare the two sets" in text, text


def exact_match_returning_a_tensor(model, src, tgt, bos_id, eos_id, max_len):
    pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    pad = model.config.pad_id
    width = max(pred.shape[1], tgt.shape[1])
    pred = torch.nn.functional.pad(pred, (0, width - pred.shape[1]), value=pad)
    tgt = torch.nn.functional.pad(tgt, (0, width - tgt.shape[1]), value=pad)
    return (pred == tgt).all(dim=1).double().mean()


def exact_match_returning_a_float(model, src, tgt, bos_id, eos_id, max_len):
    return exact_match_returning_a_tensor(model, src, tgt, bos_id, eos_id, max_len).item()


def test_a_tensor_returned_for_a_float_loses_one_part_and_says_why():
    exercise = next(e for e in lesson10.EXERCISES if e.number == "10.5")
    score, text = _checked(exercise, exact_match_returning_a_tensor)
    assert 0 < score < exercise.points and "returns a torch tensor" in text and "`.item()`" in text, text
    score, text = _checked(exercise, exact_match_returning_a_float)
    assert score == exercise.points and "tensor" not in text, text
