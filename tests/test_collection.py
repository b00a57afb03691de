"""Collection and what is due, without grading: which file is each student's submission, what the
run is told about everything else, an LMS's zip, the roster and the assigned lessons."""

import json
import os
import zipfile

import nbformat
import pytest

from autograder import collection, due
from autograder.course import lessons
from nbtools import release, solution, write_submission

L1, L2, L4 = "01_attention", "02_encoder", "04_cross_attention"
pytestmark = pytest.mark.lesson01


def by_pair(found):
    return {(j.student, j.lesson): j for j in found.jobs}


def test_the_expected_name_is_the_submission(tmp_path):
    write_submission(tmp_path, "alice", L1, solution(L1))
    job = by_pair(collection.collect(tmp_path, [L1]))[("alice", L1)]
    assert job.path.name == f"{L1}.ipynb" and job.raw and job.note is None


def test_a_notebook_dropped_flat_in_the_student_folder_is_found_and_said(tmp_path):
    (tmp_path / "alice").mkdir()
    nbformat.write(solution(L1), str(tmp_path / "alice" / f"{L1}.ipynb"))
    job = by_pair(collection.collect(tmp_path, [L1]))[("alice", L1)]
    assert job.raw is not None and "dropped in the student's folder" in job.note


def test_of_two_candidates_the_one_with_answers_wins_even_when_older(tmp_path):
    blank = write_submission(tmp_path, "dup", L4, release(L4))
    answered = blank.with_name(f"{L4} (1).ipynb")
    nbformat.write(solution(L4), str(answered))
    os.utime(answered, (1e9, 1e9))
    os.utime(blank, (2e9, 2e9))
    job = by_pair(collection.collect(tmp_path, [L4]))[("dup", L4)]
    # the expected name exists, but it is blank: the answered (1) copy beside it is graded
    assert job.path == answered, job.note
    assert "the only one with answers" in job.note and f"{L4}.ipynb" in job.note


def test_of_two_answered_candidates_the_newest_wins(tmp_path):
    old = write_submission(tmp_path, "dup", L1, solution(L1))
    new = old.with_name(f"{L1} (1).ipynb")
    nbformat.write(solution(L1), str(new))
    os.utime(old, (2e9, 2e9))
    os.utime(new, (1e9, 1e9))
    job = by_pair(collection.collect(tmp_path, [L1]))[("dup", L1)]
    assert job.path == old and "the newest" in job.note


def test_roster_students_without_a_folder_get_rows_and_strangers_are_named(tmp_path):
    write_submission(tmp_path, "alice", L1, solution(L1))
    write_submission(tmp_path, "zed", L1, solution(L1))
    roster = {"alice": {}, "erin": {}}
    found = collection.collect(tmp_path, [L1, L2], roster=roster)
    pairs = by_pair(found)
    assert set(pairs) == {(s, x) for s in ("alice", "erin", "zed") for x in (L1, L2)}
    assert pairs[("erin", L1)].raw is None and pairs[("alice", L2)].raw is None
    assert any("zed: not on the roster" in n for n in found.notes)


def test_nothing_is_skipped_silently(tmp_path):
    write_submission(tmp_path, "alice", L1, solution(L1))
    write_submission(tmp_path, "alice", L2, solution(L2))
    (tmp_path / "alice" / "notes.txt").write_text("hi")
    (tmp_path / "alice" / "homework").mkdir()
    (tmp_path / "stray.ipynb").write_text("{}")
    found = collection.collect(tmp_path, [L1])
    text = "\n".join(found.notes)
    assert f"{L2}: not assigned in this run" in text
    assert "alice/notes.txt: names no lesson" in text
    assert "alice/homework/" in text and "stray.ipynb" in text
    assert list(by_pair(found)) == [("alice", L1)]


def test_an_empty_lesson_folder_is_a_failure_with_a_reason(tmp_path):
    (tmp_path / "bob" / L1).mkdir(parents=True)
    job = by_pair(collection.collect(tmp_path, [L1]))[("bob", L1)]
    assert job.raw is None and job.status.startswith("failed: no notebook")


def test_nbgrader_timestamp_is_read(tmp_path):
    path = write_submission(tmp_path, "late", L1, solution(L1))
    (path.parent / "timestamp.txt").write_text("2026-12-02 12:00:00.000000 UTC")
    job = by_pair(collection.collect(tmp_path, [L1]))[("late", L1)]
    assert job.timestamp.year == 2026 and job.timestamp.day == 2


