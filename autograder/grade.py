"""The course's grading driver, on top of nbgrader.

    python autograder/grade.py release                  # solutions/ -> course/ (nbgrader generate_assignment)
    python autograder/grade.py autograde [--jobs N]     # every submission in autograder/submitted/
    python autograder/grade.py self [--lesson 05]       # a self-learner grades their own course/
    python autograder/grade.py validate [NOTEBOOK ...]  # nbgrader's validator; exit 1 when a test fails

How a submission is graded. Each (student, lesson) is graded in a scratch course directory of
its own: a copy of a gradebook that `generate_assignment` prepared from solutions/, and a copy
of the submitted notebook. nbgrader's real `autograde` runs there in a child process with a time
limit (its OverwriteCells puts back tampered or deleted test cells), then `generate_feedback`
writes HTML without the hidden tests. The results are copied out: autograded notebooks to
autograder/autograded/, feedback to autograder/feedback/, and one row per submission, with a
column per graded test cell and a status, to autograder/grades.csv. A broken submission (not
JSON, a dead kernel, a timeout) gets status "failed: <reason>" and a zero; the others are
graded as usual, and the submitted files are never modified.
"""

import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOLUTIONS, COURSE = ROOT / "solutions", ROOT / "course"
NOTEBOOK_TIMEOUT = int(os.environ.get("GRADE_TIMEOUT", "600"))  # seconds per notebook, all cells

# nbgrader runs `alembic` by name: the interpreter's own bin/ must come first on PATH.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def lessons():
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name)
                  and (p / f"{p.name}.ipynb").exists())


# -- nbgrader, configured ------------------------------------------------------------------------------
def load_config(**overrides):
    """nbgrader_config.py plus CourseDirectory overrides (root, directories, db_url)."""
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()
    for key, value in overrides.items():
        setattr(config.CourseDirectory, key, value)
    return config


def api_for(config):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


def scratch_config(root, release):
    return load_config(root=str(root), source_directory=str(SOLUTIONS), release_directory=str(release),
                       submitted_directory="submitted", autograded_directory="autograded",
                       feedback_directory="feedback", db_url=f"sqlite:///{root / 'gradebook.db'}")


def prepare_template(work):
    """A gradebook holding every lesson's source cells (what OverwriteCells restores from)."""
    template = work / "template"
    if template.exists():
        shutil.rmtree(template)
    template.mkdir(parents=True)
    api = api_for(scratch_config(template, template / "release"))
    for lesson in lessons():
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            raise SystemExit(f"generate_assignment {lesson} failed:\n{result.get('error') or result.get('log')}")
    return template


# -- release ---------------------------------------------------------------------------------------------
def release(only=None):
    """Regenerate course/ from solutions/: every lesson, plus the shared Markdown pages."""
    api = api_for(load_config())
    for lesson in lessons():
        if only and not lesson.startswith(only):
            continue
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            print(result.get("log", ""), result.get("error", ""), file=sys.stderr)
            raise SystemExit(f"generate_assignment {lesson} failed")
        print(f"released course/{lesson}/{lesson}.ipynb")
    for page in sorted(SOLUTIONS.glob("*.md")):
        shutil.copyfile(page, COURSE / page.name)
        print(f"copied course/{page.name}")


# -- grading one submission ------------------------------------------------------------------------------
def check_notebook_file(path, lesson):
    """None if the file is a readable notebook, else the reason it cannot be graded."""
    import nbformat
    if path.stat().st_size == 0:
        return "the notebook file is empty"
    try:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:
        kind = "not valid JSON" if isinstance(exc, json.JSONDecodeError) or "JSON" in type(exc).__name__ else "not a valid notebook"
        return f"{kind} ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
    return None


def failure_reason(log):
    """A one-line reason from nbgrader's log of a failed autograde."""
    text = log or ""
    for pattern, reason in (
        (r"DeadKernelError|Kernel died|kernel died", "the kernel died while running the notebook"),
        (r"CellTimeoutError|Timeout waiting for|timed out", "a cell ran past the time limit"),
        (r"JSONDecodeError|NotJSONError|Notebook does not appear to be JSON", "not valid JSON"),
        (r"ValidationError", "not a valid notebook"),
        (r"partial credit cannot be greater", "a test cell reported more points than it is worth"),
    ):
        if re.search(pattern, text):
            return reason
    last = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (last[-1][:160] if last else "nbgrader could not grade it")


