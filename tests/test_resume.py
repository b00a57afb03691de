"""What lets a stopped run go on where it stopped (autograder/gradebook.py, integrity.py): the course's
hash, which says whether two copies of the course grade alike, and the gradebook's record of which
files were graded against which course, so that the same command run again grades only the rest."""

import shutil

import pytest

from autograder import gradebook, integrity
from autograder.jobs import Job, Row


def test_the_course_hash_sees_every_file_and_nothing_else(tmp_path):
    course = tmp_path / "course"
    for name in ("lib/encdec/a.py", "solutions/01_x/01_x.ipynb", "autograder/pipeline.py"):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(name)
    first = integrity.course_hash(course)
    shutil.copytree(course, tmp_path / "copy")
    assert integrity.course_hash(tmp_path / "copy") == first  # where it lies does not count
    (course / "lib/encdec/__pycache__").mkdir()
    (course / "lib/encdec/__pycache__/a.pyc").write_bytes(b"compiled")
    assert integrity.course_hash(course) == first  # nor what Python compiles
    (course / "solutions/01_x/01_x.ipynb").write_text("changed")
    assert integrity.course_hash(course) != first
    (course / "solutions/01_x/01_x.ipynb").write_text("solutions/01_x/01_x.ipynb")
    (course / "lib/encdec/b.py").write_text("")
    assert integrity.course_hash(course) != first  # a file added counts too


def test_a_file_graded_against_the_same_course_is_not_graded_again(tmp_path, monkeypatch):
    book = gradebook.CourseGradebook.__new__(gradebook.CourseGradebook)
    latest = {}
    monkeypatch.setattr(book, "latest", lambda: latest)
    import hashlib
    raw = b'{"cells": []}'
    sha = hashlib.sha256(raw).hexdigest()
    jobs = [Job("ann", "01_x", raw=raw), Job("bob", "01_x", raw=raw), Job("cy", "01_x", raw=raw),
            Job("dee", "01_x", raw=raw), Job("eve", "01_x"), Job("fay", "01_x", raw=b"other")]
    latest.update({
        ("01_x", "ann"): {"sha256": sha, "course": "C", "status": "graded"},
        ("01_x", "bob"): {"sha256": sha, "course": "D", "status": "graded"},  # another course: again
        ("01_x", "cy"): {"sha256": sha, "course": "C", "status": "failed: the grader crashed (no result)"},
        ("01_x", "dee"): {"sha256": sha, "course": "C", "status": "tampered: …"},  # a result, kept
        ("01_x", "fay"): {"sha256": sha, "course": "C", "status": "graded"},  # another file: again
    })
    assert book.graded_before(jobs, "C") == {("01_x", "ann"), ("01_x", "dee")}
    assert book.graded_before(jobs, "") == set()


def test_the_course_hash_is_recorded_with_each_attempt(tmp_path, monkeypatch):
    book = gradebook.CourseGradebook(tmp_path)  # no template: an empty folder, no gradebook yet
    assert not book.path.exists()
    assert Row("01_x", "ann", "graded").course == ""
    assert "course text" in gradebook.SCHEMA


@pytest.mark.nbgrader
def test_the_template_is_kept_for_the_same_course_and_made_again_otherwise(tmp_path):
    """The fast path keeps the template (nbgrader's generate_assignment, seconds per lesson) from run to
    run of the same course, adds the lessons a run needs, and makes it again for another course or
    when a file of it changed."""
    from autograder import nbgrader_glue
    from autograder.course import lessons
    nbgrader_glue.put_venv_on_path()
    course = integrity.snapshot_course(tmp_path)
    digest = integrity.course_hash(course)
    first, second = lessons()[:2]
    template = nbgrader_glue.prepare_template(tmp_path, course, digest, [first])
    book = template / "gradebook.db"
    made = book.stat().st_mtime_ns
    assert (template / "release" / first).is_dir() and not (template / "release" / second).exists()
    nbgrader_glue.prepare_template(tmp_path, course, digest, [first])
    assert book.stat().st_mtime_ns == made  # kept
    nbgrader_glue.prepare_template(tmp_path, course, digest, [first, second])
    assert (template / "release" / second).is_dir() and (template / "release" / first).is_dir()  # grown
    (template / "release" / first / f"{first}.ipynb").write_text("changed")
    nbgrader_glue.prepare_template(tmp_path, course, digest, [first])
    assert (template / "release" / first / f"{first}.ipynb").read_text() != "changed"  # made again
    assert not (template / "release" / second).exists()
    nbgrader_glue.prepare_template(tmp_path, course, "another course", [first])
    assert (template / "course.sha256").read_text() == "another course"
