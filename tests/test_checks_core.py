"""The checking layer's promises, one by one."""

import contextlib
import io
import json
import sys

import numpy as np
import pytest

import encdec
from encdec.checks import lesson01 as L
from encdec.checks.core import Checker, compare, rebind, run_student
from encdec.checks.exercises import Graded
from encdec.checks.record import MIME, collected
from encdec.mistakes import CATALOG


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
    demo = Graded("9.9", "demo", "demo", points=3)
    c = Checker(demo)
    c.part("a", True)
    c.part("b", False, "nope")
    c.part("c", True, weight=2.0)
    assert c.score() == pytest.approx(2.25)
    c = Checker(demo, points=1)
    for _ in range(3):
        c.part("x", True)
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


def test_an_input_changed_in_place_costs_the_part_and_names_the_line():
    def softmax(x, axis=-1):
        x -= np.max(x, axis=axis, keepdims=True)
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)
    score, text = run(L.check_softmax, softmax)
    line = softmax.__code__.co_firstlineno + 1  # as the student's cell counts it
    assert score < 3
    assert f"changed `x` in place (line {line}: `x -= np.max(x, axis=axis, keepdims=True)`)" in text


def test_an_input_written_through_out_or_a_slice_is_found():
    def through_out(x, axis=-1):
        np.subtract(x, np.max(x, axis=axis, keepdims=True), out=x)
        np.exp(x, out=x)
        return x / np.sum(x, axis=axis, keepdims=True)

    def through_slice(x, axis=-1):
        x[...] = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return x / x.sum(axis=axis, keepdims=True)
    for answer in (through_out, through_slice):
        line = answer.__code__.co_firstlineno + 1
        score, text = run(L.check_softmax, answer)
        assert score < 3 and f"changed `x` in place (line {line}:" in text, text


def test_an_object_called_as_a_function_has_its_line_found():
    from encdec.checks.inputs import where_changed

    class Block:
        def __call__(self, x, memory):
            out = np.tanh(x)
            x += out
            return x
    assert where_changed(Block(), "x") == (Block.__call__.__code__.co_firstlineno + 2, "x += out")
    assert where_changed(Block(), "memory") is None


def test_an_answer_that_copies_before_writing_in_place_keeps_its_points():
    def softmax(x, axis=-1):
        x = np.array(x, dtype=float, copy=True)
        x -= x.max(axis=axis, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=axis, keepdims=True)
        return x
    score, text = run(L.check_softmax, softmax)
    assert score == 3, text
    assert "in place" not in text


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


