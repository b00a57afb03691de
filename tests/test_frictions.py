"""The frictions a new user hit (issue 16, item 4), fixed and kept fixed:
- an ordering or quiz stub shows the variable it must define, and an unanswered one scores 0 with
  "not answered yet", not a NameError;
- the grader's message for a missing answer is not the practice advice "run the cell";
- `make grade LESSON=4` (and 04, 4,5) picks lessons, and a lesson that does not exist is named;
- the `make grade` table says that hidden cases are included, and how many visible and hidden
  cases failed; the feedback paths it prints are real;
- a test cell's result reads "0.75 / 3 points" while its plain text stays the number nbgrader reads.
Grading through real nbgrader: tests/test_frictions_grading.py.
"""

import contextlib
import importlib.util
import io
import pickle
import re
import subprocess

import nbformat
import pytest
from IPython.core.formatters import DisplayFormatter
from nbgrader.preprocessors import ClearSolutions
from nbgrader.utils import determine_grade

from autograder import cli, course, reports
from autograder.pipeline import Outputs, Row
from encdec.checks import lesson01 as L1
from encdec.checks import mode
from encdec.checks.display import Score
from encdec.checks.exercises import declared
from encdec.checks.quiz import Quiz
from encdec.checks.record import collected
from nbtools import ROOT, cell, checks_module, lessons, solution
from test_grading_records import MAXIMA, graded, graded_cell, record

_spec = importlib.util.spec_from_file_location("nbbuild", ROOT / "tools" / "nbbuild.py")
nbbuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbbuild)

STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # autograder/nbgrader_config.py, ClearSolutions.code_stub


def checked(checker, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), collected() as records:
        score = checker(*args, **kwargs)
    return score, out.getvalue(), records[-1]


def data_answers():
    """(lesson, exercise) for every answer given as data: the orderings and the tag quiz."""
    return [(lesson, ex) for lesson in lessons() for ex in declared(checks_module(lesson)) if isinstance(ex, Quiz)]


def released_stub(lesson, ex):
    """The answer cell as nbgrader's release (ClearSolutions, the course's stub) leaves it."""
    nb = nbformat.from_dict(solution(lesson))
    nb.cells = [cell(nb, ex.answer_cell)]
    nb, _ = ClearSolutions(code_stub={"python": STUB}, enforce_metadata=True).preprocess(nb, {})
    return nb.cells[0].source


# -- 1. the stubs of the orderings and the quiz ------------------------------------------------------------
def test_every_lesson_has_ordering_answers_and_lesson_3_its_quiz():
    names = {ex.name for _, ex in data_answers()}
    assert "block_order" in names and "quantity_tags" in names and len(names) >= 9, names


@pytest.mark.parametrize("lesson, ex", data_answers(), ids=lambda x: getattr(x, "name", x))
def test_the_released_stub_shows_the_variable_and_scores_0_not_answered_yet(lesson, ex):
    stub = released_stub(lesson, ex)
    first, *rest = stub.splitlines()
    assert re.match(rf"{ex.name} = [\[{{]", first) and "..." in first and "# your answer" in stub, stub
    assert stub.endswith(STUB) and "### BEGIN SOLUTION" not in stub, stub
    namespace = {}
    with pytest.raises(NotImplementedError):  # the cell, run as released, still raises
        exec(stub, namespace)
    score, text, rec = checked(ex.checker, namespace[ex.name], points=ex.points)
    assert score == 0 and rec["status"] == "not implemented", text
    assert "not answered yet" in text and f"`{ex.name}`" in text and "NameError" not in text


def test_an_ordering_partly_answered_or_with_the_placeholder_left_in_scores_0_and_says_so():
    from encdec.checks import lesson05 as L5
    score, text, _ = checked(L5.check_block_order, [3, 5, ..., 4, 2], points=1)
    assert score == 0 and "still holds `...`" in text
    assert checked(L5.check_block_order, L5.BLOCK_ORDER.answer, points=1)[0] == 1


def test_a_quiz_partly_answered_counts_the_items_given():
    from encdec.checks import lesson03 as L3
    right = L3.TAG_QUIZ.answer
    half = {k: (v if i % 2 == 0 else ...) for i, (k, v) in enumerate(right.items())}
    score, text, rec = checked(L3.check_quantity_tags, half, points=3)
    given = sum(v is not ... for v in half.values())
    assert score == pytest.approx(3 * given / len(right)), text
    assert rec["status"] == "checked" and "NameError" not in text and "Traceback" not in text
    assert text.count("no tag given for this item") == len(right) - given, text


def test_the_build_refuses_a_data_answer_cell_without_its_placeholder(tmp_path):
    source = ROOT / "authoring" / "05_block_ordering.py"
    text = source.read_text()
    line = "block_order = [...]  # your answer: the step numbers in order\n"
    assert line in text
    path = tmp_path / source.name
    path.write_text(text.replace(line, ""))
    with pytest.raises(nbbuild.BuildError, match=r"Exercise 5\.1 .*must show the variable"):
        nbbuild.build(path)


