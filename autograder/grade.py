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
import hashlib
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

NOTEBOOK_TIMEOUT = int(os.environ.get("GRADE_TIMEOUT", "600"))  # seconds per notebook, all cells

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOLUTIONS, COURSE = ROOT / "solutions", ROOT / "course"

# nbgrader runs `alembic` by name: the interpreter's own bin/ must come first on PATH.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def lessons():
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name)
                  and (p / f"{p.name}.ipynb").exists())


# -- nbgrader, configured ------------------------------------------------------------------------------
def load_config(config_dir=HERE, **overrides):
    """nbgrader_config.py plus CourseDirectory overrides (root, directories, db_url)."""
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(config_dir)).load_config()
    for key, value in overrides.items():
        setattr(config.CourseDirectory, key, value)
    return config


def api_for(config):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


def scratch_config(root, release, course=ROOT):
    """A course directory of its own for one grading job; `course` holds the solutions/ and
    autograder/ it uses (a private snapshot of the course when grading)."""
    course = Path(course)
    return load_config(course / "autograder", root=str(root), source_directory=str(course / "solutions"),
                       release_directory=str(release),
                       submitted_directory="submitted", autograded_directory="autograded",
                       feedback_directory="feedback", db_url=f"sqlite:///{root / 'gradebook.db'}")


def snapshot_course(work):
    """A private copy of what grading runs: lib/ (the kernels import it), solutions/ and the
    autograder's code. Submissions can reach only this copy, which is checked and restored
    after every job; the working tree is never touched, so nobody's edits are undone."""
    course = work / "course"
    if course.exists():
        shutil.rmtree(course)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "lib", course / "lib", ignore=ignore)
    shutil.copytree(SOLUTIONS, course / "solutions", ignore=ignore)
    (course / "autograder").mkdir()
    for path in HERE.glob("*.py"):
        shutil.copyfile(path, course / "autograder" / path.name)
    return course


def prepare_template(work, course):
    """A gradebook holding every lesson's source cells (what OverwriteCells restores from)."""
    template = work / "template"
    if template.exists():
        shutil.rmtree(template)
    template.mkdir(parents=True)
    api = api_for(scratch_config(template, template / "release", course))
    for lesson in lessons():
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            raise SystemExit(f"generate_assignment {lesson} failed:\n{result.get('error') or result.get('log')}")
    return template


# -- release ---------------------------------------------------------------------------------------------
def release(only=None):
    """Regenerate course/ from solutions/: every lesson, plus the shared Markdown pages and figures."""
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
    if (SOLUTIONS / "figures").is_dir():  # the diagrams the lessons embed (tools/figures.py draws them)
        shutil.rmtree(COURSE / "figures", ignore_errors=True)
        shutil.copytree(SOLUTIONS / "figures", COURSE / "figures")
        print("copied course/figures/")


# -- grading one submission ------------------------------------------------------------------------------
def check_notebook_bytes(raw):
    """None if the bytes are a readable notebook, else the reason it cannot be graded."""
    import nbformat
    if not raw.strip():
        return "the notebook file is empty"
    try:
        nb = nbformat.reads(raw.decode("utf-8", errors="strict"), as_version=4)
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
        # auto_score, not score: a manual score in the gradebook could only come from tampering
        cells = {g.name: (g.auto_score, g.max_score) for g in nb.grades if g.cell_type == "code"}
    return cells


def grade_one(job):
    """Runs in a child process: grade one submission in its scratch directory."""
    root, lesson, student = Path(job["root"]), job["lesson"], job["student"]
    api = api_for(scratch_config(root, Path(job["release"]), job["course"]))
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


_FORKSERVER = None


def forkserver():
    """Children are forked from a server that imported nbgrader and this file once, when
    grading began: starting one costs milliseconds, and each runs the driver's code as it was
    then, whatever a submission later writes to disk."""
    global _FORKSERVER
    if _FORKSERVER is None:
        import multiprocessing
        _FORKSERVER = multiprocessing.get_context("forkserver")
        _FORKSERVER.set_forkserver_preload(["nbgrader.apps", "nbgrader.api", "nbgrader.converters"])
    return _FORKSERVER


