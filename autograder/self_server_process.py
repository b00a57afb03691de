"""The grader that `make grade` keeps ready: `python -m autograder serve-self --out OUT --key KEY`, started by
self_server.py in a session of its own. It listens on OUT/grader.sock and grades one run at a time, each as
`python -m autograder self` would (cli.grade_self), with the run's setup kept from run to run: the course
snapshot and its template, the process server, the sandbox and its kernel zygote (pipeline.prepare). Each
run gets a fresh scratch folder, and each notebook its own child and a kernel forked from the zygote into a
sandbox of its own, so nothing of one run's notebooks reaches the next.

The setup is made for the first run's lessons; a run of a lesson outside them (Lesson 10, whose zygote also
imports torch) makes it again for every lesson, once. A zygote that has gone is started again the same way.
It ends after self_server.idle_seconds() without a run, on {"stop": true}, on a run with another key (the
course or its settings changed), and when its socket is removed; it removes its socket as it ends. A warm-up
request ({"warm": true}, `make lab`) makes the set-up of every lesson at once, and with "keep_while": PID it
does not end for idleness while that process (the lab) runs.
"""

import contextlib
import dataclasses
import fcntl
import io
import json
import os
import socket
import sys
import time
from argparse import Namespace
from pathlib import Path

from . import pipeline, sandbox
from .course import lessons as every_lesson
from .jobs import _alive, scratch_in_memory
from .self_server import SOCKET_NAME, idle_seconds, socket_path


TICK_SECONDS = 5.0  # how often an idle grader looks whether it should end


class _Lines(io.TextIOBase):
    """A text stream that sends what is written to the run's client, as lines of JSON under `field`."""

    def __init__(self, conn, field):
        self.conn, self.field = conn, field

    def writable(self):
        return True

    def write(self, text):
        if text:
            try:
                self.conn.sendall(json.dumps({self.field: text}).encode() + b"\n")
            except OSError:  # the client went (Ctrl-C): the run goes on, and writes its files
                pass
        return len(text)


class _Warm:
    """The setup kept from run to run, made again for lessons it lacks or when its zygote has gone."""

    def __init__(self, out, sandbox_mode):
        self.out, self.mode, self.setup, self.lessons, self.misses = Path(out), sandbox_mode, None, set(), 0

    def setup_for(self, lessons):
        need = set(lessons)
        if self.setup is not None and (not need <= self.lessons or not self._zygote_alive()):
            self.misses += 1
            self.drop()
        if self.setup is None:
            self.lessons = need if not self.misses else set(every_lesson())
            warm = sorted(need) if len(need) == 1 else []  # the page of a lesson graded alone, built ahead
            self.setup = pipeline.prepare(pipeline.Outputs.under(self.out), self.mode, sorted(self.lessons), warm=warm)
        return dataclasses.replace(self.setup, scratch=scratch_in_memory())

    def _zygote_alive(self):
        jail = self.setup.jail
        return jail is None or not getattr(jail, "zygote", None) or sandbox.zygote_ready(jail)

    def drop(self):
        if self.setup is not None and self.setup.jail is not None:
            sandbox.stop_zygote(self.setup.jail)
        self.setup = None


def serve(out, digest, grade, unavailable, sandbox_mode):
    """Listen and grade until idle, stopped, stale or the socket is gone; each run is `grade(args,
    setup_for=...)` (cli.grade_self), `unavailable(exc)` says a sandbox that cannot run (cli.py). Returns 0."""
    out = Path(out)
    path = socket_path(out)
    lock = _locked(out / "grader.lock")
    if lock is None:  # another grader of this folder is there: its clients use it
        return 0
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a grader that died without removing it
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(8)
    idle, last, keep_while = idle_seconds(), time.monotonic(), None
    listener.settimeout(min(idle, TICK_SECONDS))
    mine = path.stat().st_ino
    (out / "grader.pid").write_text(f"{os.getpid()}\n")
    warm = _Warm(out, sandbox_mode)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                if keep_while is not None and _alive(keep_while):
                    last = time.monotonic()  # the lab that asked for it is still open
                elif time.monotonic() - last >= idle or not path.exists():
                    break
                continue
            with conn:
                conn.settimeout(None)
                try:
                    request = json.loads(conn.makefile("r", encoding="utf-8").readline() or "{}")
                except ValueError:
                    continue
                if not request:
                    continue  # a connection that asks nothing (another grader's check that this one listens)
                if request.get("stop"):
                    conn.sendall(b'{"exit": 0}\n')
                    break
                if request.get("key") != digest:
                    conn.sendall(b'{"stale": true}\n')
                    break
                if request.get("warm"):  # `make lab`: the set-up of every lesson, ready before the first run
                    pid = request.get("keep_while")
                    keep_while = pid if isinstance(pid, int) and pid > 0 else keep_while
                    code = _warm_up(warm)
                else:
                    code = _grade(request, warm, conn, grade, unavailable)
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
                last = time.monotonic()
            if not path.exists() or path.stat().st_ino != mine:
                break  # the folder was cleaned, or another grader took the socket
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if path.stat().st_ino == mine:
                path.unlink()
        warm.drop()
        lock.close()
    return 0


def _warm_up(warm):
    """Make the set-up of every lesson now (its zygote imports go on in the background): 0, or 1 where it
    cannot be made (the first run then says why)."""
    try:
        warm.setup_for(every_lesson())
        return 0
    except Exception:
        warm.drop()
        return 1


def _locked(path, seconds=20.0):
    """The grader's lock on this folder, held while it runs; None when another grader is listening. A grader
    that is ending (a stale one) still holds it for a moment: wait for it."""
    lock = open(path, "a")
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                lock.close()
                return None
            time.sleep(0.05)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path.parent / SOCKET_NAME))
        lock.close()  # one is listening (started before this one, its lock since dropped): leave it be
        return None
    except OSError:
        return lock
    finally:
        probe.close()


def _grade(request, warm, conn, grade, unavailable):
    """One run, its output sent to the client; its exit code (1, with the reason, where grading failed)."""
    args = Namespace(lesson=request.get("lesson"), course=request.get("course"),
                     out=str(Path(request.get("out") or warm.out).resolve()))
    stdout, stderr = _Lines(conn, "out"), _Lines(conn, "err")
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            return grade(args, setup_for=warm.setup_for)
        except sandbox.Unavailable as exc:
            warm.drop()
            return unavailable(exc)
        except SystemExit as exc:  # a lesson that does not exist, said as the command says it
            if isinstance(exc.code, int):
                return exc.code
            print(exc.code, file=sys.stderr)
            return 1
        except Exception as exc:  # the grader's own failure: said, and the next run starts clean
            print(f"error: the grader failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            warm.drop()
            return 1
