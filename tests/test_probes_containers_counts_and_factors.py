"""Kinds of slip named since batch ad (each written as a student would, each diagnosis read from the checker with
its catalog emptied where a probe names it; right answers written otherwise keep full marks): every `.T` of a
weight used as stored, a count per row where the formula counts over the batch, one array appended at every
step of a loop that writes into it, `model.parameters()` read twice, a feed-forward bias left out of the
count, the factor under the square root, and a catalog entry that matched only through a division by N = 0."""

import contextlib
import io

import numpy as np
import torch

from encdec.attention import create_causal_mask, softmax
from encdec.checks import lesson03, lesson06, lesson07, lesson08, lesson09
from encdec.checks import lesson10 as L
from encdec.mistakes import CATALOG
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def causal_attention_weights_as_linear(x, W_q, W_k, W_v):
    q = x @ W_q.T
    k = x @ W_k.T
    v = x @ W_v.T
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(W_q.shape[-1]) + create_causal_mask(x.shape[-2])
    w = softmax(s, axis=-1)
    return w @ v, w


def causal_attention_weights_as_stored(x, W_q, W_k, W_v):
    q, k, v = (np.einsum("...md,dk->...mk", x, W) for W in (W_q, W_k, W_v))
    w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + create_causal_mask(q.shape[-2]), axis=-1)
    return w @ v, w


def test_every_transpose_of_a_weight_is_named(no_catalog, time_enough):
    no_catalog("causal_self_attention")
    score, text = feedback(lesson03.check_causal_self_attention, causal_attention_weights_as_linear)
    assert score < lesson03.CAUSAL_SELF_ATTENTION.points
    assert "With every `.T` dropped (`W_q.T`, `W_k.T`, `W_v.T`)" in text, text
    score, text = feedback(lesson03.check_causal_self_attention, causal_attention_weights_as_stored)
    assert score == lesson03.CAUSAL_SELF_ATTENTION.points, text


def cross_entropy_counted_per_row(logits, targets, pad_id=None):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    real = np.ones(targets.shape) if pad_id is None else (targets != pad_id).astype(float)
    count = np.maximum(np.sum(real, axis=-1, keepdims=True), 1)
    one_hot = np.eye(logits.shape[-1])[targets]
    loss = float(np.sum(-(one_hot * logp).sum(axis=-1) * real / count))
    return loss, (np.exp(logp) - one_hot) * (real / count)[..., None]


def cross_entropy_counted_over_the_batch(logits, targets, pad_id=None):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    real = np.ones(targets.shape) if pad_id is None else (targets != pad_id).astype(float)
    count = max(np.count_nonzero(real), 1)
    one_hot = np.eye(logits.shape[-1])[targets]
    loss = float(np.sum(-(one_hot * logp).sum(axis=-1) * real) / count)
    return loss, (np.exp(logp) - one_hot) * (real / count)[..., None]


def test_a_count_per_row_is_named(no_catalog, time_enough):
    no_catalog("softmax_cross_entropy")
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_counted_per_row)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "With `np.sum(real)` in place of `np.sum(real, axis=-1, keepdims=True)`" in text, text
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_counted_over_the_batch)
    assert score == lesson07.SOFTMAX_CROSS_ENTROPY.points, text


def cross_entropy_without_a_guard(logits, targets, pad_id=None):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    real = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id
    one_hot = np.eye(logits.shape[-1])[targets]
    with np.errstate(all="ignore"):
        loss = float(-(one_hot * logp).sum(axis=-1)[real].sum() / real.sum())
        grad = (np.exp(logp) - one_hot) / real.sum()
    grad[~real] = 0.0
    return loss, grad


def test_a_match_only_through_a_division_by_zero_is_no_evidence(monkeypatch):
    """With only 'the gradient is not divided by N' in the catalog: on the batch with no real token it gives nan
    for the loss and zeros for the gradient, as an answer without the guard does, but it is no evidence."""
    not_divided = CATALOG.find("softmax_cross_entropy", "gradient_not_divided")
    monkeypatch.setitem(CATALOG.entries, "softmax_cross_entropy", [not_divided])
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_without_a_guard)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "the gradient is not divided by N" not in text, text
    monkeypatch.undo()
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_without_a_guard)
    assert "N = 0 and the mean is 0/0 = nan" in text, text


