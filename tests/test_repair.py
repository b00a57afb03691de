"""The repair probe (encdec.checks.probes.repair): the one edit of the answer's own code that makes it right on
every case of the part, named with its line. Each kind of edit is proven on a slip written as a student would
write it, against a reference written another way; two slips, a right answer and an answer no single edit
mends give nothing; a copy that loops forever is stopped within the budget. Then the error probes of
failed_lines.py, each on its own (the repair switched off), and both inside the real checkers with the
catalog emptied."""

import contextlib
import io
import time

import numpy as np
import pytest

from encdec.checks import lesson01, lesson02, lesson03, probes
from encdec.checks.core import Attempt, Case, run_student
from encdec.checks.probes import judging
from encdec.checks.probes import repair as repair_module
from encdec.checks.probes.repair import repair


def attempt_for(student, reference, cases):
    first, *others = cases
    outcome = run_student(student, first.args, first.kwargs)
    return Attempt("answer", first, got=outcome.value, expected=reference(*first.args, **first.kwargs),
                   error=outcome.error, student=student, reference=reference, others=tuple(others))


r = np.random.default_rng(3)
X2 = [Case("a (3, 5) matrix", (r.normal(size=(3, 5)),)), Case("a (2, 4, 6) batch", (r.normal(size=(2, 4, 6)),))]


# -- references, written once ---------------------------------------------------------------------------------
def ref_softmax(x):
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def ref_warmup(step, warmup):
    return 0.1 * min(1.0, step / warmup)


def ref_lengths(tokens):
    return np.ones(tokens.shape[:-1]) * tokens.shape[-1]


def ref_top2(x):
    return np.sort(x, axis=-1)[..., ::-1][..., :2]


def ref_gram(x):
    return np.matmul(x, np.swapaxes(x, -1, -2))


# -- slips, one edit away ---------------------------------------------------------------------------------------
def slip_floor(step, warmup):
    return 0.1 * min(1.0, step // warmup)


def slip_axis(x):
    z = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return z / np.sum(z, axis=0, keepdims=True)


def slip_keepdims(x):
    z = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return z / np.sum(z, axis=-1)


def slip_len(tokens):
    n = len(tokens)
    return np.full(tokens.shape[:-1], float(n))


def slip_ascending(x):
    order = np.argsort(x, axis=-1)
    return np.take_along_axis(x, order, axis=-1)[..., :2]


def slip_transpose(x):
    return x @ x.T


def ref_centred(x):
    return x - x.mean(axis=-1, keepdims=True)


def slip_sign(x):
    return x + np.mean(x, axis=-1, keepdims=True)


def slip_order(x):
    m = np.max(x, axis=-1, keepdims=True)
    z = np.exp(x - m)
    z = z / total  # noqa: F821 - used before it is made, one line too early
    total = np.sum(z, axis=-1, keepdims=True)
    return z


def ref_norm(x):
    return np.sqrt(np.sum(x ** 2, axis=-1))


def slip_loop(x):
    total = np.zeros(x.shape[:-1])
    for k in range(x.shape[-1]):
        total = total + x[..., k] ** 2
        total = np.sqrt(total)
    return total


def slip_step_twice(x):
    c = x - np.mean(x, axis=-1, keepdims=True)
    c = c / np.std(x, axis=-1, keepdims=True)  # a step of another formula (a layer norm's)
    return c


def slip_variable(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    z = np.exp(x)
    return np.exp(shifted) / np.sum(z, axis=-1, keepdims=True)


def ref_scaled(x, eps=1e-6):
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps)


def slip_eps_written_in(x, eps=1e-6):
    ms = (x * x).mean(-1)[..., None]
    return x / (ms + 1e-5) ** 0.5


def ref_softmax_axis(x, axis=-1):
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def slip_axis_written_in(x, axis=-1):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def ref_masked(scores, mask):
    return ref_softmax(scores + mask)


def slip_mask_product(scores, mask):
    s = np.where(np.isinf(mask), -1e30, scores * mask)  # the mask multiplied (nan-free, so no symptom hides it)
    return ref_softmax(s)


def ref_decay(step, d_model):
    return d_model ** -0.5 * np.power(step, -1.5)


def slip_exponent_unparenthesised(step, d_model):
    return d_model ** -0.5 * step ** -3 / 2  # meant step ** (-3 / 2)


def ref_gelu_like(x):
    return 0.5 * x * (1.0 + np.tanh(0.8 * x))


def slip_gelu_parentheses(x):
    return 0.5 * x * 1.0 + np.tanh(0.8 * x)  # the `(1 + tanh)` lost its parentheses


def ref_running_sum(x):
    return np.cumsum(x, axis=-2)


def slip_loop_over_first_axis(x):
    rows, total = [], np.zeros(x[..., 0, :].shape)
    for t in range(x.shape[0]):  # the positions are axis -2, the batch is axis 0
        total = total + x[..., t, :]
        rows.append(total)
    return np.stack(rows, axis=-2)


def ref_weights(d_model):
    return 4 * d_model ** 2 + 4 * d_model


def slip_doubled_not_squared(d_model):
    matrices = 4 * d_model * 2
    return matrices + 4 * d_model


def _rms(x, g):
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + 1e-6) * g


def ref_post_norm(x, g):
    return _rms(x + np.tanh(x), g)


def slip_normed_before_and_after(x, g):
    return _rms(x + np.tanh(_rms(x, g)), g)  # a pre-norm's input left in a post-norm sublayer


def ref_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def slip_root_over_everything(x):
    inner = np.sqrt(2 / np.pi * (x + 0.044715 * x ** 3))  # the root closes after the whole argument
    return 0.5 * x * (1 + np.tanh(inner))


def ref_masked_mean(x, pad_id=None):
    keep = np.ones(x.shape, dtype=bool) if pad_id is None else x != pad_id
    return (x * keep).sum(axis=-1) / keep.sum(axis=-1)


def slip_pad_zero_taken_for_none(x, pad_id=None):
    keep = x != pad_id if pad_id else np.ones(x.shape, dtype=bool)  # a pad id of 0 is false
    return (x * keep).sum(axis=-1) / keep.sum(axis=-1)


