"""The grading pipeline: a job per (student, lesson) in, a row per job out.

How a submission is graded. Each job is graded in a scratch course directory of its own: a copy
of a gradebook that `generate_assignment` prepared from a private snapshot of the course, and
the submitted notebook (after the static audit, without its demo cells). nbgrader's real
`autograde` runs there in the sandbox with a time limit (its OverwriteCells puts back tampered
or deleted test cells), then `generate_feedback` writes HTML without the hidden tests. The
graded notebook and the feedback are copied out. A broken submission (not JSON, a dead kernel,
a timeout) gets status "failed: <reason>" and a zero; the others are graded as usual, and the
submitted files are never modified.
"""

import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from . import collection, integrity, nbgrader_glue, records, sandbox, settings, timed_process
from .audit import audit_notebook
from .course import matching, points, source_facts
from .jobs import Job, Outputs, Row, scratch_in_memory  # noqa: F401 (Job and Outputs: the pipeline's interface too)

DEFAULT_TIMEOUT = 600  # seconds per notebook, all cells (GRADE_TIMEOUT overrides it)
WARM = ["nbgrader.apps", "nbgrader.api", "nbgrader.converters", "autograder.nbgrader_glue", "autograder.feedback"]


@dataclass(frozen=True)
class Setup:
    """What every job of a run shares (prepare() makes it)."""

    course: Path  # the private snapshot of lib/, solutions/ and the autograder that grading runs
    template: Path  # the gradebook generate_assignment prepared, and its release/
    facts: dict  # lesson -> course.SourceFacts
    out: Outputs
    jail: object = None  # sandbox.Jail, or None when kernels run without the sandbox
    course_hash: str = ""  # integrity.course_hash of the snapshot: what the rows were graded against
    contained: str = ""  # how kernels are contained, as grades.csv records it
    maxima: dict = None  # {lesson: {grade_id: points}} of every lesson
    fast: bool = True  # GRADE_PATH=fast (settings.grading_path): the warmed process server, …
    scratch: Path = None  # where each job's scratch course goes (in memory on the fast path), else out.work

    @property
    def warm(self):
        return WARM + (["autograder.warm"] if self.fast else [])


# -- jobs ---------------------------------------------------------------------------------------------
def find_submissions(submitted, students=None, only_lessons=None):
    """One job per (student, lesson): the notebook's bytes, or none with the reason (collection.py
    decides which file is the submission; `make autograde` also prints its notes)."""
    return collection.collect(submitted, matching(only_lessons), students).jobs


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


def prepare_notebook(raw, facts, keep_demos):
    """(notebook text to grade, audit.Audit) for a submission's bytes."""
    import nbformat
    nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    skip = set() if keep_demos else facts.demo
    found = audit_notebook(nb, skip_ids=skip, trusted_sources=facts.sources)
    if skip:
        nb.cells = [c for c in nb.cells if c.get("id") not in skip]
    return nbformat.writes(nb), found


def _copy_out(root, job, out):
    for scratch, dest in ((root / "autograded", out.autograded), (root / "feedback", out.feedback)):
        src = scratch / job.student / job.lesson
        if src.exists():
            dst = dest / job.student / job.lesson
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(src, dst)


