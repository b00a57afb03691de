"""The course's grader on top of nbgrader, run from the repository root.

    python -m autograder release [--lesson 05]         # solutions/ -> course/ (nbgrader generate_assignment)
    python -m autograder autograde [--jobs N]          # every submission in autograder/submitted/
    python -m autograder autograde --student bob --lesson 01   # regrade only those rows
    python -m autograder autograde --dask tcp://host:8786      # on a Dask cluster (docs/large-classes.md)
    python -m autograder collect --zip submissions.zip # an LMS's zip into autograder/submitted/
    python -m autograder collect [--lesson 01]         # a JupyterHub class: nbgrader's exchange -> submitted/
    python -m autograder publish [--lesson 01]         # a JupyterHub class: course/ -> the exchange
    python -m autograder release-feedback [--lesson 01]  # a JupyterHub class: feedback -> the exchange
    python -m autograder self [--lesson 05]            # a self-learner grades their own course/ (self_server.py)
    python -m autograder self --stop                   # end the grader `make grade` keeps ready
    python -m autograder validate [NOTEBOOK ...]       # nbgrader's validator; exit 1 when a test fails
    python -m autograder export [--out autograder/]    # grades.csv and canvas.csv from the gradebook, no grading

A lesson is named by its number (5 or 05) or its name (05_block_ordering); --lesson 4,5 names two.

`make release`, `make autograde`, `make grade` and `make validate` run these. Each submission is
graded by nbgrader in a scratch course directory of its own, in a child process with a time
limit; a broken submission gets status "failed: <reason>" and a zero while the others are
graded, and the submitted files are never modified (see pipeline.py).
"""

import argparse
import shutil
import sys
from pathlib import Path

from . import classroom, collection, course, due, exchange, nbgrader_glue, pipeline, reports, sandbox, self_server, settings
from .course import COURSE, HERE, ROOT, lessons


def parser():
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("release")
    c.add_argument("--lesson")
    c = sub.add_parser("autograde")
    c.add_argument("--jobs", type=int, default=1)
    c.add_argument("--lesson", action="append", help="grade only these lessons (every other row stays as it is)")
    c.add_argument("--student", action="append", help="grade only these students (every other row stays as it is)")
    c.add_argument("--submitted", default=str(HERE / "submitted"))
    c.add_argument("--out", default=str(HERE), help="where autograded/, feedback/, grades.csv and report.md go")
    c.add_argument("--keep-demos", action="store_true", help="also run the demonstration cells (slower)")
    c.add_argument("--dask", default=settings.dask_address(), metavar="tcp://HOST:8786",
                   help="grade on this Dask cluster's workers (GRADE_DASK; docs/large-classes.md); rows already "
                        "graded for the same file and course are kept")
    c.add_argument("--regrade", action="store_true", help="with --dask: grade again what is graded already")
    c.add_argument("--resume", action="store_true",
                   help="without --dask: grade only what is not graded yet for the same file and course")
    c.add_argument("--lessons", help="the assigned lessons, e.g. 01-05 (else assignments.csv, else those submitted)")
    c.add_argument("--roster", default=str(HERE / "students.csv"), help="nbgrader's student CSV: id,first_name,…")
    c.add_argument("--assignments", default=str(HERE / "assignments.csv"), help="nbgrader's assignment CSV: name,duedate")
    c = sub.add_parser("collect")
    c.add_argument("--zip", help="the zip of every submission an LMS gives (Canvas's naming); "
                   "without it, the class's nbgrader exchange (make class)")
    c.add_argument("--lesson", action="append", help="collect only these lessons (from the exchange)")
    c.add_argument("--submitted", default=str(HERE / "submitted"))
    c.add_argument("--roster", default=str(HERE / "students.csv"))
    for name in ("publish", "release-feedback"):
        c = sub.add_parser(name)
        c.add_argument("--lesson", action="append", help="only these lessons (default: every lesson)")
    self_server.add_arguments(sub.add_parser("self"))
    c = sub.add_parser("serve-self", help="the grader `make grade` keeps ready (self_server.py starts it)")
    c.add_argument("--out", required=True)
    c.add_argument("--key", required=True)
    c = sub.add_parser("validate")
    c.add_argument("notebooks", nargs="*")
    c = sub.add_parser("export", help="grades.csv and Canvas's gradebook CSV from the gradebook, without grading")
    c.add_argument("--out", default=str(HERE), help="the folder of gradebook.db, where grades.csv and canvas.csv go")
    c.add_argument("--roster", default=str(HERE / "students.csv"), help="nbgrader's student CSV, imported first")
    c.add_argument("--lessons", help="the assigned lessons, e.g. 01-05 (else assignments.csv, else those submitted)")
    c.add_argument("--assignments", default=str(HERE / "assignments.csv"), help="nbgrader's assignment CSV: name,duedate")
    c.add_argument("--submitted", default=str(HERE / "submitted"))
    c.add_argument("--canvas-assignments", default=str(HERE / "canvas_assignments.csv"),
                   help="CSV name,canvas_assignment_id: the lessons' Canvas assignment ids, when given")
    return p