def _mix(x, memory=None, mask=None):
    memory = x if memory is None else memory
    out = x @ memory.swapaxes(-1, -2)
    return out if mask is None else out + mask


def ref_mixed(x, mask):
    return _mix(x, mask=mask)


def slip_mask_by_position(x, mask):
    return _mix(x, mask)  # lands in `memory`


PADDED = [Case("pad id 0", (np.array([[3.0, 1.0, 0.0], [2.0, 0.0, 0.0]]), 0)),
          Case("pad id 2", (np.array([[3.0, 1.0, 2.0], [2.0, 4.0, 2.0]]), 2))]
MIXED = [Case("(3, 4) with a mask", (r.normal(size=(3, 4)), np.triu(np.full((3, 3), -1e9), 1))),
         Case("(2, 3, 4) with a mask", (r.normal(size=(2, 3, 4)), np.zeros((3, 3))))]
def ref_running_sum_pairs(x, y):
    return np.cumsum(x, axis=-2), np.cumsum(y, axis=-2)


def slip_stacked_steps(x, y):
    xs, ys, sx, sy = [], [], 0, 0
    for t in range(x.shape[-2]):
        sx, sy = sx + x[..., t:t + 1, :], sy + y[..., t:t + 1, :]
        xs.append(sx)
        ys.append(sy)
    return np.stack(xs, axis=-2), np.stack(ys, axis=-2)  # each step already has its axis of size 1


def slip_loop_over_len(x, y):
    xs, ys, sx, sy = [], [], 0, 0
    for t in range(len(x)):  # the batch's size, not the positions'
        sx, sy = sx + x[..., t:t + 1, :], sy + y[..., t:t + 1, :]
        xs.append(sx)
        ys.append(sy)
    return np.concatenate(xs, axis=-2), np.concatenate(ys, axis=-2)


def _sublayer(h, w):
    return np.tanh(h @ w)


def ref_two_residuals(x, w):
    y = x + _sublayer(_rms(x, 1.0), w)
    return y + _sublayer(_rms(y, 1.0), w.T)


def slip_second_residual_left_out(x, w):
    h = _rms(x, 1.0)
    x = x + _sublayer(h, w)
    x = _sublayer(_rms(x, 1.0), w.T)  # the stream replaced
    return x


def ref_stack_then_norm(x, w):
    for k in range(3):
        x = x + _sublayer(x, w * (k + 1))
    return _rms(x, 1.0)


def slip_norm_in_every_pass(x, w):
    for k in range(3):
        x = _rms(x + _sublayer(x, w * (k + 1)), 1.0)
    return x


def ref_add_row_mask(scores, mask):
    return scores + mask


def slip_row_mask_axis_again(scores, mask):
    return scores + mask[..., None, :]  # mask is already (..., 1, n)


def ref_attend_sizes(q_in, kv_in):
    return (q_in @ kv_in.swapaxes(-1, -2)).sum(-1)


def _scores(query_input, key_value_input):
    return query_input @ key_value_input.swapaxes(-1, -2)


def slip_call_arguments_exchanged(q_in, kv_in):
    return _scores(kv_in, np.asarray(q_in)).sum(-1)