def read_grades(root, lesson, student):
    """Per-cell scores of one graded submission, from its gradebook."""
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(lesson, lesson, student)
        cells = {g.name: (g.score, g.max_score) for g in nb.grades if g.cell_type == "code"}
    return cells


def grade_one(job):
    """Runs in a child process: grade one submission in its scratch directory; print a JSON row."""
    root, lesson, student = Path(job["root"]), job["lesson"], job["student"]
    api = api_for(scratch_config(root, Path(job["release"])))
    result = api.autograde(lesson, student, force=True, create=True)
    if not result["success"]:
        return {"status": f"failed: {failure_reason((result.get('log') or '') + (result.get('error') or ''))}"}
    cells = read_grades(root, lesson, student)
    feedback = api.generate_feedback(lesson, student, force=True)
    return {"status": "graded", "cells": cells, "feedback_ok": bool(feedback["success"])}


def max_points(template, lesson):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{template / 'gradebook.db'}") as gb:
        nb = gb.find_notebook(lesson, lesson)
        return {c.name: c.max_score for c in nb.grade_cells if c.cell_type == "code"}


def run_job(job, template, out):
    """Grade one submission in a child process with a time limit; returns a CSV row dict."""
    lesson, student, source = job["lesson"], job["student"], job.get("path")
    row = {"assignment": lesson, "student_id": student}
    if source is None:
        return {**row, "status": job.get("status", "missing: no submission for this lesson")}
    reason = check_notebook_file(Path(source), lesson)
    if reason:
        return {**row, "status": f"failed: {reason}"}
    root = Path(tempfile.mkdtemp(prefix=f"{student}-{lesson}-", dir=out["work"]))
    try:
        shutil.copyfile(template / "gradebook.db", root / "gradebook.db")
        dest = root / "submitted" / student / lesson
        dest.mkdir(parents=True)
        shutil.copyfile(source, dest / f"{lesson}.ipynb")
        spec = json.dumps({"root": str(root), "lesson": lesson, "student": student,
                           "release": str(template / "release")})
        proc = subprocess.Popen([sys.executable, str(Path(__file__)), "_one", spec], cwd=root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=job.get("timeout", NOTEBOOK_TIMEOUT))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the kernel too: it is in the same session
            proc.communicate()
            return {**row, "status": f"failed: grading took longer than {job.get('timeout', NOTEBOOK_TIMEOUT)} s"}
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
            return {**row, "status": f"failed: the grader crashed ({tail[0][:160]})"}
        result = json.loads(lines[-1])
        row["status"] = result["status"]
        if result["status"] == "graded":
            row["cells"] = {k: v[0] for k, v in result["cells"].items()}
            for kind in ("autograded", "feedback"):
                src = root / kind / student / lesson
                if src.exists():
                    dst = out[kind] / student / lesson
                    if dst.exists():
                        shutil.rmtree(dst)
                    shutil.copytree(src, dst)
        return row
    finally:
        shutil.rmtree(root, ignore_errors=True)


def find_submissions(submitted, students=None, only_lessons=None):
    """One job per (student, lesson): the notebook path, or none with the reason."""
    jobs = []
    all_lessons = [l for l in lessons() if not only_lessons or any(l.startswith(x) for x in only_lessons)]
    student_dirs = sorted(p for p in Path(submitted).iterdir() if p.is_dir()) if Path(submitted).exists() else []
    for sdir in student_dirs:
        if students and sdir.name not in students:
            continue
        for lesson in all_lessons:
            job = {"student": sdir.name, "lesson": lesson}
            expected = sdir / lesson / f"{lesson}.ipynb"
            if expected.exists():
                job["path"] = str(expected)
            elif (sdir / lesson).is_dir():
                found = sorted(p.name for p in (sdir / lesson).glob("*.ipynb"))
                job["status"] = (f"failed: no notebook named {lesson}.ipynb"
                                 + (f" (found {', '.join(found)})" if found else " (the lesson folder is empty)"))
            jobs.append(job)
    return jobs


