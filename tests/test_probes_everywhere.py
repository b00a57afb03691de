"""A slip made at every place it could be (probes/everywhere.py), a sublayer reading the stream before an
earlier one is added and a factor after a call (probes/wiring.py), what causes a shape error
(probes/shape_causes.py), rows that all sum to one factor (RowsSumToOne), and the checks of 6.7, 7.2, 10.3
and 10.5 that now say why. Each slip is written as a student would, against a reference written another
way; each diagnosis is read from the checker with its catalog emptied, and right answers written otherwise
get none."""

import contextlib
import io

import numpy as np
import torch
import pytest

from encdec.attention import MultiHeadAttention, cross_attention, softmax, split_heads
from encdec.attention import scaled_dot_product_attention as lesson01_attention
from encdec.checks import lesson01, lesson03, lesson04, lesson06, lesson07
from encdec.checks.core import Case
from encdec.checks.probes import judging
from encdec.checks.probes.repair import repair
from test_repair import _Silent, attempt_for, feedback, no_catalog, time_enough  # noqa: F401 (fixtures)

r = np.random.default_rng(11)


# -- one slip at every place ------------------------------------------------------------------------------------
def ref_attention(q, k, v):
    s = np.einsum("...md,...nd->...mn", q, k)
    w = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("...mn,...nd->...md", w / w.sum(-1, keepdims=True), v)


def slip_dot_twice(q, k, v):
    s = np.dot(q, np.swapaxes(k, -1, -2))
    w = np.exp(s - s.max(-1, keepdims=True))
    return np.dot(w / w.sum(-1, keepdims=True), v)


def slip_T_twice(q, k, v):
    s = q @ k.T
    w = np.exp(s - np.max(s, axis=-1, keepdims=True))
    w = w / np.sum(w, axis=-1, keepdims=True)
    return (v.T @ w.T).T


def slip_dot_and_axis(q, k, v):
    s = np.dot(q, np.swapaxes(k, -1, -2))
    w = np.exp(s - s.max(-2, keepdims=True))
    return np.dot(w / w.sum(-2, keepdims=True), v)


def ref_softmax(x):
    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)


def slip_softmax_no_keepdims(x):
    top = np.max(x, axis=-1)
    e = np.exp(x - top)
    return e / np.sum(e, axis=-1)


QKV = [Case("(2, 3, 4) with (2, 5, 4)", (r.normal(size=(2, 3, 4)), r.normal(size=(2, 5, 4)), r.normal(size=(2, 5, 3)))),
       Case("(2, 2, 3, 4) heads", (r.normal(size=(2, 2, 3, 4)), r.normal(size=(2, 2, 6, 4)), r.normal(size=(2, 2, 6, 2))))]
ROWS = [Case("(3, 5)", (r.normal(size=(3, 5)),)), Case("(2, 4, 6)", (r.normal(size=(2, 4, 6)),))]


class _Config:
    def __init__(self, eps):
        self.eps = eps


class _Block:
    def __init__(self, d, eps):
        self.g1, self.g2, self.eps = np.linspace(0.5, 1.5, d), np.linspace(1.5, 0.5, d), eps


class _Model:
    def __init__(self, d, eps):
        self.config, self.blocks, self.final_g = _Config(eps), [_Block(d, eps), _Block(d, eps)], np.full(d, 0.8)


def rms_norm(x, gamma, eps=1e-6):
    return x * gamma / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps)


def ref_stack(model, x):
    for block in model.blocks:
        n = x / np.sqrt((x * x).mean(-1, keepdims=True) + model.config.eps)
        x = x + np.tanh(n * block.g1) * block.g2
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + model.config.eps) * model.final_g


def slip_default_eps(model, x):
    for block in model.blocks:
        x = x + np.tanh(rms_norm(x, block.g1)) * block.g2
    return rms_norm(x, model.final_g)


def ref_cache(keys, values):
    return np.vstack(keys) + 2 * np.vstack(values)


def slip_cache_joined_on_features(keys, values):
    K = np.concatenate(keys, axis=-1)
    V = np.concatenate(values, axis=-1)
    return K + 2 * V


CACHES = [Case("two steps of (1, 3)", ([r.normal(size=(1, 3)), r.normal(size=(1, 3))],
                                       [r.normal(size=(1, 3)), r.normal(size=(1, 3))])),
          Case("three steps of (2, 4)", ([r.normal(size=(2, 4)) for _ in range(3)], [r.normal(size=(2, 4)) for _ in range(3)]))]