def ref_softmax_any_axis(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def slip_reduced_axis_put_at_the_end(x, axis=-1):
    row_max = np.max(x, axis=axis)[..., np.newaxis]  # right only when axis is the last
    exps = np.exp(x - row_max)
    return exps / np.sum(exps, axis=axis)[..., None]


def _norm_rows(x, g):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * g


def ref_post_norm_pair(x, w):
    x = _norm_rows(x + np.tanh(x @ w), 1.0)
    return _norm_rows(x + np.tanh(x @ w.T), 1.0)


def slip_norm_before_each_sublayer_too(x, w):
    x = _norm_rows(x + _sublayer(_norm_rows(x, 1.0), w), 1.0)  # pre-norm and post-norm at once
    a = _sublayer(_norm_rows(x, 1.0), w.T)
    return _norm_rows(x + a, 1.0)


def slip_residuals_left_out(x, w):
    a = np.tanh(x @ w)
    x = _norm_rows(a, 1.0)
    b = np.tanh(x @ w.T)
    x = _norm_rows(b, 1.0)
    return x


class _Gains:
    def __init__(self, d):
        self.g1, self.g2, self.g3 = np.linspace(0.5, 1.5, d), np.linspace(2.0, 1.0, d), np.linspace(0.2, 0.9, d)


def ref_three_gains(x, gains):
    return _norm_rows(x, gains.g1) + _norm_rows(x, gains.g2) * _norm_rows(x, gains.g3)


def slip_gain_of_another_step(x, gains):
    return _norm_rows(x, gains.g1) + _norm_rows(x, gains.g2) * _norm_rows(x, gains.g2)


def ref_prefix_sums(x):
    return np.cumsum(x, axis=-2)


def slip_steps_from_the_batch_axis(x):
    steps = x.shape[0]  # the batch's size, not the positions'
    return np.concatenate([x[..., :t + 1, :].sum(-2, keepdims=True) for t in range(steps)], axis=-2)


SQUARE = [Case("(3, 4) with (4, 4)", (r.normal(size=(3, 4)), r.normal(size=(4, 4)))),
          Case("(2, 5, 3) with (3, 3)", (r.normal(size=(2, 5, 3)), r.normal(size=(3, 3))))]
ROW_MASKS = [Case("(2, 3, 5) and a (2, 1, 5) mask", (r.normal(size=(2, 3, 5)), np.where(r.random((2, 1, 5)) < 0.3, -1e9, 0.0))),
             Case("(3, 2, 4, 6) and (3, 1, 1, 6)", (r.normal(size=(3, 2, 4, 6)), np.where(r.random((3, 1, 1, 6)) < 0.3, -1e9, 0.0)))]
CROSS = [Case("m=3, n=5", (r.normal(size=(3, 4)), r.normal(size=(5, 4)))),
         Case("a batch, m=2, n=6", (r.normal(size=(2, 2, 4)), r.normal(size=(2, 6, 4))))]


PAIRS = [Case("(2, 5, 3) twice", (r.normal(size=(2, 5, 3)), r.normal(size=(2, 5, 4)))),
         Case("(3, 4, 2) twice", (r.normal(size=(3, 4, 2)), r.normal(size=(3, 4, 2))))]
GAINED = [Case("(3, 4) and a gain", (r.normal(size=(3, 4)), r.normal(size=4))),
          Case("(2, 3, 5) and a gain", (r.normal(size=(2, 3, 5)), r.normal(size=5)))]
WIDTHS = [Case("d_model 8", (8,)), Case("d_model 16", (16,))]
DECAY = [Case("step 3, d_model 16", (3.0, 16)), Case("step 40, d_model 64", (40.0, 64))]
BATCHED = [Case("a (2, 5, 3) batch", (r.normal(size=(2, 5, 3)),)),
           Case("a (3, 4, 2) batch", (r.normal(size=(3, 4, 2)),))]
SCHEDULE = [Case("step 3 of 10", (3, 10)), Case("step 10 of 10", (10, 10)), Case("step 7 of 4", (7, 4))]
EPS = [Case("eps=0.5", (r.normal(size=(3, 4)),), {"eps": 0.5}), Case("eps=2", (r.normal(size=(2, 5)),), {"eps": 2.0})]
AXES = [Case("axis=0", (r.normal(size=(4, 3)),), {"axis": 0}), Case("default axis", (r.normal(size=(2, 3)),)),
        Case("axis=-2 of a batch", (r.normal(size=(2, 3, 5)),), {"axis": -2})]
MASKED = [Case("a causal mask", (r.normal(size=(4, 4)), np.triu(np.full((4, 4), -np.inf), 1))),
          Case("a padding mask", (r.normal(size=(3, 5)), np.array([0.0, 0.0, 0.0, -np.inf, -np.inf])))]
TOKENS = [Case("a batch (2, 5)", (np.ones((2, 5)),)), Case("(3, 2, 7)", (np.ones((3, 2, 7)),))]


@pytest.mark.parametrize("slip,reference,cases,kind,words", [
    (slip_floor, ref_warmup, SCHEDULE, "integer_division", "`/` in place of `//`"),
    (slip_axis, ref_softmax, X2, "axis", "axis=-1 in place of axis=0"),
    (slip_keepdims, ref_softmax, X2, "keepdims", "keepdims=True added"),
    (slip_len, ref_lengths, TOKENS, "length", "`tokens.shape[-1]` in place of `len(tokens)`"),
    (slip_ascending, ref_top2, X2, "order", "the largest first"),
    (slip_transpose, ref_gram, X2[1:] + [Case("(2, 3, 3, 4)", (r.normal(size=(2, 3, 3, 4)),))], "transpose",
     "`x.swapaxes(-1, -2)` in place of `x.T`"),
    (slip_sign, ref_centred, X2, "operator", "`-` in place of `+`"),
    (slip_step_twice, ref_centred, X2, "extra_step", "left out"),
    (slip_order, ref_softmax, X2, "order", "before line"),
    (slip_loop, ref_norm, X2, "loop", "`total = np.sqrt(total)` after the loop, once"),
    (slip_variable, ref_softmax, X2, "variable", "`shifted` in place of `x`"),
    (slip_eps_written_in, ref_scaled, EPS, "argument", "`eps` in place of the number `1e-05`"),
    (slip_axis_written_in, ref_softmax_axis, AXES, "argument", "`axis` in place of `-1`"),
    (slip_mask_product, ref_masked, MASKED, "operator", "`+` in place of `*` in `scores * mask`"),
    (slip_exponent_unparenthesised, ref_decay, DECAY, "parentheses", "`step ** (-3 / 2)` in place of `step ** (-3) / 2`"),
    (slip_gelu_parentheses, ref_gelu_like, X2, "parentheses", "`0.5 * x * (1.0 + np.tanh(0.8 * x))` in place of `0.5 * x * 1.0 + np.tanh(0.8 * x)`"),
    (slip_loop_over_first_axis, ref_running_sum, BATCHED, "axis", "`x.shape[-2]` in place of `x.shape[0]`"),
    (slip_doubled_not_squared, ref_weights, WIDTHS, "operator", "`4 * d_model ** 2` in place of `4 * d_model * 2`"),
    (slip_normed_before_and_after, ref_post_norm, GAINED, "extra_call", "`x` in place of `_rms(x, g)`"),
    (slip_pad_zero_taken_for_none, ref_masked_mean, PADDED, "condition", "`pad_id is not None` in place of `pad_id`"),
    (slip_mask_by_position, ref_mixed, MIXED, "arguments", "`mask=mask` in place of `mask` given by position"),
    (slip_stacked_steps, ref_running_sum_pairs, PAIRS, "join", "`np.concatenate` in place of `np.stack` (each one)"),
    (slip_loop_over_len, ref_running_sum_pairs, PAIRS, "length", "`x.shape[-2]` in place of `len(x)`"),
    (slip_root_over_everything, ref_gelu_tanh, X2, "parentheses",
     "`np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)` in place of `np.sqrt(2 / np.pi * (x + 0.044715 * x ** 3))`"),
    (slip_second_residual_left_out, ref_two_residuals, SQUARE, "residual",
     "`x = x + _sublayer(_rms(x, 1.0), w.T)`"),
    (slip_norm_in_every_pass, ref_stack_then_norm, SQUARE, "loop", "once, after the loop"),
    (slip_row_mask_axis_again, ref_add_row_mask, ROW_MASKS, "new_axis", "`mask[..., None, :]` without its `None`"),
    (slip_call_arguments_exchanged, ref_attend_sizes, CROSS, "arguments", "exchanged in `_scores(kv_in,"),
    (slip_reduced_axis_put_at_the_end, ref_softmax_any_axis, AXES, "keepdims", "keepdims=True in place of `[..., None]`"),
    (slip_norm_before_each_sublayer_too, ref_post_norm_pair, SQUARE, "extra_call", "around each sublayer's input"),
    (slip_residuals_left_out, ref_post_norm_pair, SQUARE, "residual", "before its norm"),
    (slip_gain_of_another_step, ref_three_gains, [Case("(3, 4)", (r.normal(size=(3, 4)), _Gains(4))),
                                                 Case("(2, 3, 4)", (r.normal(size=(2, 3, 4)), _Gains(4)))],
     "attribute", "`gains.g3` in place of `gains.g2`"),
    (slip_steps_from_the_batch_axis, ref_prefix_sums, [Case("(4, 5, 3)", (r.normal(size=(4, 5, 3)),)),
                                                      Case("(2, 6, 2)", (r.normal(size=(2, 6, 2)),))],
     "axis", "`x.shape[-2]` in place of `x.shape[0]`"),
], ids=["floor", "axis", "keepdims", "len", "ascending", "transpose", "sign", "step-twice", "swapped-lines",
                       "loop", "variable", "number-for-argument", "axis-for-argument", "product-for-sum",
                       "parentheses-left-out", "parentheses-lost", "shape-axis", "double-for-square", "call-with-settings", "pad-zero-is-false", "mask-by-position",
                       "stack-for-concatenate", "len-of-the-looped-axis", "call-too-wide", "residual-left-out",
                       "norm-in-every-pass", "new-axis-again", "computed-arguments-exchanged", "reduced-axis-at-the-end",
                       "norm-before-each-sublayer", "residuals-left-out", "gain-of-another-step",
                       "steps-kept-in-a-variable"])
def test_one_edit_names_the_line_and_the_change(slip, reference, cases, kind, words):
    found = repair(attempt_for(slip, reference, cases), seconds=5)
    assert found is not None, slip.__name__
    assert words in found.diagnosis, found.diagnosis
    if found.key != f"repair:{kind}" or found.diagnosis.startswith("Either"):  # another change mends it too:
        assert found.diagnosis.startswith("Either of two single changes"), found.diagnosis  # both are said
    else:
        assert "On line " in found.diagnosis and "that one change is the fix" in found.diagnosis


def test_an_edit_must_mend_every_case_of_the_part():
    """`//` mends step 10 of 10 alone (1 // 1): a part where nothing mends every case names nothing."""
    def two_slips(step, warmup):
        return 0.2 * min(1.0, step // warmup)
    assert repair(attempt_for(two_slips, ref_warmup, SCHEDULE), seconds=5) is None


def test_nothing_to_repair_in_a_right_answer_written_another_way():
    def mine(x):
        e = np.exp(x - x.max(-1)[..., None])
        return e / e.sum(-1)[..., None]
    assert repair(attempt_for(mine, ref_softmax, X2), seconds=5) is None


def test_a_copy_that_loops_forever_is_stopped_within_the_budget():
    def counted(step, warmup):
        i = 0
        while i < step:
            i += 1
        return 0.1 * min(1.0, i // warmup)  # fixed by `/`; an edit of `i += 1` loops forever
    start = time.thread_time()  # the budget counts this thread's CPU time (checks/clock.py), whatever else runs
    found = repair(attempt_for(counted, ref_warmup, SCHEDULE), seconds=0.5)
    assert time.thread_time() - start < 2.0
    assert found is None or found.key == "repair:integer_division"


# -- inside the checkers, the catalog emptied ---------------------------------------------------------------------
@pytest.fixture(autouse=True)
def time_enough(monkeypatch):
    """What these tests prove is what the repair finds, not how fast: on a loaded machine the checkers' own
    budgets (about a second a check) may run out first, so here they are generous."""
    from encdec.checks import core
    from encdec.checks.lesson09 import behind_the_ban
    from encdec.checks.lesson10 import torch_checker
    monkeypatch.setattr(core.Checker, "REPAIR_SECONDS", 30.0)
    monkeypatch.setattr(core.Checker, "TRACE_SECONDS", 30.0)
    monkeypatch.setattr(behind_the_ban, "REPAIR_SECONDS", 30.0)
    monkeypatch.setattr(torch_checker, "OBSERVED_REPAIR_SECONDS", 30.0)
    monkeypatch.setattr(repair_module, "BUDGET_SECONDS", 30.0)


@pytest.fixture
def no_catalog(monkeypatch):
    from encdec.mistakes import CATALOG

    def empty(*names):
        for name in names:
            monkeypatch.setitem(CATALOG.entries, name, [])
    return empty


def feedback(checker, answer):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = checker(answer, hidden=True)
    return float(score), out.getvalue()


def decoder_mask(tgt_in, pad_id):
    from encdec.attention import create_causal_mask, padding_mask
    m = len(tgt_in)
    return create_causal_mask(m) + padding_mask(tgt_in, pad_id)


def padding_mask_2d(tokens, pad_id=0):
    mask = np.where(tokens == pad_id, -np.inf, 0.0)
    return mask[:, None, None, :]


def sinusoidal_odd(n, d):
    pos = np.arange(n)[:, None]
    angles = pos / (10000 ** (np.arange(0, d, 2)[None, :] / d))
    PE = np.zeros((n, d))
    PE[:, 0::2] = np.sin(angles)
    PE[:, 1::2] = np.cos(angles)
    return PE


def test_the_checker_names_the_edit(no_catalog):
    no_catalog("decoder_mask", "padding_mask")
    score, text = feedback(lesson03.check_decoder_mask, decoder_mask)
    assert score < 2 and "`tgt_in.shape[-1]` in place of `len(tgt_in)`" in text, text
    score, text = feedback(lesson02.check_padding_mask, padding_mask_2d)
    assert score < 2 and "`mask[..., None, None, :]` in place of `mask[:, None, None, :]`" in text, text


class _Silent(probes.Probe):
    def find(self, attempt, probes):
        return None


def test_the_failed_line_probes_on_their_own(no_catalog, monkeypatch):
    """With the repair switched off: the index, the slice, the None and the tuple are each explained."""
    monkeypatch.setattr(judging, "REPAIR", _Silent())
    no_catalog("padding_mask", "sinusoidal_positions", "cross_attention")
    _, text = feedback(lesson02.check_padding_mask, padding_mask_2d)
    assert "`mask[:, None, None, :]` indexes 2 axes, but `mask` has shape (6,)" in text, text
    _, text = feedback(lesson01.check_sinusoidal_positions, sinusoidal_odd)
    assert "Along axis 1 (size 7, odd), `1::2` takes 3 entries" in text, text

    from encdec.checks import lesson04

    def cross_attention(Q, K, V, mask=None):
        from encdec.attention import softmax
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        weights = softmax(scores + mask, axis=-1)
        return weights @ V, weights
    _, text = feedback(lesson04.check_cross_attention, cross_attention)
    assert "`mask` is None here" in text and "if mask is not None" in text, text

    def decoder_mask_grown_in_place(tgt_in, pad_id):
        from encdec.attention import create_causal_mask, padding_mask
        combined = padding_mask(tgt_in, pad_id)
        combined += create_causal_mask(tgt_in.shape[-1])  # (..., 1, 1, m) cannot take (m, m)
        return combined
    no_catalog("decoder_mask")
    _, text = feedback(lesson03.check_decoder_mask, decoder_mask_grown_in_place)
    assert "writes its result into `combined` itself" in text and "`combined = combined + create_causal_mask(" in text, \
        text


def test_a_tuple_used_as_an_array_is_named():
    def decode_step(x, W):
        x = (x @ W, np.ones(3))  # a layer that returns (output, weights), kept whole
        return x @ W, None

    def reference(x, W):
        return x @ W @ W, None
    cases = [Case("(3, 4)", (r.normal(size=(3, 4)), r.normal(size=(4, 4))))]
    attempt = attempt_for(decode_step, reference, cases)
    from encdec.checks.probes.failed_lines import TupleOperand
    found = TupleOperand().find(attempt, None)
    assert found is not None and "`x` is a tuple of 2 arrays (shapes (3, 4) and (3,))" in found.diagnosis


def test_pieces_joined_along_the_wrong_axis():
    from encdec.checks.probes import explain_shape
    said = explain_shape((6, 1, 5), (2, 3, 5))
    assert "laid out along axis 0" in said and "belong along axis 1" in said
    assert "joined" not in explain_shape((3, 5), (5, 3))  # a transpose is told as such


# -- a second slip behind a missing ban (9.1) ----------------------------------------------------------------------
def greedy_no_ban_eos_overwritten(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    H_enc, src_mask = model.encode(src2)
    tgt = np.full((src2.shape[0], 1), bos_id, dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        nxt = model.decode(tgt, H_enc, src_mask)[:, -1].argmax(-1)
        done |= nxt == eos_id
        nxt = np.where(done, model.config.pad_id, nxt)
        tgt = np.concatenate([tgt, nxt[:, None]], axis=1)
        if done.all():
            break
    return tgt[0, 1:] if single else tgt[:, 1:]


def greedy_no_ban_only(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    H_enc, src_mask = model.encode(src2)
    tgt = np.full((src2.shape[0], 1), bos_id, dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        nxt = model.decode(tgt, H_enc, src_mask)[:, -1].argmax(-1)
        nxt = np.where(done, model.config.pad_id, nxt)
        done |= nxt == eos_id
        tgt = np.concatenate([tgt, nxt[:, None]], axis=1)
        if done.all():
            break
    return tgt[0, 1:] if single else tgt[:, 1:]


def test_a_second_slip_behind_a_missing_ban_is_named_in_a_note():
    from encdec.checks import lesson09
    score, text = feedback(lesson09.check_greedy_decode, greedy_no_ban_eos_overwritten)
    assert score < 3
    assert "note: behind that, a second slip" in text, text
    assert "run in the other order" in text or "EOS is itself replaced by the pad id" in text, text
    score, text = feedback(lesson09.check_greedy_decode, greedy_no_ban_only)
    assert score < 3 and "banned" in text
    assert "second slip" not in text, text  # nothing else is wrong: no second note


def test_a_copy_cannot_take_the_machines_memory():
    """Inside a copy's run, what the process may allocate is capped (a copy that builds something huge fails
    with a MemoryError, which counts as that copy being wrong); the cap is lifted after."""
    from encdec.checks.probes.copies import _memory_capped
    with _memory_capped():
        with pytest.raises(MemoryError):
            np.ones(2 ** 30)  # 8 GiB
    assert np.ones(2 ** 27).sum() == 2 ** 27  # 1 GiB, after: the cap is gone


# -- Lesson 10: through a checker's wrapper (10.2) and through parts decided by observing the run (10.5) ----------
def test_lesson10_repairs_through_a_wrapper_and_through_observed_parts(no_catalog):
    pytest.importorskip("torch")
    from encdec.checks import lesson10
    no_catalog("lr_at", "exact_match")

    def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr):
        import math
        if step <= warmup_steps:
            return peak_lr * (step // warmup_steps)
        if step >= total_steps:
            return min_lr
        progress = (step - warmup_steps) / (total_steps - warmup_steps)
        return min_lr + (peak_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))
    score, text = feedback(lesson10.check_lr_at, lr_at)
    assert score < 2 and "`/` in place of `//`" in text, text

    def exact_match(model, src, tgt, bos_id, eos_id, max_len):
        import torch
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                pred = model.greedy_decode(src, bos_id, eos_id, max_len)
        finally:
            model.train(was_training)
        pad = model.config.pad_id
        width = max(pred.shape[1], tgt.shape[1])
        pred = torch.nn.functional.pad(pred, (0, width - pred.shape[1]), value=pad)
        target = torch.nn.functional.pad(tgt, (0, width - tgt.shape[1]), value=pad)
        is_eos = target == eos_id
        compared = ((is_eos.cumsum(dim=1) - is_eos.long()) == 0) & (target != pad)
        return ((pred == target) | ~compared).any(dim=1).double().mean().item()
    score, text = feedback(lesson10.check_exact_match, exact_match)
    assert score < 2 and "`((pred == target) | ~compared).all` in place of" in text, text


def softmax_max_without_keepdims(x, axis=-1):
    m = np.max(x, axis=axis)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def test_a_fix_that_mends_only_its_own_part_is_withdrawn(no_catalog):
    """Leaving out `- m` also mends the first part's ordinary scores, but not the large logits of a later
    part: once every part has run, that fix is withdrawn and only keepdims on the max is said."""
    no_catalog("softmax")
    score, text = feedback(lesson01.check_softmax, softmax_max_without_keepdims)
    assert score < 3
    assert "keepdims=True added to `np.max(x, axis=axis)`" in text, text
    assert "in place of `x - m`" not in text and "Either of two" not in text, text


def greedy_eos_overwritten(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    H_enc, src_mask = model.encode(src2)
    tgt = np.full((src2.shape[0], 1), bos_id, dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = np.array(model.decode(tgt, H_enc, src_mask)[:, -1])
        logits[:, [bos_id, model.config.pad_id]] = -np.inf
        nxt = logits.argmax(-1)
        done |= nxt == eos_id
        nxt = np.where(done, model.config.pad_id, nxt)
        tgt = np.concatenate([tgt, nxt[:, None]], axis=1)
        if done.all():
            break
    return tgt[0, 1:] if single else tgt[:, 1:]


def test_an_eos_overwritten_by_the_pad_is_named_as_such():
    """Not as a pad chosen by the model: the row's own EOS was replaced (done set before the pad is written)."""
    from encdec.checks import lesson09
    score, text = feedback(lesson09.check_greedy_decode, greedy_eos_overwritten)
    assert score < 3 and "EOS is itself replaced by the pad id" in text, text
    assert "is chosen as a generated token" not in text, text


# -- what the returned value alone says (probes/results.py) --------------------------------------------------
def ref_grads(x):
    return np.sin(x), np.cos(x), 2 * x


def test_results_in_another_order_are_named():
    from encdec.checks.probes.results import Reordered

    def swapped(x):
        return np.sin(x), 2 * x, np.cos(x)
    at = attempt_for(swapped, ref_grads, X2)
    at = Attempt(at.exercise, at.case, got=at.got, expected=at.expected, names=("dQ", "dK", "dV"))
    found = Reordered().find(at, None)
    assert found is not None and "returns (dQ, dV, dK)" in found.diagnosis and "(dQ, dK, dV)" in found.diagnosis
    right = Attempt("answer", X2[0], got=ref_grads(*X2[0].args), expected=ref_grads(*X2[0].args))
    assert Reordered().find(right, None) is None


def test_the_right_numbers_in_another_shape_are_named():
    from encdec.checks.probes.results import Reshaped

    def flat(x):
        return np.cos(x).ravel()
    found = Reshaped().find(attempt_for(flat, np.cos, X2), None)
    assert found is not None and "flat" in found.diagnosis and "(3, 5)" in found.diagnosis

    def transposed(x):  # the right numbers in the right shape's transpose: not a reshape, not named so
        return np.cos(x).swapaxes(-1, -2)
    assert Reshaped().find(attempt_for(transposed, np.cos, X2), None) is None


def test_an_integer_array_is_named_with_how_it_rounds():
    from encdec.checks.probes.results import Truncated

    def int_table(x):
        out = np.zeros(x.shape, dtype=int)
        out[...] = np.sin(x)
        return out
    found = Truncated().find(attempt_for(int_table, np.sin, X2), None)
    assert found is not None and "toward zero" in found.diagnosis and "integer array (int64)" in found.diagnosis

    def ids(x):  # an integer result where the answer is integer too: nothing to say
        return np.argmax(x, axis=-1)
    assert Truncated().find(attempt_for(ids, lambda x: np.argmax(x, axis=-1), X2), None) is None


def test_the_right_array_reduced_over_an_axis_is_named():
    from encdec.checks.probes.results import Reduced

    def best_ids(x):  # the argmax where the scores themselves belong
        return np.argmax(np.cos(x), axis=-1)
    found = Reduced().find(attempt_for(best_ids, np.cos, X2), None)
    assert found is not None and found.key == "probe:result:reduced:argmax" and "axis -1" in found.diagnosis
    assert found.weak  # what the result is, not where: an edit the repair finds comes first (judging.py)

    def averaged(x):  # averaged over the batch's first axis
        return np.cos(x).mean(axis=-3)
    found = Reduced().find(attempt_for(averaged, np.cos, X2[1:]), None)
    assert found is not None and found.key == "probe:result:reduced:mean" and "axis -3" in found.diagnosis

    def other_numbers(x):  # one axis fewer, numbers of no reduction of the answer: nothing to say
        return np.sin(x)[..., 0]
    assert Reduced().find(attempt_for(other_numbers, np.cos, X2), None) is None

    def summed(x):  # a vector summed to a number: too common a coincidence of a sum over the wrong axis
        return np.cos(x).sum()
    assert Reduced().find(attempt_for(summed, np.cos, [Case("a vector", (r.normal(size=5),))]), None) is None


def test_an_edit_the_repair_finds_comes_before_a_weak_result_finding(monkeypatch):
    """A weak finding of the returned value (the right array reduced) says what, not where: the repair's edit,
    when there is one, is said instead; without one, the weak finding is."""
    from encdec.checks.probes import Finding
    from encdec.checks.probes.results import Reduced

    class Found(probes.Probe):
        def __init__(self, finding):
            self.found = finding

        def find(self, attempt, probes):
            return self.found

    def best_ids(x):
        return np.argmax(np.cos(x), axis=-1)
    attempt = attempt_for(best_ids, np.cos, X2)
    monkeypatch.setattr(judging, "RESULT_PROBES", [Reduced()])
    monkeypatch.setattr(judging, "REPAIR", Found(Finding("answer", "repair:extra_call", "the edit")))
    assert judging.find_slip(None, attempt).key == "repair:extra_call"
    monkeypatch.setattr(judging, "REPAIR", Found(None))
    assert judging.find_slip(None, attempt).key == "probe:result:reduced:argmax"


def test_the_checkers_name_what_the_result_says(no_catalog):
    from encdec.checks import lesson07
    no_catalog("attention_backward", "numerical_gradient", "sinusoidal_positions")

    def attention_backward(dout, Q, K, V, weights):
        dQ, dK, dV = _attention_grads(dout, Q, K, V, weights)
        return dQ, dV, dK
    _, text = feedback(lesson07.check_attention_backward, attention_backward)
    assert "returns (dQ, dV, dK)" in text, text

    def numerical_gradient(f, x, h=1e-5):
        g = np.zeros(x.size)
        flat = x.reshape(-1)
        for i in range(x.size):
            keep = flat[i]
            flat[i] = keep + h
            up = f()
            flat[i] = keep - h
            down = f()
            flat[i] = keep
            g[i] = (up - down) / (2 * h)
        return g
    _, text = feedback(lesson07.check_numerical_gradient, numerical_gradient)
    assert "flat, in one axis" in text, text

    def sinusoidal_positions(n, d):
        pe = np.zeros((n, d), dtype=int)
        angle = np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2)[None, :] / d)
        pe[:, 0::2] = np.sin(angle)
        pe[:, 1::2] = np.cos(angle[:, : d // 2])
        return pe
    _, text = feedback(lesson01.check_sinusoidal_positions, sinusoidal_positions)
    assert "integer array (int64)" in text and "toward zero" in text, text


def _attention_grads(dout, Q, K, V, weights):
    """dQ, dK, dV of softmax(Q K^T / sqrt(d_k)) V, written out here (not the reference's code)."""
    d_k = Q.shape[-1]
    dV = np.swapaxes(weights, -1, -2) @ dout
    dW = dout @ np.swapaxes(V, -1, -2)
    dS = weights * (dW - np.sum(dW * weights, axis=-1, keepdims=True)) / np.sqrt(d_k)
    return dS @ K, np.swapaxes(dS, -1, -2) @ Q, dV


# -- more failed lines: axes written out, an array as a condition, a call's tuple used as an array -------------
def sdpa_axes_for_one_batch(Q, K, V, mask=None):
    from encdec.attention import softmax
    scores = Q @ np.transpose(K, (0, 2, 1)) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def sdpa_if_mask(Q, K, V, mask=None):
    from encdec.attention import softmax
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def test_axes_written_out_and_an_array_as_a_condition_are_named(no_catalog, monkeypatch):
    monkeypatch.setattr(judging, "REPAIR", _Silent())
    no_catalog("scaled_dot_product_attention")
    _, text = feedback(lesson01.check_scaled_dot_product_attention, sdpa_axes_for_one_batch)
    assert "`np.transpose(K, (0, 2, 1))` names 3 axes, and `K` has 2" in text and "np.swapaxes(x, -1, -2)" in text, text
    _, text = feedback(lesson01.check_scaled_dot_product_attention, sdpa_if_mask)
    assert "`if mask:` asks whether the array `mask` is true" in text and "`if mask is not None:`" in text, text


def test_a_calls_tuple_used_as_an_array_is_named():
    from encdec.checks.core import Attempt
    from encdec.checks.probes.failed_lines import TupleOperand

    def attend(x):
        return x, x[..., :1]

    def block(x):
        return x + attend(x)
    case = Case("x", (np.ones((3, 4)),))
    outcome = run_student(block, case.args)
    found = TupleOperand().find(Attempt("block", case, error=outcome.error), None)
    assert found is not None and "`attend(x)` is used as an array" in found.diagnosis
    assert "`out, _ = attend(x)`" in found.diagnosis


def test_temperature_zero_divided_is_named(no_catalog):
    from encdec.checks import lesson09
    no_catalog("sample_next_token")

    def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
        rng = np.random.default_rng(rng)
        z = np.asarray(logits, dtype=float) / temperature
        p = np.exp(z - z.max(axis=-1, keepdims=True))
        p = p / p.sum(axis=-1, keepdims=True)
        u = rng.random(p.shape[:-1] + (1,))
        return np.minimum((np.cumsum(p, axis=-1) < u).sum(axis=-1), p.shape[-1] - 1)
    _, text = feedback(lesson09.check_sample_next_token, sample_next_token)
    assert "at temperature 0 your code divides the logits by 0" in text, text


def test_the_step_by_step_loop_is_traced_as_parts_of_the_right_values(no_catalog):
    """Cross-attention step by step with the weights stacked on a new axis: each pass's output and weights are
    a part of the right values (one decoder position), so the tracer points at the line that stacks them."""
    from encdec.checks import lesson04
    no_catalog("cross_attention_step_by_step")

    def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):
        K, V = mha.project_kv(H_enc)
        outs, ws = [], []
        for t in range(H_dec.shape[-2]):
            o, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
            outs.append(o)
            ws.append(w)
        return np.concatenate(outs, axis=-2), np.stack(ws)
    _, text = feedback(lesson04.check_cross_attention_step_by_step, cross_attention_step_by_step)
    assert "`return np.concatenate(outs, axis=-2), np.stack(ws)`" in text, text
    assert "(a part of the right value)" in text, text


def test_weights_of_another_shape_are_not_read_against_the_mask(no_catalog):
    """An extra axis in the mask gives weights of another shape: nothing is said about hidden keys getting
    weight (the broadcast mask no longer lines up with them); the shape is explained instead."""
    from encdec.checks import lesson04
    no_catalog("cross_attention")

    def cross_attention(Q, K, V, mask=None):
        from encdec.attention import softmax
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores + mask[..., None, :]
        weights = softmax(scores, axis=-1)
        return weights @ V, weights
    score, text = feedback(lesson04.check_cross_attention, cross_attention)
    assert score < 3 and "there is an extra axis" in text, text
    assert "Keys that the mask hides get weight" not in text, text


def test_the_cases_added_for_answers_that_kept_full_marks():
    """9.2 at temperature 0 on a batch of rows, 10.5 with predictions longer than the targets: wrong answers
    that passed every case before now lose points, each with a reason."""
    from encdec.checks import lesson09, lesson10

    def argmax_flat(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
        if temperature == 0:
            return np.argmax(logits)  # over the flattened array
        return lesson09.SAMPLE_NEXT_TOKEN.reference(logits, temperature, top_k, top_p, rng)
    from encdec.checks.core import reference_allowed
    with reference_allowed():
        score, text = feedback(lesson09.check_sample_next_token, argmax_flat)
    assert score < 3 and "temperature=0 on a batch of logits (2, 3, 7)" in text, text

    def no_truncate(model, src, tgt, bos_id, eos_id, max_len):
        import torch.nn.functional as F
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
        pad = model.config.pad_id
        if tgt.shape[1] > pred.shape[1]:
            pred = F.pad(pred, (0, tgt.shape[1] - pred.shape[1]), value=pad)
        return ((pred == tgt) | (tgt == pad)).all(dim=1).float().mean().item()
    score, text = feedback(lesson10.check_exact_match, no_truncate)
    assert score < 2 and "max_len 6, more than the targets' width" in text and "Likely cause" in text, text


from encdec.attention import MultiHeadAttention, cross_attention, merge_heads, split_heads  # noqa: E402


class HeadsSplitByWidth(MultiHeadAttention):  # at module level: the repair compiles copies of its methods
    def project_kv(self, key_value_input):
        return (split_heads(key_value_input @ self.W_k, self.n_heads),
                split_heads(key_value_input @ self.W_v, self.n_heads))

    def attend(self, query_input, K, V, mask=None):
        Q = split_heads(query_input @ self.W_q, self.d_k)
        heads, weights = cross_attention(Q, K, V, mask)
        return merge_heads(heads) @ self.W_o, weights


def test_heads_split_by_their_width_is_named_on_every_part(no_catalog):
    """split_heads given d_k where it takes n_heads: each part builds its own object, and the fix is confirmed
    on each part's own weights (a reference bound to the last part's weights had withdrawn it from the
    others, whose "the same as above" then pointed at nothing)."""
    from encdec.checks import lesson04
    no_catalog("CrossAttention")
    score, text = feedback(lesson04.check_attend, HeadsSplitByWidth)
    failed = [line for line in text.splitlines() if line.lstrip().startswith("✗")]
    causes = [line for line in text.splitlines() if "Likely cause:" in line]
    assert score == 0 and len(failed) == len(causes) >= 3, text
    assert "`self.n_heads` in place of `self.d_k`" in causes[0] and "split_heads takes the number of heads" in causes[0]
    assert all("`self.n_heads` in place of `self.d_k`" in c or c.endswith("the same as above.") for c in causes), text


def causal_mask_loop_from_row_one(seq_len):
    mask = np.zeros((seq_len, seq_len))
    for i in range(1, seq_len):
        mask[i, i + 1:] = -np.inf
    return mask


def test_a_catalog_match_that_an_earlier_part_refutes_is_not_named():
    """On a 2 x 2 mask a loop that skips row 0 looks like np.triu(k=2) (the catalog's next_token_visible); the
    first part's 4 x 4 mask shows that it is not, so the repair names the loop's start instead."""
    from encdec.checks import lesson03
    score, text = feedback(lesson03.check_create_causal_mask, causal_mask_loop_from_row_one)
    assert score == 0 and "np.triu with k=2" not in text, text
    causes = [line for line in text.splitlines() if "Likely cause:" in line]
    assert len(causes) == 2 and "`for i in range(1, seq_len):`" in causes[0] and "0 in place of 1" in causes[0], text
    assert causes[1].endswith("the same as above."), text  # the first part's fix mends the second's cases too


class WeightsAveragedOverHeads(MultiHeadAttention):  # at module level: the repair compiles copies of its methods
    def attend(self, query_input, K, V, mask=None):
        Q = split_heads(query_input @ self.W_q, self.n_heads)
        heads, weights = cross_attention(Q, K, V, mask)
        return merge_heads(heads) @ self.W_o, weights.mean(axis=-3)


def test_a_fix_that_mends_only_the_one_head_part_is_withdrawn():
    """keepdims=True makes the single-head part right ((1, m, n) from a mean over one head) and no other: each
    part builds its own object, and the fix is tried on the others' objects before it is named."""
    from encdec.checks import lesson04
    score, text = feedback(lesson04.check_attend, WeightsAveragedOverHeads)
    assert score == 0 and "keepdims=True added to" not in text, text


def causal_mask_of_integers(seq_len):
    mask = np.zeros((seq_len, seq_len), dtype=int)
    mask[np.triu_indices(seq_len, k=1)] = -np.inf
    return mask


def logits_without_batch_axes(h, E):
    return np.einsum("md,vd->mv", h, E)


def test_errors_whose_message_is_numpys_are_said_in_the_answers_names(no_catalog):
    """-inf into an integer array and einsum subscripts without `...`, each with its cause (library_errors.py)."""
    from encdec.checks import lesson03
    no_catalog("create_causal_mask", "output_logits")
    _, text = feedback(lesson03.check_create_causal_mask, causal_mask_of_integers)
    assert "writes -inf into `mask`, an array of int64 (integers)" in text and "float array" in text, text
    _, text = feedback(lesson03.check_output_logits, logits_without_batch_axes)
    assert 'write `...` for them, "...md,...vd->...mv"' in text, text


def attention_sizes_unpacked(Q, K, V, mask=None):
    m, d_k = Q.shape  # as if Q had no batch axes
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights = weights / weights.sum(-1, keepdims=True)
    return weights @ V, weights


def test_a_shape_unpacked_into_too_few_names_is_said_with_the_input_s_axes(no_catalog):
    """Python's "too many values to unpack" on `m, d_k = Q.shape`: the sizes read from the end."""
    no_catalog("scaled_dot_product_attention")
    _, text = feedback(lesson01.check_scaled_dot_product_attention, attention_sizes_unpacked)
    assert "`m, d_k = Q.shape` unpacks the shape into 2 names (m, d_k)" in text, text
    assert "(Q.shape[-2], Q.shape[-1])" in text and "*lead, m, d_k = Q.shape" in text, text
