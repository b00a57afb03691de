"""The diagnosis past the catalog and the probes (encdec.checks.probes.tracer, constants, shapes): the first
line where an answer leaves the right computation, constants fitted and named, and a shape explained,
each proven on slips with the catalog emptied, and silent where nothing is wrong."""

import contextlib
import io
import time

import numpy as np
import pytest

import encdec.checks.probes as P
from encdec.attention import create_causal_mask, softmax
from encdec.checks import lesson01, lesson02, lesson03, lesson04
from encdec.checks.probes import explain_shape, name_number


@pytest.fixture
def no_catalog(monkeypatch):
    """Empty the catalog of the named exercises: what remains is the probes' and the tracer's."""
    from encdec.mistakes import CATALOG

    def empty(*names):
        for name in names:
            monkeypatch.setitem(CATALOG.entries, name, [])
    return empty


def feedback(exercise, answer, hidden=False):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        score = exercise.checker(answer, points=exercise.points, hidden=hidden)
    assert err.getvalue() == "", "nothing may reach stderr"
    return float(score), out.getvalue()


# -- the tracer ---------------------------------------------------------------------------------------------
def rms_norm_late_slip(x, gamma, eps=1e-6):
    inv = 1.0 / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps)  # computed another right way
    normed = x * inv
    return normed * gamma * 2.0


class FeedForwardTanhOut:
    def __init__(self, d_model, d_ff, rng=None):
        self.W1, self.b1 = np.zeros((d_model, d_ff)), np.zeros(d_ff)
        self.W2, self.b2 = np.zeros((d_ff, d_model)), np.zeros(d_model)
        self.d_model, self.d_ff = d_model, d_ff

    def __call__(self, x):
        hidden = x @ self.W1 + self.b1
        activated = 0.5 * hidden * (1 + np.tanh(np.sqrt(2 / np.pi) * (hidden + 0.044715 * hidden ** 3)))
        out = activated @ self.W2
        return out


def causal_attention_loop(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    rows = []
    for t in range(x.shape[-2]):
        scores = Q[..., t:t + 1, :] @ np.swapaxes(K[..., : t + 2, :], -1, -2) / np.sqrt(Q.shape[-1])  # sees t + 1
        rows.append(softmax(scores, axis=-1) @ V[..., : t + 2, :])
    out = np.concatenate(rows, axis=-2)
    return out, None


@pytest.mark.lesson02
def test_a_late_slip_is_located_at_its_line_not_at_an_earlier_value_computed_another_way(no_catalog, monkeypatch):
    no_catalog("rms_norm")
    monkeypatch.setattr(lesson02, "RMS_NORM_PROBES", None, raising=False)
    score, text = feedback(lesson02.RMS_NORM, rms_norm_late_slip)
    assert score < 2 and "return normed * gamma * 2.0" in text, text
    assert "the value returned" in text and "`normed` on line" in text, text
    assert "times a constant factor, 2" in text, text


@pytest.mark.lesson02
def test_a_method_slip_is_located_in_the_method(no_catalog):
    no_catalog("FeedForward")
    score, text = feedback(lesson02.FEED_FORWARD, FeedForwardTanhOut)
    assert score < 2
    assert ("out = activated @ self.W2" in text or "Likely cause" in text), text


def test_the_tracer_locates_the_first_bad_pass_of_a_loop_and_stays_quiet():
    """Lesson 3's causal attention written as a loop that lets position t see t + 1: the tracer (called
    directly, as the checker calls it last) names the loop's line and the pass."""
    from encdec.checks.core import Attempt, Case
    r = np.random.default_rng(0)
    x, W = r.normal(size=(5, 8)), [r.normal(size=(8, 4)) / 3 for _ in range(3)]
    case = Case("loop", (x, *W))
    reference = lambda x, W_q, W_k, W_v: lesson03.REF_CAUSAL_SELF_ATTENTION(x, W_q, W_k, W_v)  # noqa: E731
    attempt = Attempt("causal_self_attention", case, got=causal_attention_loop(x, *W),
                      expected=reference(x, *W), student=causal_attention_loop, reference=reference)
    out, err = io.StringIO(), io.StringIO()
    start = time.thread_time()  # the budget counts this thread's CPU time (checks/clock.py), whatever else runs
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        finding = P.locate(attempt, reference)
    assert time.thread_time() - start < 2.5  # its budget, 1.5 s, and a margin
    assert out.getvalue() == err.getvalue() == ""
    assert finding is not None and finding.key == "trace:line"
    assert "K[..., : t + 2, :]" in finding.diagnosis and "pass 1 of the loop" in finding.diagnosis, finding.diagnosis


def test_the_tracer_is_silent_on_a_right_answer_and_never_raises():
    from encdec.checks.core import Attempt, Case
    from encdec.attention import scaled_dot_product_attention as sdpa
    r = np.random.default_rng(1)
    Q, K, V = r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2))

    def right(Q, K, V, mask=None):
        weights = softmax(np.einsum("md,nd->mn", Q, K) / np.sqrt(Q.shape[-1]), axis=-1)
        return weights @ V, weights

    attempt = Attempt("sdpa", Case("c", (Q, K, V)), got=right(Q, K, V), expected=sdpa(Q, K, V), student=right,
                      reference=sdpa)
    assert P.locate(attempt, sdpa) is None
    broken = Attempt("sdpa", Case("c", (Q, K, V)), student=lambda *a: 1 / 0, reference=None)
    assert P.locate(broken, None) is None


