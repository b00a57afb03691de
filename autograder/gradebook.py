"""The course's one state: nbgrader's gradebook (`<out>/gradebook.db`, autograder/gradebook.db for
`make autograde`), with every attempt kept beside nbgrader's own tables.

    book = CourseGradebook(out, template)          # the gradebook a run records into
    book.record(job, row, maxima)                  # after a job is graded (or failed, or was tampered)
    rows = book.rows(lessons, students, maxima)    # what grades.csv, the report and the pages show

What lives where:
- nbgrader's tables hold what nbgrader's own commands read (`nbgrader generate_feedback`, `export`,
  the formgrader): students, assignments with their due dates, and per submission its timestamp,
  every cell's auto score, the late penalty (nbgrader's `AssignLatePenalties` with the configured
  `LateSubmissionPlugin`) and, for a submission that could not be graded, the reason as the
  comment on each answer. A manual score set in the formgrader is never written by the course,
  so it survives every regrade; rows show it in place of the auto score, as nbgrader does.
- the table `encdec_attempts` keeps every attempt: one per distinct submitted file, with its time,
  status, scores, misconceptions, the audit's cautions and the folder `attempts/<student>/<lesson>/<n>/` holding the
  file as submitted, the graded notebook and the feedback page, and the hash of the course it was
  graded against (integrity.course_hash). Grading the same bytes again replaces that attempt's
  results; different bytes are a new attempt. A run on a Dask cluster (or with --resume) skips the
  files already graded against the same course (graded_before): a stopped run goes on where it stopped.

Only the (student, lesson) pairs a run grades are written; every other row stays as it was.
"""

import hashlib
import json
import shutil
import sqlite3
import warnings
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.exc import SAWarning

from . import nbgrader_glue, records
from .jobs import Row

NOT_GRADED = "Not graded: "  # the start of the comment a failed or tampered submission gets
SCHEMA = """
create table if not exists encdec_attempts (
    assignment text not null, student text not null, attempt integer not null,
    graded_at text not null, submitted_at text, sha256 text not null,
    status text not null, cells text not null, max_score real not null,
    misconceptions text not null, late integer not null default 0, seconds_late real not null default 0,
    penalty real not null default 0, note text not null default '', folder text not null,
    sandbox text not null default '', cautions text not null default '[]', course text not null default '',
    primary key (assignment, student, attempt))
"""