def greedy_appending_one_buffer(model, src, bos_id, eos_id, max_len):
    one = src.ndim == 1
    batch = src[None] if one else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(batch)
    tgt_in = np.full((batch.shape[0], 1), bos_id)
    done = np.zeros(batch.shape[0], dtype=bool)
    nxt = np.zeros(batch.shape[0], dtype=np.int64)
    columns = []
    for _ in range(max_len):
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1].copy()
        logits[:, [bos_id, pad]] = -np.inf
        nxt[:] = np.where(done, pad, logits.argmax(axis=-1))
        columns.append(nxt)
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
    out = np.stack(columns, axis=1)
    return out[0] if one else out


def test_one_array_appended_at_every_step_is_named(no_catalog, time_enough):
    no_catalog("greedy_decode")
    score, text = feedback(lesson09.check_greedy_decode, greedy_appending_one_buffer)
    assert score < lesson09.GREEDY_DECODE.points
    assert "With `columns.append(nxt.copy())` in place of `columns.append(nxt)`" in text, text
    assert "the list holds one array many times" in text, text


def optimizer_from_one_pass(model, lr, weight_decay, betas):
    params = model.parameters()
    decayed = [p for p in params if p.dim() >= 2]
    kept = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decayed, "weight_decay": weight_decay},
                              {"params": kept, "weight_decay": 0.0}], lr=lr, betas=betas)


def optimizer_from_a_list(model, lr, weight_decay, betas):
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                             lr=lr, betas=betas)


def test_parameters_read_twice_are_named():
    exercise = next(e for e in L.EXERCISES if e.number == "10.3")
    for answer, right in ((optimizer_from_one_pass, False), (optimizer_from_a_list, True)):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            score = exercise.checker(answer, hidden=True)
        text = out.getvalue()
        if right:
            assert score == exercise.points, text
        else:
            assert score < exercise.points and "`model.parameters()` returns a generator" in text, text
            assert "With `params = list(model.parameters())` in place of `params = model.parameters()`" in text, text


def count_without_the_first_bias(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    ffn = 2 * d_model * d_ff + d_model
    encoder = n_encoder_layers * (4 * d_model ** 2 + ffn + 2 * d_model)
    decoder = n_dec * (8 * d_model ** 2 + ffn + 3 * d_model)
    return vocab_size * d_model + encoder + decoder + 2 * d_model


def test_a_feed_forward_bias_left_out_of_the_count_is_named(no_catalog):
    no_catalog("parameter_count")
    score, text = feedback(lesson06.check_parameter_count, count_without_the_first_bias)
    assert score < lesson06.PARAMETER_COUNT.points
    assert "first bias b1 (d_ff entries, added to W1's output) is left out" in text, text


def schedule_with_the_factor_under_the_root(step, d_model, warmup_steps, factor=1.0):
    return min(step ** -0.5, step * warmup_steps ** -1.5) / np.sqrt(d_model * factor)


def test_the_factor_under_the_square_root_is_named(no_catalog):
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_the_factor_under_the_root)
    assert score < lesson08.WARMUP_SCHEDULE.points
    assert "the factor is under the square root with d_model" in text.lower(), text


def test_every_edit_kind_reads_any_function_without_raising():
    """The repair's kinds are asked about every node of every function of the course's library: one that raises
    (a node's field read before its type is known) would stop the whole repair, silently."""
    import ast
    import pathlib

    from encdec.checks.probes import repair
    for path in sorted(pathlib.Path(repair.__file__).parents[3].glob("encdec/*.py")):
        for fdef in ast.walk(ast.parse(path.read_text())):
            if isinstance(fdef, ast.FunctionDef):
                edits = list(repair._edits(fdef))
                assert all(edit.said for edit in edits), path


def gelu_cubic_term_outside_the_factor(x):
    inner = np.sqrt(2 / np.pi) * x + 0.044715 * x ** 3
    return 0.5 * x * (1 + np.tanh(inner))


def test_a_constant_fitted_only_as_a_ratio_lets_the_repair_quote_the_parentheses(no_catalog, time_enough):
    """The fitted coefficient of x^3 is 0.044715 / sqrt(2/pi): a ratio, which says what is off but not where;
    the repair's parentheses, which mend it, come first."""
    from encdec.checks import lesson02
    no_catalog("gelu")
    score, text = feedback(lesson02.check_gelu, gelu_cubic_term_outside_the_factor)
    assert score < lesson02.GELU.points
    assert "With `np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)` in place of" in text, text


def test_no_answer_of_its_own_for_n_zero_is_said_by_the_tracer(no_catalog, time_enough):
    """With the catalog emptied, the repair's only mend for the empty batch (`*` for `/`) breaks the other parts
    and is withdrawn; the tracer then sees that the right computation returned zeros early, and says so."""
    no_catalog("softmax_cross_entropy")
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_without_a_guard)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "the function has an answer of its own" in text and "gives nan" in text, text
