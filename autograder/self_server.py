"""`make grade` kept warm: a self-learner's grader that stays ready between runs.

    python -m autograder self [--lesson 05]   # asks the course's grader, starting it when none is running
    python -m autograder self --stop          # ends it now (`make grade-stop`)
    python -m autograder self --warm --keep-while PID   # `make lab`: ready, every lesson, while the lab runs
    GRADE_SERVER=off make grade               # grade in the command's own process, as every run did before
    GRADE_SERVER_IDLE=900                     # how many seconds it waits for the next run before it ends

What every run would start again (the course snapshot and its template, the process server with nbgrader
imported, the sandbox's kernel zygote with NumPy, the course library and, for Lesson 10, torch imported) is
started once, by the first `make grade`, in a process of its own that outlives it; every later run sends its
request over a Unix socket in the output folder (.selfgrade/grader.sock) and prints what comes back. Students
still share nothing: each notebook is graded in its own child, its kernel forked from the zygote into a
sandbox of its own, from a fresh interpreter state, as in any run (pipeline.py, zygote.py).

The grader ends after GRADE_SERVER_IDLE seconds without a run (15 minutes), when asked (--stop), and when a
run comes with another key: the key is a digest of what grading depends on (lib/, solutions/ and the
autograder's code, by path, size and time; the Python; the SANDBOX and GRADE settings, not PATH, which a
lab's terminal sets its own way and grading does not read: nbgrader_glue puts the venv on it), so an edit to the
course or a `git pull` gets a new grader, never a stale one. Where it cannot start or answer, the run grades
in its own process, as before.

Protocol, one connection per run: the client sends one line of JSON ({"key", "lesson", "course", "out"}, the
same with "warm": true and "keep_while": PID, or {"stop": true}); the grader answers lines of JSON, {"out": text} and {"err": text} as the run prints, then
{"exit": code}; or {"stale": true} (another key: it ends, and the client starts a new one).
"""

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOCKET_NAME = "grader.sock"
IDLE_SECONDS = 900
START_SECONDS = 30  # how long a run waits for a grader it started to listen
MAX_SOCKET_PATH = 107  # bytes: a longer output folder grades in the run's own process


def enabled(env=None):
    """False with GRADE_SERVER=off (or GRADE_PATH=classic, the path kept to compare against)."""
    env = os.environ if env is None else env
    return (env.get("GRADE_SERVER") or "on").strip().lower() not in ("off", "0", "no") \
        and (env.get("GRADE_PATH") or "fast").strip().lower() == "fast"


def idle_seconds(env=None):
    env = os.environ if env is None else env
    value = (env.get("GRADE_SERVER_IDLE") or "").strip()
    return float(value) if value.replace(".", "", 1).isdigit() and float(value) > 0 else IDLE_SECONDS


