"""Grades out to Canvas: `python -m autograder export` and nbgrader's `export` with the course's
CanvasExportPlugin write the gradebook as the CSV Canvas's gradebook import reads.

The class is recorded into a real nbgrader gradebook by the course's own recording code
(`CourseGradebook.record`, what `make autograde` calls after grading each notebook): nbgrader
sums the cells and applies its late-penalty step, nothing is executed, so it stays fast. Canvas's
layout is written out below from Canvas's documentation and its own exporter, not taken from the
module under test.
"""

import csv
import os
import subprocess
import sys

import pytest

from autograder import due, gradebook, lms_export, nbgrader_glue
from autograder.pipeline import Job, Row
from nbtools import ROOT, graded_cells, solution

L1, L4, L5 = "01_attention", "04_cross_attention", "05_block_ordering"  # 04: in the gradebook, not assigned
# Canvas's gradebook import layout ("How do I import grades in the Gradebook?", and the rows
# Canvas's own Export writes): five student columns, then one column per assignment, titled
# "Name" or "Name (Canvas assignment id)"; a second row "    Points Possible" with the maxima.
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_POSSIBLE = "    Points Possible"
L5_CANVAS_ID = "67890"
ROSTER = ("id,first_name,last_name,email,lms_user_id\n"
          "alice,Alice,Ames,,101\n"
          "erin,Erin,Eve,,105\n"
          "tia,Tia,Lee,,53f0a1c9e2\n"  # an LTI lms_user_id, not a Canvas user id
          'obriain,"Seán ""Shane""",Ó Briain,,\n')
# (student, lesson) -> the cells nbgrader records, or a status when it could not be graded
THIRD = 1 / 3
CLASS = {
    ("alice", L1): {"test_softmax": THIRD, "test_scaled_dot_product_attention": 4,
                    "test_sinusoidal_positions": 0.1 + 0.2, "test_attention_order": 1},
    ("alice", L5): {"test_block_order": 1, "test_DecoderBlock": 4, "test_decoder_block_post_norm": 2,
                    "test_cross_attention_params": 2},
    ("obriain", L1): {"test_softmax": 3, "test_scaled_dot_product_attention": 4,
                      "test_sinusoidal_positions": 2, "test_attention_order": 1},
    ("bob", L1): "failed: not valid JSON (JSONDecodeError: Expecting value)",
    ("bob", L5): {"test_block_order": 0, "test_DecoderBlock": 2.25, "test_decoder_block_post_norm": 0.1 * 3,
                  "test_cross_attention_params": 2},
    ("tia", L1): {"test_softmax": 1.5, "test_scaled_dot_product_attention": 4,
                  "test_sinusoidal_positions": 2, "test_attention_order": 0},
}
# What Canvas should read for each student: name, ID, SIS Login ID, then 01 and 05 (empty: not handed in)
EXPECTED = [
    ["Ames, Alice", "101", "alice", "5.63", "8"],  # 9 recorded, one cell overridden from 4 to 3
    ["bob", "", "bob", "0", "4.55"],  # not on the roster; lesson 01 could not be graded
    ["Eve, Erin", "105", "erin", "", ""],  # on the roster, handed in nothing
    ["Lee, Tia", "", "tia", "7.5", ""],
    ['Ó Briain, Seán "Shane"', "", "obriain", "10", ""],
]