def now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class CourseGradebook:
    """nbgrader's gradebook in `out`, created from the run's template gradebook when it is missing."""

    def __init__(self, out, template=None):
        self.out = Path(out)
        self.path = self.out / "gradebook.db"
        self.url = nbgrader_glue.gradebook_url(self.out)
        self.course_id = nbgrader_glue.load_config().CourseDirectory.course_id  # nbgrader_config.py's
        if not self.path.exists() and template is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(template) / "gradebook.db", self.path)
        if self.path.exists():
            with closing(sqlite3.connect(self.path)) as db, db:
                db.execute(SCHEMA)
                columns = {r[1] for r in db.execute("pragma table_info(encdec_attempts)")}
                for name, default in (("cautions", "'[]'"), ("course", "''")):
                    if name not in columns:
                        db.execute(f"alter table encdec_attempts add column {name} text not null default {default}")

    def nbgrader(self):
        from nbgrader.api import Gradebook
        return Gradebook(self.url, self.course_id)

    def _sql(self):
        return closing(sqlite3.connect(self.path))

    # -- what is due ----------------------------------------------------------------------------------
    def has_assignment(self, lesson):
        from nbgrader.api import MissingEntry
        with self.nbgrader() as gb:
            try:
                return bool(gb.find_assignment(lesson).notebooks)
            except MissingEntry:
                return False

    def ensure_lessons(self, lessons, work):
        """Put the lessons the gradebook lacks into it with nbgrader's generate_assignment (run from
        the course snapshot in `work`, releasing into a scratch folder)."""
        missing = [lesson for lesson in lessons if not self.has_assignment(lesson)]
        if not missing:
            return
        scratch = Path(work) / "gradebook-release"
        scratch.mkdir(parents=True, exist_ok=True)  # nbgrader runs from its root
        config = nbgrader_glue.scratch_config(scratch, scratch / "release", Path(work) / "course")
        config.CourseDirectory.db_url = self.url
        api = nbgrader_glue.api_for(config)
        for lesson in missing:
            result = api.generate_assignment(lesson, force=True, create=True)
            if not result["success"]:
                raise SystemExit(f"generate_assignment {lesson} into {self.path} failed:\n{result.get('error') or result.get('log')}")

    def maxima(self):
        """{lesson: {grade_id: points}} of every lesson the gradebook holds, from nbgrader's grade
        cells: what its scores were recorded against (`python -m autograder export`)."""
        with self.nbgrader() as gb:
            held = [a.name for a in gb.assignments if any(nb.name == a.name for nb in a.notebooks)]
        return {lesson: nbgrader_glue.max_points(self.out, lesson) for lesson in held}

    def set_assignment(self, lesson, duedate=None):
        """The lesson as an nbgrader assignment, with its due date when one is given."""
        with self.nbgrader() as gb:
            gb.update_or_create_assignment(lesson, **({"duedate": duedate} if duedate else {}))

    def add_students(self, roster):
        """roster: {student_id: {first_name, last_name, email, lms_user_id}} (nbgrader's columns)."""
        with self.nbgrader() as gb:
            for student_id, fields in roster.items():
                gb.update_or_create_student(student_id, **fields)

    def students(self):
        with self.nbgrader() as gb:
            return [s.id for s in gb.students]

    # -- attempts -------------------------------------------------------------------------------------
    def attempts(self, lesson=None, student=None):
        """Every attempt (dicts, oldest first), of one pair or of all."""
        query, args = "select * from encdec_attempts", []
        if lesson is not None:
            query += " where assignment = ? and student = ?"
            args = [lesson, student]
        with self._sql() as db:
            db.row_factory = sqlite3.Row
            found = [dict(r) for r in db.execute(query + " order by assignment, student, attempt", args)]
        for a in found:
            a["cells"] = json.loads(a["cells"])
            a["misconceptions"] = [tuple(m) for m in json.loads(a["misconceptions"])]
            a["cautions"] = json.loads(a.get("cautions") or "[]")
        return found

    def latest(self):
        """{(lesson, student): the latest attempt}."""
        return {(a["assignment"], a["student"]): a for a in self.attempts()}

    def record(self, job, row, maxima, graded_notebook=None, feedback_page=None):
        """Keep what grading made of a job that had a file: its attempt (new, or the same one
        graded again), the files, and nbgrader's submission with its cell scores. Returns the
        attempt's number, or None when the job had no file (nothing is recorded then, and
        whatever was recorded before stays)."""
        if job.raw is None:
            return None
        lesson, student = job.lesson, job.student
        sha = hashlib.sha256(job.raw).hexdigest()
        earlier = self.attempts(lesson, student)
        same = earlier and earlier[-1]["sha256"] == sha
        number = earlier[-1]["attempt"] if same else (earlier[-1]["attempt"] + 1 if earlier else 1)
        folder = self.out / "attempts" / student / lesson / str(number)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / f"submitted-{job.path.name if job.path else lesson + '.ipynb'}").write_bytes(job.raw)
        for src in (graded_notebook, feedback_page):
            if src is not None and Path(src).exists():
                shutil.copyfile(src, folder / Path(src).name)
        found = self._misconceptions(graded_notebook, row, maxima) if row.graded else []
        penalty, seconds_late = self._record_in_nbgrader(job, row, maxima)
        with self._sql() as db, db:
            db.execute("delete from encdec_attempts where assignment = ? and student = ? and attempt = ?",
                       (lesson, student, number))
            db.execute("insert into encdec_attempts (assignment, student, attempt, graded_at, submitted_at, sha256, "
                       "status, cells, max_score, misconceptions, late, seconds_late, penalty, note, folder, sandbox, "
                       "cautions, course) values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       (lesson, student, number, now(), job.timestamp.isoformat() if job.timestamp else None,
                        sha, row.status, json.dumps(row.cells if row.graded else {}),
                        sum(maxima.get(lesson, {}).values()), json.dumps(found),
                        int(bool(job.late or seconds_late > 0)), seconds_late, penalty, job.note or "",
                        str(folder.relative_to(self.out)), getattr(row, "sandbox", ""),
                        json.dumps(getattr(row, "cautions", [])), getattr(row, "course", "")))
        return number

    def graded_before(self, jobs, course):
        """The (lesson, student) pairs among `jobs` whose file is already recorded as graded (or failed,
        or tampered) against the same course (its hash): a run that stopped half-way leaves these,
        and the same command run again grades only the rest. A crash of the grader is not a result."""
        latest, done = self.latest(), set()
        for job in jobs:
            attempt = latest.get((job.lesson, job.student))
            if job.raw is None or attempt is None or not course or attempt["course"] != course:
                continue
            if attempt["sha256"] == hashlib.sha256(job.raw).hexdigest() and \
                    not attempt["status"].startswith("failed: the grader crashed"):
                done.add((job.lesson, job.student))
        return done

    @staticmethod
    def _misconceptions(graded_notebook, row, maxima):
        if graded_notebook is None:
            return []
        found = records.read_records(graded_notebook, row.cells, maxima.get(row.assignment, {}))
        return sorted({(r.heading, m.key, m.diagnosis) for r in found.values() for m in r.misconceptions})

    def _record_in_nbgrader(self, job, row, maxima):
        """nbgrader's submission for the job: auto scores (0 when not graded), the timestamp, the
        reason as a comment when it was not graded, then nbgrader's late penalty. Manual scores
        are left as they are. Returns (penalty, seconds late)."""
        lesson, student = job.lesson, job.student
        with self.nbgrader() as gb, warnings.catch_warnings():
            warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission, on a student just added
            gb.update_or_create_student(student)
            kwargs = {"timestamp": job.timestamp} if job.timestamp else {}
            submission = gb.update_or_create_submission(lesson, student, **kwargs)
            if not job.timestamp:
                submission.timestamp = None
            nb = gb.find_submission_notebook(lesson, lesson, student)
            for grade in nb.grades:
                grade.auto_score = (row.cells.get(grade.name, 0.0) or 0.0) if row.graded else 0.0
                grade.needs_manual_grade = False
            for comment in nb.comments:
                if row.graded:
                    if (comment.auto_comment or "").startswith(NOT_GRADED):
                        comment.auto_comment = None
                else:
                    comment.auto_comment = NOT_GRADED + row.status
            gb.db.commit()
        self._late_penalty(lesson, student)
        with self.nbgrader() as gb:
            submission = gb.find_submission(lesson, student)
            nb = gb.find_submission_notebook(lesson, lesson, student)
            return float(nb.late_submission_penalty or 0.0), float(submission.total_seconds_late)

    def _late_penalty(self, lesson, student):
        """nbgrader's own step: AssignLatePenalties with the course's LateSubmissionPlugin settings."""
        import nbformat
        from nbgrader.preprocessors import AssignLatePenalties
        step = AssignLatePenalties(config=nbgrader_glue.load_config())
        step.log.setLevel("ERROR")
        resources = {"nbgrader": {"notebook": lesson, "assignment": lesson, "student": student, "db_url": self.url}}
        step.preprocess(nbformat.v4.new_notebook(), resources)

    # -- rows -----------------------------------------------------------------------------------------
    def rows(self, lessons, students, maxima, run_rows=()):
        """A Row per (student, lesson): the latest attempt with nbgrader's scores (a manual score
        wins, as in nbgrader), or the run's own row for a job without a file, or 'missing'."""
        latest = self.latest()
        own = {(r.assignment, r.student_id): r for r in run_rows}
        scores = self._nbgrader_scores()
        rows = []
        for lesson in lessons:
            for student in students:
                attempt = latest.get((lesson, student))
                cells = maxima.get(lesson, {})
                if attempt is None:  # nothing was run: the run's reason (an empty folder), else missing
                    run = own.get((lesson, student))
                    row = Row(lesson, student, run.status if run else "missing: no submission for this lesson",
                              seconds=run.seconds if run else 0.0)
                    row.max_score, row.score = sum(cells.values()), 0.0
                    row.cells = {k: 0.0 for k in cells}
                    rows.append(row)
                    continue
                given = scores.get((lesson, student), {})
                graded = attempt["status"].startswith("graded")
                row = Row(lesson, student, attempt["status"])
                row.cells = {k: given.get(k, 0.0) for k in cells}
                row.max_score = sum(cells.values())
                row.penalty = attempt["penalty"]
                row.score = round(max(0.0, sum(row.cells.values()) - attempt["penalty"]), 4)
                if not graded:  # a manual score may still give points to a notebook that did not run
                    row.score = round(sum(row.cells.values()), 4)
                row.attempts = attempt["attempt"]
                row.late = bool(attempt["late"])
                row.submitted_at = attempt["submitted_at"] or ""
                run = own.get((lesson, student))
                row.seconds = run.seconds if run else 0.0
                row.sandbox = attempt["sandbox"]
                row.cautions = attempt["cautions"]
                rows.append(row)
        return rows

    def _nbgrader_scores(self):
        """{(lesson, student): {grade_id: score}}: nbgrader's Grade.score (manual when set, else auto)."""
        from nbgrader.api import Grade, GradeCell
        out = {}
        with self.nbgrader() as gb:
            for grade in gb.db.query(Grade).all():
                cell = grade.cell
                if not isinstance(cell, GradeCell) or cell.cell_type != "code":
                    continue
                key = (grade.notebook.assignment.assignment.name, grade.notebook.assignment.student.id)
                out.setdefault(key, {})[cell.name] = float(grade.score or 0.0)
        return out
