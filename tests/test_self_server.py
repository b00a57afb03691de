"""`make grade` kept warm (autograder/self_server.py, self_server_process.py): the first run starts the grader
and the next runs are graded by it, with the same table as a run in the command's own process; students
share nothing across runs (a module-level change to numpy, encdec and builtins in one run is invisible to the
next); another key (a setting changed) gets a new grader; --stop and the idle time end it; GRADE_SERVER=off
grades in the command's process; a grader that cannot be reached is never waited for."""

import json
import os
import subprocess
import sys
import time
import uuid

import nbformat
import pytest

from grading_class import FIRST
from nbtools import course_copy, release, require_sandbox, solution

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]
TOKEN = "leak" + uuid.uuid4().hex[:8]


def _grade(root, course, out, env=None, lesson=FIRST[:2]):
    env = {**os.environ, "GRADE_SERVER": "on", "GRADE_SERVER_IDLE": "120", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "autograder", "self", "--course", str(course), "--out", str(out),
                           "--lesson", lesson], cwd=root, capture_output=True, text=True, timeout=600, env=env)
    return proc


def _pid(out):
    path = out / "grader.pid"
    return int(path.read_text()) if path.exists() else None


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def _stop(root, out):
    subprocess.run([sys.executable, "-m", "autograder", "self", "--stop", "--out", str(out)], cwd=root,
                   capture_output=True, text=True, timeout=60, env={**os.environ, "GRADE_SERVER": "on"})


def _course(tmp, nb):
    course = tmp / "mine"
    (course / FIRST).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(course / FIRST / f"{FIRST}.ipynb"))
    return course


@pytest.fixture
def root(tmp_path):
    require_sandbox()
    return course_copy(tmp_path / "root")


def _table(stdout):
    """The table and notes, without the lines that name the output folder."""
    return [line for line in stdout.splitlines() if "/feedback/me/" not in line]


def test_the_second_run_is_graded_by_the_grader_the_first_started(root, tmp_path):
    course, out = _course(tmp_path, release(FIRST)), tmp_path / "self"
    try:
        first = _grade(root, course, out)
        assert first.returncode == 0, first.stdout + first.stderr
        pid = _pid(out)
        assert pid and _alive(pid), (out / "grader.log").read_text() if (out / "grader.log").exists() else ""
        second = _grade(root, course, out)
        assert second.returncode == 0 and _pid(out) == pid, second.stdout + second.stderr
        here = _grade(root, course, tmp_path / "here", env={"GRADE_SERVER": "off"})
        assert not (tmp_path / "here" / "grader.pid").exists()
        assert _table(first.stdout) == _table(second.stdout) == _table(here.stdout), (first.stdout, here.stdout)
        assert f"Lesson {FIRST}:" in second.stdout
        changed = _grade(root, course, out, env={"SANDBOX_MEMORY": "3G"})  # another setting: another grader
        assert changed.returncode == 0 and _pid(out) not in (None, pid), changed.stderr
        _wait(lambda: not _alive(pid))
    finally:
        _stop(root, out)
    assert not (out / "grader.sock").exists()


def test_a_module_level_change_in_one_run_is_invisible_to_the_next(root, tmp_path):
    polluter = solution(FIRST)
    polluter.cells.append(nbformat.v4.new_code_cell(
        "import importlib as _il, sys as _sys, types as _types\n"
        "for _m in ('num' + 'py', 'enc' + 'dec', 'built' + 'ins'):\n"
        f"    setattr(_il.import_module(_m), '{TOKEN}', 1)\n"
        f"_sys.modules['{TOKEN}'] = _types.ModuleType('{TOKEN}')\n"))
    observer = solution(FIRST)
    observer.cells.append(nbformat.v4.new_code_cell(
        "import builtins, json, sys, numpy, encdec\n"
        f"print('SEEN ' + json.dumps([hasattr(numpy, '{TOKEN}'), hasattr(encdec, '{TOKEN}'), "
        f"hasattr(builtins, '{TOKEN}'), '{TOKEN}' in sys.modules]))\n"))
    out = tmp_path / "self"
    try:
        assert _grade(root, _course(tmp_path, polluter), out).returncode == 0
        pid = _pid(out)
        second = _grade(root, _course(tmp_path, observer), out)
        assert second.returncode == 0 and _pid(out) == pid, second.stderr
        graded = nbformat.read(str(out / "autograded" / "me" / FIRST / f"{FIRST}.ipynb"), as_version=4)
        seen = [line for c in graded.cells if c.cell_type == "code" for o in c.get("outputs", [])
                for line in o.get("text", "").splitlines() if line.startswith("SEEN ")]
        assert seen == ["SEEN " + json.dumps([False] * 4)], seen
        assert "Total:" in second.stdout and "✗" not in second.stdout.split("Total:")[0].split("concepts")[0], \
            second.stdout
    finally:
        _stop(root, out)


