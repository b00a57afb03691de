"""Grading on a Dask cluster (`make autograde DASK=tcp://host:8786`, autograder/dask_grading.py and
dask_worker.py), with a real `dask scheduler` and two `dask worker` processes on this machine's
loopback, each grading in its own sandbox from its own copy of the course.

A small class (three students, two lessons) is graded once on this machine (the reference), then
on the cluster while one worker is killed as soon as it has begun a job (its kernel's sandbox is running): the rows equal the
reference exactly, and each is recorded once. Then the scheduler is killed mid-run: the run stops
with a clear message and a non-zero exit, and the same command, against a new cluster, grades only
the rows that were missing, to the same final rows. A worker whose course differs refuses to grade.
"""

import csv
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grading_class import LESSONS, mutant
from nbtools import autograde, course_copy, release, require_sandbox, solution, write_submission

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]
pytest.importorskip("distributed")
BIN = Path(sys.executable).parent
TWO = LESSONS[:2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A dask scheduler and workers on 127.0.0.1, each worker running from `root` (its copy of the
    course) with a folder of its own; every process in a session of its own, killed by its id."""

    def __init__(self, root, tmp, workers=2, port=None):
        self.port = port or free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.tmp, self.procs, self.folders = Path(tmp), {}, {}
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.scheduler = self._start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1",
                                                   "--port", str(self.port), "--no-dashboard"], root)
        self._wait_for_port()
        for k in range(workers):
            self.add_worker(root, f"w{k}")

    def _start(self, name, argv, root, env=None):
        log = open(self.tmp / f"{name}.log", "w")
        env = {**os.environ, "PYTHONPATH": str(root), "PATH": f"{BIN}:{os.environ['PATH']}", **(env or {})}
        proc = subprocess.Popen(argv, cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs[name] = proc
        return proc

    def add_worker(self, root, name):
        folder = self.tmp / name
        folder.mkdir(exist_ok=True)
        self.folders[name] = folder
        self._start(name, [str(BIN / "dask"), "worker", self.address, "--nthreads", "1", "--no-dashboard",
                           "--name", name], root, env={"AUTOGRADER_WORKER_DIR": str(folder)})

    def _wait_for_port(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the scheduler did not start:\n{(self.tmp / 'scheduler.log').read_text()[-2000:]}")

    def wait_for_workers(self, n, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self.tmp / "scheduler.log").read_text().count("Register worker") >= n:
                return
            time.sleep(0.2)
        raise RuntimeError("the workers did not register")

    def kill(self, name):
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker (or scheduler) and what it started
        except ProcessLookupError:
            pass
        proc.wait(30)

    def busy(self):
        """The name of a worker that is grading a job (a kernel's launcher, zygote_client.py or jail.py,
        runs among the processes it started; the zygote's own bubblewrap runs there all the time), or
        None."""
        parents = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
                cmdline = (stat.parent / "cmdline").read_bytes()
            except OSError:
                continue
            kernel = b"zygote_client.py" in cmdline or b"jail.py" in cmdline
            parents[int(stat.parent.name)] = (int(text.rsplit(")", 1)[1].split()[1]), kernel)
        for name, proc in self.procs.items():
            if name.startswith("w"):
                for pid, (_, sandbox) in parents.items():
                    ancestor = pid
                    while sandbox and ancestor in parents and ancestor != proc.pid:
                        ancestor = parents[ancestor][0]
                    if sandbox and ancestor == proc.pid:
                        return name
        return None

    def close(self):
        for name in list(self.procs):
            self.kill(name)


STUDENTS = ("solution", "mutant", "untouched")


@pytest.fixture(scope="module")
def small_class(tmp_path_factory):
    """(course copy, submitted folder, the reference rows graded on this machine)."""
    require_sandbox()
    tmp = tmp_path_factory.mktemp("dask-class")
    for lesson in TWO:
        write_submission(tmp / "submitted", "solution", lesson, solution(lesson))
        write_submission(tmp / "submitted", "mutant", lesson, mutant(lesson, 0)[0])
        write_submission(tmp / "submitted", "untouched", lesson, release(lesson))
    root = course_copy(tmp / "course")
    code, rows, output = autograde(tmp / "submitted", tmp / "local", jobs=2, root=root)
    assert code == 0 and len(rows) == len(STUDENTS) * len(TWO), output[-3000:]
    return root, tmp / "submitted", rows


def start_run(root, submitted, out, address):
    return subprocess.Popen([sys.executable, "-m", "autograder", "autograde", "--submitted", str(submitted),
                             "--out", str(out), "--dask", address], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})


def read_rows(out):
    with open(Path(out) / "grades.csv") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def attempts(out):
    with sqlite3.connect(Path(out) / "gradebook.db") as db:
        return db.execute("select student, assignment, attempt from encdec_attempts order by 1, 2").fetchall()


def recorded(out):
    try:
        return len(attempts(out))
    except sqlite3.Error:
        return 0


def test_a_worker_killed_mid_job_loses_nothing_and_doubles_nothing(small_class, tmp_path):
    root, submitted, reference = small_class
    cluster = Cluster(root, tmp_path)
    try:
        cluster.wait_for_workers(2)
        run = start_run(root, submitted, tmp_path / "out", cluster.address)
        deadline = time.monotonic() + 300
        while (busy := cluster.busy()) is None and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert busy and run.poll() is None, "the run ended before a worker began a job"
        cluster.kill(busy)  # in the middle of its first job
        output, _ = run.communicate(timeout=600)
    finally:
        cluster.close()
    assert run.returncode == 0, output[-3000:]
    assert read_rows(tmp_path / "out") == reference
    lines = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert len(lines) == 1 + len(reference)  # one line per row, none doubled
    assert attempts(tmp_path / "out") == sorted((s, lesson, 1) for s, lesson in reference)


def test_a_lost_scheduler_stops_the_run_and_the_same_command_grades_only_the_rest(small_class, tmp_path):
    root, submitted, reference = small_class
    out = tmp_path / "out"
    cluster = Cluster(root, tmp_path / "first")
    try:
        cluster.wait_for_workers(2)
        run = start_run(root, submitted, out, cluster.address)
        deadline = time.monotonic() + 300
        while recorded(out) < 1 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        cluster.kill("scheduler")
        output, _ = run.communicate(timeout=300)
    finally:
        cluster.close()
    assert run.returncode != 0
    assert "scheduler" in output and "was lost" in output and "grades only the rest" in output, output[-2000:]
    before = recorded(out)
    assert 1 <= before < len(reference)
    cluster = Cluster(root, tmp_path / "second", port=cluster.port)  # the same command: the same address
    try:
        cluster.wait_for_workers(2)
        again = start_run(root, submitted, out, cluster.address)
        output, _ = again.communicate(timeout=600)
    finally:
        cluster.close()
    assert again.returncode == 0, output[-3000:]
    assert f"{before} notebooks already graded" in output
    assert f"{len(reference) - before} rows in" in output  # only the missing ones were graded
    assert read_rows(out) == reference
    assert attempts(out) == sorted((s, lesson, 1) for s, lesson in reference)


def test_a_worker_with_another_course_refuses_to_grade(small_class, tmp_path):
    root, submitted, _ = small_class
    other = course_copy(tmp_path / "other")
    (other / "lib" / "encdec" / "extra.py").write_text("# a change the instructor's copy does not have\n")
    cluster = Cluster(other, tmp_path, workers=1)
    try:
        cluster.wait_for_workers(1)
        run = start_run(root, submitted, tmp_path / "out", cluster.address)
        output, _ = run.communicate(timeout=300)
    finally:
        cluster.close()
    assert run.returncode != 0
    assert "grades from another course" in output and "refused" in output, output[-2000:]
    assert recorded(tmp_path / "out") == 0
