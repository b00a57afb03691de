"""The sandbox: one grading task in a process of its own, with a time limit, and its kernel
contained by the operating system.

    jail = start(library=...)             # once per run: is bubblewrap there, and does it work?
    outcome = run(task, arg, workdir=..., library=..., timeout=600, jail=jail)

`task(arg)` runs in a child process forked from a server that imported `warm` modules once, when
grading began: starting a child costs milliseconds, and each runs the grader's code as it was
then, whatever a submission later writes to disk. The child leads a process group of its own,
so what it starts dies with it when the time is up. Its stdout and stderr go nowhere.

With a jail, every kernel the task starts runs in bubblewrap (jail.py launches it): its own PID
namespace (every process it starts dies with the job), no network, a read-only view of the
Python environment and the course library, a private scratch folder and /tmp in memory, the
unprivileged user 65534, and the limits of settings.Limits, enforced by cgroups where this
machine lets the grader create them (memory, processes) and by rlimits (open files, file size,
CPU time). The kernel talks to nbgrader over ZeroMQ's unix sockets, in a folder of the job's own
that is shared into the sandbox. A job that breaks a limit gets "failed: <the limit> exceeded".
Each job's folder and cgroups are removed when it ends, and anything still running in them is
killed.

The interface is the whole contract: `start`, `run`, `Outcome` and `configure_kernel` (which
nbgrader_glue calls on the configuration of the job's nbgrader).
"""

import compileall
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from . import jail as launcher
from .settings import Limits, size_text

_SERVER = None
SANDBOX_ENV = "AUTOGRADER_SANDBOX"  # in the grading child: the job's sandbox folder
KERNEL_NAME = "course-grading-sandbox"
_JOB_IDS = count()


class Unavailable(RuntimeError):
    """The sandbox cannot run on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class Outcome:
    """How a task ended: its result, or the reason there is none (a status such as 'failed: ...')."""

    result: object = None
    failure: str = None


@dataclass(frozen=True)
class Jail:
    """What every sandboxed job of a run shares (picklable: the grading child gets it)."""

    bwrap: str
    launcher: str  # jail.py, from the run's snapshot of the grader
    readonly: tuple  # the Python environment and the course library
    limits: Limits
    cgroups: str  # "v1", "v2" or "" (then rlimits stand in for memory and processes)
    description: str = ""

    def spec(self, folder, library):
        return {"bwrap": self.bwrap, "readonly": list(self.readonly) + [str(library)],
                "sockets": str(folder / "sockets"), "status": str(folder / "status.json"),
                "pythonpath": str(library), "path": os.pathsep.join([str(Path(sys.executable).parent),
                                                                      "/usr/local/bin", "/usr/bin", "/bin"]),
                "tmpfs_size": self.limits.memory, "rlimits": _rlimits(self.limits, self.cgroups), "cgroups": []}


# -- is the sandbox there? ----------------------------------------------------------------------------
def _python_paths():
    """The folders the kernel's Python lives in: the venv and the installation it was made from."""
    paths = set()
    for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        paths.add(os.path.realpath(p))
    paths.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    system = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
    keep = sorted(p for p in paths if not any(p == s or p.startswith(s + "/") for s in system))
    return tuple(p for p in keep if not any(p != q and p.startswith(q + "/") for q in keep))