def autograde(args):
    """Grade what is due (classroom.py): grades.csv, report.md and the feedback, from the gradebook.
    Exit 1 when a submission of this run failed."""
    args.skip_graded = (bool(args.dask) and not args.regrade) or args.resume
    return classroom.run(args, sandbox_mode("on"))


def grade_self(args, setup_for=None):
    """Grade a self-learner's own notebooks (copies of them) and print the table. `setup_for(lessons)`: the
    run's setup, from the grader that `make grade` keeps ready (self_server_process.py); else made here."""
    out = pipeline.Outputs.under(args.out)
    staging = Path(args.out) / "submitted"
    if staging.exists():
        shutil.rmtree(staging)
    me = staging / "me"
    chosen = chosen_lessons(args.lesson)
    for lesson in chosen:
        src = Path(args.course) / lesson / f"{lesson}.ipynb"
        if src.exists():
            (me / lesson).mkdir(parents=True)
            shutil.copyfile(src, me / lesson / f"{lesson}.ipynb")
    jobs = pipeline.find_submissions(staging, None, chosen) or [pipeline.Job("me", lesson) for lesson in chosen]
    setup = setup_for(pipeline.lessons_of(jobs)) if setup_for else None
    rows, maxima = pipeline.grade_all(jobs, out, 1, submitted=staging, sandbox_mode=sandbox_mode("auto"), setup=setup)
    reports.write_csv(rows, maxima, Path(args.out) / "grades.csv")
    if rows and rows[0].sandbox.startswith("off"):
        print(f"Graded without the sandbox: {rows[0].sandbox}")
    reports.print_table(rows, maxima, out)
    reports.print_feedback_pages(rows, out)
    return 0


def export(args):
    """grades.csv, as autograde writes it, and canvas.csv (lms_export.py) from the gradebook in
    --out, grading nothing: the same students, and the same lessons, the assigned ones (chosen
    as autograde chooses them) and those handed in. The roster is imported first, as autograde
    does, so that an lms_user_id added to it since is used."""
    from . import gradebook, lms_export
    book = gradebook.CourseGradebook(args.out)
    if not book.path.exists() or not book.attempts():
        raise SystemExit(f"error: nothing graded in {book.path} yet; grade first (make autograde)")
    try:
        assigned, _, _ = due.assigned([args.lessons] if args.lessons else None, args.assignments, args.submitted)
        ids = lms_export.read_assignment_ids(args.canvas_assignments)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    roster = due.read_roster(args.roster)
    book.add_students(roster)
    grades, canvas = Path(args.out) / "grades.csv", Path(args.out) / "canvas.csv"
    rows = classroom.write_grades(book, book.maxima(), grades, assigned, roster)
    count = lms_export.write_canvas_csv(book.url, canvas, classroom.shown_lessons(book, assigned), assignment_ids=ids)
    print(f"{grades}: {len(rows)} rows, one per student and lesson")
    print(f"{canvas}: {count} students, for Canvas's Grades > Import")
    return 0


def sandbox_mode(default):
    try:
        return settings.mode(default)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None


def chosen_lessons(specs):
    """The lessons --lesson names (every lesson without it); exit with the list of lessons when one
    names no lesson."""
    try:
        return course.chosen(specs)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None


def main(argv):
    args = parser().parse_args(argv)
    if getattr(args, "out", None):  # nbgrader's scratch courses need it absolute
        args.out = str(Path(args.out).resolve())
    if args.command == "release":
        for lesson in chosen_lessons([args.lesson]) if args.lesson else [None]:
            nbgrader_glue.release(lesson)
        return 0
    if args.command == "publish":
        return exchange.publish(chosen_lessons(args.lesson))
    if args.command == "release-feedback":
        return exchange.release_feedback(chosen_lessons(args.lesson))
    if args.command == "collect" and not args.zip:
        return exchange.collect(chosen_lessons(args.lesson))
    if args.command == "collect":
        if not Path(args.zip).is_file():
            raise SystemExit(f"error: no zip at {args.zip} (make collect ZIP=path/to/submissions.zip)")
        for note in collection.import_canvas_zip(args.zip, args.submitted, lessons(), due.read_roster(args.roster)):
            print(note)
        return 0
    if args.command == "export":
        return export(args)
    if args.command == "validate":
        return nbgrader_glue.validate(args.notebooks or [COURSE / l / f"{l}.ipynb" for l in lessons()])
    try:
        if args.command == "autograde":
            return autograde(args)
        if args.command == "self":
            code = self_server.handle(args)  # --stop, --warm, or a run the ready grader answers
            return grade_self(args) if code is None else code
        if args.command == "serve-self":
            from . import self_server_process
            return self_server_process.serve(args.out, args.key, grade_self, sandbox_unavailable, sandbox_mode("auto"))
    except sandbox.Unavailable as exc:
        return sandbox_unavailable(exc)
    return 2


def sandbox_unavailable(exc):
    print(f"error: student code is graded in a sandbox, and it cannot run here: {exc}.\n"
          "Install what it needs, or grade without it, knowingly, with SANDBOX=off "
          "(grades.csv then says so in every row).", file=sys.stderr)
    return 2