def grade_all(jobs, out, jobs_n=1, progress=True):
    """Grade the jobs with up to jobs_n in parallel; returns the rows in job order."""
    out["work"].mkdir(parents=True, exist_ok=True)
    template = prepare_template(out["work"])
    maxima = {lesson: max_points(template, lesson) for lesson in lessons()}
    rows = [None] * len(jobs)
    bar = None
    if progress and jobs:
        from tqdm import tqdm
        bar = tqdm(total=len(jobs), desc="grading", unit="notebook", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=max(1, jobs_n)) as pool:
        futures = {pool.submit(run_job, job, template, out): i for i, job in enumerate(jobs)}
        for future in as_completed(futures):
            i = futures[future]
            try:
                rows[i] = future.result()
            except Exception as exc:  # the driver itself must finish and write every row
                rows[i] = {"assignment": jobs[i]["lesson"], "student_id": jobs[i]["student"],
                           "status": f"failed: {type(exc).__name__}: {exc}"}
            if bar:
                bar.update(1)
                bar.set_postfix_str(f"{jobs[i]['student']}/{jobs[i]['lesson']}: {rows[i]['status'][:40]}")
    if bar:
        bar.close()
    for row in rows:
        cells = maxima.get(row["assignment"], {})
        row["max_score"] = sum(cells.values())
        got = row.get("cells", {})
        row["score"] = round(sum(got.get(k, 0.0) or 0.0 for k in cells), 4) if row["status"] == "graded" else 0.0
        row["cells"] = {k: (got.get(k, 0.0) or 0.0) if row["status"] == "graded" else 0.0 for k in cells}
    return rows, maxima


def write_csv(rows, maxima, path):
    columns = [f"{lesson[:2]}:{cell}" for lesson in sorted(maxima) for cell in maxima[lesson]]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "student_id", "score", "max_score", "status"] + columns)
        for row in rows:
            cells = {f"{row['assignment'][:2]}:{k}": v for k, v in row["cells"].items()}
            writer.writerow([row["assignment"], row["student_id"], _num(row["score"]), _num(row["max_score"]),
                             row["status"]] + [_num(cells[c]) if c in cells else "" for c in columns])


def _num(x):
    return f"{x:g}" if isinstance(x, (int, float)) else x


# -- what the checkers said --------------------------------------------------------------------------
def cell_messages(notebook_path):
    """{grade_id: (title, message)} from the test cells' outputs of an autograded notebook."""
    import nbformat
    found = {}
    if not Path(notebook_path).exists():
        return found
    nb = nbformat.read(str(notebook_path), as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        title = ""
        m = re.search(r"^Exercise ([\d.]+) · (.+?): ", text, re.M)
        if m:
            title = f"{m.group(1)} {m.group(2)}"
        failures = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("✗")]
        causes = [ln.strip()[len("Likely cause: "):] for ln in text.splitlines() if ln.strip().startswith("Likely cause:")]
        message = failures[0] if failures else ""
        if causes and causes[0] != "the same as above.":
            message += f" -> {causes[0]}"
        if errors:
            message = f"{errors[0].get('ename')}: {errors[0].get('evalue')}"[:300]
        found[meta["grade_id"]] = (title, message)
    return found


def print_table(rows, maxima, out):
    print()
    for row in rows:
        lesson = row["assignment"]
        head = f"Lesson {lesson}: {_num(row['score'])} / {_num(row['max_score'])} points"
        if row["status"] != "graded":
            head += f"  [{row['status']}]"
        print(head)
        messages = cell_messages(out["autograded"] / row["student_id"] / lesson / f"{lesson}.ipynb")
        for cell, maximum in maxima[lesson].items():
            title, message = messages.get(cell, (cell, ""))
            got = row["cells"].get(cell, 0.0)
            mark = "✓" if got == maximum else "✗"
            print(f"  {mark} {title or cell:<48} {_num(got):>5} / {_num(maximum):<3}"
                  + (f"  {message}" if got < maximum and message else ""))
    total, maximum = sum(r["score"] for r in rows), sum(r["max_score"] for r in rows)
    print(f"\nTotal: {_num(round(total, 2))} / {_num(maximum)} points")


