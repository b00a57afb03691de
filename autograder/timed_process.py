"""One grading task in a process of its own, with a time limit.

    outcome = run(task, arg, workdir=..., library=..., timeout=600, warm=[...], jail=jail)

`task(arg)` runs in a child process forked from a server that imported `warm` modules once, when
grading began: starting a child costs milliseconds, and each runs the grader's code as it was
then, whatever a submission later writes to disk. The child leads a process group of its own,
so what it starts dies with it when the time is up. Its stdout and stderr go nowhere. With a
jail (sandbox_start.py), the job gets a sandbox cell (kernel_cell.py) for its kernels, removed
when it ends; a job that broke a limit gets "failed: <the limit> exceeded".
"""

import os
import signal
import sys
from dataclasses import dataclass

from .kernel_cell import SANDBOX_ENV, Cell

_SERVER = None


@dataclass(frozen=True)
class Outcome:
    """How a task ended: its result, or the reason there is none (a status such as 'failed: ...')."""

    result: object = None
    failure: str = None


def _server(warm):
    global _SERVER
    if _SERVER is None:
        import multiprocessing
        _SERVER = multiprocessing.get_context("forkserver")
        _SERVER.set_forkserver_preload([__name__] + list(warm))  # the child's own code first: autograder/__init__.py
    return _SERVER


def start_server(warm):
    """Start the process server now, importing `warm` (and running what those modules run on import)
    while the caller goes on; the first run() waits for it to be ready."""
    _server(warm)
    from multiprocessing import forkserver
    forkserver.ensure_running()


def _child(task, arg, workdir, library, conn, folder):
    os.setsid()  # a session of its own: what it starts outside a sandbox dies with it on a timeout
    library = str(library)  # the kernel imports this library first (a private snapshot of lib/)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (library, os.environ.get("PYTHONPATH", "")) if p)
    if folder:
        os.environ[SANDBOX_ENV] = folder
        os.environ["JUPYTER_PATH"] = folder  # where the job's kernelspec is
    else:
        os.environ.pop(SANDBOX_ENV, None)
    sys.path.insert(0, library)
    os.chdir(workdir)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
        conn.send(Outcome(result=task(arg)))
    except BaseException as exc:
        conn.send(Outcome(failure=f"failed: the grader crashed ({type(exc).__name__}: {str(exc)[:160]})"))
    finally:
        conn.close()


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(task, arg, *, workdir, library, timeout, warm=(), jail=None):
    """Run task(arg) (a module-level function, its argument picklable) in a child process whose
    working directory is `workdir` and whose Python imports `library` first; kill it and every
    process it started after `timeout` s. `warm`: modules the process server imports once.
    `jail`: the Jail from sandbox_start.start(), or None to run kernels without the sandbox."""
    ctx = _server(warm)
    cell = Cell(jail, library) if jail else None
    try:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(task, arg, str(workdir), library, child,
                                                str(cell.folder) if cell else None))
        proc.start()
        child.close()
        if not parent.poll(timeout):
            _kill_group(proc.pid)
            proc.join()
            outcome = Outcome(failure=f"failed: grading took longer than {timeout} s (an endless loop that ignores interrupts?)")
        else:
            try:
                outcome = parent.recv()
            except EOFError:
                outcome = Outcome(failure="failed: the grader crashed (no result)")
            proc.join(10)
            _kill_group(proc.pid)  # anything the notebook left running
        breach = cell.breach() if cell else None
        return Outcome(failure=breach) if breach else outcome
    finally:
        if cell:
            cell.close()
