"""Students who attack the grader, graded in the same class as honest students.

Each row of grading_class.adversaries() states what the student did and what grading must
record: the score it earns without the attack, or a zero with the right status. Beside them,
students whose correct answers only look like tampering (grading_class.idiom_students()) keep
every point: the static audit judges a statement by what it touches.
"""

import pytest

from grading_class import FIRST, idiom_students
from test_grading_e2e import check_row

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]

ADVERSARIES = ["assert-true", "deleted-test", "stripped-metadata", "raised-points", "hidden-removed",
               "loop-in-answer", "loop-top-level", "sigint-ignored", "uninterruptible", "kernel-exits",
               "kernel-crashes", "sys-exit", "huge-output", "not-json", "empty-file", "calls-reference",
               "patches-numpy", "replaces-checker", "edits-reference", "patches-by-vars", "patches-at-runtime",
               "exec-hidden", "setattr-import", "globals-alias", "getattr-chain", "ipython-hook", "results-hidden",
               "writes-library", "writes-gradebook", "writes-outside", "writes-own-folder", "wrong-name",
               "lesson-missing"]
IDIOM_ROWS = [(student, lesson) for student, lesson, _, _ in idiom_students()]


@pytest.mark.parametrize("student", ADVERSARIES)
def test_adversary_is_graded_as_expected(graded_class, student):
    row = check_row(graded_class, student, FIRST)
    assert float(row["max_score"]) == float(graded_class["rows"][("solution", FIRST)]["max_score"])


@pytest.mark.parametrize("student", ["solution", "one-mistake", "mutant-1", "alternative"])
def test_honest_students_are_unaffected_by_adversaries(graded_class, student):
    check_row(graded_class, student, FIRST)


def test_no_tampering_leaves_a_trace_in_the_course(graded_class):
    for lib in (graded_class["root"] / "lib", graded_class["out"] / ".work" / "course" / "lib"):
        assert "raise SystemExit" not in (lib / "encdec" / "attention.py").read_text()


def test_stripped_or_inflated_test_cells_count_their_real_points(graded_class):
    rows = graded_class["rows"]
    for student in ("stripped-metadata", "raised-points"):
        assert float(rows[(student, FIRST)]["max_score"]) == float(rows[("solution", FIRST)]["max_score"])


@pytest.mark.parametrize("student, lesson", IDIOM_ROWS)
def test_correct_answers_written_with_idioms_keep_every_point(graded_class, student, lesson):
    """setattr, vars() and getattr on the student's own objects, globals() read, eval of a constant,
    importlib.import_module("numpy"), files in the notebook's folder and a temporary one, frozen
    dataclasses, __slots__, closures…: full marks (and a wrong answer that uses setattr is graded:
    its slip costs what the checker says)."""
    row = check_row(graded_class, student, lesson)
    assert row["status"] == "graded"


def test_a_wrong_answer_that_uses_setattr_has_its_slip_named(graded_class):
    lessons = [lesson for student, lesson in IDIOM_ROWS if student == "setattr-slip"]
    if not lessons:
        pytest.skip("the class does not grade Lesson 10 (COURSE_LESSONS)")
    html = (graded_class["out"] / "feedback" / "setattr-slip" / lessons[0] / f"{lessons[0]}.html").read_text()
    assert "replaced by a new nn.Parameter" in html


def test_tampering_shows_the_instructor_the_evidence_and_the_student_the_rule(graded_class):
    row = graded_class["rows"][("patches-numpy", FIRST)]
    assert row["status"].startswith("tampered: cell ") and "np.allclose = lambda *a, **k: True" in row["status"]
    page = (graded_class["out"] / "feedback" / "patches-numpy" / FIRST / f"{FIRST}.html").read_text()
    assert "Your notebook replaces <code>np.allclose</code> (cell " in page
    assert "The tests compare your answers with NumPy" in page and "scores 0" in page


def test_what_the_audit_could_not_resolve_is_a_caution_in_the_report(graded_class):
    section = (graded_class["out"] / "report.md").read_text().split("## Cautions from the audit")[1].split("\n## ")[0]
    for student in ("patches-at-runtime", "exec-hidden", "results-hidden", "writes-library", "writes-gradebook"):
        assert f"| {student} | {FIRST} |" in section, student
    assert "| solution |" not in section and "| idioms |" not in section
