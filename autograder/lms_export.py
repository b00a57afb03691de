"""Grades out to the LMS: nbgrader's gradebook as a gradebook CSV that Canvas imports.

    cd autograder && PYTHONPATH=.. nbgrader export --exporter=autograder.lms_export.CanvasExportPlugin --to=canvas.csv
    python -m autograder export                  # grades.csv and canvas.csv, side by side (cli.py)
    write_canvas_csv("sqlite:///autograder/gradebook.db", "canvas.csv")

(`PYTHONPATH=..`: nbgrader imports the --exporter class while it reads the command line, before
nbgrader_config.py puts the repository root on sys.path. `--assignment`, `--student` and
`--CanvasExportPlugin.canvas_assignments=FILE` work as in nbgrader's own CSV export.)

The layout is the one Canvas's Grades > Import reads and its Grades > Export writes (Canvas
Instructor Guide, "How do I import grades in the Gradebook?",
https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807;
checked against Canvas's own code, github.com/instructure/canvas-lms lib/gradebook_exporter.rb,
lib/gradebook_importer.rb and Assignment.title_and_id in app/models/assignment.rb):

    Student,ID,SIS User ID,SIS Login ID,Section,01_attention,05_block_ordering (12345)
        Points Possible,,,,,10,9
    "Ames, Alice",101,,alice,,7.25,
    bob,,,bob,,0,9

- The header: Canvas's five student columns, then one column per lesson. Canvas takes the row
  whose first cell holds "Student" and second "ID" for the header, reads "SIS User ID" and
  "SIS Login ID" after them, and wants "Section" last before the assignments. The lessons are
  those named (`python -m autograder export` names those grades.csv shows), else those someone
  handed in or that have a due date; not every lesson the gradebook holds (it holds the whole
  course), since a column Canvas does not know becomes a new assignment.
- The second row: "    Points Possible" (with the four leading spaces of Canvas's export) and
  four empty cells, then each lesson's maximum: the points of its graded cells in nbgrader's
  gradebook. Canvas gives a new assignment these points.
- One row per student, ordered by name as Canvas orders them. Canvas finds the student by ID (its
  numeric user id), else by SIS User ID, else by SIS Login ID, else by the name ("Last, First",
  its sortable name). ID is the roster's lms_user_id (nbgrader's Student.lms_user_id) when that
  is a Canvas user id, digits only: Canvas reads the cell as a number, so an opaque LTI user id
  such as "53f0a1…" would be read as user 53, and is left out. SIS User ID is empty, SIS Login ID
  is the student's id here (the hub's user name), Section is empty (Canvas does not match on it).
- A lesson's column is its name (`01_attention`): Canvas matches an assignment of that title, or
  creates one. Where autograder/canvas_assignments.csv (`name,canvas_assignment_id`; a name may
  be a lesson's number, as in assignments.csv) gives the lesson's Canvas assignment id, the
  column is `01_attention (12345)`, the form of Canvas's own export, matched by id whatever the
  assignment's title in Canvas. The id is the number at the end of the assignment's address,
  `…/courses/678/assignments/12345`.
- A cell is the final score, as nbgrader's own `export` computes it: the cells' scores (a score
  set in the formgrader wins), less nbgrader's late penalty, never below 0; rounded to 2 decimals,
  the precision of Canvas's own export, without trailing zeros. A submission that could not be
  graded (failed, tampered) scores 0. A lesson a student did not hand in is an empty cell:
  Canvas's "no grade", which its Final Score counts as 0 and its Current Score leaves out, which
  its missing-submission policy can mark, and which, unlike a 0, an export before the due date
  does not give to students who have yet to hand in. Canvas shows every change before it applies
  the import.
- The csv module quotes what needs it ("Ames, Alice"); the file is UTF-8.
"""

import csv
import re
from pathlib import Path

from nbgrader.plugins import ExportPlugin
from traitlets import Unicode

from . import course, nbgrader_glue
from .course import HERE

STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"
ASSIGNMENT_IDS = HERE / "canvas_assignments.csv"


def canvas_number(x):
    """A score as Canvas's export writes it, to 2 decimals, without trailing zeros: 7.25, 10, 0.33."""
    text = f"{round(float(x), 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def student_name(student):
    """Canvas's sortable name, "Last, First", from nbgrader's Student; the id without names."""
    names = [n.strip() for n in (student.last_name, student.first_name) if n and n.strip()]
    return ", ".join(names) or student.id


