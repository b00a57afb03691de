"""Grading a class (`make autograde`): what is due, collection, grading, the gradebook, the outputs.

    code = run(options)       # options: the parsed `python -m autograder autograde` arguments

1. What is due (due.py): the assigned lessons and their due dates, the roster.
2. Collection (collection.py): a job per (student, lesson) to grade now; --student and --lesson
   narrow it to the rows named, and only those rows change.
3. Grading (pipeline.grade_all): nbgrader in a scratch course per job.
4. The gradebook (gradebook.py): each job with a file becomes an attempt in nbgrader's gradebook;
   a submission that could not be graded gets a feedback page that says why and what to do.
5. Outputs, all read back from the gradebook: grades.csv, report.md (with the answers that are close
   copies of the reference, similarity.py), one page per student.
"""

import shutil
import sys
import time
from pathlib import Path

from . import collection, course, due, exchange, feedback_pages, gains, gradebook, pipeline, reports, similarity


def run(args, sandbox_mode="on"):
    """Grade what is due and named; write every output from the gradebook. Exit 1 when a
    submission of this run failed or was tampered with."""
    base = Path(args.out)
    out = pipeline.Outputs.under(base)
    roster = due.read_roster(args.roster)
    try:
        lessons, dates, source = due.assigned([args.lessons] if args.lessons else None, args.assignments,
                                              args.submitted)
        named = course.chosen(args.lesson) if args.lesson else None
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    lessons = [x for x in course.lessons() if x in lessons or (named and x in named)]
    now = [x for x in lessons if not named or x in named]
    print(f"Assigned lessons ({source}): {', '.join(lessons) or 'none'}", file=sys.stderr)
    found = collection.collect(args.submitted, now, args.student, roster)
    for note in found.notes:
        print(f"  note: {note}", file=sys.stderr)
    for job in found.jobs:
        job.keep_demos = args.keep_demos
    if not found.jobs:
        print(f"No submissions found under {args.submitted}/<student>/<lesson>/<lesson>.ipynb")
    start = time.time()
    graded = [job for job in found.jobs if job.raw is not None]
    setup = pipeline.prepare(out, sandbox_mode, sorted({j.lesson for j in graded} | set(lessons) | _attempted(base)),
                             warm=pipeline.lessons_to_warm(graded))
    maxima = setup.maxima
    book = gradebook.CourseGradebook(base, setup.template)
    book.ensure_lessons(lessons, out.work)
    book.add_students(roster)
    for lesson, duedate in dates.items():
        book.set_assignment(lesson, duedate)
    jobs = found.jobs
    if getattr(args, "skip_graded", False):
        done = book.graded_before(jobs, setup.course_hash)
        jobs = [job for job in jobs if (job.lesson, job.student) not in done]
        if done:
            print(f"{len(done)} notebooks already graded for the same file and course: kept as they are "
                  "(--regrade grades them again)", file=sys.stderr)
    def record(job, row):
        begun = time.perf_counter()
        record_job(book, job, row, maxima, out)
        row.phases["the gradebook: recording the row"] = round(time.perf_counter() - begun, 4)

    if getattr(args, "dask", None):
        from . import dask_grading
        try:
            run_rows = dask_grading.grade_all(jobs, setup, args.dask, sandbox_mode, on_row=record)
        except dask_grading.Stopped as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 3
    else:
        run_rows, _ = pipeline.grade_all(jobs, out, args.jobs, submitted=args.submitted, setup=setup)
        for job, row in zip(jobs, run_rows):
            record(job, row)
    csv_path, report_path = base / "grades.csv", base / "report.md"
    rows = write_grades(book, maxima, csv_path, lessons, set(roster) | {j.student for j in found.jobs}, run_rows)
    copies = {(r.student_id, r.assignment): similarity.close_copies(
        out.graded_notebook(r.student_id, r.assignment), r.assignment, out.work / "course" / "solutions",
        out.work / "template" / "release") for r in rows if r.graded}
    reports.write_report(rows, maxima, out, report_path, attempts=book.attempts(),
                         copies={k: v for k, v in copies.items() if v})
    reports.write_timings(run_rows, out.work / "timings.json")
    pages = feedback_pages.write_student_pages(rows, book.attempts(), out.feedback,
                                               concepts=gains.by_student(rows, maxima, out))
    ran = {(r.assignment, r.student_id) for r in run_rows}
    late = sum(1 for r in rows if r.late and (r.assignment, r.student_id) in ran)
    print(summary(run_rows, late, time.time() - start))
    print(f"grades in {csv_path} ({len(rows)} rows, {len(run_rows)} of them from this run), cohort report in "
          f"{report_path}, feedback in {out.feedback}, a page per student in {pages}")
    if run_rows:
        print(f"Student code ran in: {run_rows[0].sandbox}")
    failed = [r for r in run_rows if r.status.startswith(("failed", "tampered"))]
    for r in failed:
        print(f"  {r.student_id}/{r.assignment}: {r.status}")
    return 1 if failed else 0


def _attempted(base):
    """The lessons the gradebook in `base` has attempts for (their release is shown in the report)."""
    path = Path(base) / "gradebook.db"
    return {a["assignment"] for a in gradebook.CourseGradebook(base).attempts()} if path.exists() else set()


def write_grades(book, maxima, path, lessons=(), students=(), run_rows=()):
    """grades.csv from the gradebook alone (nothing is graded): a row per student (those in the
    gradebook and those named) and lesson (those named and those with an attempt). run_rows gives
    this run's own rows for jobs without a file. Returns the rows."""
    students = sorted(set(book.students()) | set(students))
    rows = book.rows(shown_lessons(book, lessons), students, maxima, run_rows)
    reports.write_csv(rows, maxima, path)
    return rows


def shown_lessons(book, lessons=()):
    """The lessons grades.csv shows: those named (assigned) and those with an attempt."""
    return sorted(set(lessons) | {a["assignment"] for a in book.attempts()}, key=str)


def record_job(book, job, row, maxima, out):
    """Keep a job's outcome: a failure page when it could not be graded, then its attempt. A job
    without a file leaves an earlier graded attempt, its notebook and its page as they are."""
    if job.raw is None and book.attempts(job.lesson, job.student):
        print(f"  note: {job.student}/{job.lesson}: {row.status}; the attempt graded before is kept", file=sys.stderr)
        return
    notebook = out.graded_notebook(job.student, job.lesson)
    page = out.feedback / job.student / job.lesson / f"{job.lesson}.html"
    if not row.graded and not row.status.startswith("missing"):
        stale = notebook.parent  # an earlier attempt's graded notebook: kept in attempts/, not shown as current
        if stale.exists():
            shutil.rmtree(stale)
        feedback_pages.write_failure_page(page, job, row)
    if page.exists() and job.path is not None:
        exchange.keep_receipts(job.path.parent, page.parent)
    book.record(job, row, maxima, notebook if row.graded else None, page if page.exists() else None)


def summary(rows, late, seconds):
    """The closing line: how many of this run's rows were graded, failed, tampered, missing, and
    how many of them were late."""
    kinds = {"graded": 0, "failed": 0, "tampered": 0, "missing": 0}
    for r in rows:
        kinds[next((k for k in kinds if r.status.startswith(k)), "failed")] += 1
    return (f"{len(rows)} rows in {seconds:.0f} s: {kinds['graded']} graded, {kinds['failed']} failed, "
            f"{kinds['tampered']} tampered, {kinds['missing']} missing (nothing submitted); {late} late")