STACKS = [Case("eps 0.5", (_Model(4, 0.5), r.normal(size=(3, 4)))),
          Case("eps 2, a batch", (_Model(4, 2.0), r.normal(size=(2, 3, 4))))]


@pytest.mark.parametrize("slip,reference,cases,kind,words", [
    (slip_dot_twice, ref_attention, QKV, "dot", "`np.matmul` (@) in place of every `np.dot`"),
    (slip_T_twice, ref_attention, QKV, "transpose", "`.swapaxes(-1, -2)` in place of every `.T`"),
    (slip_softmax_no_keepdims, ref_softmax, ROWS, "keepdims", "keepdims=True added to every reduction over an axis"),
    (slip_default_eps, ref_stack, STACKS, "eps", "`eps=block.eps` or `eps=model.config.eps` passed to each norm"),
    (slip_cache_joined_on_features, ref_cache, CACHES, "axis", "axis=-2 in place of axis=-1 in every `concatenate`"),
], ids=["dot", "transpose", "keepdims", "eps", "axis"])
def test_one_slip_at_every_place_is_mended_as_one_change(slip, reference, cases, kind, words):
    found = repair(attempt_for(slip, reference, cases), seconds=10)
    assert found is not None and found.key == f"repair:{kind}", found
    assert words in found.diagnosis and "that one change is the fix" in found.diagnosis, found.diagnosis


def test_two_slips_of_which_one_is_everywhere_name_nothing_wrong():
    """np.dot at two places and the softmax over another axis: no single change mends it."""
    assert repair(attempt_for(slip_dot_and_axis, ref_attention, QKV), seconds=5) is None


# -- how a block is wired --------------------------------------------------------------------------------------
def ref_block(x, w):
    h = x + np.tanh(rms_norm(x, 1.0) @ w)
    return h + np.maximum(rms_norm(h, 1.0) @ w.T, 0.0)


def slip_sublayers_side_by_side(x, w):
    attended = np.tanh(rms_norm(x, 1.0) @ w)
    fed = np.maximum(rms_norm(x, 1.0) @ w.T, 0.0)
    return x + attended + fed


def ref_scaled_weights(s):
    z = s / 2.0
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def slip_scale_after_softmax(s):
    return softmax(s, axis=-1) / np.sqrt(4)


SQUARE = [Case("(3, 4) with (4, 4)", (r.normal(size=(3, 4)), r.normal(size=(4, 4)))),
          Case("(2, 5, 4) with (4, 4)", (r.normal(size=(2, 5, 4)), r.normal(size=(4, 4))))]


def test_a_sublayer_reading_the_stream_before_the_last_one_was_added():
    found = repair(attempt_for(slip_sublayers_side_by_side, ref_block, SQUARE), seconds=10)
    assert found is not None and found.key == "repair:stream", found
    assert "`rms_norm(x + attended, ...)` in place of `rms_norm(x, 1.0)`" in found.diagnosis, found.diagnosis


def test_a_factor_after_the_softmax_is_moved_onto_its_input():
    found = repair(attempt_for(slip_scale_after_softmax, ref_scaled_weights, ROWS), seconds=10)
    assert found is not None and found.key == "repair:factor", found
    assert "`softmax(s / np.sqrt(4), ...)`" in found.diagnosis, found.diagnosis


def attention_scaled_after(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1) * Q.shape[-1] ** -0.5
    return weights @ V, weights


def test_rows_that_all_sum_to_one_factor_are_said_with_the_factor(no_catalog, monkeypatch):
    """The repair names the line first; without it, the rows' one sum is named (1/sqrt(d_k))."""
    no_catalog("scaled_dot_product_attention")
    _, text = feedback(lesson01.check_scaled_dot_product_attention, attention_scaled_after)
    assert "repair" not in text and "Q.shape[-1] ** -0.5" in text and "what `softmax` takes" in text, text
    monkeypatch.setattr(judging, "REPAIR", _Silent())
    _, text = feedback(lesson01.check_scaled_dot_product_attention, attention_scaled_after)
    assert "Every row of the attention weights sums to" in text and "d_k^(-1/2)" in text, text
    assert "a factor is applied to the weights after the softmax" in text, text


# -- what causes a shape error (the repair switched off) --------------------------------------------------------
def softmax_max_without_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis, keepdims=True)


def attention_T_of_a_batch(Q, K, V, mask=None):
    scores = (Q @ K.T) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