def _cgroup_kind():
    """'v1' or 'v2' when this process may create memory and pids cgroups (tried, not guessed), else ''."""
    v1 = [Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids")]
    root = Path("/sys/fs/cgroup")
    if all((p / "cgroup.procs").exists() for p in v1):
        return "v1" if all(_can_create(p, ("cgroup.procs",)) for p in v1) else ""
    if (root / "cgroup.controllers").exists():
        try:
            if not {"memory", "pids"} <= set((root / "cgroup.subtree_control").read_text().split()):
                (root / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            return ""
        return "v2" if _can_create(root, ("memory.max", "pids.max")) else ""
    return ""


def _can_create(base, files):
    probe = base / f"autograder-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return all((probe / f).exists() for f in files)
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def _rlimits(limits, cgroups):
    """The rlimits the launcher sets: always open files, file size and CPU time; memory and
    processes too where no cgroup holds them (processes only for a grader that is not root,
    counted over its whole user, so with room for what already runs)."""
    rl = {"open_files": limits.open_files, "file_size": limits.file_size, "cpu_time": limits.cpu_time}
    if not cgroups:
        rl["memory"] = limits.memory  # per process: the memory it writes to
        if os.getuid() != 0:
            running = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == os.getuid())
            rl["processes"] = limits.processes + running
    return rl


def _owner(path):
    try:
        return path.stat().st_uid
    except OSError:
        return -1


def describe(jail):
    lim = jail.limits
    how = "cgroup" if jail.cgroups else None
    memory = f"memory {size_text(lim.memory)} " + (f"({how})" if how else "per process (rlimit)")
    if how:
        processes = f"processes {lim.processes} (cgroup)"
    elif os.getuid() != 0:
        processes = f"processes {lim.processes} (rlimit, counted with the grader's own)"
    else:
        processes = "processes not limited (no cgroup, and rlimits do not hold for root)"
    version = ""
    try:
        version = subprocess.run([jail.bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.split()[-1]
    except (OSError, IndexError, subprocess.SubprocessError):
        pass
    return (f"bubblewrap {version}: pid, network, mount, user, ipc and uts namespaces; user {launcher.UID}; "
            f"read-only Python and course library; scratch and /tmp in memory; limits: {memory}, {processes}, "
            f"open files {lim.open_files}, file size {size_text(lim.file_size)}, CPU time {lim.cpu_time} s")


def start(library, launcher_path=None, limits=None):
    """The Jail for this run; raises Unavailable, saying why, where the sandbox cannot run."""
    limits = limits or Limits.from_environment()
    reason = None
    bwrap = shutil.which("bwrap")
    if not sys.platform.startswith("linux"):
        reason = f"the sandbox needs Linux namespaces, and this is {sys.platform}"
    elif bwrap is None:
        reason = ("bubblewrap is not installed (on Debian or Ubuntu: sudo apt-get install bubblewrap; "
                  "on Fedora: sudo dnf install bubblewrap)")
    jail = None
    if reason is None:
        jail = Jail(bwrap, str(launcher_path or launcher.__file__), _python_paths(), limits, _cgroup_kind())
        reason = _probe(jail, library)
    if reason is not None:
        raise Unavailable(reason)
    remove_stale_groups()
    compileall.compile_dir(str(library), quiet=1)  # the kernels cannot write their own .pyc files there
    return Jail(jail.bwrap, jail.launcher, jail.readonly, jail.limits, jail.cgroups, describe(jail))


CGROUP_BASES = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


def remove_stale_groups(bases=CGROUP_BASES):
    """Remove the cgroups of grading runs that ended without closing them (a run killed mid-job),
    killing what is left in them; a group is named autograder-<pid of its run>-<job>, and a run
    whose pid is alive keeps its groups."""
    for base in bases:
        for group in base.glob("autograder-*-*") if base.is_dir() else ():
            pid = group.name.split("-")[-2]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                _empty_and_remove(group)


def _probe(jail, library):
    """None when a kernel's Python starts in the sandbox here, else why not."""
    folder = Path(tempfile.mkdtemp(prefix="ag-", dir=_short_tmp()))
    try:
        (folder / "sockets").mkdir()
        spec = jail.spec(folder, library)
        argv = launcher.bwrap_argv(spec, str(folder / "sockets"), [sys.executable, "-c", "import ipykernel, numpy"])
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bubblewrap could not start ({exc})"
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            return (f"bubblewrap cannot create the sandbox here ({last}); unprivileged user namespaces may be "
                    "turned off (sysctl kernel.unprivileged_userns_clone=1), or grade as root")
        return None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _short_tmp():
    # unix socket paths hold at most 107 bytes: keep the job folder short
    return "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()


# -- one job's sandbox --------------------------------------------------------------------------------
class _Cell:
    """One job's sandbox folder (spec, kernelspec, sockets) and cgroups, made before the job and
    removed after it."""

    def __init__(self, jail, library):
        self.jail = jail
        self.folder = Path(tempfile.mkdtemp(prefix="ag-", dir=_short_tmp()))
        self.groups = []
        try:
            self._make(library)
        except BaseException:
            self.close()
            raise

    def _make(self, library):
        (self.folder / "sockets").mkdir()
        spec = self.jail.spec(self.folder, library)
        name = f"autograder-{os.getpid()}-{next(_JOB_IDS)}"
        lim = self.jail.limits
        if self.jail.cgroups == "v1":
            memory, pids = Path("/sys/fs/cgroup/memory") / name, Path("/sys/fs/cgroup/pids") / name
            for group in (memory, pids):
                group.mkdir()
                self.groups.append(group)
            (memory / "memory.limit_in_bytes").write_text(str(lim.memory))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                (memory / "memory.memsw.limit_in_bytes").write_text(str(lim.memory))
            (pids / "pids.max").write_text(str(lim.processes))
        elif self.jail.cgroups == "v2":
            group = Path("/sys/fs/cgroup") / name
            group.mkdir()
            self.groups.append(group)
            (group / "memory.max").write_text(str(lim.memory))
            if (group / "memory.swap.max").exists():
                (group / "memory.swap.max").write_text("0")
            (group / "pids.max").write_text(str(lim.processes))
        spec["cgroups"] = [str(g) for g in self.groups]
        (self.folder / "spec.json").write_text(json.dumps(spec))
        kernel = self.folder / "kernels" / KERNEL_NAME
        kernel.mkdir(parents=True)
        (kernel / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, self.jail.launcher, str(self.folder / "spec.json"),
                     sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (grading sandbox)", "language": "python",
            "interrupt_mode": "message"}))

    def breach(self):
        """'failed: … limit … exceeded' when the job broke a limit, else None."""
        lim = self.jail.limits
        if self._counter("memory.oom_control", "oom_kill") or self._counter("memory.events", "oom_kill"):
            return (f"failed: memory limit of {size_text(lim.memory)} exceeded "
                    "(the kernel's memory and the files it wrote, together)")
        if self._counter("pids.events", "max"):
            return f"failed: process limit of {lim.processes} exceeded (processes and threads at once)"
        try:
            code = json.loads((self.folder / "status.json").read_text())["returncode"]
        except (OSError, ValueError, KeyError):
            code = None
        if code in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return f"failed: CPU time limit of {lim.cpu_time} s exceeded"
        return None

    def _counter(self, filename, key):
        for group in self.groups:
            path = group / filename
            if path.exists():
                for line in path.read_text().splitlines():
                    name, _, value = line.partition(" ")
                    if name == key and value.strip().isdigit() and int(value) > 0:
                        return int(value)
        return 0

    def close(self):
        for group in self.groups:
            _empty_and_remove(group)
        self.groups = []
        shutil.rmtree(self.folder, ignore_errors=True)


def _empty_and_remove(group):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def configure_kernel(config):
    """In a sandboxed job's grading child: nbgrader's kernels start through the job's kernelspec
    (jail.py in bubblewrap) and talk over unix sockets in the job's socket folder."""
    folder = os.environ.get(SANDBOX_ENV)
    if folder:
        config.Execute.kernel_name = KERNEL_NAME
        config.KernelManager.transport = "ipc"
        config.KernelManager.connection_file = os.path.join(folder, "sockets", "k.json")
        config.KernelManager.ip = os.path.join(folder, "sockets", "k")
    return config


# -- the grading child --------------------------------------------------------------------------------
def _server(warm):
    global _SERVER
    if _SERVER is None:
        import multiprocessing
        _SERVER = multiprocessing.get_context("forkserver")
        _SERVER.set_forkserver_preload(list(warm) + [__name__])  # the child's own code, too
    return _SERVER


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
    `jail`: the Jail from start(), or None to run kernels without the sandbox."""
    ctx = _server(warm)
    cell = _Cell(jail, library) if jail else None
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