def canvas_user_id(student):
    """The roster's lms_user_id when it is a Canvas user id (digits only), else ''."""
    found = (student.lms_user_id or "").strip()
    return found if re.fullmatch(r"[0-9]+", found) else ""


def read_assignment_ids(path):
    """{lesson: Canvas assignment id} from a CSV `name,canvas_assignment_id` ({} without the file)."""
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        reader.fieldnames = [k.strip() for k in reader.fieldnames or []]
        if not {"name", "canvas_assignment_id"} <= set(reader.fieldnames):
            raise ValueError(f"{path} needs the columns name,canvas_assignment_id (e.g. 01_attention,12345)")
        ids = {}
        for line, row in enumerate(reader, start=2):
            name, number = (row.get("name") or "").strip(), (row.get("canvas_assignment_id") or "").strip()
            if not name and not number:
                continue
            if not re.fullmatch(r"[0-9]+", number):
                raise ValueError(f"{path}, line {line}: a Canvas assignment id is a number, not {number!r}")
            named = course.chosen([name])  # a name that is no lesson raises ValueError naming them
            if len(named) != 1:
                raise ValueError(f"{path}, line {line}: {name!r} names {len(named)} lessons; give one lesson per line")
            (lesson,) = named
            ids[lesson] = number
    return ids


def canvas_rows(gradebook, lessons=None, students=None, assignment_ids=None):
    """The CSV as lists of cells: the header, the Points Possible row, then a row per student.
    gradebook: nbgrader's Gradebook; lessons: these (None: those handed in or given a due date);
    students: these (None: every one); assignment_ids: {lesson: Canvas assignment id}."""
    ids = assignment_ids or {}
    assignments = [a for a in sorted(gradebook.assignments, key=lambda a: a.name) if a.notebooks
                   and (a.name in lessons if lessons is not None else bool(a.submissions or a.duedate))]
    scores = {}
    for assignment in assignments:
        for submission in assignment.submissions:
            penalty = submission.late_submission_penalty or 0.0
            scores[(assignment.name, submission.student.id)] = max(0.0, (submission.score or 0.0) - penalty)
    header = list(STUDENT_COLUMNS) + [f"{a.name} ({ids[a.name]})" if a.name in ids else a.name for a in assignments]
    possible = [POINTS_POSSIBLE] + [""] * (len(STUDENT_COLUMNS) - 1) + [canvas_number(a.max_score) for a in assignments]
    body = []
    for student in gradebook.students:
        if students is not None and student.id not in students:
            continue
        cells = [canvas_number(scores[(a.name, student.id)]) if (a.name, student.id) in scores else ""
                 for a in assignments]
        body.append([student_name(student), canvas_user_id(student), "", student.id, ""] + cells)
    body.sort(key=lambda row: (row[0].casefold(), row[3]))
    return [header, possible] + body


def write_canvas_csv(source, path, lessons=None, students=None, assignment_ids=None):
    """Write Canvas's gradebook CSV to `path` from `source`, nbgrader's Gradebook or its URL
    (`sqlite:///…/gradebook.db`). assignment_ids: {lesson: id}, or the path of a
    canvas_assignments.csv. Returns how many students it holds."""
    from nbgrader.api import Gradebook
    if isinstance(assignment_ids, (str, Path)):
        assignment_ids = read_assignment_ids(assignment_ids)
    if isinstance(source, str):
        with Gradebook(source, nbgrader_glue.load_config().CourseDirectory.course_id) as gradebook:
            rows = canvas_rows(gradebook, lessons, students, assignment_ids)
    else:
        rows = canvas_rows(source, lessons, students, assignment_ids)
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return len(rows) - 2


class CanvasExportPlugin(ExportPlugin):
    """nbgrader's export as Canvas's gradebook CSV (`--to`, canvas.csv by default), honouring
    `--assignment` and `--student` as nbgrader's CSV export does."""

    canvas_assignments = Unicode(
        str(ASSIGNMENT_IDS), help="CSV name,canvas_assignment_id: the lessons' Canvas assignment ids, when given"
    ).tag(config=True)

    def export(self, gradebook):
        dest = self.to or "canvas.csv"
        count = write_canvas_csv(gradebook, dest, [str(a) for a in self.assignment] or None,
                                 [str(s) for s in self.student] or None, self.canvas_assignments)
        self.log.info("Canvas gradebook CSV for %d students in %s", count, dest)
