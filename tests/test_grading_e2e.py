"""End to end, through real nbgrader and a real gradebook: the fixture class graded by the
course's driver (`make autograde`), then the self-learner's `make grade` and `make validate`."""

import csv
import subprocess
import sys

import nbformat
import pytest

from encdec.mistakes import CATALOG
from grading_class import FIRST, LESSONS
from nbtools import (COURSE, ROOT, autograde, cell_score, checks_module, course_copy, inject, release,
                     solution, write_submission)

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]


def check_row(graded_class, student, lesson):
    row = graded_class["rows"].get((student, lesson))
    assert row is not None, f"no row for {student}/{lesson}\n{graded_class['output'][-3000:]}"
    exp = graded_class["expected"][(student, lesson)]
    if "cells" in exp:
        assert row["status"].startswith(exp.get("status", "graded")), (student, lesson, row["status"])
        for grade_id, score in exp["cells"].items():
            got = cell_score(row, lesson, grade_id)
            assert got == pytest.approx(score), f"{student}/{lesson}/{grade_id}: expected {score}, got {got}"
        assert float(row["score"]) == pytest.approx(sum(exp["cells"].values()))
    else:
        assert row["status"].startswith(exp["status"]), f"{student}/{lesson}: {row['status']!r}"
        assert float(row["score"]) == 0
    return row


def test_every_submission_has_exactly_one_row(graded_class):
    rows = graded_class["rows"]
    assert set(rows) >= set(graded_class["expected"])
    with open(graded_class["out"] / "grades.csv") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == len({(r["student_id"], r["assignment"]) for r in lines})
    assert {"assignment", "student_id", "score", "max_score", "status"} <= set(lines[0])


@pytest.mark.parametrize("student", ["solution", "untouched", "one-mistake", "mutant-1"])
def test_scores_per_cell(graded_class, student):
    for lesson in LESSONS:
        check_row(graded_class, student, lesson)


def test_mistakes_really_cost_points(graded_class):
    rows = graded_class["rows"]
    for lesson in LESSONS:
        assert float(rows[("mutant-1", lesson)]["score"]) < float(rows[("solution", lesson)]["score"])
        assert float(rows[("one-mistake", lesson)]["score"]) < float(rows[("solution", lesson)]["max_score"])


def test_a_broken_submission_does_not_stop_the_run_and_the_run_says_so(graded_class):
    check_row(graded_class, "not-json", FIRST)
    check_row(graded_class, "solution", FIRST)
    assert graded_class["code"] != 0, "a failed submission must make the run exit non-zero"
    assert "not-json/01" in graded_class["output"]


def test_feedback_has_the_diagnosis_and_no_hidden_test_source(graded_class):
    out = graded_class["out"]
    html = (out / "feedback" / "one-mistake" / FIRST / f"{FIRST}.html").read_text()
    first = checks_module(FIRST).EXERCISES[0]
    words = CATALOG[first.name][0].diagnosis.split(".")[0].split("(")[0].strip()[:30]
    assert words in html
    assert "BEGIN HIDDEN TESTS" not in html and "hidden = True" not in html
    for lesson in LESSONS:
        assert (out / "feedback" / "solution" / lesson / f"{lesson}.html").exists()


def test_the_submitted_files_are_never_modified(graded_class):
    sol = graded_class["submitted"] / "solution" / FIRST / f"{FIRST}.ipynb"
    assert nbformat.read(str(sol), as_version=4) == solution(FIRST)
    assert (graded_class["submitted"] / "not-json" / FIRST / f"{FIRST}.ipynb").read_text() == "{ not a notebook"