# -- the structured record: what the grader reads instead of the printed text ---------------------------
def checked(checker, *args, **kwargs):
    """(score, printed text, the one record) of a check run outside a kernel."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), collected() as records:
        score = checker(*args, **kwargs)
    assert len(records) == 1
    return score, out.getvalue(), records[0]


def test_the_record_holds_the_exercise_the_points_every_case_and_the_misconceptions_by_key():
    no_shift = CATALOG.find("softmax", "no_max_shift")
    score, text, record = checked(L.check_softmax, no_shift.impl, hidden=True)
    assert set(record) == {"schema", "exercise", "title", "points", "score", "hidden", "status", "message",
                           "parts", "misconceptions", "notes"}
    assert (record["schema"], record["exercise"], record["title"], record["points"], record["hidden"],
            record["status"], record["message"]) == (1, "1.1", "softmax", 3, True, "checked", None)
    assert record["score"] == score == 1.5  # the stable-softmax part is half the points (its declared weight)
    rows, large = record["parts"][:2]
    assert (rows["worth"], large["worth"], large["earned"], large["robust"]) == (0.5, 1.5, False, True)
    assert rows["passed"] and rows["message"] is None and {c["outcome"] for c in rows["cases"]} == {"passed"}
    assert [(c["hidden"], c["outcome"]) for c in large["cases"]] == [(False, "failed"), (True, "not run")]
    assert not large["passed"] and large["message"] in text
    assert record["misconceptions"] == [{"key": "no_max_shift", "exercise": "softmax", "diagnosis": no_shift.diagnosis}]
    assert json.loads(json.dumps(record)) == record


def test_a_visible_check_records_the_visible_cases_only():
    score, _, record = checked(L.check_softmax, good_softmax)
    assert score == record["score"] == 3 and record["hidden"] is False and record["misconceptions"] == []
    cases = [c for p in record["parts"] for c in p["cases"]]
    assert cases and all(not c["hidden"] and c["outcome"] == "passed" for c in cases)


def test_outside_a_kernel_the_report_is_all_that_is_printed_and_the_score_is_unchanged(capsys):
    c = Checker(L.SOFTMAX)
    c.part("a", True)
    c.part("b", False, "nope")
    score = c.result()
    out = capsys.readouterr()
    assert out.out == c.report() + "\n" and out.err == ""
    assert isinstance(score, float) and score == c.score() == c.record()["score"] == 1.5


def test_reports_count_misconceptions_by_key_whatever_the_wording(monkeypatch):
    mistake = CATALOG.find("scaled_dot_product_attention", "no_scale")
    _, _, before = checked(L.check_scaled_dot_product_attention, mistake.impl)
    monkeypatch.setattr(mistake, "diagnosis", "reworded: " + mistake.diagnosis)
    _, text, after = checked(L.check_scaled_dot_product_attention, mistake.impl)
    keys = [m["key"] for m in after["misconceptions"]]
    assert keys == [m["key"] for m in before["misconceptions"]] and "no_scale" in keys
    assert after["misconceptions"][keys.index("no_scale")]["diagnosis"].startswith("reworded: ")
    assert "reworded: " in text


def test_a_misconception_is_recorded_once_however_often_it_is_named():
    no_scale = CATALOG.find("scaled_dot_product_attention", "no_scale")
    _, text, record = checked(L.check_scaled_dot_product_attention, no_scale.impl)
    assert "Likely cause: the same as above." in text
    keys = [m["key"] for m in record["misconceptions"]]
    assert len(keys) == len(set(keys))


def test_delegation_is_caught_inside_an_object_that_becomes_an_array_later():
    """The reference called from `__array__` of a returned object, after the answer has returned: the result is
    made an array while the watch is on, and the call is seen."""
    class Lazy:
        def __init__(self, x, axis):
            self.x, self.axis = x, axis

        def __array__(self, dtype=None, copy=None):
            return encdec.softmax(self.x, axis=self.axis)

    score, text = run(L.check_softmax, lambda x, axis=-1: Lazy(np.array(x, copy=True), axis))
    assert score == 0 and "calls the reference `softmax`" in text, text


def not_implemented(x, axis=-1):
    raise NotImplementedError()


def delegating(x, axis=-1):
    return encdec.softmax(x, axis)


@pytest.mark.parametrize("answer, status, says", [
    (None, "no answer", "no function named `sinusoidal_positions` is defined"),
    (not_implemented, "not implemented", "not implemented yet"),
    (delegating, "delegated", "the very function this exercise asks you to write"),
    (42, "error", "should be a function, got int"),
])
def test_a_check_that_stops_early_says_why_in_its_status(answer, status, says):
    check = L.check_sinusoidal_positions if answer is None else L.check_softmax
    score, text, record = checked(check, answer)
    assert score == record["score"] == 0
    assert record["status"] == status and says in record["message"] and record["message"] in text


def test_tampering_found_by_the_guard_is_recorded_with_no_points(monkeypatch):
    from encdec.checks import guard
    monkeypatch.setattr(guard, "_snapshot", [])
    monkeypatch.setattr(guard, "_methods", [])
    guard.take()
    monkeypatch.setattr(np, "isclose", lambda *args, **kwargs: True)
    score, text, record = checked(L.check_softmax, lambda x, axis=-1: x)
    assert score == record["score"] == 0
    assert record["status"] == "tampered" and "numpy.isclose" in record["message"]
    assert record["parts"] == [] and record["misconceptions"] == []


def test_a_check_that_fails_itself_scores_zero_with_status_error_and_raises_nothing(capsys):
    demo = Graded("9.9", "demo", "demo", points=2)

    @demo.checked_by
    def check_demo(answer=None, *, points=None, hidden=False):
        raise KeyError("boom")

    with collected() as records:
        score = check_demo(hidden=True)
    out = capsys.readouterr()
    assert score == 0 and out.err == ""
    assert "the check itself failed (KeyError: 'boom')" in out.out
    assert (records[0]["status"], records[0]["points"], records[0]["hidden"]) == ("error", 2, True)


def test_quizzes_record_one_part_or_one_part_per_item():
    from encdec.checks import lesson03 as L3
    _, _, order = checked(L.check_attention_order, L.ATTENTION_ORDER.answer)
    assert [p["label"] for p in order["parts"]] == ["the order of the steps"] and order["score"] == 1
    answer = {**L3.TAG_QUIZ.answer, 1: "STATE"}
    score, _, tags = checked(L3.check_quantity_tags, answer)
    assert len(tags["parts"]) == len(L3.TAG_QUIZ.items) and [p["passed"] for p in tags["parts"]].count(False) == 1
    assert tags["score"] == score and tags["exercise"] == "3.6" and tags["points"] == 3
    assert checked(L3.check_quantity_tags)[2]["status"] == "no answer"
    assert checked(L3.check_quantity_tags, ["LEARNED"])[2]["status"] == "error"


KERNEL_CELLS = [
    """import numpy as np