def key(course, env=None):
    """The digest of what grading depends on: a grader with another key ends and a new one starts."""
    env = os.environ if env is None else env
    digest = hashlib.sha256(f"{sys.executable}\n{Path(course).resolve()}\n".encode())
    for name in sorted(env):
        if name.startswith(("SANDBOX", "GRADE_")) and not name.startswith("GRADE_SERVER"):
            digest.update(f"{name}={env[name]}\n".encode())
    for top in (ROOT / "lib", ROOT / "solutions", HERE):
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.endswith(".egg-info"))
            for name in sorted(files):
                if top == HERE and not name.endswith((".py", ".toml")):
                    continue  # the grader's own gradebook and outputs live here too
                path = Path(folder) / name
                try:
                    st = path.stat()
                except OSError:
                    continue
                digest.update(f"{path.relative_to(ROOT)}\n{st.st_size}\n{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def socket_path(out):
    return Path(out) / SOCKET_NAME


# -- the client: `python -m autograder self` --------------------------------------------------------------
def add_arguments(p):
    """The arguments of `python -m autograder self` (cli.py's parser has them too)."""
    p.add_argument("--lesson", action="append")
    p.add_argument("--course", default=str(ROOT / "course"))
    p.add_argument("--out", default=str(ROOT / ".selfgrade"))
    p.add_argument("--stop", action="store_true", help="end the grader that `make grade` keeps ready, and grade nothing")
    p.add_argument("--warm", action="store_true", help="start the grader and make every lesson's set-up, grade nothing "
                                                      "(`make lab` does it, so that the first `make grade` is quick)")
    p.add_argument("--keep-while", type=int, metavar="PID", help="with --warm: the grader stays while this process runs")
    return p


def main(argv):
    """`python -m autograder self ...` through the grader: its exit code, or None to grade in this process."""
    import argparse
    return handle(add_arguments(argparse.ArgumentParser(prog="python -m autograder self")).parse_args(argv))


def handle(args):
    """`self`'s arguments (add_arguments): --stop, --warm, or a run through the grader. The exit code, or None
    when the run is to be graded in this process (cli.grade_self)."""
    out = Path(args.out).resolve()
    if args.stop:
        print("The grader was stopped." if stop(out) else "No grader was running.")
        return 0
    if args.warm:
        run(None, args.course, out, extra={"warm": True, "keep_while": args.keep_while}, quiet=True)
        return 0  # a grader that cannot start leaves `make grade` as it was: nothing to say here
    return run(args.lesson, args.course, out)


def run(lesson, course, out, env=None, extra=None, quiet=False):
    """Grade through the course's grader: its exit code, or None when it could not be reached or started
    (the caller then grades in its own process). `extra`: more of the request (a warm-up's); `quiet`: print
    nothing of what comes back."""
    if not enabled(env):
        return None
    request = {"key": key(course, env), "lesson": lesson, "course": str(course), "out": str(out), **(extra or {})}
    if len(str(socket_path(out)).encode()) > MAX_SOCKET_PATH:
        return None  # a Unix socket's path has at most 107 bytes: grade in this process
    for _ in range(2):  # a stale grader ends: the second try starts this course's
        conn = _connect(socket_path(out))
        if conn is None:
            started = _start(out, request["key"])
            if started is None:
                return None
            conn = _connect(socket_path(out), wait=START_SECONDS, started=started)
            if conn is None:
                return None
        answer = _exchange(conn, request, quiet)
        if answer != "stale":
            return answer
        _wait_gone(socket_path(out))
    return None


def stop(out):
    """End the grader of this output folder, if one is running; True when one was."""
    conn = _connect(socket_path(out))
    if conn is None:
        return False
    with conn:
        conn.sendall(json.dumps({"stop": True}).encode() + b"\n")
        conn.recv(64)
    _wait_gone(socket_path(out))
    return True


def _connect(path, wait=0.0, started=None):
    """A connection to the grader at `path`, tried for `wait` seconds; a grader `started` that ends first
    (it failed, or found another grader of this folder starting) is given 2 s more, not the whole wait."""
    deadline = time.monotonic() + wait
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(path))
            return conn
        except OSError:
            conn.close()
            if started is not None and started.poll() is not None:
                deadline, started = min(deadline, time.monotonic() + 2.0), None
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


def _start(out, digest):
    """Start a grader for this output folder, in a session of its own (it outlives this run); its Popen, or
    None when it could not be started."""
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
        with open(Path(out) / "grader.log", "ab") as log:
            return subprocess.Popen([sys.executable, "-m", "autograder", "serve-self", "--out", str(out), "--key",
                                     digest], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True)
    except OSError:
        return None


def _exchange(conn, request, quiet=False):
    """Send the request and print what comes back: the exit code, "stale", or None when the grader went."""
    with conn:
        try:
            conn.sendall(json.dumps(request).encode() + b"\n")
            for line in conn.makefile("r", encoding="utf-8"):
                message = json.loads(line)
                if quiet and ("out" in message or "err" in message):
                    continue
                if "out" in message:
                    sys.stdout.write(message["out"])
                    sys.stdout.flush()
                elif "err" in message:
                    sys.stderr.write(message["err"])
                    sys.stderr.flush()
                elif "exit" in message:
                    return int(message["exit"])
                elif message.get("stale"):
                    return "stale"
        except (OSError, ValueError):
            return None
    return None


def _wait_gone(path, seconds=10.0):
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
