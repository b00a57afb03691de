"""The sandbox every graded kernel runs in (autograder/sandbox.py, autograder/jail.py).

Two kinds of proof. The jail on its own: a command run through the kernel launcher, with small
limits, sees what a kernel would see and hits each limit. And students who attack the machine,
graded through nbgrader in the same class as honest students (tests/grading_class.py): a process
that outlives grading, reading other submissions, the gradebook and the instructor's files,
writing outside the scratch folder, a connection to a loopback server, a fork bomb, a memory
bomb, filling the disk. Each attack is bounded, so that with SANDBOX=off (the class graded
without the sandbox) these tests run safely, and fail.
"""

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import cgroups, sandbox
from autograder.settings import Limits, mode, parse_size, size_text
from nbtools import ROOT

ATTACKERS = ["survivor", "reader", "writer", "network", "fork-bomb", "memory-bomb", "disk-filler"]
LIBRARY = ROOT / "lib"


_STARTED = {}


@pytest.fixture(params=["bubblewrap", "zygote"])
def launch(request):
    """How the kernel starts: a bubblewrap of its own (jail.py), or forked by the run's zygote
    (zygote.py, through zygote_client.py), which makes a sandbox of its own inside the zygote's."""
    return request.param


def _jail(launch, **limits):
    """The sandbox, started (and probed) once for these tests, with the limits asked for."""
    if "jail" not in _STARTED:
        try:
            _STARTED["jail"] = sandbox.start(LIBRARY)
        except sandbox.Unavailable as exc:
            _STARTED["jail"] = str(exc)
    if isinstance(_STARTED["jail"], str):
        pytest.skip(f"the sandbox cannot run here: {_STARTED['jail']}")
    jail = _STARTED["jail"]
    if launch == "zygote":
        if "zygote" not in _STARTED:
            _STARTED["zygote"] = sandbox.start_zygote(jail, LIBRARY, ["numpy", "encdec"])
        jail = _STARTED["zygote"]
    return dataclasses.replace(jail, limits=Limits(**limits))


def jailed(code, tmp_path, launch="bubblewrap", **limits):
    """(exit code, stdout, breach) of `python -c code` run as a graded kernel is: through the
    launcher (or the zygote's client), in the job's sandbox, in a scratch folder at tmp_path/work.
    With SANDBOX=off, as a kernel is run without the sandbox (which these tests must show failing)."""
    if os.environ.get("SANDBOX") == "off":
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(LIBRARY)}
        proc = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, timeout=60, env=env)
        return proc.returncode, proc.stdout, None
    jail = _jail(launch, **limits)
    cell = sandbox.Cell(jail, LIBRARY)
    assert cell.forked == (launch == "zygote")
    try:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        if cell.forked:
            argv = [sys.executable, str(Path(jail.launcher).with_name("zygote_client.py")), str(cell.folder / "spec.json"),
                    "-c", code]
        else:
            argv = [sys.executable, jail.launcher, str(cell.folder / "spec.json"), sys.executable, "-c", code]
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout, cell.breach()
    finally:
        cell.close()
        assert not cell.folder.exists()