# -- validate ------------------------------------------------------------------------------------------
def validate(paths):
    from nbgrader.validator import Validator
    config = load_config()
    validator = Validator(config=config)
    failed_any = False
    for path in paths:
        results = validator.validate(str(path))
        failed = results.get("failed", [])
        changed = results.get("changed", []) + results.get("type_changed", [])
        if failed:
            failed_any = True
            print(f"FAIL {path}: {len(failed)} test cell(s) fail")
            for cell in failed:
                error = cell.get("raw_error", "").strip()
                print("  " + "\n  ".join(error.splitlines()[:12]))
        elif changed:
            failed_any = True
            print(f"FAIL {path}: locked cells were changed")
        else:
            print(f"PASS {path}")
    return 1 if failed_any else 0


# -- commands ------------------------------------------------------------------------------------------
def outputs(base):
    base = Path(base)
    return {"autograded": base / "autograded", "feedback": base / "feedback", "work": base / ".work"}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release")
    p.add_argument("--lesson")
    p = sub.add_parser("autograde")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--lesson", action="append")
    p.add_argument("--student", action="append")
    p.add_argument("--submitted", default=str(HERE / "submitted"))
    p.add_argument("--out", default=str(HERE), help="where autograded/, feedback/ and grades.csv go")
    p = sub.add_parser("self")
    p.add_argument("--lesson", action="append")
    p.add_argument("--course", default=str(COURSE))
    p.add_argument("--out", default=str(ROOT / ".selfgrade"))
    p = sub.add_parser("validate")
    p.add_argument("notebooks", nargs="*")
    p = sub.add_parser("_one")
    p.add_argument("spec")
    args = parser.parse_args(argv)

    if args.command == "_one":
        print(json.dumps(grade_one(json.loads(args.spec))))
        return 0
    if args.command == "release":
        release(args.lesson)
        return 0
    if args.command == "validate":
        paths = args.notebooks or [COURSE / l / f"{l}.ipynb" for l in lessons()]
        return validate(paths)
    if args.command == "autograde":
        out = outputs(args.out)
        jobs = find_submissions(args.submitted, args.student, args.lesson)
        if not jobs:
            print(f"No submissions found under {args.submitted}/<student>/<lesson>/<lesson>.ipynb")
        start = time.time()
        rows, maxima = grade_all(jobs, out, args.jobs)
        csv_path = Path(args.out) / "grades.csv"
        write_csv(rows, maxima, csv_path)
        failed = [r for r in rows if r["status"].startswith("failed")]
        print(f"Graded {len(rows) - len(failed)} of {len(rows)} submissions in {time.time() - start:.0f} s; "
              f"grades in {csv_path}, feedback in {out['feedback']}")
        for r in failed:
            print(f"  {r['student_id']}/{r['assignment']}: {r['status']}")
        return 1 if failed else 0
    if args.command == "self":
        out = outputs(args.out)
        staging = Path(args.out) / "submitted"
        if staging.exists():
            shutil.rmtree(staging)
        me = staging / "me"
        chosen = [l for l in lessons() if not args.lesson or any(l.startswith(x) for x in args.lesson)]
        if not chosen:
            raise SystemExit(f"no lesson matches {args.lesson}; lessons: {', '.join(lessons())}")
        for lesson in chosen:
            src = Path(args.course) / lesson / f"{lesson}.ipynb"
            if src.exists():
                (me / lesson).mkdir(parents=True)
                shutil.copyfile(src, me / lesson / f"{lesson}.ipynb")
        jobs = find_submissions(staging, None, chosen)
        if not jobs:
            jobs = [{"student": "me", "lesson": l} for l in chosen]
        rows, maxima = grade_all(jobs, out, 1)
        write_csv(rows, maxima, Path(args.out) / "grades.csv")
        print_table(rows, maxima, out)
        print(f"\nFeedback pages: {out['feedback'] / 'me'}/<lesson>/<lesson>.html")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
