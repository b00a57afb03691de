"""The learning gain on a simulated class of 12 students (Lesson 1, six concepts), against a hand
computation: the cohort report's <pre>, <post>, <g>, n and lowest concepts, each student's gain on
their page, and the `make grade` table. Once on records the real checkers wrote, placed in graded
notebooks as the grader reads them (fast); once through the real grader, nbgrader in the sandbox,
which also shows that nbgrader takes a 0-point graded cell end to end (release, autograde, the
gradebook, the feedback, grades.csv)."""

import csv
import html
import re
import subprocess
import sys

import nbformat
import pytest

from autograder import feedback_pages, gains, reports
from autograder.pipeline import Outputs, Row
from encdec.checks.record import collected
from nbtools import autograde, cell, course_copy, release, solution, write_submission
from test_grading_records import graded_cell

LESSON = "01_attention"
pytestmark = pytest.mark.lesson01
ALL = set(range(1, 7))

# student: (questions right before, after; None: the check left as `...`), and which were answered
# before when not all of them were. Questions are Lesson 1's six concepts, in order.
CLASS = {
    "s01": (set(), ALL), "s02": ({1, 2, 3}, ALL), "s03": (ALL, ALL), "s04": (ALL, {1, 2, 3, 4, 5}),
    "s05": ({1, 2}, {1, 2, 4, 5}), "s06": ({4}, {1, 2, 4}), "s07": ({1, 2, 4, 5}, {1, 2, 4, 5, 6}),
    "s08": ({1, 2, 5}, None), "s09": ({1, 2}, {1, 2, 4, 5, 6}), "s10": ({1, 4}, {2, 5}),
    "s11": ({1, 2, 4}, {1, 4}), "s12": ({5}, ALL),
}
ANSWERED_BEFORE = {"s09": {1, 2, 3}}

# By hand. Both checks taken: every student but s08, n = 11. Right before, in sixths: 0 3 6 6 2 1 4 2 2 3 1
# (sum 30); after: 6 6 6 5 4 3 5 5 2 2 6 (sum 50). <pre> = 30/66 = 0.4545, <post> = 50/66 = 0.7576,
# <g> = (20/66) / (36/66) = 0.5556. Right after the lesson, per concept, of 11: 10 10 5 10 9 6.
EXPECTED_ROW = {"n": "11", "pre": "0.45", "post": "0.76", "g": "0.56", "before only": "1", "after only": "0",
                "lowest": "`additive-mask` 5/11, `sinusoidal-pairs` 6/11, `order-blind` 9/11"}
EXPECTED_GAIN = {"s01": "1.00", "s02": "1.00", "s03": "—", "s04": "—", "s05": "0.50", "s06": "0.40", "s07": "0.50",
                 "s08": "—", "s09": "0.75", "s10": "0.00", "s11": "-0.33", "s12": "1.00"}
EXPECTED_TEXT = {"s04": ("6 / 6 (1.00)", "5 / 6 (0.83)"), "s08": ("3 / 6 (0.50)", "not taken"),
                 "s09": ("2 / 6 (0.33)", "5 / 6 (0.83)"), "s11": ("3 / 6 (0.50)", "2 / 6 (0.33)")}


def concept_checks():
    from encdec.checks import lesson01
    return lesson01.CONCEPTS


def wrong(item):
    return next(x for x in item.letters if x != item.answer) if item.options else item.answer + 10 * item.tolerance + 1


def answer(check, right, answered=None):
    """{number: answer} right on `right`, wrong elsewhere, `...` outside `answered`."""
    if right is None:
        return {n: ... for n in range(1, len(check.items) + 1)}
    answered = ALL if answered is None else answered
    return {n: (check.answer[n] if n in right else wrong(item)) if n in answered else ...
            for n, item in enumerate(check.items, start=1)}


def answers_of(student):
    before, after = concept_checks()
    right_before, right_after = CLASS[student]
    return answer(before, right_before, ANSWERED_BEFORE.get(student)), answer(after, right_after)


def source(name, value):
    return f"{name} = {{{', '.join(f'{n}: {v!r}' for n, v in value.items())}}}"


