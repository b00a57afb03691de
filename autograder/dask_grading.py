"""A distributed run: each job graded on a Dask cluster, every row written here.

    rows = grade_all(jobs, setup, "tcp://host:8786", sandbox_mode, on_row=record)

`make autograde DASK=tcp://host:8786` (or `--dask`, or GRADE_DASK in the environment: settings.py)
sends each job to the cluster's scheduler with the hash of the course this process grades from
(setup.course_hash); a worker grades it from its own copy of the course, refusing it when that
copy differs (dask_worker.py), and sends back the row and the files it made. This process, the
only writer, puts the files under autograded/ and feedback/ and hands each row to `on_row` as it
arrives (classroom.py records it in the gradebook at once), with the progress bar as for a local
run.

Faults. A worker that dies mid-job loses nothing: the scheduler runs the job again on another
worker, and its row arrives here once (a job's result is its row; nothing is written anywhere
else). A job whose workers died ALLOWED_FAILURES + 1 times is taken for one that kills them: its row
is "failed". A worker that refuses the job (another course, no sandbox where SANDBOX=on), or the
scheduler lost, stops the run (Stopped, with what to do): the rows that arrived are in the
gradebook already, and the same command run again grades only the rest (gradebook.graded_before).
"""

import pickle
import shutil
import time
import uuid

from . import dask_worker, pipeline
from .jobs import Row

CONNECT_TIMEOUT = 30  # seconds to reach the scheduler
LOST_AFTER = 20  # seconds without the scheduler before the run stops
ALLOWED_FAILURES = 3  # Dask's distributed.scheduler.allowed-failures, its default


class Stopped(RuntimeError):
    """The run cannot go on; the message says why and what to do."""


def grade_all(jobs, setup, address, sandbox_mode="on", progress=True, on_row=None):
    """Grade the jobs on the cluster at `address`; returns the rows in job order (with their totals),
    each also handed to on_row(job, row) as it arrives. Raises Stopped when a worker refuses a job or
    the scheduler is lost, after every row that arrived has been handed on."""
    from distributed import Client, wait
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise Stopped(f"no Dask scheduler answers at {address} ({type(exc).__name__}: {exc}); start it "
                      "(`dask scheduler`) and its workers, or grade on this machine without --dask") from None
    rows = [None] * len(jobs)
    bar = pipeline.progress_bar(jobs, progress)
    run = uuid.uuid4().hex[:8]
    try:
        pending = {}
        for i, job in enumerate(jobs):
            call = pickle.dumps(_Call(dask_worker.grade, job, setup.course_hash, sandbox_mode))
            future = client.submit(pickle.loads, call, pure=False, key=f"grade-{job.student}-{job.lesson}-{run}")
            pending[future] = i
        lost_since = None
        while pending:
            try:
                done = wait(list(pending), timeout=1, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                done = ()
            for future in done:
                i = pending.pop(future)
                rows[i] = _row(future, jobs[i], setup)
                if on_row:
                    on_row(jobs[i], rows[i])
                pipeline.show(bar, jobs[i], rows[i])
            if client.status == "running" and _connected(client):
                lost_since = None
            elif (lost_since := lost_since or time.monotonic()) < time.monotonic() - LOST_AFTER:
                raise Stopped(_lost(address, rows))
    except Stopped:
        raise
    except Exception as exc:  # the connection to the scheduler broke while waiting or gathering
        if _is_refusal(exc):
            raise Stopped(str(exc)) from None
        raise Stopped(_lost(address, rows, exc)) from None
    finally:
        if bar:
            bar.close()
        try:
            client.close(timeout=5)
        except Exception:
            pass
    return rows


class _Call:
    """A call that pickle runs where it is unpickled: the job travels as bytes, so that the scheduler,
    which reads every task it is given, needs none of the grader's code; the worker's
    pickle.loads(bytes) runs dask_worker.grade(...) and returns what it returns."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def _row(future, job, setup):
    """The job's row from its finished future, its files written under setup.out."""
    from distributed import KilledWorker
    if future.status == "error":
        exc = future.exception()
        if isinstance(exc, KilledWorker):
            row = Row(job.lesson, job.student, status=f"failed: the Dask workers grading it died "
                      f"{ALLOWED_FAILURES + 1} times (a notebook that kills its worker?)")
        elif _is_refusal(exc):
            raise exc
        else:  # a crash of the grader on the worker: recorded as a local run records it, graded again next run
            row = Row(job.lesson, job.student, status=f"failed: the grader crashed on a Dask worker "
                      f"({type(exc).__name__}: {str(exc)[:160]})")
        return pipeline.finish(row, setup)
    if future.status != "finished":
        raise Stopped(f"the job {job.student}/{job.lesson} was {future.status} by the scheduler")
    row, files = future.result()
    for kind in {name.split("/", 1)[0] for name in files}:  # an earlier attempt's files go, as in a local run
        base = setup.out.autograded if kind == "autograded" else setup.out.feedback
        shutil.rmtree(base / job.student / job.lesson, ignore_errors=True)
    for name, data in files.items():
        kind, rest = name.split("/", 1)
        base = setup.out.autograded if kind == "autograded" else setup.out.feedback
        path = base / rest
        if not path.resolve().is_relative_to(base.resolve()):
            raise Stopped(f"a worker sent a file outside {base}: {name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return pipeline.finish(row, setup, contained=row.sandbox)


def _connected(client):
    try:
        return not client.scheduler_comm.comm.closed()
    except AttributeError:
        return False


def _is_refusal(exc):
    from .sandbox import Unavailable
    return isinstance(exc, (dask_worker.Refused, Unavailable))


def _lost(address, rows, exc=None):
    done = sum(r is not None for r in rows)
    why = f" ({type(exc).__name__}: {str(exc)[:200]})" if exc else ""
    return (f"the Dask scheduler at {address} was lost{why} after {done} of {len(rows)} notebooks. Those {done} "
            "are in the gradebook; run the same command again, with a scheduler, and it grades only the rest.")