# -- 2. the grading message is not the practice advice -------------------------------------------------------
def test_a_missing_answer_is_run_the_cell_when_practising_and_missing_from_the_notebook_when_grading(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(mode, "_grading", False)
    _, practising, rec = checked(L1.check_softmax, points=3)
    assert rec["status"] == "no answer"
    assert "Run the cell that defines it" in practising and "submitted notebook" not in practising
    monkeypatch.setattr(mode, "_grading", True)  # what the grader's kernels do first (autograder/nbgrader_config.py)
    _, grading, rec = checked(L1.check_softmax, points=3)
    assert rec["status"] == "no answer" and grading != practising
    assert "no function named `softmax` is defined in the submitted notebook" in grading
    assert "Run the cell" not in grading and "run this test again" not in grading
    monkeypatch.setattr(mode, "_grading", False)
    for execution in ("validate", "autograde"):  # nbgrader's own flag, so the Validate button too
        monkeypatch.setenv("NBGRADER_EXECUTION", execution)
        assert "submitted notebook" in checked(L1.check_softmax, points=3)[1]


def test_the_quiz_says_the_same_when_its_answer_is_missing(monkeypatch):
    from encdec.checks import lesson05 as L5
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(mode, "_grading", True)
    text = checked(L5.check_block_order, points=1)[1]
    assert "no answer named `block_order` is defined in the submitted notebook" in text and "Run the" not in text


def test_the_graders_kernels_start_in_grading_mode():
    config = (ROOT / "autograder" / "nbgrader_config.py").read_text()
    assert "_course_mode.start_grading()" in config


# -- 4. which lessons --lesson names --------------------------------------------------------------------------
@pytest.mark.parametrize("specs, expected", [
    (["4"], ["04"]), (["04"], ["04"]), (["4,5"], ["04", "05"]), (["5", "4"], ["04", "05"]),
    (["4 5"], ["04", "05"]), (["04_cross_attention"], ["04"]), (["1"], ["01"]), (["10"], ["10"]),
    (None, [f"{n:02d}" for n in range(1, 11)]),
])
def test_lessons_are_named_by_number_with_or_without_the_zero(specs, expected):
    assert [lesson[:2] for lesson in course.chosen(specs)] == expected


def test_a_lesson_that_does_not_exist_is_named_with_the_list_of_lessons(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["self", "--lesson", "4,11"])
    message = str(stop.value)
    assert message.startswith("error: no lesson 11.") and "04_cross_attention" in message and "10_capstone" in message
    with pytest.raises(ValueError, match="no lesson 0x"):
        course.chosen(["0x"])


def test_make_grade_passes_lesson_to_the_grader():
    shown = subprocess.run(["make", "-n", "grade", "LESSON=4,5"], cwd=ROOT, capture_output=True, text=True).stdout
    assert '-m autograder self --lesson "4,5"' in shown, shown


# -- 3 and 5. the make grade table: cases and feedback paths ---------------------------------------------------
def test_the_table_says_hidden_cases_are_included_and_counts_failed_cases(tmp_path, capsys):
    out = Outputs.under(tmp_path)
    row = graded(out, "me", [graded_cell("test_softmax", 3, 3.0, rec=record("1.1", "softmax", 3, 3.0, parts=[
        {"label": "each row", "weight": 1.0, "passed": True, "message": None,
         "cases": [{"label": "a", "hidden": False, "outcome": "passed"},
                   {"label": "b", "hidden": True, "outcome": "passed"}]}])),
        graded_cell("test_scaled_dot_product_attention", 4, 2.25, rec=record())])
    reports.print_table([row], MAXIMA, out)
    shown = capsys.readouterr().out
    assert "Lesson 01_attention: 5.25 / 7 points, hidden grading cases included" in shown
    assert "cases failed" in shown and "Hidden cases:" in shown
    softmax = next(line for line in shown.splitlines() if "1.1 softmax" in line)
    assert "0 of 1 visible, 0 of 1 hidden" in softmax
    attention = next(line for line in shown.splitlines() if "1.2 scaled" in line)
    assert "0 of 3 visible (1 not run), 1 of 1 hidden" in attention


def test_the_feedback_pages_printed_are_the_real_files(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = Outputs.under(tmp_path / ".selfgrade")
    rows = [Row(lesson, "me", "graded") for lesson in ("01_attention", "05_block_ordering")] + \
        [Row("02_encoder", "me", "missing: no submission for this lesson")]
    for r in rows[:2]:
        page = out.feedback / "me" / r.assignment / f"{r.assignment}.html"
        page.parent.mkdir(parents=True)
        page.write_text("<html></html>")
    reports.print_feedback_pages(rows, out)
    shown = capsys.readouterr().out
    assert "<lesson>" not in shown and "02_encoder" not in shown
    for lesson in ("01_attention", "05_block_ordering"):
        assert f"  .selfgrade/feedback/me/{lesson}/{lesson}.html\n" in shown
        assert (tmp_path / ".selfgrade" / "feedback" / "me" / lesson / f"{lesson}.html").exists()


# -- 6. the score under a test cell --------------------------------------------------------------------------
def test_a_score_is_the_plain_number_for_nbgrader_and_points_for_the_reader():
    score = Score(0.75, 3)
    data, _ = DisplayFormatter().format(score)
    assert data["text/plain"] == "0.75" and "0.75 / 3 points" in data["text/html"]
    assert score == 0.75 and isinstance(score, float) and repr(score) == "0.75" and str(score) == "0.75"
    assert Score(1, 1).text() == "1 / 1 point" and Score(2.25, 4.0).text() == "2.25 / 4 points"
    copy = pickle.loads(pickle.dumps(score))
    assert copy == 0.75 and copy.points == 3
    # nbgrader reads the partial credit from the text/plain of the cell's result
    c = nbformat.v4.new_code_cell("check()")
    c.metadata["nbgrader"] = {"grade": True, "solution": False, "points": 3, "grade_id": "t"}
    c.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    assert determine_grade(c) == (0.75, 3)


def test_a_checker_returns_a_score_with_its_points():
    score, _, rec = checked(L1.check_softmax, lambda x, axis=-1: x, points=3)
    assert isinstance(score, Score) and score.points == 3 and float(score) == rec["score"]
