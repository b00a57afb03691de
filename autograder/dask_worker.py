"""A Dask worker's side of a distributed run (`make autograde DASK=tcp://host:8786`): grading one
job from the worker's own copy of the course.

    row, files = grade(job, course_hash, sandbox_mode)   # run by the worker, sent by dask_grading.py

The worker grades from the course it runs from: the repository (or the image's copy of it) whose
`autograder` package it imported. On its first job it makes, in a folder of its own, what the
instructor's process makes for a local run (pipeline.prepare: the snapshot and its hash, the
sandbox, the template), then keeps it for every later job; a lesson's template is added on the
first job that needs it. A job carries the hash of the course the instructor grades from; a
worker whose copy has another hash refuses it (CourseMismatch) rather than grade against another
course. Each job is graded as a local run grades it (pipeline.grade_job: the audit, nbgrader in a
scratch course, its kernel in the sandbox), then the worker's snapshot is checked and restored
(integrity.py), one job at a time per worker process. The result is the row and the files it made
(the graded notebook, the feedback page), which the instructor's process, the only one that writes
the gradebook, records; nothing else stays on the worker, so a job run twice (its worker died and
Dask ran it again elsewhere) gives the same result and leaves nothing behind.
"""

import multiprocessing
import os
import platform
import shutil
import tempfile
import threading
from pathlib import Path

from . import integrity, nbgrader_glue, pipeline
from .sandbox import Unavailable

_LOCK = threading.Lock()  # one job at a time per worker process: the integrity check names its culprit
_STATE = {}


class Refused(RuntimeError):
    """This worker cannot grade the run's jobs; the message says why and what to do."""


class CourseMismatch(Refused):
    """This worker's course is not the one the run grades from."""


class _Worker:
    def __init__(self, sandbox_mode):
        me = multiprocessing.current_process()
        if me.daemon:  # a nanny starts its worker as a daemon, which multiprocessing lets have no child
            me._config["daemon"] = False  # grading runs each job in a child process (timed_process.py)
        base = Path(os.environ.get("AUTOGRADER_WORKER_DIR") or tempfile.gettempdir())
        self.out = pipeline.Outputs.under(base / f"autograder-worker-{os.getpid()}")
        self.setup = pipeline.prepare(self.out, sandbox_mode, lessons=[])
        self.guard = None

    def ready_for(self, lesson):
        """The template holds the lesson (made on its first job); the integrity check knows the files."""
        if lesson not in self.ready():
            nbgrader_glue.prepare_template(self.out.work, self.setup.course, self.setup.course_hash,
                                                    self.ready() | {lesson})
            self.guard = None
        if self.guard is None:
            self.guard = integrity.Integrity(None, self.setup.template, self.setup.course,
                                             watch_site=self.setup.jail is None)

    def ready(self):
        release = self.setup.template / "release"
        return {p.name for p in release.iterdir() if p.is_dir()} if release.is_dir() else set()


def _worker(sandbox_mode):
    if sandbox_mode not in _STATE:
        try:
            _STATE[sandbox_mode] = _Worker(sandbox_mode)
        except (Unavailable, Refused):
            raise
        except (Exception, SystemExit) as exc:
            raise Refused(f"the Dask worker on {platform.node()} (pid {os.getpid()}) cannot prepare its course "
                          f"({type(exc).__name__}: {str(exc)[:300]})") from None
    return _STATE[sandbox_mode]


def grade(job, course_hash, sandbox_mode):
    """Grade one job on this worker: (its row before totals, {relative path: bytes} of the files
    grading made under autograded/ and feedback/). Raises CourseMismatch when this worker's course
    differs from the run's, and sandbox.Unavailable when the run grades in the sandbox and it
    cannot run here."""
    with _LOCK:
        worker = _worker(sandbox_mode)
        mine = worker.setup.course_hash
        if mine != course_hash:
            raise CourseMismatch(
                f"the Dask worker on {platform.node()} (pid {os.getpid()}) grades from another course: its copy "
                f"(from {integrity.ROOT}) hashes to {mine[:16]}…, the run's to {course_hash[:16]}…. It refused the job "
                f"{job.student}/{job.lesson}; give every worker the course the instructor grades from "
                "(docs/large-classes.md, \"The course on the workers\")")
        if job.raw is not None:
            worker.ready_for(job.lesson)
        row = pipeline._grade_safely(job, worker.setup)
        changed = worker.guard.check_and_restore() if worker.guard else []
        if changed:
            row = pipeline.tampered_row(row, integrity.tampering_status(changed))
        row.sandbox = worker.setup.contained
        return row, _take_files(worker.out, job)


def _take_files(out, job):
    """The files grading made for the job on this worker, removed from it."""
    files = {}
    for kind, base in (("autograded", out.autograded), ("feedback", out.feedback)):
        folder = base / job.student / job.lesson
        if folder.is_dir():
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                files[f"{kind}/{path.relative_to(base).as_posix()}"] = path.read_bytes()
            shutil.rmtree(folder)
    return files