class CrossAttentionMergedByIterating(MultiHeadAttention):
    def project_kv(self, key_value_input):
        return (split_heads(key_value_input @ self.W_k, self.n_heads),
                split_heads(key_value_input @ self.W_v, self.n_heads))

    def attend(self, query_input, K, V, mask=None):
        Q = split_heads(query_input @ self.W_q, self.n_heads)
        heads, weights = cross_attention(Q, K, V, mask)
        merged = np.concatenate(list(heads), axis=-1)
        return merged @ self.W_o, weights

    def __call__(self, query_input, key_value_input=None, mask=None):
        K, V = self.project_kv(query_input if key_value_input is None else key_value_input)
        return self.attend(query_input, K, V, mask)


def test_a_shape_error_is_said_with_its_cause(no_catalog, monkeypatch):
    monkeypatch.setattr(judging, "REPAIR", _Silent())
    no_catalog("softmax", "scaled_dot_product_attention", "attend", "cross_attention")
    _, text = feedback(lesson01.check_softmax, softmax_max_without_keepdims)
    assert "`x.max(axis=axis)` drops the axis it reduces: `x` (3, 5) gives (3,)" in text, text
    assert "keepdims=True keeps the reduced axis" in text, text
    _, text = feedback(lesson01.check_scaled_dot_product_attention, attention_T_of_a_batch)
    assert "`K.T` reverses every axis of `K` (2, 5, 6), giving (6, 5, 2)" in text, text
    _, text = feedback(lesson04.check_attend, CrossAttentionMergedByIterating)
    assert "`list(heads)` walks `heads`" in text and "which is the batch here" in text, text


def test_shape_causes_are_silent_where_the_array_is_not_batched():
    """list() of a 3-D array whose first axis is no batch size of the case, and .T of a matrix: no cause."""
    from encdec.checks.probes.shape_causes import cause
    import ast
    import sys

    def frame_with(**arrays):
        return sys._getframe()
    heads, W = np.zeros((3, 5, 4)), np.zeros((4, 4))
    frame = frame_with()
    resolve = lambda node, f: {"heads": heads, "W": W}.get(getattr(node, "id", None))  # noqa: E731
    nodes = list(ast.walk(ast.parse("np.concatenate(list(heads), axis=-1) @ W.T", mode="eval")))
    assert cause(frame, nodes, resolve, {"B": 2, "h": 3}) is None