# -- the jail on its own --------------------------------------------------------------------------------
def test_the_kernel_sees_only_python_the_library_and_its_scratch(tmp_path, launch):
    (tmp_path / "beside-the-scratch.txt").write_text("private")
    code = ("import os, json, encdec\n"
            "print(json.dumps({'uid': os.getuid(), 'root': sorted(os.listdir('/')), 'cwd': os.listdir('.'),"
            "'parent': os.listdir('..'), 'encdec': encdec.__file__,"
            f"'repo': sorted(os.listdir({str(ROOT)!r})), 'home': os.path.exists('/home') and os.listdir('/home'),"
            "'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}))")
    rc, out, _ = jailed(code, tmp_path, launch)
    assert rc == 0, out
    seen = json.loads(out)
    assert seen["uid"] == 65534
    # nothing beside the scratch folder (a forked kernel's /tmp also holds the way to its socket folder,
    # and to the Python environment and the library where they are under /tmp)
    beside = {"work"}
    if launch == "zygote":
        jail = _jail(launch)
        shown = [Path(jail.zygote).parent] + [Path(p) for p in (*jail.readonly, LIBRARY)]
        beside |= {p.relative_to("/tmp").parts[0] for p in shown if p.is_relative_to("/tmp")}
    assert seen["cwd"] == [] and set(seen["parent"]) == beside
    assert seen["encdec"].startswith(str(LIBRARY))
    assert set(seen["repo"]) <= {".venv", "lib"}  # not solutions/, autograder/, course/ or .git
    assert not seen["home"]
    assert set(seen["root"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "proc", "root", "sbin", "tmp",
                                 "usr", "work", "opt", "home"} | {Path(str(ROOT)).parts[1]}
    assert max(seen["pids"], default=0) < 10  # its own PID namespace: no other process of the machine


def test_the_python_environment_and_the_library_are_read_only(tmp_path, launch):
    code = ("import os, sys, encdec\nfor d in (os.path.dirname(encdec.__file__), sys.prefix):\n"
            "    try:\n        open(os.path.join(d, 'x'), 'w')\n        print('WROTE', d)\n"
            "    except OSError as e:\n        print('refused', e.errno)\n")
    rc, out, _ = jailed(code, tmp_path, launch)
    assert rc == 0 and "WROTE" not in out and out.count("refused") == 2, out


def test_there_is_no_network(tmp_path, launch):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    code = (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
            "    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e)\n")
    rc, out, _ = jailed(code, tmp_path, launch)
    with pytest.raises(socket.timeout):
        server.accept()
    server.close()
    assert "CONNECTED" not in out and "refused" in out


def test_a_process_left_running_dies_with_the_job(tmp_path, launch):
    marker = f"left-running-{os.getpid()}"
    code = ("import os, sys\nif os.fork() == 0:\n    os.setsid()\n"
            f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', {marker!r}])\n")
    rc, _, _ = jailed(code, tmp_path, launch)
    assert rc == 0
    assert not _processes_named(marker)


def test_cpu_time_limit(tmp_path, launch):
    rc, _, breach = jailed("while True: pass", tmp_path, launch, cpu_time=1)
    assert rc == 128 + signal.SIGXCPU
    assert breach == "failed: CPU time limit of 1 s exceeded"


def test_file_size_limit(tmp_path, launch):
    code = ("try:\n    open('big', 'wb').write(b'x' * (3 << 20))\n    print('WROTE')\n"
            "except OSError as e:\n    print('refused', e.strerror)\n")
    rc, out, breach = jailed(code, tmp_path, launch, file_size=2 << 20)
    assert "refused File too large" in out, out


def test_open_files_limit(tmp_path, launch):
    code = ("files = []\ntry:\n    for i in range(100):\n        files.append(open('/dev/null'))\n"
            "except OSError as e:\n    print('refused', len(files), e.strerror)\n")
    rc, out, _ = jailed(code, tmp_path, launch, open_files=32)
    assert "refused" in out and "Too many open files" in out, out


def _needs_cgroups():
    if not cgroups.kind():
        pytest.skip("no cgroups for the grader on this machine: memory and processes are limited by rlimits")


def test_memory_limit_counts_files_in_the_scratch_folder_too(tmp_path, launch):
    _needs_cgroups()
    rc, _, breach = jailed("open('f', 'wb').write(b'x' * (400 << 20))", tmp_path, memory=256 << 20)
    assert rc != 0
    assert breach.startswith("failed: memory limit of 256 MiB exceeded")


def test_memory_limit(tmp_path, launch):
    _needs_cgroups()
    rc, _, breach = jailed("x = [b'x' * (32 << 20) for _ in range(16)]", tmp_path, memory=256 << 20)
    assert rc != 0 and breach.startswith("failed: memory limit of 256 MiB exceeded")


def test_process_limit(tmp_path, launch):
    _needs_cgroups()
    code = ("import os, time\nn = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n"
            "            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)\n")
    rc, out, breach = jailed(code, tmp_path, launch, processes=20)
    assert int(out.split()[-1]) < 20
    assert breach == "failed: process limit of 20 exceeded (processes and threads at once)"


def test_a_killed_runs_cgroups_are_removed_by_the_next_run():
    """A grading run killed mid-job cannot close its cgroups; the next run removes the groups of runs
    that are gone, and keeps those of a run still alive."""
    base = Path("/sys/fs/cgroup/pids")
    if not os.access(base, os.W_OK):
        pytest.skip("no writable cgroup v1 pids hierarchy here")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale, alive = base / f"autograder-{int(dead.stdout)}-1", base / f"autograder-{os.getpid()}-999"
    stale.mkdir()
    alive.mkdir()
    try:
        sandbox.remove_stale_groups((base,))
        assert not stale.exists() and alive.exists()
    finally:
        for group in (stale, alive):
            if group.exists():
                group.rmdir()


def test_settings_read_from_the_environment():
    limits = Limits.from_environment({"SANDBOX_MEMORY": "512M", "SANDBOX_PROCESSES": "64", "SANDBOX_CPU_TIME": "30"})
    assert (limits.memory, limits.processes, limits.cpu_time) == (512 << 20, 64, 30)
    assert Limits.from_environment({}) == Limits()
    assert size_text(Limits().memory) == "2 GiB" and parse_size("1.5G") == 3 << 29
    assert mode("on", {}) == "on" and mode("on", {"SANDBOX": "OFF"}) == "off"
    with pytest.raises(ValueError):
        Limits.from_environment({"SANDBOX_PROCESSES": "many"})
    with pytest.raises(ValueError):
        mode("on", {"SANDBOX": "maybe"})


def test_without_bubblewrap_autograde_refuses_and_says_what_to_do(tmp_path):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no bwrap on PATH
    env.pop("SANDBOX", None)
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde", "--submitted", str(tmp_path / "none"),
                           "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 2
    assert "bubblewrap is not installed" in proc.stderr and "SANDBOX=off" in proc.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


# -- students who attack the machine, graded in the class ----------------------------------------------
def _processes_named(marker):
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if marker in (p / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(p.name))
            except OSError:
                pass
    return found


def _output_of(graded_class, student):
    nb = nbformat.read(str(graded_class["out"] / "autograded" / student / FIRST / f"{FIRST}.ipynb"), as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


from grading_class import FIRST, SECRET, TOKEN  # noqa: E402 (after the jail's tests, which need none of it)
from test_grading_e2e import check_row  # noqa: E402



@pytest.mark.parametrize("student", ATTACKERS)
@pytest.mark.nbgrader
@pytest.mark.slow
def test_attacker_is_graded_as_expected(graded_class, student):
    check_row(graded_class, student, FIRST)


@pytest.mark.nbgrader
@pytest.mark.slow
def test_no_process_outlives_grading(graded_class):
    left = _processes_named(f"survivor-{TOKEN}")
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} process(es) a submission started still run after grading"


@pytest.mark.nbgrader
@pytest.mark.slow
def test_a_submission_reads_no_other_submission_gradebook_or_instructor_file(graded_class):
    said = _output_of(graded_class, "reader")
    assert "READ others=0 hidden=0 gradebooks=0 graders=0 secrets=[]" in said, said
    feedback = (graded_class["out"] / "feedback" / "reader" / FIRST / f"{FIRST}.html").read_text()
    assert SECRET not in feedback and SECRET not in said


@pytest.mark.nbgrader
@pytest.mark.slow
def test_a_submission_writes_nowhere_but_its_scratch_folder(graded_class):
    """Its writes to /tmp land in its private /tmp, in memory; nothing it writes reaches the machine."""
    name = f"escaped-{TOKEN}"
    found = list(Path(graded_class["out"]).parent.glob(f"**/{name}"))  # the run's folders, and above the job
    found += [p for place in (Path("/tmp"), Path.home(), Path("/root"), Path(os.__file__).parent, ROOT / "lib" / "encdec",
                              graded_class["root"] / "lib" / "encdec") if (p := place / name).exists()]
    for p in found:
        p.unlink()
    assert not found
    said = _output_of(graded_class, "writer")
    wrote = said.split("WROTE", 1)[1].splitlines()[0]
    assert not any(place in wrote for place in ("/root/", str(Path(os.__file__).parent), "/encdec/")), said


@pytest.mark.nbgrader
@pytest.mark.slow
def test_a_submission_cannot_reach_the_network(graded_class):
    assert graded_class["server"].received == []
    assert "NO NETWORK" in _output_of(graded_class, "network")


@pytest.mark.nbgrader
@pytest.mark.slow
@pytest.mark.parametrize("student", ["solution", "victim", "one-mistake", "mutant-1", "mutant-2", "mutant-3",
                                     "alternative", "untouched"])
def test_honest_students_keep_their_grades_beside_the_attackers(graded_class, student):
    check_row(graded_class, student, FIRST)


@pytest.mark.nbgrader
@pytest.mark.slow
def test_every_row_records_the_sandbox(graded_class):
    import csv
    with open(graded_class["out"] / "grades.csv") as f:  # every row of a submission (not of a missing one)
        states = {row["sandbox"] for row in csv.DictReader(f) if not row["status"].startswith("missing")}
    assert len(states) == 1, states
    state = states.pop()
    assert state.startswith("bubblewrap") and "pid, network, mount, user" in state and "memory 2 GiB" in state
    assert f"Student code ran in: {state}" in graded_class["output"]


@pytest.mark.nbgrader
@pytest.mark.slow
def test_nothing_of_the_sandboxes_is_left_behind(graded_class):
    leftovers = []
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        for group in base.glob("autograder-*") if base.is_dir() else ():
            pid = group.name.split("-")[-2]
            if not Path(f"/proc/{pid}").exists():  # its grading run has ended
                leftovers.append(group)
    assert not leftovers
    assert not list((graded_class["out"] / ".work").glob("*-01_attention-*"))


# -- a kernel forked by the run's zygote (autograder/zygote.py) ---------------------------------------
def test_a_forked_kernel_cannot_undo_its_sandbox(tmp_path):
    """No capability is left, and a namespace of its own does not give back what was hidden: every
    mount it inherited is locked."""
    launch = "zygote"
    code = ("import ctypes, os, json\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "class H(ctypes.Structure): _fields_ = [('v', ctypes.c_uint32), ('pid', ctypes.c_int)]\n"
            "class D(ctypes.Structure): _fields_ = [('e', ctypes.c_uint32), ('p', ctypes.c_uint32), ('i', ctypes.c_uint32)]\n"
            "d = (D * 2)()\nlibc.capget(ctypes.byref(H(0x20080522, 0)), d)\n"
            "caps = [x.e | x.p | x.i for x in d]\n"
            "pid = os.fork()\nif pid == 0:\n"
            "    if libc.unshare(0x10000000 | 0x00020000) != 0:\n        os._exit(3)\n"
            "    gone = [p for p in ('/tmp', '/proc', '/dev') if libc.umount2(p.encode(), 2) == 0]\n"
            "    os._exit(4 if gone else 0)\n"
            "print(json.dumps({'caps': caps, 'child': os.waitpid(pid, 0)[1] >> 8,"
            " 'dev': sorted(os.listdir('/dev')), 'proc': sorted(os.listdir('/proc'))}))\n")
    rc, out, _ = jailed(code, tmp_path, launch)
    assert rc == 0, out
    seen = json.loads(out)
    assert seen["caps"] == [0, 0]
    assert seen["child"] in (0, 3)  # either no new namespace at all, or nothing unmounted in it
    assert "shm" in seen["dev"] and not any(name.isdigit() for name in seen["proc"])


def test_kernels_forked_at_once_share_nothing(tmp_path):
    """Two kernels of the same zygote, running at the same time: what the first leaves in /dev/shm,
    /tmp, its working folder and the abstract socket namespace, the second cannot see or reach."""
    launch = "zygote"
    first = ("import os, socket, time\nopen('/dev/shm/first', 'w').write('x')\nopen('/tmp/first', 'w').write('x')\n"
             "open('first', 'w').write('x')\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0encdec-first')\n"
             "s.listen(1)\nprint('ready', flush=True)\ntime.sleep(20)\n")
    second = ("import os, socket, json\nseen = [os.path.exists(p) for p in ('/dev/shm/first', '/tmp/first', 'first')]\n"
              "try:\n    socket.socket(socket.AF_UNIX).connect('\\0encdec-first')\n    seen.append(True)\n"
              "except OSError:\n    seen.append(False)\nprint(json.dumps(seen))\n")
    jail = _jail(launch)
    cell = sandbox.Cell(jail, LIBRARY)
    client = str(Path(jail.launcher).with_name("zygote_client.py"))
    (tmp_path / "a").mkdir()
    proc = subprocess.Popen([sys.executable, client, str(cell.folder / "spec.json"), "-c", first], cwd=tmp_path / "a",
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        rc, out, _ = jailed(second, tmp_path / "a", launch)
        assert rc == 0 and json.loads(out) == [False] * 4, out
    finally:
        proc.kill()
        proc.wait()
        cell.close()


def test_without_its_zygote_the_kernel_starts_in_a_bubblewrap_of_its_own(tmp_path):
    """The zygote gone after the job's kernelspec was written: zygote_client.py starts the kernel as
    jail.py does, and the job is graded all the same."""
    launch = "zygote"
    root = Path(_jail(launch).zygote).parent
    stopped = dataclasses.replace(_jail(launch), zygote=str(tmp_path / "no-zygote.sock"))
    from autograder import sandbox_start
    sandbox_start._ZYGOTES[stopped.zygote] = sandbox_start._ZYGOTES[str(root / "zygote.sock")]
    try:
        cell = sandbox.Cell(stopped, LIBRARY)
    finally:
        del sandbox_start._ZYGOTES[stopped.zygote]
    try:
        assert cell.forked
        (tmp_path / "work").mkdir()
        proc = subprocess.run([sys.executable, str(Path(stopped.launcher).with_name("zygote_client.py")),
                               str(cell.folder / "spec.json"), "-c", "import os; print(sorted(os.listdir('/proc'))[:1])"],
                              cwd=tmp_path / "work", capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "['1']"  # bubblewrap's own /proc: its PID namespace's first process
    finally:
        cell.close()