def lesson_points(lesson):
    """The lesson's maximum, from the points of the source notebook's graded cells."""
    return sum(float(c.metadata.nbgrader.points) for c in graded_cells(solution(lesson)))


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def venv_env():
    return {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lms")
    out, snapshot = tmp / "out", tmp / "work" / "course"
    snapshot.mkdir(parents=True)
    out.mkdir()
    for folder in ("autograder", "solutions"):  # what generate_assignment reads, as a run's snapshot gives it
        (snapshot / folder).symlink_to(ROOT / folder)
    roster_path = tmp / "students.csv"
    roster_path.write_text(ROSTER, encoding="utf-8")
    ids_path = tmp / "canvas_assignments.csv"
    ids_path.write_text(f"name,canvas_assignment_id\n5,{L5_CANVAS_ID}\n")
    assigned_path = tmp / "assignments.csv"
    assigned_path.write_text(f"name,duedate\n{L1},\n")  # lesson 05 is shown because it was handed in

    saved = os.environ["PATH"]
    nbgrader_glue.put_venv_on_path()  # nbgrader runs alembic by name, as make autograde arranges
    try:
        gradebook.CourseGradebook(out).ensure_lessons([L1, L4, L5], tmp / "work")
        book = gradebook.CourseGradebook(out)
        book.add_students(due.read_roster(roster_path))
        maxima = book.maxima()
        for (student, lesson), given in CLASS.items():
            job = Job(student, lesson, raw=f"{student}/{lesson}".encode())
            row = Row(lesson, student, given if isinstance(given, str) else "graded",
                      cells={} if isinstance(given, str) else {k: float(v) for k, v in given.items()})
            book.record(job, row, maxima)
        with book.nbgrader() as gb:  # a score changed in the formgrader: the final score uses it
            gb.find_grade("test_DecoderBlock", L5, L5, "alice").manual_score = 3.0
            gb.db.commit()
    finally:
        os.environ["PATH"] = saved

    cli = subprocess.run([sys.executable, "-m", "autograder", "export", "--out", str(out), "--roster", str(roster_path),
                          "--canvas-assignments", str(ids_path), "--assignments", str(assigned_path),
                          "--submitted", str(tmp / "submitted")], cwd=ROOT, env=venv_env(),
                         capture_output=True, text=True, timeout=300)
    plugin_csv = tmp / "nbgrader-canvas.csv"
    plugin = subprocess.run([os.path.join(os.path.dirname(sys.executable), "nbgrader"), "export",
                             "--exporter=autograder.lms_export.CanvasExportPlugin", f"--to={plugin_csv}",
                             f"--db=sqlite:///{out / 'gradebook.db'}",
                             f"--CanvasExportPlugin.canvas_assignments={ids_path}"],
                            cwd=ROOT / "autograder", env={**venv_env(), "PYTHONPATH": ".."},
                            capture_output=True, text=True, timeout=300)
    return {"out": out, "cli": cli, "plugin": plugin, "plugin_csv": plugin_csv}


def test_canvas_csv_follows_canvas_gradebook_import_layout(exported):
    assert exported["cli"].returncode == 0, exported["cli"].stderr[-3000:]
    rows = read_rows(exported["out"] / "canvas.csv")
    assert rows[0] == CANVAS_STUDENT_COLUMNS + [L1, f"{L5} ({L5_CANVAS_ID})"]
    assert rows[1] == [CANVAS_POINTS_POSSIBLE, "", "", "", ""] + [f"{lesson_points(L1):g}", f"{lesson_points(L5):g}"]
    assert rows[1][5:] == ["10", "9"]  # the lessons as they are today: a sum of the wrong cells would show here
    students = [[r[0], r[1], r[3], r[5], r[6]] for r in rows[2:]]
    assert students == EXPECTED
    assert all(r[2] == "" and r[4] == "" for r in rows[2:])  # no SIS User ID, no section
    assert all(len(r) == len(rows[0]) for r in rows)


def test_canvas_csv_is_quoted_utf8_text(exported):
    text = (exported["out"] / "canvas.csv").read_bytes().decode("utf-8")
    assert '"Ames, Alice",101,,alice,,5.63,8\r\n' in text
    assert '"Ó Briain, Seán ""Shane""",,,obriain,,10,\r\n' in text
    assert "0000" not in text and "9999" not in text  # no float noise (1/3, 0.1 + 0.2)


def test_export_also_writes_grades_csv_from_the_gradebook(exported):
    out = exported["out"]
    assert f"{out / 'grades.csv'}: 10 rows" in exported["cli"].stdout
    assert f"{out / 'canvas.csv'}: 5 students" in exported["cli"].stdout
    with open(out / "grades.csv", newline="") as f:
        grades = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    assert set(grades) == {(s, lesson) for s in ("alice", "bob", "erin", "tia", "obriain") for lesson in (L1, L5)}
    assert "04:test_cross_attention" in grades[("alice", L1)]  # every lesson the gradebook holds has its columns
    assert grades[("bob", L1)]["status"].startswith("failed: not valid JSON") and grades[("bob", L1)]["score"] == "0"
    assert grades[("erin", L5)]["status"].startswith("missing")
    assert grades[("alice", L1)]["max_score"] == f"{lesson_points(L1):g}"
    canvas = {r[3]: dict(zip([L1, L5], r[5:])) for r in read_rows(out / "canvas.csv")[2:]}
    for (student, lesson), row in grades.items():  # the two files say the same
        shown = canvas[student][lesson]
        if row["status"].startswith("missing"):
            assert shown == "", (student, lesson)
        else:
            assert float(shown) == pytest.approx(float(row["score"]), abs=0.005), (student, lesson)


def test_nbgrader_export_with_the_plugin_writes_the_same_file(exported):
    assert exported["plugin"].returncode == 0, exported["plugin"].stderr[-3000:]
    assert exported["plugin_csv"].read_bytes() == (exported["out"] / "canvas.csv").read_bytes()


def test_only_named_lessons_and_students_and_plain_titles_without_ids(exported, tmp_path):
    url = f"sqlite:///{exported['out'] / 'gradebook.db'}"
    count = lms_export.write_canvas_csv(url, tmp_path / "one.csv", lessons=[L1], students={"alice", "bob"})
    assert count == 2
    assert read_rows(tmp_path / "one.csv") == [
        CANVAS_STUDENT_COLUMNS + [L1], [CANVAS_POINTS_POSSIBLE, "", "", "", "", "10"],
        ["Ames, Alice", "101", "", "alice", "", "5.63"], ["bob", "", "", "bob", "", "0"]]


def test_assignment_ids_file_is_checked(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_text("name,canvas_assignment_id\n01_attention,12345\n04,777\n")
    assert lms_export.read_assignment_ids(path) == {L1: "12345", "04_cross_attention": "777"}
    path.write_text("name,canvas_assignment_id\n01_attention,abc\n")
    with pytest.raises(ValueError, match="a Canvas assignment id is a number"):
        lms_export.read_assignment_ids(path)
    path.write_text("name,canvas_assignment_id\n99,12\n")
    with pytest.raises(ValueError, match="no lesson 99"):
        lms_export.read_assignment_ids(path)
    assert lms_export.read_assignment_ids(tmp_path / "absent.csv") == {}