def report_row(report):
    section = report[report.index("## Concept checks"):]
    line = next(line for line in section.splitlines() if line.startswith(f"| {LESSON} |"))
    values = [x.strip() for x in line.strip("|").split("|")]
    return dict(zip(["lesson", "n", "pre", "post", "g", "before only", "after only", "lowest"], values))


def page_row(page):
    """(before, after, g) of the lesson in a student's page."""
    found = re.search(rf"<tr><td>{LESSON}</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>", page)
    return tuple(html.unescape(x) for x in found.groups())


def check_outputs(report, pages):
    row = report_row(report)
    assert {k: row[k] for k in EXPECTED_ROW} == EXPECTED_ROW, report
    for student, g in EXPECTED_GAIN.items():
        before, after, shown = page_row(pages[student])
        assert shown == g, (student, before, after, shown)
        if student in EXPECTED_TEXT:
            assert (before, after) == EXPECTED_TEXT[student], student


def test_the_hand_computation_is_the_formula():
    n, pre, post, g = 11, 30 / 66, 50 / 66, (50 / 66 - 30 / 66) / (1 - 30 / 66)
    assert (f"{pre:.2f}", f"{post:.2f}", f"{g:.2f}") == ("0.45", "0.76", "0.56") and n == len(CLASS) - 1
    assert gains.gain(1.0, 0.5) is None and gains.gain(None, 0.5) is None and gains.gain(0.5, None) is None
    assert gains.gain(0.5, 0.25) == pytest.approx(-0.5)


# -- on records the checkers wrote, read as the grader reads them -------------------------------------------------
@pytest.fixture
def simulated(tmp_path):
    """Graded notebooks holding the real checkers' records for every student, and their rows."""
    before, after = concept_checks()
    out, rows = Outputs.under(tmp_path), []
    maxima = {LESSON: {before.grade_id: 0.0, after.grade_id: 0.0}}
    for student in CLASS:
        cells = []
        for check, value in zip((before, after), answers_of(student)):
            with collected() as records:
                score = check.checker(value, points=0)
            cells.append(graded_cell(check.grade_id, 0, score, rec=records[-1]))
        path = out.graded_notebook(student, LESSON)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
        rows.append(Row(LESSON, student, "graded", cells={c.metadata.nbgrader.grade_id: 0.0 for c in cells},
                        score=0.0, max_score=0.0))
    return out, rows, maxima


def test_the_report_the_pages_and_the_table_equal_the_hand_computation(simulated, tmp_path, capsys):
    out, rows, maxima = simulated
    reports.write_report(rows, maxima, out, tmp_path / "report.md")
    feedback_pages.write_student_pages(rows, [], out.feedback, concepts=gains.by_student(rows, maxima, out))
    pages = {s: (out.feedback / s / "index.html").read_text() for s in CLASS}
    check_outputs((tmp_path / "report.md").read_text(), pages)
    reports.print_table([r for r in rows if r.student_id == "s09"], maxima, out)
    assert f"Lesson {LESSON}: before 2 / 6 (0.33), after 5 / 6 (0.83), gain 0.75" in capsys.readouterr().out


def test_a_record_that_disagrees_with_the_gradebook_is_not_counted(simulated, tmp_path):
    out, rows, maxima = simulated
    s01 = next(r for r in rows if r.student_id == "s01")
    s01.cells[concept_checks()[0].grade_id] = 1.0  # the gradebook says otherwise: the record is not trusted
    found = {g.student: g for g in gains.gains(rows, maxima, out)}
    assert found["s01"].before is None and found["s01"].after is not None and found["s01"].g is None
    reports.write_report(rows, maxima, out, tmp_path / "report.md")
    row = report_row((tmp_path / "report.md").read_text())
    assert (row["n"], row["after only"]) == ("10", "1")


def test_without_concept_checks_nothing_is_added(tmp_path, capsys):
    from test_grading_records import MAXIMA, graded, softmax_cell
    out = Outputs.under(tmp_path)
    row = graded(out, "bob", [softmax_cell()])
    reports.write_report([row], MAXIMA, out, tmp_path / "report.md")
    assert "No graded notebook holds a concept check yet." in (tmp_path / "report.md").read_text()
    reports.print_table([row], MAXIMA, out)
    assert "Concept checks" not in capsys.readouterr().out
    assert gains.html_lines([]) == []


