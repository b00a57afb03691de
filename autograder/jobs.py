"""The typed units of grading: a job per (student, lesson) in, a row per job out, and where a run
writes (Outputs, and the scratch folder in memory). Collection (collection.py) makes the jobs, the
pipeline (pipeline.py) grades them, the gradebook (gradebook.py) keeps the rows."""

import atexit
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    """One (student, lesson) to grade."""

    student: str
    lesson: str
    path: Path = None  # the submitted notebook; None when there is none
    raw: bytes = None  # its bytes, read once: the pristine copy every later step uses
    status: str = None  # why it cannot be graded, when that is known before grading
    note: str = None  # said after "graded", e.g. that it came under another name
    keep_demos: bool = False  # also run the cells tagged `demo` (slower; scores are the same)
    timeout: int = None  # seconds for the whole notebook; None: GRADE_TIMEOUT, else DEFAULT_TIMEOUT
    timestamp: object = None  # when it was submitted (datetime, UTC), from nbgrader's timestamp.txt
    late: bool = False  # marked late where it was collected (an LMS's _LATE_ file name)


@dataclass
class Row:
    """What grading made of one job: a line of grades.csv."""

    assignment: str  # the lesson, NN_slug
    student_id: str
    status: str  # "graded", "graded (<note>)", "missing: …", "failed: …" or "tampered: …"
    cells: dict = field(default_factory=dict)  # grade_id -> points nbgrader gave (every graded cell, once totalled)
    score: float = 0.0  # the sum of cells; 0 unless graded
    max_score: float = 0.0  # the lesson's points
    seconds: float = 0.0  # wall time spent on this job
    sandbox: str = ""  # how the kernel was contained (sandbox.describe), or "off (…)"
    attempts: int = 0  # how many different files the student submitted for the lesson (gradebook.py)
    late: bool = False  # submitted after the due date (nbgrader's), or marked late by the LMS
    penalty: float = 0.0  # nbgrader's late-submission penalty, already taken off the score
    submitted_at: str = ""  # the submission's timestamp, when one was given
    audit: list = field(default_factory=list)  # audit.Finding: why a tampered row scores 0 (the student's page)
    cautions: list = field(default_factory=list)  # the audit's cautions, for the instructor (report.md)
    course: str = ""  # the hash of the course it was graded against (integrity.course_hash)
    phases: dict = field(default_factory=dict)  # where its time went, in seconds (phases.py; timings.json)

    @property
    def graded(self):
        return self.status.startswith("graded")


@dataclass(frozen=True)
class Outputs:
    """Where a run writes: graded notebooks, feedback, and its scratch space."""

    autograded: Path
    feedback: Path
    work: Path

    @classmethod
    def under(cls, base):
        base = Path(base)
        return cls(base / "autograded", base / "feedback", base / ".work")

    def graded_notebook(self, student, lesson):
        return self.autograded / student / lesson / f"{lesson}.ipynb"


def scratch_in_memory(shm=Path("/dev/shm")):
    """A folder in memory for the run's scratch courses (None where there is none), named with this process's
    id; removed when the process ends, and the folders of processes that died first (a killed grader, a lost
    Dask worker) removed here, so that none of them holds the machine's memory."""
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    for stale in shm.glob("ag-scratch-*-*"):
        pid = stale.name.split("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"ag-scratch-{os.getpid()}-", dir=shm))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return scratch


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