def test_regrading_a_changed_submission_gives_new_scores_for_every_cell(graded_class, tmp_path):
    """Grade, then change the notebook (a wrong answer, its test cell deleted) and grade again
    into the same output: every cell's score is the new one, none is left from the first run."""
    out, submitted = tmp_path / "out", tmp_path / "submitted"
    write_submission(submitted, "regrade", FIRST, solution(FIRST))
    _, rows, _ = autograde(submitted, out, jobs=1, root=graded_class["root"])
    assert float(rows[("regrade", FIRST)]["score"]) == float(rows[("regrade", FIRST)]["max_score"])
    first = checks_module(FIRST).EXERCISES[0]
    wrong = inject(solution(FIRST), first, CATALOG[first.name][2].impl)
    test_id = f"test_{first.answer_cell}"
    wrong.cells = [c for c in wrong.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != test_id]
    write_submission(submitted, "regrade", FIRST, wrong)
    _, rows, _ = autograde(submitted, out, jobs=1, root=graded_class["root"])
    row = rows[("regrade", FIRST)]
    from grading_class import unit_score
    assert cell_score(row, FIRST, test_id) == pytest.approx(unit_score(first, CATALOG[first.name][2].impl))
    assert cell_score(row, FIRST, test_id) < first.points


def test_parallel_grading_equals_sequential(graded_class, tmp_path):
    submitted = tmp_path / "submitted"
    for student in ("one-mistake", "mutant-2"):
        for lesson in LESSONS[:2]:
            src = graded_class["submitted"] / student / lesson / f"{lesson}.ipynb"
            write_submission(submitted, student, lesson, src.read_text())
    _, rows, _ = autograde(submitted, tmp_path / "out", jobs=1, root=graded_class["root"])
    for student in ("one-mistake", "mutant-2"):
        for lesson in LESSONS[:2]:
            key = (student, lesson)
            assert rows[key] == graded_class["rows"][key], f"{key} differs between JOBS=1 and JOBS=2"


def test_self_learner_table_names_the_misconception(tmp_path):
    course = tmp_path / "course"
    first = checks_module(FIRST).EXERCISES[1]
    mistake = CATALOG[first.name][0]
    (course / FIRST).mkdir(parents=True)
    nbformat.write(inject(release(FIRST), first, mistake.impl), str(course / FIRST / f"{FIRST}.ipynb"))
    root = course_copy(tmp_path / "root")
    proc = subprocess.run([sys.executable, "-m", "autograder", "self", "--course", str(course),
                           "--out", str(tmp_path / "self"), "--lesson", FIRST[:2]], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"Lesson {FIRST}:" in proc.stdout
    assert mistake.diagnosis[:50] in proc.stdout, proc.stdout
    assert "not implemented yet" in proc.stdout
    assert (tmp_path / "self" / "feedback" / "me" / FIRST / f"{FIRST}.html").exists()


def test_validate_fails_on_the_untouched_release_and_passes_on_solutions(tmp_path):
    grade = [sys.executable, "-m", "autograder", "validate"]
    proc = subprocess.run(grade + [str(COURSE / FIRST / f"{FIRST}.ipynb")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1 and "FAIL" in proc.stdout
    sol = tmp_path / f"{FIRST}.ipynb"
    sol.write_text((ROOT / "solutions" / FIRST / f"{FIRST}.ipynb").read_text())
    proc = subprocess.run(grade + [str(sol)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_cohort_report_shows_distributions_and_misconceptions(graded_class):
    report = (graded_class["out"] / "report.md").read_text()
    for lesson in LESSONS:
        assert f"| {lesson} |" in report
    first = checks_module(FIRST).EXERCISES[0]
    assert CATALOG[first.name][0].diagnosis[:60] in report  # the one-mistake student's misconception
    assert "not-json" in report and "## Not graded" in report


def test_demo_cells_do_not_change_any_score(graded_class, tmp_path):
    """Grading skips the [demo] cells; with them run, every cell's score is the same."""
    submitted = tmp_path / "submitted"
    for lesson in LESSONS:
        src = graded_class["submitted"] / "mutant-1" / lesson / f"{lesson}.ipynb"
        write_submission(submitted, "mutant-1", lesson, src.read_text())
    _, rows, output = autograde(submitted, tmp_path / "out", jobs=2, root=graded_class["root"],
                                extra=["--keep-demos"], env={"GRADE_CELL_TIMEOUT": "180"})
    for lesson in LESSONS:
        assert rows[("mutant-1", lesson)] == graded_class["rows"][("mutant-1", lesson)], (lesson, output[-2000:])