# -- through the real grader ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    submitted, out = tmp_path_factory.mktemp("submitted"), tmp_path_factory.mktemp("out")
    before, after = concept_checks()
    for student in CLASS:
        nb = solution(LESSON)
        for check, value in zip((before, after), answers_of(student)):
            cell(nb, check.answer_cell).source = source(check.name, value)
        write_submission(submitted, student, LESSON, nb)
    root = course_copy(tmp_path_factory.mktemp("course"))
    code, rows, output = autograde(submitted, out, jobs=2, root=root, extra=("--lessons", "01"))
    return {"code": code, "rows": rows, "output": output, "out": out}


@pytest.mark.nbgrader
@pytest.mark.slow
def test_through_the_grader_the_report_and_the_pages_equal_the_hand_computation(graded_class):
    assert graded_class["code"] == 0, graded_class["output"]
    out = graded_class["out"]
    pages = {s: (out / "feedback" / s / "index.html").read_text() for s in CLASS}
    check_outputs((out / "report.md").read_text(), pages)


@pytest.mark.nbgrader
@pytest.mark.slow
def test_nbgrader_takes_the_0_point_cells_end_to_end(graded_class):
    from nbgrader.api import Gradebook
    before, after = concept_checks()
    out, rows = graded_class["out"], graded_class["rows"]
    full = sum(e.points for e in (*_module().EXERCISES, *_module().ORDERINGS))
    for student in CLASS:
        row = rows[(student, LESSON)]
        assert row["status"] == "graded" and float(row["max_score"]) == full and float(row["score"]) == full, row
        assert row[f"01:{before.grade_id}"] == "0" and row[f"01:{after.grade_id}"] == "0"
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gb:
        grades = {g.name: (g.auto_score, g.max_score) for g in gb.find_submission_notebook(LESSON, LESSON, "s01").grades
                  if g.cell_type == "code" and "concepts" in g.name}
    assert grades == {before.grade_id: (0.0, 0.0), after.grade_id: (0.0, 0.0)}
    page = html.unescape((out / "feedback" / "s01" / LESSON / f"{LESSON}.html").read_text())
    assert " ".join(after.items[0].explanation.split()) in " ".join(page.split())
    assert not any(" ".join(i.explanation.split()) in " ".join(page.split()) for i in before.items)
    assert "questions answered" in page and f"Exercise {before.number}" in page
    missing = html.unescape((out / "feedback" / "s08" / LESSON / f"{LESSON}.html").read_text())
    assert "not answered yet" in missing


def _module():
    from encdec.checks import lesson01
    return lesson01


@pytest.mark.nbgrader
@pytest.mark.slow
def test_make_grade_shows_the_self_learners_gain(tmp_path):
    """`python -m autograder self` (what `make grade LESSON=1` runs) on a release where only the two
    concept checks are answered: two of six right before, all six after."""
    root = course_copy(tmp_path / "root")
    mine = tmp_path / "course"
    before, after = concept_checks()
    nb = release(LESSON)
    cell(nb, before.answer_cell).source = source(before.name, answer(before, {1, 2}))
    cell(nb, after.answer_cell).source = source(after.name, answer(after, ALL))
    (mine / LESSON).mkdir(parents=True)
    nbformat.write(nb, str(mine / LESSON / f"{LESSON}.ipynb"))
    proc = subprocess.run([sys.executable, "-m", "autograder", "self", "--course", str(mine), "--out",
                           str(tmp_path / "self"), "--lesson", "1"], cwd=root, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Lesson {LESSON}: before 2 / 6 (0.33), after 6 / 6 (1.00), gain 1.00" in proc.stdout, proc.stdout
    with open(tmp_path / "self" / "grades.csv") as f:
        row = next(csv.DictReader(f))
    assert row[f"01:{before.grade_id}"] == "0" and row[f"01:{after.grade_id}"] == "0"
