"""Kinds of slip named since batch aa (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): a variant that matches only through nan
(not evidence, base.informative), a division missing its parentheses at every place (everywhere.py), the stream
read where its norm belongs (norm_wiring.py), a cache read before the step's row is appended (streams.py, tried
first by targeted.py), a statement that belongs two lines later (moves.py), and None told by the name the error
is about (failed_lines.py)."""

import contextlib
import io
import inspect

import numpy as np

from encdec import rms_norm
from encdec.checks import lesson02, lesson08, lesson09, lesson10
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)
import test_lesson10_checks


def adam_divided_without_parentheses(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * np.square(grad)
    m_corrected = m / 1 - beta1 ** t
    v_corrected = v / 1 - beta2 ** t
    return param - lr * m_corrected / (np.sqrt(v_corrected) + eps), m, v


def test_a_division_missing_its_parentheses_is_named_not_a_shifted_t(no_catalog, time_enough):
    no_catalog("adam_update")
    score, text = feedback(lesson08.check_adam_update, adam_divided_without_parentheses)
    assert score < lesson08.ADAM_UPDATE.points
    assert "t - 1 instead of t" not in text, text
    assert "`m / (1 - b ** t)` in place of every `m / 1 - b ** t`" in text, text


def decode_step_query_from_the_stream(model, tokens, cache):
    eps = model.config.eps
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        h = rms_norm(x, block.norm1_gamma, eps)
        K, V = cache.append(i, *block.self_attn.project_kv(h))
        x = x + block.self_attn.attend(x, K, V)[0]
        h = rms_norm(x, block.norm2_gamma, eps)
        x = x + block.cross_attn.attend(h, cache.cross_k[i], cache.cross_v[i], mask=cache.src_mask)[0]
        x = x + block.ffn(rms_norm(x, block.norm3_gamma, eps))
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[..., 0, :]


def test_the_stream_read_where_its_norm_belongs_is_named(no_catalog, time_enough):
    no_catalog("decode_step")
    score, text = feedback(lesson09.check_decode_step, decode_step_query_from_the_stream)
    assert score < lesson09.DECODE_STEP.points
    assert "reads the stream `x` where its norm `h`" in text and "`h` in place of `x`" in text, text


def _compiled(lines, folder):
    """The decoder written out to a file of its own (the grader reads an answer's source, as a notebook cell's)."""
    path = folder / "answer.py"
    path.write_text("\n".join(lines))
    namespace = dict(vars(test_lesson10_checks))
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["decode_cached_encoder_keys_from_self_attention"]


def _attending_before_appending(folder):
    """The test suite's cached decoder, its encoder keys made right, and the attention moved above the two lines
    that append the step's keys and values (the cache starts empty, so the first step attends to nothing)."""
    source = inspect.getsource(test_lesson10_checks.decode_cached_encoder_keys_from_self_attention)
    source = source.replace("H_enc @ b.self_attn.W_k, h), split_heads(H_enc @ b.self_attn.W_v",
                            "H_enc @ b.cross_attn.W_k, h), split_heads(H_enc @ b.cross_attn.W_v")
    source = source.replace("keys, values = [None] * len(model.decoder), [None] * len(model.decoder)",
                            "d_k = cfg.d_model // h\n"
                            "        keys = [H_enc.new_zeros(src.shape[0], h, 0, d_k) for _ in model.decoder]\n"
                            "        values = [H_enc.new_zeros(src.shape[0], h, 0, d_k) for _ in model.decoder]")
    source = source.replace("keys[i] = k if keys[i] is None else torch.cat([keys[i], k], -2)",
                            "keys[i] = torch.cat([keys[i], k], -2)")
    source = source.replace("values[i] = v if values[i] is None else torch.cat([values[i], v], -2)",
                            "values[i] = torch.cat([values[i], v], -2)")
    lines = source.split("\n")
    attend = next(k for k, line in enumerate(lines) if "attend(split_heads(a @ b.self_attn.W_q" in line)
    first = next(k for k, line in enumerate(lines) if "keys[i] = torch.cat" in line)
    lines.insert(first - 1, lines.pop(attend))  # above `k, v = ...` too
    return _compiled(lines, folder)


def test_a_cache_read_before_the_steps_row_is_appended_is_named(tmp_path, monkeypatch):
    """The whole repair given no time (a slow decoder spends its budget on other edits first): the targeted edit,
    tried on its own with its own budget, still names it."""
    from encdec.checks import core
    from encdec.checks.lesson10 import torch_checker
    monkeypatch.setattr(core.Checker, "REPAIR_SECONDS", 0.0)
    monkeypatch.setattr(torch_checker, "OBSERVED_REPAIR_SECONDS", 0.0)
    exercise = next(e for e in lesson10.EXERCISES if e.number == "10.6")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        score = exercise.checker(_attending_before_appending(tmp_path), hidden=True)
    text = out.getvalue()
    assert score < exercise.points
    assert "reads `keys[i]` and `values[i]` before this step's row is added to them" in text, text


class EncoderBlockFeedForwardFirst:
    def __init__(self, d_model, n_heads, d_ff, rng=None):
        from encdec.attention import MultiHeadAttention
        from encdec.layers import FeedForward
        rng = np.random.default_rng(rng)
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng=rng)
        self.ffn = FeedForward(d_model, d_ff, rng=rng)
        self.norm1_gamma, self.norm2_gamma = np.ones(d_model), np.ones(d_model)

    def __call__(self, x, mask=None):
        h = rms_norm(x, self.norm1_gamma)
        x = x + self.ffn(rms_norm(x, self.norm2_gamma))
        out, _ = self.self_attn(h, mask=mask)
        x = x + out
        return x


def test_a_statement_that_belongs_two_lines_later_is_named(no_catalog, time_enough):
    no_catalog("EncoderBlock")
    score, text = feedback(lesson02.check_encoder_block, EncoderBlockFeedForwardFirst)
    assert score < lesson02.ENCODER_BLOCK.points
    assert "after lines" in text and "the right computation runs it after them" in text, text


def test_none_is_told_by_the_name_the_error_is_about(tmp_path):
    """`k.transpose` where k is None, beside `mask` tested against None in the same line: the message names `k`,
    and says the caller passed it (k has no default)."""
    exercise = next(e for e in lesson10.EXERCISES if e.number == "10.6")
    source = inspect.getsource(test_lesson10_checks.decode_cached_encoder_keys_from_self_attention)
    lines = source.split("\n")
    attend = next(k for k, line in enumerate(lines) if "attend(split_heads(a @ b.self_attn.W_q" in line)
    first = next(k for k, line in enumerate(lines) if "keys[i] = k if keys[i] is None" in line)
    lines.insert(first, lines.pop(attend))
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exercise.checker(_compiled(lines, tmp_path), hidden=True)
    text = out.getvalue()
    assert "`k` is None here: the call passed None for it" in text and "`mask` is None" not in text, text


def _transposed_beside(k, mask=None):
    return mask + k.transpose(0, 1)


def test_none_is_told_by_the_name_the_error_is_about_before_another_none():
    """`mask + k.transpose(0, 1)` with both None: the error is about `.transpose`, so the message names `k`."""
    from types import SimpleNamespace

    from encdec.checks.probes.failed_lines import NoneOperand
    try:
        _transposed_beside(None)
    except AttributeError as exc:
        error = exc
    found = NoneOperand().find(SimpleNamespace(error=error, exercise="x.y"), None)
    assert found is not None and found.diagnosis.startswith("`k` is None here: the call passed None"), found
