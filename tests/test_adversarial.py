"""Students who attack the grader, graded in the same class as honest students.

Each row of grading_class.adversaries() states what the student did and what grading must
record: the score it earns without the attack, or a zero with the right status.
"""

import pytest

from grading_class import FIRST
from test_grading_e2e import check_row

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]

ADVERSARIES = ["assert-true", "deleted-test", "stripped-metadata", "raised-points", "hidden-removed",
               "loop-in-answer", "loop-top-level", "sigint-ignored", "uninterruptible", "kernel-exits",
               "kernel-crashes", "sys-exit", "huge-output", "not-json", "empty-file", "calls-reference",
               "patches-numpy", "replaces-checker", "edits-reference", "patches-at-runtime",
               "writes-library", "writes-gradebook", "wrong-name", "lesson-missing"]


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
