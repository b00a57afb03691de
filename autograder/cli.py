"""The course's grader on top of nbgrader, run from the repository root.

    python -m autograder release [--lesson 05]         # solutions/ -> course/ (nbgrader generate_assignment)
    python -m autograder autograde [--jobs N]          # every submission in autograder/submitted/
    python -m autograder self [--lesson 05]            # a self-learner grades their own course/
    python -m autograder validate [NOTEBOOK ...]       # nbgrader's validator; exit 1 when a test fails

`make release`, `make autograde`, `make grade` and `make validate` run these. Each submission is
graded by nbgrader in a scratch course directory of its own, in a child process with a time
limit; a broken submission gets status "failed: <reason>" and a zero while the others are
graded, and the submitted files are never modified (see pipeline.py).
"""

import argparse
import shutil
import time
from pathlib import Path

from . import nbgrader_glue, pipeline, reports
from .course import COURSE, HERE, ROOT, lessons, matching


def parser():
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("release")
    c.add_argument("--lesson")
    c = sub.add_parser("autograde")
    c.add_argument("--jobs", type=int, default=1)
    c.add_argument("--lesson", action="append")
    c.add_argument("--student", action="append")
    c.add_argument("--submitted", default=str(HERE / "submitted"))
    c.add_argument("--out", default=str(HERE), help="where autograded/, feedback/, grades.csv and report.md go")
    c.add_argument("--keep-demos", action="store_true", help="also run the demonstration cells (slower)")
    c = sub.add_parser("self")
    c.add_argument("--lesson", action="append")
    c.add_argument("--course", default=str(COURSE))
    c.add_argument("--out", default=str(ROOT / ".selfgrade"))
    c = sub.add_parser("validate")
    c.add_argument("notebooks", nargs="*")
    return p


def autograde(args):
    """Grade every submission; grades.csv, report.md and the feedback. Exit 1 when one failed."""
    out = pipeline.Outputs.under(args.out)
    jobs = pipeline.find_submissions(args.submitted, args.student, args.lesson)
    for job in jobs:
        job.keep_demos = args.keep_demos
    if not jobs:
        print(f"No submissions found under {args.submitted}/<student>/<lesson>/<lesson>.ipynb")
    start = time.time()
    rows, maxima = pipeline.grade_all(jobs, out, args.jobs, submitted=args.submitted)
    csv_path, report_path = Path(args.out) / "grades.csv", Path(args.out) / "report.md"
    reports.write_csv(rows, maxima, csv_path)
    reports.write_report(rows, maxima, out, report_path)
    reports.write_timings(rows, out.work / "timings.json")
    failed = [r for r in rows if r.status.startswith(("failed", "tampered"))]
    print(f"Graded {len(rows) - len(failed)} of {len(rows)} submissions in {time.time() - start:.0f} s; "
          f"grades in {csv_path}, cohort report in {report_path}, feedback in {out.feedback}")
    for r in failed:
        print(f"  {r.student_id}/{r.assignment}: {r.status}")
    return 1 if failed else 0


def grade_self(args):
    """Grade a self-learner's own notebooks (copies of them) and print the table."""
    out = pipeline.Outputs.under(args.out)
    staging = Path(args.out) / "submitted"
    if staging.exists():
        shutil.rmtree(staging)
    me = staging / "me"
    chosen = matching(args.lesson)
    if not chosen:
        raise SystemExit(f"no lesson matches {args.lesson}; lessons: {', '.join(lessons())}")
    for lesson in chosen:
        src = Path(args.course) / lesson / f"{lesson}.ipynb"
        if src.exists():
            (me / lesson).mkdir(parents=True)
            shutil.copyfile(src, me / lesson / f"{lesson}.ipynb")
    jobs = pipeline.find_submissions(staging, None, chosen) or [pipeline.Job("me", lesson) for lesson in chosen]
    rows, maxima = pipeline.grade_all(jobs, out, 1, submitted=staging)
    reports.write_csv(rows, maxima, Path(args.out) / "grades.csv")
    reports.print_table(rows, maxima, out)
    print(f"\nFeedback pages: {out.feedback / 'me'}/<lesson>/<lesson>.html")
    return 0


def main(argv):
    args = parser().parse_args(argv)
    if args.command == "release":
        nbgrader_glue.release(args.lesson)
        return 0
    if args.command == "validate":
        return nbgrader_glue.validate(args.notebooks or [COURSE / l / f"{l}.ipynb" for l in lessons()])
    if args.command == "autograde":
        return autograde(args)
    if args.command == "self":
        return grade_self(args)
    return 2