# -- the lessons' own checks -------------------------------------------------------------------------------------
def numerical_gradient_rows(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for i in range(x.shape[0]):
        keep = np.copy(x[i])
        x[i] = keep + h
        up = f()
        x[i] = keep - h
        down = f()
        x[i] = keep
        grad[i] = (up - down) / (2 * h)
    return grad


def numerical_gradient_flat(f, x, h=1e-5):
    grad = np.empty(x.size)
    flat = x.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + h
        up = f()
        flat[i] = keep - h
        down = f()
        flat[i] = keep
        grad[i] = (up - down) / (2 * h)
    return grad.reshape(x.shape)


def test_a_loop_over_the_first_axis_of_x_is_named(no_catalog):
    no_catalog("numerical_gradient")
    score, text = feedback(lesson07.check_numerical_gradient, numerical_gradient_rows)
    assert score < 2 and "runs over the first axis of x only" in text, text
    score, text = feedback(lesson07.check_numerical_gradient, numerical_gradient_flat)
    assert score == 2 and "first axis" not in text, text


def merge_by_text(words):
    from collections import Counter
    counts = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    merged = {}
    for word, n in words.items():
        key = tuple(" ".join(word).replace(" ".join(best), "".join(best)).split(" "))
        merged[key] = merged.get(key, 0) + n
    return best, merged


def test_a_merge_by_text_replacement_is_named(no_catalog):
    no_catalog("bpe_merge_step")
    score, text = feedback(lesson06.check_bpe_merge_step, merge_by_text)
    assert score < 3 and "what a text replace of 'x a' by 'xa' makes" in text, text


def test_lesson03_is_untouched_by_the_new_edits():
    """A right causal attention, written with einsum: no finding at all."""
    def causal(x, W_q, W_k, W_v):
        Q, K, V = x @ W_q, x @ W_k, x @ W_v
        s = np.einsum("...id,...jd->...ij", Q, K) / np.sqrt(W_q.shape[-1])
        s = np.where(np.tri(s.shape[-1], dtype=bool), s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w = w / w.sum(-1, keepdims=True)
        return w @ V, w
    score, text = feedback(lesson03.check_causal_self_attention, causal)
    assert "✗" not in text and "Likely cause" not in text, text


# -- found on the fourteenth blind batch, after it was measured ----------------------------------------------
def ref_shift(targets, bos):
    return np.concatenate([np.full(targets.shape[:-1] + (1,), bos), targets[..., :-1]], axis=-1)


def slip_insert_flattens(targets, bos):
    return np.insert(targets, 0, bos)[..., :-1]


def ref_heads(x, h):
    return np.einsum("...thd->...htd", x.reshape(*x.shape[:-1], h, x.shape[-1] // h))


def slip_heads_swapped_from_the_front(x, h):
    return np.swapaxes(x.reshape(*x.shape[:-1], h, x.shape[-1] // h), 0, 1)


TARGETS = [Case("one sequence", (np.array([5, 6, 7, 2]), 1)), Case("a batch", (np.array([[5, 6, 2, 0], [7, 2, 0, 0]]), 1))]
STATES = [Case("(4, 6), 2 heads", (r.normal(size=(4, 6)), 2)), Case("(2, 4, 6), 3 heads", (r.normal(size=(2, 4, 6)), 3))]


@pytest.mark.parametrize("slip,reference,cases,words", [
    (slip_insert_flattens, ref_shift, TARGETS, "axis=-1 given to `np.insert(targets, 0, bos)`"),
    (slip_heads_swapped_from_the_front, ref_heads, STATES, "axes -3, -2 in place of 0, 1"),
], ids=["insert", "swapaxes"])
def test_an_axis_counted_from_the_front_or_left_out_is_given(slip, reference, cases, words):
    found = repair(attempt_for(slip, reference, cases), seconds=10)
    assert found is not None and found.key == "repair:axis" and words in found.diagnosis, found


def cross_entropy_of_log_softmax(logits, targets, pad_id=None):
    p = softmax(logits)
    logp = np.log(p)
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits)
    y = np.eye(logits.shape[-1])[np.where(keep, targets, 0)]
    return float(-np.sum(y * logp * keep[..., None]) / n), (p - y) * keep[..., None] / n


def test_a_log_of_a_softmax_is_named_where_it_gives_inf(no_catalog):
    no_catalog("softmax_cross_entropy")
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_of_log_softmax)
    assert score < 3 and "`np.log(p)` takes the log of probabilities" in text, text
    assert text.count("✗") == 1, text  # the ordinary cases pass: only large logits show it


class KeysFromTheQueries(MultiHeadAttention):
    def __call__(self, query_input, key_value_input=None, mask=None):
        K = query_input @ self.W_k
        if key_value_input is None:
            key_value_input = query_input
        V = key_value_input @ self.W_v

        def heads(t):
            return np.swapaxes(t.reshape(*t.shape[:-1], self.n_heads, -1), -2, -3)
        out, weights = lesson01_attention(heads(query_input @ self.W_q), heads(K), heads(V), mask)
        out = np.swapaxes(out, -2, -3)
        return out.reshape(*out.shape[:-2], -1) @ self.W_o, weights


def test_keys_and_values_from_two_inputs_are_named(no_catalog):
    from encdec.checks import lesson02
    no_catalog("MultiHeadAttention")
    _, text = feedback(lesson02.check_multi_head_attention, KeysFromTheQueries)
    assert "the keys are made from `query_input` (line" in text and "the values from `key_value_input`" in text, text


def merge_skipping_the_last_pair(words):
    counts = {}
    for word, n in words.items():
        for i in range(len(word) - 2):
            counts[word[i], word[i + 1]] = counts.get((word[i], word[i + 1]), 0) + n
    best = max(sorted(counts), key=lambda p: counts[p])
    return best, dict(words)


def test_a_count_that_skips_each_words_last_pair_is_named(no_catalog):
    no_catalog("bpe_merge_step")
    _, text = feedback(lesson06.check_bpe_merge_step, merge_skipping_the_last_pair)
    assert "when each word's last pair is not counted" in text, text


def top_k_by_argsort(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None:
        order = np.argsort(z, axis=-1)
        np.put_along_axis(z, order[..., :-top_k], -np.inf, axis=-1)
    p = np.exp(z - z.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    if top_p is not None:
        order = np.argsort(-p, axis=-1)
        sorted_p = np.take_along_axis(p, order, -1)
        cut = np.cumsum(sorted_p, -1) - sorted_p >= top_p
        np.put_along_axis(p, order, np.where(cut, 0.0, sorted_p), -1)
        p = p / p.sum(-1, keepdims=True)
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, -1) <= u).sum(-1), p.shape[-1] - 1)


def test_top_k_that_drops_a_tie_loses_points():
    from encdec.checks.lesson09 import sampling
    _, text = feedback(sampling.check_sample_next_token, top_k_by_argsort)
    assert "a tie at the k-th largest" in text and "✗" in text, text


def test_the_tracers_matching_keeps_to_its_budget(monkeypatch):
    """A matching whose budget is spent at once says nothing (without its own budget, a trained model's many
    values once held a test cell past its time limit)."""
    from encdec.checks.probes import divergence

    def two_lines(x):
        y = x * 2.0
        return y + 1.0
    att = attempt_for(two_lines, lambda x: x * 3.0 + 1.0, ROWS)
    assert divergence.locate(att, lambda x: x * 3.0 + 1.0) is not None  # the tracer names line 1 in time
    class Spent(divergence.Deadline):
        def passed(self):
            return True
    monkeypatch.setattr(divergence, "Deadline", Spent)
    assert divergence.locate(att, lambda x: x * 3.0 + 1.0) is None


# -- found on the fifteenth blind batch, after it was measured -------------------------------------------------
def shift_right_flattened(targets, bos_id):
    shifted = np.insert(targets, 0, bos_id)
    return shifted[:-1]


def test_an_array_flattened_by_np_insert_is_named_where_two_lines_must_change(no_catalog):
    no_catalog("shift_right")
    _, text = feedback(lesson06.check_shift_right, shift_right_flattened)
    assert "gives np.insert no axis, so it flattens the array first" in text and "`[..., :-1]`" in text, text


def merge_counting_each_pair_once(words):
    counts = {}
    for word, n in words.items():
        for pair in set(zip(word, word[1:])):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    return min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1]))), dict(words)


