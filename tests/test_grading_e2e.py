"""End to end, through real nbgrader and a real gradebook: a class of students graded by the
course's driver (`make autograde`), then the self-learner's `make grade` and `make validate`."""

import contextlib
import io
import subprocess
import sys

import pytest

from encdec.mistakes import CATALOG
from nbtools import (COURSE, ROOT, autograde, cell_score, checks_module, course_copy, graded_cells, inject,
                     lessons, release, solution, write_submission)

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow, pytest.mark.xdist_group("nbgrader")]
LESSONS = lessons()


def unit_score(exercise, impl):
    """What the checker gives this answer outside nbgrader, hidden cases included."""
    with contextlib.redirect_stdout(io.StringIO()):
        return exercise.checker(exercise.answer_from(impl), points=exercise.points, hidden=True)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    submitted = tmp_path_factory.mktemp("submitted")
    out = tmp_path_factory.mktemp("out")
    expected = {}
    for lesson in LESSONS:
        sol, module = solution(lesson), checks_module(lesson)
        full = {c.metadata.nbgrader.grade_id: float(c.metadata.nbgrader.points) for c in graded_cells(sol)}
        write_submission(submitted, "solution", lesson, sol)
        expected[("solution", lesson)] = full
        write_submission(submitted, "untouched", lesson, release(lesson))
        expected[("untouched", lesson)] = {k: 0.0 for k in full}
        # one wrong answer, in the first exercise only
        first = module.EXERCISES[0]
        mistake = CATALOG[first.name][0]
        write_submission(submitted, "one-mistake", lesson, inject(sol, first, mistake.impl))
        expected[("one-mistake", lesson)] = {**full, f"test_{first.answer_cell}": unit_score(first, mistake.impl)}
        # a different catalog mistake in every exercise at once: each loses only its own points
        nb, scores = sol, dict(full)
        for i, ex in enumerate(module.EXERCISES):
            mistakes = CATALOG[ex.name]
            mistake = mistakes[i % len(mistakes)]
            nb = inject(nb, ex, mistake.impl)
            scores[f"test_{ex.answer_cell}"] = unit_score(ex, mistake.impl)
        write_submission(submitted, "all-wrong", lesson, nb)
        expected[("all-wrong", lesson)] = scores
    write_submission(submitted, "broken", LESSONS[0], "{ this is not a notebook")
    root = course_copy(tmp_path_factory.mktemp("course"))
    code, rows, output = autograde(submitted, out, jobs=2, root=root)
    return {"code": code, "rows": rows, "output": output, "expected": expected, "out": out}


def test_every_submission_has_a_row(graded_class):
    rows = graded_class["rows"]
    for (student, lesson) in graded_class["expected"]:
        assert (student, lesson) in rows, f"no row for {student}/{lesson}\n{graded_class['output'][-3000:]}"
    assert set(r["status"] for r in rows.values()) >= {"graded"}


@pytest.mark.parametrize("student", ["solution", "untouched", "one-mistake", "all-wrong"])
def test_scores_per_cell(graded_class, student):
    rows = graded_class["rows"]
    for lesson in LESSONS:
        row = rows[(student, lesson)]
        assert row["status"] == "graded", row
        for grade_id, score in graded_class["expected"][(student, lesson)].items():
            assert cell_score(row, lesson, grade_id) == pytest.approx(score), (
                f"{student}/{lesson}/{grade_id}: expected {score}, got {row[f'{lesson[:2]}:{grade_id}']}")
        assert float(row["score"]) == pytest.approx(sum(graded_class["expected"][(student, lesson)].values()))


def test_mistakes_really_cost_points(graded_class):
    rows = graded_class["rows"]
    for lesson in LESSONS:
        assert float(rows[("all-wrong", lesson)]["score"]) < float(rows[("solution", lesson)]["score"])
        assert float(rows[("one-mistake", lesson)]["score"]) < float(rows[("solution", lesson)]["max_score"])


def test_a_broken_submission_is_recorded_as_failed_and_the_rest_are_graded(graded_class):
    rows = graded_class["rows"]
    broken = rows[("broken", LESSONS[0])]
    assert broken["status"].startswith("failed: not valid JSON"), broken
    assert float(broken["score"]) == 0
    for lesson in LESSONS[1:]:
        assert rows[("broken", lesson)]["status"].startswith("missing"), rows[("broken", lesson)]
    assert graded_class["code"] != 0, "a failed submission must make the run exit non-zero"


def test_feedback_has_the_diagnosis_and_no_hidden_test_source(graded_class):
    out = graded_class["out"]
    lesson = LESSONS[0]
    html = (out / "feedback" / "one-mistake" / lesson / f"{lesson}.html").read_text()
    first = checks_module(lesson).EXERCISES[0]
    assert CATALOG[first.name][0].diagnosis.split(".")[0].replace("'", "&#39;")[:40] in html.replace("&#x27;", "&#39;")
    assert "BEGIN HIDDEN TESTS" not in html and "hidden = True" not in html


def test_self_learner_table_names_the_misconception(tmp_path):
    course = tmp_path / "course"
    lesson = LESSONS[0]
    first = checks_module(lesson).EXERCISES[1]
    mistake = CATALOG[first.name][0]
    (course / lesson).mkdir(parents=True)
    import nbformat
    nbformat.write(inject(release(lesson), first, mistake.impl), str(course / lesson / f"{lesson}.ipynb"))
    root = course_copy(tmp_path / "root")
    proc = subprocess.run([sys.executable, str(root / "autograder" / "grade.py"), "self", "--course", str(course / ""),
                           "--out", str(tmp_path / "self"), "--lesson", lesson[:2]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"Lesson {lesson}:" in proc.stdout
    assert mistake.diagnosis[:50] in proc.stdout, proc.stdout
    assert "not implemented yet" in proc.stdout
    assert (tmp_path / "self" / "feedback" / "me" / lesson / f"{lesson}.html").exists()


def test_validate_fails_on_the_untouched_release_and_passes_on_solutions(tmp_path):
    lesson = LESSONS[0]
    grade = [sys.executable, str(ROOT / "autograder" / "grade.py"), "validate"]
    proc = subprocess.run(grade + [str(COURSE / lesson / f"{lesson}.ipynb")], capture_output=True, text=True)
    assert proc.returncode == 1 and "FAIL" in proc.stdout
    sol = tmp_path / f"{lesson}.ipynb"
    sol.write_text((ROOT / "solutions" / lesson / f"{lesson}.ipynb").read_text())
    proc = subprocess.run(grade + [str(sol)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