def test_a_notebook_cannot_reach_the_grader_that_grades_it(root, tmp_path):
    """A notebook that looks for the grader by its socket and its pid file, and signals every process it can
    see, by names the static audit cannot follow: in its sandbox neither file exists and no other process is
    there; the grader grades the next run as before."""
    out = tmp_path / "self"
    hostile = solution(FIRST)
    hostile.cells.append(nbformat.v4.new_code_cell(f"""
import importlib as _il, json as _json
def _n(*p):
    return "".join(p)
_o, _so = _il.import_module(_n("o", "s")), _il.import_module(_n("so", "cket"))
_k, seen = getattr(_o, _n("ki", "ll")), []
try:
    _s = _so.socket(_so.AF_UNIX)
    getattr(_s, _n("con", "nect"))({str(out / "grader.sock")!r})
    _s.sendall(b'{{"stop": true}}\\n')
    seen.append("connected")
except Exception as e:
    seen.append(type(e).__name__)
try:
    _k(int(open({str(out / "grader.pid")!r}).read()), 9)
    seen.append("killed")
except Exception as e:
    seen.append(type(e).__name__)
seen += [p for p in _o.listdir("/proc") if p.isdigit()]
print("HOSTILE " + _json.dumps(seen))
"""))
    try:
        assert _grade(root, _course(tmp_path, solution(FIRST)), out).returncode == 0
        pid = _pid(out)
        assert _grade(root, _course(tmp_path, hostile), out).returncode == 0
        graded = nbformat.read(str(out / "autograded" / "me" / FIRST / f"{FIRST}.ipynb"), as_version=4)
        seen = [line for c in graded.cells if c.cell_type == "code" for o in c.get("outputs", [])
                for line in o.get("text", "").splitlines() if line.startswith("HOSTILE ")]
        assert seen == ["HOSTILE " + json.dumps(["FileNotFoundError", "FileNotFoundError"])], seen
        after = _grade(root, _course(tmp_path, release(FIRST)), out)
        assert after.returncode == 0 and _pid(out) == pid and _alive(pid), after.stderr
    finally:
        _stop(root, out)


def test_the_grader_ends_when_idle_and_when_stopped(root, tmp_path):
    course, out = _course(tmp_path, release(FIRST)), tmp_path / "self"
    assert _grade(root, course, out, env={"GRADE_SERVER_IDLE": "1"}).returncode == 0
    pid = _pid(out)
    _wait(lambda: not _alive(pid))
    assert not (out / "grader.sock").exists()
    assert _grade(root, course, out).returncode == 0
    pid = _pid(out)
    stopped = subprocess.run([sys.executable, "-m", "autograder", "self", "--stop", "--out", str(out)], cwd=root,
                             capture_output=True, text=True, timeout=60)
    assert "The grader was stopped." in stopped.stdout
    _wait(lambda: not _alive(pid))


def test_the_lab_s_warm_up_keeps_the_grader_while_the_lab_runs(root, tmp_path):
    """`make lab` starts the grader with every lesson's set-up and keeps it while the lab runs (here a sleep
    stands for the lab); the first `make grade` is graded by it; it ends once the lab has ended."""
    course, out = _course(tmp_path, release(FIRST)), tmp_path / "self"
    lab = subprocess.Popen(["sleep", "300"])
    env = {**os.environ, "GRADE_SERVER": "on", "GRADE_SERVER_IDLE": "1"}
    try:
        warm = subprocess.run([sys.executable, "-m", "autograder", "self", "--warm", "--keep-while", str(lab.pid),
                               "--course", str(course), "--out", str(out)], cwd=root, capture_output=True, text=True,
                              timeout=300, env=env)
        assert warm.returncode == 0 and warm.stdout == "", warm.stdout + warm.stderr
        pid = _pid(out)
        assert pid and _alive(pid)
        time.sleep(7)  # past its idle time, while the lab runs
        assert _alive(pid)
        graded = _grade(root, course, out, env={"GRADE_SERVER_IDLE": "1"})
        assert graded.returncode == 0 and f"Lesson {FIRST}:" in graded.stdout and _pid(out) == pid, graded.stderr
        lab.kill()
        lab.wait()
        _wait(lambda: not _alive(pid), seconds=30)
    finally:
        lab.kill()
        _stop(root, out)


def test_a_socket_nobody_answers_is_not_waited_for(root, tmp_path):
    """A grader that died leaves its socket: the run starts another and is graded."""
    course, out = _course(tmp_path, release(FIRST)), tmp_path / "self"
    out.mkdir()
    import socket
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(out / "grader.sock"))
    dead.close()  # a socket file with no one listening
    try:
        start = time.monotonic()
        proc = _grade(root, course, out)
        assert proc.returncode == 0 and f"Lesson {FIRST}:" in proc.stdout, proc.stderr
        assert time.monotonic() - start < 120
    finally:
        _stop(root, out)


def test_an_output_folder_too_deep_for_a_socket_grades_in_the_command_s_process(root, tmp_path):
    course, out = _course(tmp_path, release(FIRST)), tmp_path / ("deep" * 30) / "self"
    start = time.monotonic()
    proc = _grade(root, course, out)
    assert proc.returncode == 0 and f"Lesson {FIRST}:" in proc.stdout, proc.stderr
    assert not (out / "grader.pid").exists() and time.monotonic() - start < 120


def _wait(condition, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.1)