def make_zip(path, entries):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries:
            z.writestr(name, data)
    return path


def test_canvas_zip_is_filed_by_roster_with_late_marks_and_nothing_lost(tmp_path):
    sub = tmp_path / "submitted"
    roster = {"alice": {"lms_user_id": "101", "first_name": "Alice", "last_name": "Ames"},
              "bob": {"lms_user_id": None, "first_name": "Bob", "last_name": "Brown"}}
    earlier = write_submission(sub, "alice", L1, release(L1)).read_bytes()
    sol = nbformat.writes(solution(L1))
    archive = make_zip(tmp_path / "submissions.zip", [
        (f"amesalice_101_9001_{L1}.ipynb", sol),
        (f"brownbob_LATE_102_9002_{L1}-1.ipynb", sol),
        ("smithjo_103_9003_essay.pdf", b"%PDF"),
        ("README.txt", "not a submission"),
    ])
    notes = collection.import_canvas_zip(archive, sub, lessons(), roster)
    assert (sub / "alice" / L1 / f"{L1}.ipynb").read_text() == sol
    kept = list((sub / "alice" / L1 / ".replaced").iterdir())
    assert len(kept) == 1 and kept[0].read_bytes() == earlier  # the earlier file is kept, not overwritten
    assert json.loads((sub / "bob" / L1 / "lms.json").read_text())["late"] is True
    text = "\n".join(notes)
    assert "essay.pdf: not a notebook, skipped" in text and "README.txt" in text
    assert "bob/01_attention" in text and "late, says Canvas" in text
    found = by_pair(collection.collect(sub, [L1], roster=roster))
    assert found[("bob", L1)].late and not found[("alice", L1)].late
    assert found[("alice", L1)].raw.decode() == sol
    # the same zip again changes nothing and says so
    again = collection.import_canvas_zip(archive, sub, lessons(), roster)
    assert sum("already collected" in n for n in again) == 2
    assert len(list((sub / "alice" / L1 / ".replaced").iterdir())) == 1


def test_canvas_submitter_not_on_the_roster_is_filed_under_the_canvas_name(tmp_path):
    archive = make_zip(tmp_path / "s.zip", [(f"doejane_555_1_{L1}.ipynb", nbformat.writes(solution(L1)))])
    notes = collection.import_canvas_zip(archive, tmp_path / "sub", lessons(), {"alice": {"lms_user_id": "1"}})
    assert (tmp_path / "sub" / "doejane" / L1 / f"{L1}.ipynb").exists()
    assert any("not on the roster" in n for n in notes)


def test_assigned_lessons_come_from_the_option_then_the_file_then_the_submissions(tmp_path):
    sub = tmp_path / "sub"
    write_submission(sub, "alice", L4, solution(L4))
    table = tmp_path / "assignments.csv"
    assert due.assigned(["01-03"], table, sub)[0] == lessons()[:3]
    assert due.assigned(None, table, sub)[0] == [L4]  # no file: what was submitted
    table.write_text(f"name,duedate\n01,2026-12-11 23:59:00 UTC\n{L2},\n")
    got, dates, _ = due.assigned(None, table, sub)
    assert got == [L1, L2] and dates == {L1: "2026-12-11 23:59:00 UTC"}
    table.write_text("name,duedate\n99,\n")
    with pytest.raises(ValueError):
        due.assigned(None, table, sub)


def test_roster_reads_nbgrader_student_import_format(tmp_path):
    path = tmp_path / "students.csv"
    path.write_text("id,first_name,last_name,email,lms_user_id\nalice,Alice,Ames,,101\n")
    assert due.read_roster(path) == {"alice": {"first_name": "Alice", "last_name": "Ames", "email": None,
                                               "lms_user_id": "101"}}
    assert due.read_roster(tmp_path / "none.csv") == {}
    path.write_text("student,name\nalice,A\n")
    with pytest.raises(SystemExit):
        due.read_roster(path)


def test_make_passes_the_regrade_and_collect_options():
    import subprocess
    from nbtools import ROOT
    dry = subprocess.run(["make", "-n", "autograde", "STUDENT=bob", "LESSON=01", "LESSONS=01-05"], cwd=ROOT,
                         capture_output=True, text=True).stdout
    assert '--student "bob"' in dry and '--lesson "01"' in dry and '--lessons "01-05"' in dry
    dry = subprocess.run(["make", "-n", "collect", "ZIP=all.zip"], cwd=ROOT, capture_output=True, text=True).stdout
    assert 'collect --zip "all.zip"' in dry