def test_a_set_of_pairs_is_not_said_to_skip_the_last_pair(no_catalog):
    """On ('a', 'a', 'a'), counting each pair once and skipping the last pair pick the same pair: only the
    first is this answer's slip, so the last-pair words are not said."""
    _, text = feedback(lesson06.check_bpe_merge_step, merge_counting_each_pair_once)
    assert "✗" in text and "last pair is not counted" not in text, text


def test_parameters_read_twice_from_one_generator_are_named():
    def make_optimizer(model, lr, weight_decay, betas):
        params = model.parameters()
        decayed = [p for p in params if p.ndim >= 2]
        kept = [p for p in params if p.ndim < 2]
        return torch.optim.AdamW([{"params": decayed, "weight_decay": weight_decay},
                                  {"params": kept, "weight_decay": 0.0}], lr=lr, betas=betas)
    from encdec.checks import lesson10
    exercise = next(e for e in lesson10.EXERCISES if e.number == "10.3")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exercise.checker(make_optimizer, hidden=True)
    assert "model.parameters() is a generator" in out.getvalue(), out.getvalue()


def ref_count(d):
    return 4 * d * d + d


def slip_xor_for_power(d):
    return 4 * d ^ 2 + d


def ref_hidden(a, b):
    return np.where(np.logical_or(a, b), -np.inf, 0.0)


def slip_and_for_or(a, b):
    return np.where(a & b, -np.inf, 0.0)


BOOLS = [Case("(3, 4)", (r.random((3, 4)) < 0.5, r.random((3, 4)) < 0.5)),
         Case("(2, 5)", (r.random((2, 5)) < 0.5, r.random((2, 5)) < 0.5))]


@pytest.mark.parametrize("slip,reference,cases,words", [
    (slip_xor_for_power, ref_count, [Case("d=8", (8,)), Case("d=16", (16,))], "`4 * d ** 2 + d` in place of"),
    (slip_and_for_or, ref_hidden, BOOLS, "`|` in place of `&`"),
], ids=["xor", "and"])
def test_pythons_own_operators_misread_are_mended(slip, reference, cases, words):
    found = repair(attempt_for(slip, reference, cases), seconds=10)
    assert found is not None and found.key == "repair:operator" and words in found.diagnosis, found


def cross_attention_softmax_in_the_if(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
        weights = softmax(scores, axis=-1)
    return weights @ V, weights


def test_a_name_assigned_only_in_a_branch_that_did_not_run_is_named(no_catalog, monkeypatch):
    monkeypatch.setattr(judging, "REPAIR", _Silent())  # the repair could move the line; this reads the error
    no_catalog("cross_attention")
    _, text = feedback(lesson04.check_cross_attention, cross_attention_softmax_in_the_if)
    assert "`weights` is assigned only inside `if mask is not None:`" in text, text