def test_torch_tensors_are_traced_too():
    torch = pytest.importorskip("torch")
    from encdec.checks.core import Attempt, Case

    def reference(x):
        y = x * 2.0
        return torch.tanh(y)

    def answer(x):
        y = x * 2.0
        z = torch.sigmoid(y)
        return z
    x = torch.linspace(-2, 2, 12, dtype=torch.float64).reshape(3, 4)
    attempt = Attempt("f", Case("c", (x,)), student=answer, reference=reference)
    finding = P.locate(attempt, reference)
    assert finding is not None and "z = torch.sigmoid(y)" in finding.diagnosis and "`y`" in finding.diagnosis


# -- constants fitted ---------------------------------------------------------------------------------------
def gelu_sqrt_2pi(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 * np.pi) * (x + 0.044715 * x ** 3)))


def gelu_parenthesis(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * x + 0.044715 * x ** 3))


def positions_integer_division(n, d):
    pe = np.zeros((n, d))
    for pos in range(n):
        for i in range(0, d, 2):
            pe[pos, i] = np.sin(pos / 10000 ** (i // d))
            if i + 1 < d:
                pe[pos, i + 1] = np.cos(pos / 10000 ** (i // d))
    return pe


def positions_other_base(n, d):
    pos, two_i = np.arange(n)[:, None], np.arange(0, d, 2)
    angles = pos / 1000.0 ** (two_i / d)
    pe = np.zeros((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles[:, : d // 2])
    return pe


@pytest.mark.parametrize("answer,words", [
    (gelu_sqrt_2pi, "the factor inside the tanh is 2.5066 = √(2π) in your answer; the formula has √(2/π)"),
    (gelu_parenthesis, "With `np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)` in place of"),  # the repair, first
], ids=["sqrt-2pi", "parenthesis"])
@pytest.mark.lesson02
def test_a_gelu_constant_is_fitted_and_named(no_catalog, answer, words):
    no_catalog("gelu")
    score, text = feedback(lesson02.GELU, answer)
    assert score == 0 and words in text, text


@pytest.mark.parametrize("answer,words", [
    (positions_integer_division, "integer division, `2i // d`"),
    (positions_other_base, "the base of the wavelengths is 1000"),
], ids=["integer-division", "base"])
@pytest.mark.lesson01
def test_a_positions_slip_is_named(no_catalog, answer, words):
    no_catalog("sinusoidal_positions")
    score, text = feedback(lesson01.SINUSOIDAL_POSITIONS, answer)
    assert score == 0 and words in text, text


def test_numbers_are_named_as_sizes_first_then_constants():
    assert name_number(4 ** -0.25, {"d_k": 4, "d_v": 3}) == "d_k^(-1/4)"
    assert name_number(2 ** -0.5, {"d_k": 4, "d_v": 2}) == "d_k^(-1/4) = d_v^(-1/2)"
    assert name_number(np.sqrt(2 * np.pi)) == "√(2π)" and name_number(0.123456) is None


# -- shapes explained ---------------------------------------------------------------------------------------
def test_shapes_are_explained_in_the_cases_names():
    assert "missing at position 0" in explain_shape((6, 6), (1, 6, 6))
    assert "extra leading axis of size 1" in explain_shape((1, 3, 4), (3, 4))
    assert "axes 0 and 1 are exchanged (5 (n) where 3 (m) belongs)" in explain_shape((5, 3), (3, 5), {"m": 3, "n": 5})
    assert "axis 1 has size 4 (d_k) where 5 (n) is expected" in explain_shape((3, 4), (3, 5), {"d_k": 4, "n": 5})
    assert "size 4 (d_k) at position 1 is missing" in explain_shape((2, 3), (2, 4, 3), {"d_k": 4})
    said = explain_shape((2, 1, 1, 2, 4), (2, 2, 1, 1, 4))  # np.expand_dims(mask, 1), twice, on a (2, 2, n) batch
    assert "axes of size 1 are in other places (the answer has them at 1, 2; they belong at 2, 3)" in said
    assert "counting from the end" in said and "exchanged" not in said
    assert "2 extra leading axes of size 1" in explain_shape((1, 1, 4, 4), (4, 4))  # mask[None, None] "to broadcast"
    assert "extra leading" not in explain_shape((1, 2, 4, 4), (4, 4))


def decoder_mask_without_head_axis(tgt_in, pad_id):
    m = np.shape(tgt_in)[-1]
    return create_causal_mask(m) + np.where(np.asarray(tgt_in) == pad_id, -np.inf, 0.0)[..., None, :]


@pytest.mark.lesson03
def test_a_mask_without_its_head_axis_is_explained(no_catalog):
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.DECODER_MASK, decoder_mask_without_head_axis)
    assert score == 0 and "shape: expected (1, 6, 6), got (6, 6): an axis of size 1 is missing" in text, text
    assert "(B, 1, m, m) for the decoder's" in text