from encdec.checks.lesson01 import check_softmax

def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)

check_softmax(hidden=True)""",
    """from encdec.checks.record import collected
with collected() as records:
    check_softmax()
len(records)""",
]


@pytest.mark.slow
def test_in_a_kernel_the_record_is_displayed_beside_the_report_and_the_cell_value_is_the_score():
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in KERNEL_CELLS]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    streams = [o for o in outputs if o.output_type == "stream"]
    displays = [o for o in outputs if o.output_type == "display_data"]
    results = [o for o in outputs if o.output_type == "execute_result"]
    assert all(o.name == "stdout" for o in streams), "nothing may reach stderr"
    assert "".join(o.text for o in streams).startswith("Exercise 1.1 · softmax: 1.5 / 3 points")
    assert len(displays) == 1 and set(displays[0].data) == {MIME, "text/plain"}
    assert displays[0].data["text/plain"] == "Exercise 1.1 · 1.5 / 3 points"
    record = displays[0].data[MIME]
    assert record["score"] == 1.5 and [m["key"] for m in record["misconceptions"]] == ["no_max_shift"]
    assert outputs.index(displays[0]) < outputs.index(results[0]) and float(results[0].data["text/plain"]) == 1.5
    collected_outputs = nb.cells[1].outputs
    assert not [o for o in collected_outputs if o.output_type == "display_data"]
    assert [o.data["text/plain"] for o in collected_outputs if o.output_type == "execute_result"] == ["1"]


class _Refuses(Exception):
    pass


class _HostileSoftmax:
    """A callable whose signature raises when read, and that writes into its input."""

    @property
    def __signature__(self):
        raise _Refuses("signature")

    def __call__(self, x, axis=-1):
        x -= x.max(axis=axis, keepdims=True)
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)


def test_an_answer_whose_signature_raises_still_loses_the_group_with_a_reason():
    score, text = run(L.check_softmax, _HostileSoftmax())
    assert score == 0 and "changed `argument 1` in place" in text, text


def test_calling_another_reference_is_not_called_the_exercises_own_function():
    """5.3 asks for the post-norm block; an answer that calls the library's pre-norm DecoderBlock is told that it
    calls a reference it may not, not that it is the function the exercise asks for."""
    import contextlib
    import io
    from encdec.checks import lesson05
    from encdec.layers import rms_norm

    def post_norm_through_the_block(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        out, weights = block(x, encoder_output, self_attn_mask, cross_attn_mask)
        return rms_norm(out, block.norm3_gamma), weights
    with contextlib.redirect_stdout(io.StringIO()) as out:
        score = lesson05.check_decoder_block_post_norm(post_norm_through_the_block, hidden=True)
    text = out.getvalue()
    assert score == 0 and "`DecoderBlock.__call__`" in text, text
    assert "which this exercise does not let you call" in text and "the very function" not in text, text


def test_an_array_returned_again_on_every_call_costs_the_part():
    """A cache hands every caller the same array: a caller that changes it changes every later result. The
    lessons' functions return new arrays; a fresh array each call keeps full marks."""
    import functools
    from encdec.checks import lesson03

    @functools.lru_cache(maxsize=None)
    def create_causal_mask(seq_len):
        return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)

    def fresh(seq_len):
        return np.triu(np.full((seq_len, seq_len), -np.inf), k=1)
    score, text = run(lesson03.check_create_causal_mask, create_causal_mask)
    assert score < 2 and "returned the very same array on two calls" in text, text
    score, text = run(lesson03.check_create_causal_mask, fresh)
    assert score == 2, text
