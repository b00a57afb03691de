"""The instructor's session, replayed through the real driver, nbgrader and the course's gradebook.

A class for lesson 01 (lesson 02 handed in by one student but not assigned): a correct student, one
with a classic mistake, a blank notebook beside an answered `01_attention (1).ipynb`, a notebook
dropped flat in the student's folder, a corrupted file, a late one, and a student on the roster who
handed in nothing. Then a resubmission regraded alone (STUDENT=bob LESSON=01), a manual override
in nbgrader's gradebook that survives a regrade, and nbgrader's own `generate_feedback`, `export`
and the formgrader's API on the same state. Nothing is lost, and every student gets feedback.
"""

import csv
import json
import os
import sqlite3
import subprocess
import sys

import nbformat
import pytest

from encdec.mistakes import CATALOG
from nbtools import autograde, checks_module, course_copy, inject, release, solution, write_submission

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow, pytest.mark.lesson01]

L1, L2 = "01_attention", "02_encoder"
ENV = {"GRADE_CELL_TIMEOUT": "30", "GRADE_TIMEOUT": "120"}
ROSTER = "id,first_name,last_name,email,lms_user_id\nalice,Alice,Ames,,101\nbob,Bob,Brown,,102\nerin,Erin,Eve,,105\n"


def read_csv(path):
    with open(path) as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def snapshot(folder):
    """{relative path: (bytes, mtime)} of every file below a folder."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run(root, *extra):
    sub, out = root / "autograder" / "submitted", root / "autograder"
    return autograde(sub, out, jobs=2, root=root, extra=list(extra), env=ENV)


def one_mistake():
    first = checks_module(L1).EXERCISES[0]
    return inject(solution(L1), first, CATALOG[first.name][0].impl), first


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = course_copy(tmp_path_factory.mktemp("course"))
    ag = root / "autograder"
    sub = ag / "submitted"
    (ag / "students.csv").write_text(ROSTER)
    (ag / "assignments.csv").write_text(f"name,duedate\n{L1},2026-12-01 12:00:00 UTC\n")
    write_submission(sub, "alice", L1, solution(L1))
    write_submission(sub, "alice", L2, solution(L2))  # lesson 02 is not assigned: no row, a note
    wrong, _ = one_mistake()
    write_submission(sub, "bob", L1, wrong)
    blank = write_submission(sub, "dup", L1, release(L1))
    nbformat.write(solution(L1), str(blank.with_name(f"{L1} (1).ipynb")))
    os.utime(blank, (1e9, 2e9))  # the blank one is the newer: the answered one still wins
    (sub / "flat").mkdir()
    nbformat.write(solution(L1), str(sub / "flat" / f"{L1}.ipynb"))
    write_submission(sub, "broken", L1, "{ not a notebook")
    late = write_submission(sub, "late", L1, solution(L1))
    (late.parent / "timestamp.txt").write_text("2026-12-02 12:00:00.000000 UTC")
    first = run(root)
    state = {"root": root, "first": first, "rows1": read_csv(ag / "grades.csv"),
             "feedback1": snapshot(ag / "feedback"), "report1": (ag / "report.md").read_text()}
    # bob hands in again (correct now); only his lesson-01 row is regraded
    write_submission(sub, "bob", L1, solution(L1))
    state["second"] = run(root, "--student", "bob", "--lesson", "01")
    state["rows2"] = read_csv(ag / "grades.csv")
    state["feedback2"] = snapshot(ag / "feedback")
    state["report2"] = (ag / "report.md").read_text()
    return state


def test_first_run_rows_statuses_and_summary(session):
    code, rows, output = session["first"]
    assert code == 1, output[-2000:]  # the broken notebook failed
    assert set(rows) == {(s, L1) for s in ("alice", "bob", "dup", "flat", "broken", "late", "erin")}, output[-3000:]
    assert rows[("alice", L1)]["status"] == "graded" and rows[("alice", L1)]["score"] == rows[("alice", L1)]["max_score"]
    assert float(rows[("bob", L1)]["score"]) < float(rows[("bob", L1)]["max_score"])
    assert rows[("erin", L1)]["status"].startswith("missing")
    assert rows[("broken", L1)]["status"].startswith("failed: not valid JSON") and float(rows[("broken", L1)]["score"]) == 0
    assert "5 graded, 1 failed, 0 tampered, 1 missing (nothing submitted); 1 late" in output
    assert f"{L2}: not assigned in this run, so not graded" in output


def test_every_student_gets_feedback(session):
    fb = session["root"] / "autograder" / "feedback"
    for student, _ in session["rows1"]:
        assert (fb / student / "index.html").exists(), student
        if student != "erin":  # erin handed in nothing: her page says so
            assert (fb / student / L1 / f"{L1}.html").exists(), student
    assert "missing: no submission" in (fb / "erin" / "index.html").read_text()


def test_feedback_names_the_exercises_and_renders_formulas_offline(session):
    html = (session["root"] / "autograder" / "attempts" / "bob" / L1 / "1" / f"{L1}.html").read_text()
    _, first = one_mistake()
    assert f">Exercise {first.number} {first.title}</a>" in html and ">Test cell</a>" not in html
    assert html.count("<math") > 10 and "cdnjs" not in html and "$$" not in html
    assert "Likely cause:" in html and "overflow-wrap: anywhere" in html


def test_the_report_flags_close_copies_of_the_reference(session):
    report = session["report2"]
    section = report.split("## Answers close to the reference source")[1].split("\n## ")[0]
    assert "| alice | 01_attention | 1.1 softmax |" in section
    assert "| broken |" not in section


def test_flat_and_duplicate_drops_are_graded_and_say_so(session):
    rows = session["rows1"]
    flat, dup = rows[("flat", L1)], rows[("dup", L1)]
    assert flat["score"] == flat["max_score"] and "dropped in the student's folder" in flat["status"]
    assert dup["score"] == dup["max_score"], dup["status"]
    assert f"graded '{L1} (1).ipynb' (the only one with answers" in dup["status"]


def test_late_submission_is_marked_from_nbgrader_timestamp_and_duedate(session):
    row = session["rows1"][("late", L1)]
    assert row["late"] == "yes" and row["timestamp"].startswith("2026-12-02")
    assert session["rows1"][("alice", L1)]["late"] == ""
    assert row["late_penalty"] == "0"  # nbgrader's LateSubmissionPlugin: penalty_method 'none' by default


def test_a_failed_submission_still_gets_a_feedback_page(session):
    page = session["root"] / "autograder" / "feedback" / "broken" / L1 / f"{L1}.html"
    html = page.read_text()
    assert "not valid JSON" in html and "What to do" in html and "hand it in again" in html
    index = (session["root"] / "autograder" / "feedback" / "broken" / "index.html").read_text()
    assert "failed: not valid JSON" in index


def test_partial_regrade_changes_only_the_named_row(session):
    code, rows, output = session["second"]
    before, after = session["rows1"], session["rows2"]
    assert set(after) == set(before), output[-2000:]
    for key in before:
        if key != ("bob", L1):
            assert after[key] == before[key], key
    assert after[("bob", L1)]["score"] == after[("bob", L1)]["max_score"]
    assert after[("bob", L1)]["attempts"] == "2"
    changed = {path for path in session["feedback2"] if session["feedback1"].get(path) != session["feedback2"][path]}
    assert changed and all(path.startswith("bob/") for path in changed), changed
    assert "1 rows in" in output and "1 graded" in output


def test_attempts_are_kept_with_their_files(session):
    ag = session["root"] / "autograder"
    with sqlite3.connect(ag / "gradebook.db") as db:
        got = db.execute("select attempt, status, cells from encdec_attempts where student = 'bob' "
                         "order by attempt").fetchall()
    assert [a for a, _, _ in got] == [1, 2]
    first_cells, latest_cells = (json.loads(c) for _, _, c in got)
    assert sum(first_cells.values()) < sum(latest_cells.values())
    for n in (1, 2):
        folder = ag / "attempts" / "bob" / L1 / str(n)
        assert (folder / f"{L1}.html").exists() and (folder / f"{L1}.ipynb").exists()
    _, first = one_mistake()
    diagnosis = CATALOG[first.name][0].diagnosis[:50]
    report = session["report2"]
    assert "## Resubmissions: misconceptions at the first attempt and at the latest" in report
    line = next(ln for ln in report.splitlines() if diagnosis in ln and ln.startswith("| 1 | 0 |"))
    assert L1 in line


def test_manual_override_survives_a_regrade_and_nbgrader_commands_share_the_state(session):
    root = session["root"]
    ag = root / "autograder"
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{ag / 'gradebook.db'}", "encdec") as gb:
        grade = gb.find_submission_notebook(L1, L1, "alice").grades[0]
        grade.manual_score, cell = 0.5, grade.name  # what the formgrader writes
        gb.db.commit()
        broken = gb.find_submission_notebook(L1, L1, "broken")  # a failed one is in nbgrader's gradebook too
        assert broken.score == 0 and broken.comments
        assert all(c.auto_comment.startswith("Not graded: failed: not valid JSON") for c in broken.comments)
    code, rows, output = run(root, "--student", "alice", "--lesson", "01")
    row = rows[("alice", L1)]
    assert float(row[f"01:{cell}"]) == 0.5 and row["attempts"] == "1", output[-2000:]
    # nbgrader's own commands, from autograder/ as docs/instructors.md says
    nbgrader = os.path.join(os.path.dirname(sys.executable), "nbgrader")
    feedback = subprocess.run([nbgrader, "generate_feedback", L1, "--force"], cwd=ag, env=env,
                              capture_output=True, text=True)
    assert feedback.returncode == 0, feedback.stderr[-3000:]
    for student in ("alice", "bob", "dup", "flat", "late"):
        assert (ag / "feedback" / student / L1 / f"{L1}.html").exists(), student
    assert (ag / "feedback" / "broken" / L1 / f"{L1}.html").exists()  # the failure page stays
    export = subprocess.run([nbgrader, "export", "--to", "nbgrader-export.csv"], cwd=ag, env=env,
                            capture_output=True, text=True)
    assert export.returncode == 0, export.stderr[-3000:]
    with open(ag / "nbgrader-export.csv") as f:
        exported = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    assert float(exported[("bob", L1)]["score"]) == float(rows[("bob", L1)]["max_score"])
    assert float(exported[("alice", L1)]["score"]) == float(row["score"])
    # the formgrader's view: nbgrader's API over the same gradebook
    sys.path.insert(0, str(root))
    try:
        from autograder import nbgrader_glue
        api = nbgrader_glue.api_for(nbgrader_glue.load_config(ag))
        shown = {s["student"]: s for s in api.get_submissions(L1)}
    finally:
        sys.path.remove(str(root))
    assert shown["alice"]["score"] == pytest.approx(float(row["score"]))
    assert shown["bob"]["autograded"] and shown["bob"]["score"] == pytest.approx(float(rows[("bob", L1)]["max_score"]))


def test_nbgrader_late_penalty_setting_is_applied(session):
    """With nbgrader's LateSubmissionPlugin set to 'zero', the late student's regrade scores 0, the
    penalty is in grades.csv and in nbgrader's own gradebook; the on-time students are untouched."""
    root = session["root"]
    config = root / "autograder" / "nbgrader_config.py"
    original = config.read_text()
    config.write_text(original + '\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    try:
        code, rows, output = run(root, "--student", "late", "--student", "alice", "--lesson", "01")
    finally:
        config.write_text(original)
    late, alice = rows[("late", L1)], rows[("alice", L1)]
    assert float(late["score"]) == 0 and float(late["late_penalty"]) == float(late["max_score"]), output[-2000:]
    assert late["attempts"] == "1" and late["late"] == "yes"
    assert float(alice["late_penalty"]) == 0 and float(alice["score"]) > 0
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{root / 'autograder' / 'gradebook.db'}", "encdec") as gb:
        assert gb.find_submission(L1, "late").late_submission_penalty == float(late["max_score"])
