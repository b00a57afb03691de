"""The checking layer's promises, one by one."""

import contextlib
import io
import sys

import numpy as np
import pytest

import encdec
from encdec.checks import lesson01 as L
from encdec.checks.core import Case, Checker, compare, rebind, run_student


def run(checker, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = checker(*args, **kwargs)
    return score, out.getvalue()


def good_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def test_answer_is_found_by_name_in_the_callers_namespace():
    globals()["softmax"] = good_softmax
    try:
        score, text = run(L.check_softmax)
    finally:
        del globals()["softmax"]
    assert score == 3, text


def test_missing_answer_scores_zero_with_a_message():
    score, text = run(L.check_sinusoidal_positions)
    assert score == 0
    assert "no function named `sinusoidal_positions` is defined" in text


def test_untouched_stub_says_not_implemented():
    def softmax(x, axis=-1):
        raise NotImplementedError()
    score, text = run(L.check_softmax, softmax)
    assert score == 0
    assert "not implemented yet" in text


def test_forgotten_return_is_named():
    def softmax(x, axis=-1):
        np.exp(x)
    score, text = run(L.check_softmax, softmax)
    assert score == 0 and "did you forget `return`?" in text


def test_student_errors_show_their_own_line():
    def softmax(x, axis=-1):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / undefined_name  # noqa: F821
    score, text = run(L.check_softmax, softmax)
    assert score == 0
    assert "NameError: name 'undefined_name' is not defined (in softmax, line" in text


def test_warnings_never_cost_a_correct_student_points_and_nothing_reaches_stderr(capsys):
    def softmax(x, axis=-1):
        np.log(np.zeros(1))  # a harmless RuntimeWarning
        print("debugging", file=sys.stderr)
        return good_softmax(x, axis)
    score, text = run(L.check_softmax, softmax)
    assert score == 3
    assert "RuntimeWarning: divide by zero encountered in log" in text
    assert capsys.readouterr().err == ""


def test_system_exit_in_student_code_does_not_end_the_check():
    def softmax(x, axis=-1):
        sys.exit(3)
    score, text = run(L.check_softmax, softmax)
    assert score == 0 and "SystemExit" in text


def test_delegation_is_caught_even_through_an_alias():
    from encdec.attention import softmax as renamed

    def softmax(x, axis=-1):
        try:
            return renamed(x, axis)
        except Exception:  # swallowing our signal does not help
            return good_softmax(x, axis)
    score, text = run(L.check_softmax, softmax)
    assert score == 0
    assert "calls the reference `softmax`" in text


def test_a_mistake_is_charged_once_attention_uses_the_reference_softmax():
    def softmax(x, axis=-1):  # wrong: sums over the whole array
        e = np.exp(x - np.max(x))
        return e / np.sum(e)

    def scaled_dot_product_attention(Q, K, V, mask=None):
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores + mask
        weights = softmax(scores)
        return weights @ V, weights

    assert run(L.check_softmax, softmax)[0] == 0
    score, text = run(L.check_scaled_dot_product_attention, scaled_dot_product_attention)
    assert score == 4, text


def test_partial_credit_is_a_fraction_of_the_parts_and_never_exceeds_points():
    c = Checker("9.9", "demo", points=3)
    c.record("a", True)
    c.record("b", False, "nope")
    c.record("c", True, weight=2.0)
    assert c.score() == pytest.approx(2.25)
    c = Checker("9.9", "demo", points=1)
    for _ in range(3):
        c.record("x", True)
    assert c.score() == 1


def test_the_test_cell_value_is_the_float_nbgrader_reads():
    score, text = run(L.check_softmax, good_softmax, points=3)
    assert isinstance(score, float) and score == 3.0
    assert text.startswith("Exercise 1.1 · softmax: 3 / 3 points")


def test_checker_survives_garbage_answers():
    for garbage in ("not a function", 42):
        score, text = run(L.check_softmax, garbage)
        assert score == 0 and "should be a function" in text
    score, text = run(L.check_softmax, lambda x, axis=-1: "a string")
    assert score == 0 and "expected a NumPy array, got str" in text


def test_compare_reports_shape_and_first_differing_index():
    assert compare(np.ones((2, 3)), np.ones((3, 2))) == "shape: expected (3, 2), got (2, 3)"
    got = np.zeros((2, 3))
    got[1, 2] = 5
    assert compare(got, np.zeros((2, 3))).startswith("values differ at index (1, 2): expected 0, got 5")
    assert compare(np.ones(2), (np.ones(2), np.ones(2)), names=("output", "weights")).startswith(
        "expected a tuple of 2 (output, weights), got ndarray")
    assert compare(np.float32(1.00001), np.float64(1.0), float32=True) is None


def test_input_mutation_is_noted():
    def softmax(x, axis=-1):
        x -= np.max(x, axis=axis, keepdims=True)
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)
    score, text = run(L.check_softmax, softmax)
    assert score == 3 and "changed one of its input arrays in place" in text


def test_rebind_swaps_only_the_named_globals():
    def f(x):
        return softmax(x) + np.zeros(1)  # noqa: F821
    g = rebind(f, softmax=lambda x: x * 0 + 7)
    np.testing.assert_array_equal(g(np.ones(2)), [7, 7])
    assert rebind(f, other=1) is f


def test_run_student_restores_the_profiler():
    sentinel = lambda *a: None  # noqa: E731
    sys.setprofile(sentinel)
    try:
        run_student(lambda: encdec.softmax(np.ones(2)), forbidden=[encdec.softmax])
        assert sys.getprofile() is sentinel
    finally:
        sys.setprofile(None)


def test_hidden_cases_run_only_in_hidden_mode():
    seen = []

    def softmax(x, axis=-1):
        seen.append(np.shape(x))
        return good_softmax(x, axis)
    run(L.check_softmax, softmax, hidden=False)
    visible = len(seen)
    seen.clear()
    run(L.check_softmax, softmax, hidden=True)
    assert len(seen) > visible


def test_rebind_reaches_names_used_by_nested_helpers():
    def outer(x):
        def helper(y):
            return softmax(y)  # noqa: F821
        return helper(x)
    g = rebind(outer, softmax=lambda y: y * 0 + 3)
    assert g(np.ones(1))[0] == 3


def test_values_that_agree_to_six_digits_show_every_digit():
    message = compare(np.array([0.3576954]), np.array([0.3576946]))
    assert "0.3576946" in message and "0.3576954" in message