def _child(spec, conn):
    os.setsid()  # a session of its own: the kernel it starts dies with it on a timeout
    lib = str(Path(spec["course"]) / "lib")  # the kernel imports the snapshot's lib/ first
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (lib, os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, lib)
    os.chdir(spec["root"])
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
        conn.send(grade_one(spec))
    except BaseException as exc:
        conn.send({"status": f"failed: the grader crashed ({type(exc).__name__}: {str(exc)[:160]})"})
    finally:
        conn.close()


def run_in_child(spec, timeout):
    """(status or None, result): grade one scratch submission in a forked child, killed after timeout s."""
    ctx = forkserver()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(spec, child))
    proc.start()
    child.close()
    if not parent.poll(timeout):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.join()
        return f"failed: grading took longer than {timeout} s (an endless loop that ignores interrupts?)", None
    try:
        result = parent.recv()
    except EOFError:
        result = {"status": "failed: the grader crashed (no result)"}
    proc.join(10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything the notebook left running
    except (ProcessLookupError, PermissionError):
        pass
    return None, result


def source_facts(lesson):
    """What grading needs to know about a lesson's source notebook: the ids of its demo cells
    (skipped when grading), its locked and graded cell ids, and the source of its own code cells."""
    import nbformat
    nb = nbformat.read(str(SOLUTIONS / lesson / f"{lesson}.ipynb"), as_version=4)
    demo = {c.get("id") for c in nb.cells if "demo" in c.get("metadata", {}).get("tags", [])}
    course_sources = {c.source for c in nb.cells if c.cell_type == "code"
                      and not c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    return {"demo": demo, "sources": course_sources}


def prepare_notebook(raw, lesson, facts, keep_demos):
    """(notebook text to grade, audit findings) for a submission's bytes."""
    import nbformat
    sys.path.insert(0, str(HERE))
    from audit import audit_notebook
    nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    skip = set() if keep_demos else facts["demo"]
    findings = audit_notebook(nb, skip_ids=skip, trusted_sources=facts["sources"])
    if skip:
        nb.cells = [c for c in nb.cells if c.get("id") not in skip]
    return nbformat.writes(nb), findings


def run_job(job, template, out):
    """Grade one submission in a child process with a time limit; returns a CSV row dict."""
    lesson, student = job["lesson"], job["student"]
    row = {"assignment": lesson, "student_id": student}
    if job.get("raw") is None:
        return {**row, "status": job.get("status", "missing: no submission for this lesson")}
    reason = check_notebook_bytes(job["raw"])
    if reason:
        return {**row, "status": f"failed: {reason}"}
    text, findings = prepare_notebook(job["raw"], lesson, job["facts"], job.get("keep_demos", False))
    if findings:
        shown = "; ".join(findings[:3]) + (f"; and {len(findings) - 3} more" if len(findings) > 3 else "")
        return {**row, "status": f"tampered: the notebook changes what the tests rely on or writes files ({shown})"}
    timeout = job.get("timeout", NOTEBOOK_TIMEOUT)
    root = Path(tempfile.mkdtemp(prefix=f"{student}-{lesson}-", dir=out["work"]))
    try:
        shutil.copyfile(template / "gradebook.db", root / "gradebook.db")
        dest = root / "submitted" / student / lesson
        dest.mkdir(parents=True)
        (dest / f"{lesson}.ipynb").write_text(text)
        spec = {"root": str(root), "lesson": lesson, "student": student, "release": str(template / "release"),
                "course": str(job["course"])}
        status, result = run_in_child(spec, timeout)
        if status:
            return {**row, "status": status}
        row["status"] = result["status"]
        if job.get("note") and result["status"] == "graded":
            row["status"] = f"graded ({job['note']})"
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
            found = sorted((sdir / lesson).glob("*.ipynb")) if (sdir / lesson).is_dir() else []
            if expected.is_file():
                job["path"] = str(expected)
            elif len(found) == 1:  # one notebook under another name: grade it, and say so
                job["path"] = str(found[0])
                job["note"] = f"submitted as {found[0].name}, expected {lesson}.ipynb"
            elif (sdir / lesson).is_dir():
                job["status"] = (f"failed: no notebook named {lesson}.ipynb"
                                 + (f" (found {', '.join(p.name for p in found)})" if found else " (the lesson folder is empty)"))
            if "path" in job:
                job["raw"] = Path(job["path"]).read_bytes()  # the pristine copy every later step uses
            jobs.append(job)
    return jobs


class Integrity:
    """The files grading relies on, remembered before grading and restored if a submission
    changes them: the snapshot of the course (its lib/, solutions/ and autograder code), the
    template gradebook, every submission, and the start-up hooks of the Python environment
    (.pth files, sitecustomize)."""

    def __init__(self, submitted, template, course):
        self.roots = [Path(course), template] + ([Path(submitted)] if submitted else [])
        self.files = {}
        for root in self.roots:
            for path in root.rglob("*"):
                if path.is_file() and "__pycache__" not in path.parts:
                    self.files[path] = path.read_bytes()
        self.stats = {p: self._stat(p) for p in self.files}
        self.site = self._site_listing()

    @staticmethod
    def _stat(path):
        try:
            st = path.stat()
            return (st.st_size, st.st_mtime_ns)
        except OSError:
            return None

    @staticmethod
    def _site_listing():
        import site
        names = set()
        for folder in site.getsitepackages() + [site.getusersitepackages()]:
            if os.path.isdir(folder):
                names |= {os.path.join(folder, n) for n in os.listdir(folder)}
        return names

    def check_and_restore(self):
        """Paths that changed since grading began (now restored); [] when all is intact."""
        changed = []
        for path, data in self.files.items():
            if self._stat(path) != self.stats[path]:
                if not path.exists() or path.read_bytes() != data:
                    changed.append(str(path))
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
                self.stats[path] = self._stat(path)
        for root in self.roots:
            for path in root.rglob("*"):
                if path.is_file() and path not in self.files and "__pycache__" not in path.parts:
                    changed.append(f"{path} (new)")
                    path.unlink()
        for extra in self._site_listing() - self.site:
            changed.append(f"{extra} (new)")
            shutil.rmtree(extra, ignore_errors=True) if os.path.isdir(extra) else os.remove(extra)
        return changed


def grade_all(jobs, out, jobs_n=1, progress=True, submitted=None):
    """Grade the jobs with up to jobs_n in parallel; returns the rows in job order."""
    out["work"].mkdir(parents=True, exist_ok=True)
    course = snapshot_course(out["work"])
    template = prepare_template(out["work"], course)
    maxima = {lesson: max_points(template, lesson) for lesson in lessons()}
    facts = {lesson: source_facts(lesson) for lesson in lessons()}
    for job in jobs:
        job["facts"] = facts.get(job["lesson"])
        job["course"] = course
    integrity = Integrity(submitted, template, course)
    rows = [None] * len(jobs)
    bar = None
    if progress and jobs:
        from tqdm import tqdm
        bar = tqdm(total=len(jobs), desc="grading", unit="notebook", file=sys.stderr)

    def one(i):
        start = time.perf_counter()
        try:
            row = run_job(jobs[i], template, out)
        except Exception as exc:  # the driver itself must finish and write every row
            row = {"assignment": jobs[i]["lesson"], "student_id": jobs[i]["student"],
                   "status": f"failed: {type(exc).__name__}: {exc}"}
        row["seconds"] = round(time.perf_counter() - start, 3)
        return row

    suspects = set()
    running = set()
    with ThreadPoolExecutor(max_workers=max(1, jobs_n)) as pool:
        futures = {}
        for i in range(len(jobs)):
            futures[pool.submit(lambda k: (running.add(k), one(k))[1], i)] = i
        for future in as_completed(futures):
            i = futures[future]
            rows[i] = future.result()
            running.discard(i)
            if integrity.check_and_restore():  # someone among the jobs in flight changed course files
                suspects |= {i} | set(running)
            if bar:
                bar.update(1)
                bar.set_postfix_str(f"{jobs[i]['student']}/{jobs[i]['lesson']}: {rows[i]['status'][:40]}")
    # Grade the suspects again one at a time, so the one that changes files is known exactly.
    for i in sorted(suspects):
        row = one(i)
        changed = integrity.check_and_restore()
        if changed:
            shown = ", ".join(str(Path(c)) for c in changed[:3])
            row = {"assignment": jobs[i]["lesson"], "student_id": jobs[i]["student"],
                   "status": f"tampered: the notebook changed files outside its own folder ({shown}); they were restored"}
        rows[i] = row
    if bar:
        bar.close()
    for row in rows:
        cells = maxima.get(row["assignment"], {})
        row["max_score"] = sum(cells.values())
        got = row.get("cells", {})
        row["score"] = round(sum(got.get(k, 0.0) or 0.0 for k in cells), 4) if row["status"].startswith("graded") else 0.0
        row["cells"] = {k: (got.get(k, 0.0) or 0.0) if row["status"].startswith("graded") else 0.0 for k in cells}
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
        if not row["status"].startswith("graded"):
            print(f"{head}  [{row['status']}]")
            continue
        print(head)
        messages = cell_messages(out["autograded"] / row["student_id"] / lesson / f"{lesson}.ipynb")
        width = max(len(messages.get(c, (c, ""))[0] or c) for c in maxima[lesson])
        for cell, maximum in maxima[lesson].items():
            title, message = messages.get(cell, (cell, ""))
            got = row["cells"].get(cell, 0.0)
            mark = "✓" if got == maximum else "✗"
            print(f"  {mark} {title or cell:<{width}} {_num(got):>5} / {_num(maximum):<3}"
                  + (f"  {message}" if got < maximum and message else ""))
    total, maximum = sum(r["score"] for r in rows), sum(r["max_score"] for r in rows)
    print(f"\nTotal: {_num(round(total, 2))} / {_num(maximum)} points")


# -- the cohort report ---------------------------------------------------------------------------------
def misconceptions(notebook_path):
    """(exercise title, diagnosis) for every misconception the checkers named in a graded notebook."""
    import nbformat
    found = []
    if not Path(notebook_path).exists():
        return found
    nb = nbformat.read(str(notebook_path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        m = re.search(r"^Exercise ([\d.]+) · (.+?): ", text, re.M)
        title = f"{m.group(1)} {m.group(2)}" if m else cell.metadata.nbgrader.grade_id
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("Likely cause: ") and line != "Likely cause: the same as above.":
                found.append((title, line[len("Likely cause: "):]))
    return found


def write_report(rows, maxima, out, path):
    """autograder/report.md: score distribution per lesson and how often each misconception occurred."""
    import statistics
    from collections import Counter
    lines = [f"# Cohort report", "", f"{time.strftime('%Y-%m-%d %H:%M')} · "
             f"{len({r['student_id'] for r in rows})} students · {len(rows)} lesson submissions", ""]
    status = Counter(r["status"].split(":")[0].split(" (")[0] for r in rows)
    lines.append("Submissions: " + ", ".join(f"{n} {s}" for s, n in sorted(status.items())))
    lines += ["", "## Scores per lesson", "", "| lesson | graded | mean | median | min | max | distribution (0-20-40-60-80-100 %) |",
              "|---|---|---|---|---|---|---|"]
    for lesson in sorted(maxima):
        graded = [r for r in rows if r["assignment"] == lesson and r["status"].startswith("graded")]
        maximum = sum(maxima[lesson].values()) or 1
        scores = [float(r["score"]) for r in graded]
        if not scores:
            lines.append(f"| {lesson} | 0 | | | | | |")
            continue
        buckets = Counter(min(int(100 * x / maximum) // 20, 4) for x in scores)
        bars = " ".join(f"{'▁▂▃▄▅▆▇█'[min(7, 8 * buckets[b] // len(scores))]}{buckets[b]}" for b in range(5))
        lines.append(f"| {lesson} | {len(scores)} | {statistics.mean(scores):.1f} / {maximum:g} | "
                     f"{statistics.median(scores):g} | {min(scores):g} | {max(scores):g} | {bars} |")
    lines += ["", "## Misconceptions named by the checkers", "",
              "How many students' graded notebooks showed each misconception (count, lesson, exercise, diagnosis).", ""]
    counts = Counter()
    for r in rows:
        if r["status"].startswith("graded"):
            nb = out["autograded"] / r["student_id"] / r["assignment"] / f"{r['assignment']}.ipynb"
            for title, diagnosis in set(misconceptions(nb)):
                counts[(r["assignment"], title, diagnosis)] += 1
    if counts:
        lines += ["| students | lesson | exercise | misconception |", "|---|---|---|---|"]
        for (lesson, title, diagnosis), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {n} | {lesson} | {title} | {diagnosis.replace('|', '/')} |")
    else:
        lines.append("None: no graded notebook showed a known misconception.")
    problems = [r for r in rows if not r["status"].startswith("graded")]
    if problems:
        lines += ["", "## Not graded", "", "| student | lesson | status |", "|---|---|---|"]
        lines += [f"| {r['student_id']} | {r['assignment']} | {r['status'].replace('|', '/')} |" for r in problems]
    Path(path).write_text("\n".join(lines) + "\n")


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
    p.add_argument("--out", default=str(HERE), help="where autograded/, feedback/, grades.csv and report.md go")
    p.add_argument("--keep-demos", action="store_true", help="also run the demonstration cells (slower)")
    p = sub.add_parser("self")
    p.add_argument("--lesson", action="append")
    p.add_argument("--course", default=str(COURSE))
    p.add_argument("--out", default=str(ROOT / ".selfgrade"))
    p = sub.add_parser("validate")
    p.add_argument("notebooks", nargs="*")
    args = parser.parse_args(argv)

    if args.command == "release":
        release(args.lesson)
        return 0
    if args.command == "validate":
        paths = args.notebooks or [COURSE / l / f"{l}.ipynb" for l in lessons()]
        return validate(paths)
    if args.command == "autograde":
        out = outputs(args.out)
        jobs = find_submissions(args.submitted, args.student, args.lesson)
        for job in jobs:
            job["keep_demos"] = args.keep_demos
        if not jobs:
            print(f"No submissions found under {args.submitted}/<student>/<lesson>/<lesson>.ipynb")
        start = time.time()
        rows, maxima = grade_all(jobs, out, args.jobs, submitted=args.submitted)
        csv_path = Path(args.out) / "grades.csv"
        write_csv(rows, maxima, csv_path)
        write_report(rows, maxima, out, Path(args.out) / "report.md")
        (out["work"] / "timings.json").write_text(json.dumps(
            [{k: r[k] for k in ("student_id", "assignment", "status", "seconds") if k in r} for r in rows]))
        failed = [r for r in rows if r["status"].startswith(("failed", "tampered"))]
        print(f"Graded {len(rows) - len(failed)} of {len(rows)} submissions in {time.time() - start:.0f} s; "
              f"grades in {csv_path}, cohort report in {Path(args.out) / 'report.md'}, feedback in {out['feedback']}")
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
        rows, maxima = grade_all(jobs, out, 1, submitted=staging)
        write_csv(rows, maxima, Path(args.out) / "grades.csv")
        print_table(rows, maxima, out)
        print(f"\nFeedback pages: {out['feedback'] / 'me'}/<lesson>/<lesson>.html")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