# -- grading ------------------------------------------------------------------------------------------
def grade_job(job, setup):
    """Grade one job: checks before it runs, then nbgrader in the sandbox; returns its Row
    (cells holds only what nbgrader graded; grade_all adds the totals)."""
    row = Row(job.lesson, job.student, status="")
    if job.raw is None:
        row.status = job.status or "missing: no submission for this lesson"
        return row
    reason = check_notebook_bytes(job.raw)
    if reason:
        row.status = f"failed: {reason}"
        return row
    audit_start = time.perf_counter()
    text, found = prepare_notebook(job.raw, setup.facts[job.lesson], job.keep_demos)
    row.phases["the audit (before it runs)"] = round(time.perf_counter() - audit_start, 4)
    row.cautions = [c.evidence() for c in found.cautions]  # the guard checks these at run time
    if found.findings:
        evidence = [f.evidence() for f in found.findings]
        row.status = "tampered: " + "; ".join(evidence[:3]) + (f"; and {len(evidence) - 3} more" if len(evidence) > 3 else "")
        row.audit = found.findings
        return row
    timeout = job.timeout or int(os.environ.get("GRADE_TIMEOUT", DEFAULT_TIMEOUT))
    root = Path(tempfile.mkdtemp(prefix=f"{job.student}-{job.lesson}-", dir=setup.scratch or setup.out.work))
    try:
        shutil.copyfile(setup.template / "gradebook.db", root / "gradebook.db")
        dest = root / "submitted" / job.student / job.lesson
        dest.mkdir(parents=True)
        (dest / f"{job.lesson}.ipynb").write_text(text)
        spec = {"root": str(root), "lesson": job.lesson, "student": job.student, "quick_shutdown": setup.fast,
                "release": str(setup.template / "release"), "course": str(setup.course)}
        outcome = sandbox.run(nbgrader_glue.autograde_submission, spec, workdir=root,
                              library=setup.course / "lib", timeout=timeout, warm=setup.warm, jail=setup.jail)
        if outcome.failure:
            row.status = outcome.failure
            return row
        row.phases.update(outcome.result.get("phases", {}))
        row.status = outcome.result["status"]
        if row.status == "graded":
            row.cells = {k: v[0] for k, v in outcome.result["cells"].items()}
            unbacked = unbacked_cells(root / "autograded" / job.student / job.lesson / f"{job.lesson}.ipynb",
                                      outcome.result["cells"])
            notes = [job.note] if job.note else []
            if unbacked:
                row.cells.update({k: 0.0 for k in unbacked})
                notes.append(f"{', '.join(unbacked)} scored 0: points without their checker's result")
                row.cautions.append(f"{', '.join(unbacked)}: nbgrader gave points that no checker's record backs "
                                    "(the notebook changed how cells run or show results); scored 0")
            row.status = "graded" + (f" ({'; '.join(notes)})" if notes else "")
            _copy_out(root, job, setup.out)
        return row
    finally:
        shutil.rmtree(root, ignore_errors=True)


def unbacked_cells(graded_notebook, cells):
    """Test cells to which nbgrader gave points that their checker's record does not back. Every
    checker leaves a record of its score in its cell; nbgrader reads the cell's displayed result (full
    points when there is none). Points without an agreeing record mean the cell did not run as the
    course wrote it: the notebook hooked into how IPython runs cells or shows their results."""
    found = records.graded_test_cells(graded_notebook)
    return sorted(k for k, (score, maximum) in cells.items()
                  if (score or 0) > 0 and not records.agrees(records.cell_record(found.get(k, {})), score, maximum))


def _grade_safely(job, setup):
    start = time.perf_counter()
    try:
        row = grade_job(job, setup)
    except Exception as exc:  # the driver itself must finish and write every row
        row = Row(job.lesson, job.student, status=f"failed: {type(exc).__name__}: {exc}")
    row.seconds = round(time.perf_counter() - start, 3)
    return row


def _totals(row, maxima):
    """Every graded cell of the lesson gets a score (0 unless graded), and the row its totals."""
    cells = maxima.get(row.assignment, {})
    got = row.cells
    row.max_score = sum(cells.values())
    row.score = round(sum(got.get(k, 0.0) or 0.0 for k in cells), 4) if row.graded else 0.0
    row.cells = {k: (got.get(k, 0.0) or 0.0) if row.graded else 0.0 for k in cells}
    return row


def start_sandbox(mode, course, modules=None):
    """(Jail or None, what grades.csv records about it) for SANDBOX=mode ('on', 'auto', 'off'); with
    `modules`, the run's kernel zygote (zygote.py) starts at once, and each kernel is forked from it, its
    imports done. Raises sandbox.Unavailable when mode is 'on' and the sandbox cannot run here."""
    if mode == "off":
        return None, "off (SANDBOX=off)"
    try:
        jail = sandbox.start(course / "lib", launcher_path=course / "autograder" / "jail.py", modules=modules,
                             bytecode=course.parent / "bytecode")
    except sandbox.Unavailable as exc:
        if mode == "on":
            raise
        return None, f"off (not available here: {exc})"
    return jail, jail.description


