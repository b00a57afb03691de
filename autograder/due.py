"""What is due: the assigned lessons with their due dates, and the roster.

Both files use the columns of nbgrader's own importers, so `nbgrader db assignment import` and
`nbgrader db student import` read them too:

    autograder/assignments.csv   name,duedate           01_attention,2026-12-11 23:59:00 UTC
    autograder/students.csv      id,first_name,last_name,email,lms_user_id

The assigned lessons are, first found: the LESSONS option (`--lessons 01-05`), the lessons listed
in assignments.csv, else the lessons someone submitted. Due dates go into nbgrader's gradebook
(the assignment's `duedate`); nbgrader's `LateSubmissionPlugin` settings in nbgrader_config.py
decide the penalty.
"""

import csv
from pathlib import Path

from . import course
from .collection import lesson_of

ROSTER_COLUMNS = ("first_name", "last_name", "email", "lms_user_id")


def _rows(path):
    path = Path(path)
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        reader.fieldnames = [k.strip() for k in reader.fieldnames or []]
        return [{k: (v or "").strip() for k, v in row.items() if k} for row in reader]


def read_roster(path):
    """{student id: {first_name, last_name, email, lms_user_id}} ({} without the file). Empty
    fields are None, as nbgrader's importer stores them."""
    rows = _rows(path)
    if rows is None:
        return {}
    if rows and "id" not in rows[0]:
        raise SystemExit(f"error: {path} needs a column 'id' (nbgrader's db student import format: "
                         "id,first_name,last_name,email,lms_user_id)")
    return {r["id"]: {k: (r.get(k) or None) for k in ROSTER_COLUMNS} for r in rows if r.get("id")}


def read_assignments(path):
    """{lesson: duedate string or None} from assignments.csv, or None without the file."""
    rows = _rows(path)
    if rows is None:
        return None
    if rows and "name" not in rows[0]:
        raise SystemExit(f"error: {path} needs a column 'name' (nbgrader's db assignment import format: name,duedate)")
    listed = {}
    for r in rows:
        if r.get("name"):
            (lesson,) = course.chosen([r["name"]])  # raises ValueError naming the lessons
            listed[lesson] = r.get("duedate") or None
    return listed


def submitted_lessons(submitted):
    """The lessons someone handed in (a lesson folder, or a notebook named after the lesson)."""
    every, found = course.lessons(), set()
    root = Path(submitted)
    for sdir in (p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        for p in sdir.iterdir():
            hit = p.name if p.is_dir() and p.name in every else (lesson_of(p.name, every) if p.suffix == ".ipynb" else None)
            if hit:
                found.add(hit)
    return [lesson for lesson in every if lesson in found]


def assigned(option, assignments, submitted):
    """(lessons, duedates {lesson: str}, where the list came from) for a run."""
    listed = read_assignments(assignments)
    dates = {k: v for k, v in (listed or {}).items() if v}
    if option:
        return course.chosen(option), dates, "the LESSONS option"
    if listed is not None:
        return [lesson for lesson in course.lessons() if lesson in listed], dates, str(assignments)
    return submitted_lessons(submitted), dates, "the lessons someone submitted (no assignments.csv, no LESSONS)"