def prepare(out, sandbox_mode="on", lessons=None, warm=None):
    """What every job of a run shares: the course snapshot and its hash, the sandbox, the template of
    `lessons` (every lesson when None), what grading knows of each lesson. On the fast path (GRADE_PATH,
    settings.py) the template is kept from run to run of the same course, the sandbox is probed while it
    is made, the process server starts warming at once (warm.py: `warm`, the lessons whose feedback page
    it builds first, worth it for a lesson graded more than once), and the jobs' scratch courses go in
    memory. Raises sandbox.Unavailable when sandbox_mode is 'on' and the sandbox cannot run here."""
    fast = settings.grading_path() == "fast"
    out.work.mkdir(parents=True, exist_ok=True)
    nbgrader_glue.put_venv_on_path()
    course = integrity.snapshot_course(out.work)
    digest = integrity.course_hash(course)
    every = matching(None)
    if not fast:
        jail, contained = start_sandbox(sandbox_mode, course)
        template = nbgrader_glue.prepare_template(out.work, course)
        return Setup(course, template, {lesson: source_facts(lesson) for lesson in every}, out, jail, digest,
                     contained, {lesson: points(lesson, course / "solutions") for lesson in every}, fast=False)
    graded = every if lessons is None else [lesson for lesson in every if lesson in set(lessons)]
    os.environ["AUTOGRADER_WARM"] = os.pathsep.join(str(course / "solutions" / x / f"{x}.ipynb") for x in warm or ())
    timed_process.start_server(WARM + ["autograder.warm"])
    with ThreadPoolExecutor(max_workers=1) as side:  # the probe waits on bubblewrap while this thread works
        probed = side.submit(start_sandbox, sandbox_mode, course, sandbox.kernel_modules(graded or every))
        template = nbgrader_glue.prepare_template(out.work, course, digest, graded)
        facts = {lesson: source_facts(lesson) for lesson in every}
        maxima = {lesson: points(lesson, course / "solutions") for lesson in every}
        jail, contained = probed.result()
    return Setup(course, template, facts, out, jail, digest, contained, maxima, fast=True, scratch=scratch_in_memory())


def lessons_of(jobs):
    """The lessons whose template the jobs need: those with a file to grade."""
    return sorted({job.lesson for job in jobs if job.raw is not None})


def lessons_to_warm(jobs):
    """The lessons whose feedback page is worth building ahead, in the process server (warm.py): those with
    more than one file to grade, and the lesson of a run that grades one file (`make grade`: its job waits
    for the kernel zygote's imports anyway, longer than the server takes to build the page)."""
    counts = {}
    for job in jobs:
        if job.raw is not None:
            counts[job.lesson] = counts.get(job.lesson, 0) + 1
    return sorted(lesson for lesson, n in counts.items() if n > 1 or len(counts) == 1 == n)


def progress_bar(jobs, progress=True):
    if not (progress and jobs):
        return None
    from tqdm import tqdm
    return tqdm(total=len(jobs), desc="grading", unit="notebook", file=sys.stderr)


def show(bar, job, row):
    if bar:
        bar.update(1)
        bar.set_postfix_str(f"{job.student}/{job.lesson}: {row.status[:40]}")


def finish(row, setup, contained=None):
    """A row as the run records it: how its kernel was contained, the course's hash, its totals."""
    row.sandbox = setup.contained if contained is None else contained
    row.course = setup.course_hash
    return _totals(row, setup.maxima)


def grade_all(jobs, out, jobs_n=1, progress=True, submitted=None, sandbox_mode="on", setup=None):
    """Grade the jobs with up to jobs_n in parallel on this machine; returns (rows in job order,
    maxima), maxima being {lesson: {grade_id: points}}. sandbox_mode: 'on' (raises
    sandbox.Unavailable where the sandbox cannot run), 'auto' or 'off'; every row records which
    it was. `setup`: from prepare(), else made here."""
    setup = setup or prepare(out, sandbox_mode, lessons_of(jobs), warm=lessons_to_warm(jobs))
    guard = integrity.Integrity(submitted, setup.template, setup.course, watch_site=setup.jail is None)
    rows = [None] * len(jobs)
    bar = progress_bar(jobs, progress)

    suspects, running = set(), set()

    def one(i):
        running.add(i)
        return _grade_safely(jobs[i], setup)

    with ThreadPoolExecutor(max_workers=max(1, jobs_n)) as pool:
        futures = {pool.submit(one, i): i for i in range(len(jobs))}
        for future in as_completed(futures):
            i = futures[future]
            rows[i] = future.result()
            running.discard(i)
            if guard.check_and_restore():  # someone among the jobs in flight changed course files
                suspects |= {i} | set(running)
            show(bar, jobs[i], rows[i])
    for i, row, tampered in integrity.find_culprits(suspects, lambda k: _grade_safely(jobs[k], setup), guard):
        rows[i] = tampered_row(row, tampered) if tampered else row
    if bar:
        bar.close()
    if setup.scratch:
        shutil.rmtree(setup.scratch, ignore_errors=True)
    return [finish(row, setup) for row in rows], setup.maxima


def tampered_row(row, status):
    return Row(row.assignment, row.student_id, status, seconds=row.seconds, cautions=row.cautions)
