"""Starting the sandbox for a run: is bubblewrap there, does a kernel's Python start in it here,
and what every sandboxed job of the run shares (the Jail).

    jail = start(library=...)      # raises Unavailable, saying why and what to do
    jail.description               # what grades.csv records about it
    jail = start(library=..., modules=kernel_modules(lessons))   # with the zygote: kernels forked,
                                   # imports done (it starts before the probe; or start_zygote later)

With a jail, every kernel a job starts runs in bubblewrap (jail.py launches it): its own PID
namespace, no network, a read-only view of the Python environment and the course library, a
private scratch folder and /tmp in memory, the unprivileged user 65534, and the limits of
settings.Limits, enforced by cgroups where this machine lets the grader create them (memory,
processes; cgroups.py) and by rlimits (open files, file size, CPU time).

With a zygote (the fast path), one bubblewrap per run holds a Python that has imported what a kernel
imports (zygote.py); each job's kernel is forked from it into a sandbox of its own with the same
view and limits (zygote_client.py is its kernelspec). Where the zygote is not there, a kernel starts
in a bubblewrap of its own, as above.
"""

import atexit
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from . import cgroups
from .bytecode import compile_library
from . import jail as launcher
from .settings import Limits, size_text


class Unavailable(RuntimeError):
    """The sandbox cannot run on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class Jail:
    """What every sandboxed job of a run shares (picklable: the grading child gets it)."""

    bwrap: str
    launcher: str  # jail.py, from the run's snapshot of the grader
    readonly: tuple  # the Python environment and the course library
    limits: Limits
    cgroups: str  # "v1", "v2" or "" (then rlimits stand in for memory and processes)
    description: str = ""
    zygote: str = ""  # the run's kernel zygote's socket (zygote.py), or "" for a bubblewrap per kernel

    def spec(self, folder, library):
        return {"bwrap": self.bwrap, "readonly": list(self.readonly) + [str(library)],
                "sockets": str(folder / "sockets"), "status": str(folder / "status.json"),
                "pythonpath": str(library), "path": os.pathsep.join([str(Path(sys.executable).parent),
                                                                      "/usr/local/bin", "/usr/bin", "/bin"]),
                "tmpfs_size": self.limits.memory, "rlimits": _rlimits(self.limits, self.cgroups), "cgroups": [],
                "zygote": self.zygote}


def _python_paths():
    """The folders the kernel's Python lives in: the venv and the installation it was made from."""
    paths = set()
    for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        paths.add(os.path.realpath(p))
    paths.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    system = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
    keep = sorted(p for p in paths if not any(p == s or p.startswith(s + "/") for s in system))
    return tuple(p for p in keep if not any(p != q and p.startswith(q + "/") for q in keep))


def _rlimits(limits, cgroup_kind):
    """The rlimits the launcher sets: always open files, file size and CPU time; memory and
    processes too where no cgroup holds them (processes only for a grader that is not root,
    counted over its whole user, so with room for what already runs)."""
    rl = {"open_files": limits.open_files, "file_size": limits.file_size, "cpu_time": limits.cpu_time}
    if not cgroup_kind:
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


def start(library, launcher_path=None, limits=None, modules=None, bytecode=None):
    """The Jail for this run; raises Unavailable, saying why, where the sandbox cannot run. With
    `modules`, the run's kernel zygote too (start_zygote), started before the probe rather than after
    it: the probe and the zygote's imports overlap, and a failed probe stops the zygote. `bytecode`: the
    grader's folder that keeps the library's compiled modules from run to run (bytecode.py)."""
    limits = limits or Limits.from_environment()
    bwrap = shutil.which("bwrap")
    if not sys.platform.startswith("linux"):
        raise Unavailable(f"the sandbox needs Linux namespaces, and this is {sys.platform}")
    if bwrap is None:
        raise Unavailable("bubblewrap is not installed (on Debian or Ubuntu: sudo apt-get install bubblewrap; "
                          "on Fedora: sudo dnf install bubblewrap)")
    jail = Jail(bwrap, str(launcher_path or launcher.__file__), _python_paths(), limits, cgroups.kind())
    compile_library(library, bytecode)  # the kernels cannot write their own .pyc files there
    forking = start_zygote(jail, library, modules) if modules is not None else None
    reason = _probe(jail, library)
    if reason is not None:
        if forking is not None:
            _ZYGOTES.pop(forking.zygote).stop()
        raise Unavailable(reason)
    cgroups.remove_stale()
    jail = dataclasses.replace(jail, description=describe(jail))
    if forking is None:
        return jail
    return dataclasses.replace(jail, zygote=forking.zygote, description=jail.description + ZYGOTE_SAYS)


def _probe(jail, library):
    """None when a kernel's Python starts in the sandbox here, else why not."""
    folder = Path(tempfile.mkdtemp(prefix="ag-", dir=short_tmp()))
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


def short_tmp():
    # unix socket paths hold at most 107 bytes: keep the job folder short
    return "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()


# -- the kernel zygote (zygote.py): one sandboxed Python per run that forks each job's kernel ---------
def kernel_modules(lessons):
    """What a graded kernel of these lessons imports (ipykernel, its debugger and the setup cells),
    then the guard's record (encdec.checks.guard.take, which imports every checker): the zygote does
    this once per run, and each kernel it forks starts with it done."""
    modules = ["ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger",
               "IPython.core.debugger", "IPython.core.completerlib", "IPython.extensions.storemagic", "sqlite3",
               "tornado.platform.asyncio", "tornado.queues", "numpy", "numpy.random", "matplotlib.pyplot",
               "encdec", "encdec.env", "encdec.plotting", "encdec.checks.mode"]
    if any(lesson.startswith("10") for lesson in lessons):
        modules += ["torch", "torch._dynamo", "encdec.torch_model", "encdec.capstone", "encdec.dates"]
    return modules + ["encdec.checks.guard:take"]


_ZYGOTES = {}  # its socket -> _Zygote, in the process that started it


class _Zygote:
    """The zygote's bubblewrap, started and waited for by a thread of its own that lives as long as it
    does (bubblewrap dies with the thread that started it)."""

    def __init__(self, argv, root):
        self.root, self.proc, self.ok = root, None, False
        self._ready = threading.Event()
        threading.Thread(target=self._keep, args=(argv,), daemon=True, name="kernel zygote").start()

    def _keep(self, argv):
        try:
            with open(self.root / "zygote.log", "ab") as log:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        except OSError:
            self._ready.set()
            return
        self.ok = self.proc.stdout.readline().strip() == b"ready"
        self._ready.set()
        self.proc.wait()
        self.ok = False

    def ready(self, timeout=120):
        self._ready.wait(timeout)
        return self.ok and self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def start_zygote(jail, library, modules):
    """The jail with a kernel zygote that imported `modules` (it starts now; zygote_ready() waits)."""
    from . import zygote
    root = Path(tempfile.mkdtemp(prefix="ag-z-", dir=short_tmp()))
    for module in (zygote, launcher):  # the kernels' own /tmp hides this folder from them
        shutil.copy(module.__file__, root / os.path.basename(module.__file__))
    spec = jail.spec(root, library)
    spec["sockets"] = str(root)  # the job folders go in it, each kernel sees only its own
    argv = launcher.bwrap_argv(spec, "/tmp/.zygote", [sys.executable, str(root / "zygote.py"), str(root), *modules])
    path = str(root / zygote.SOCKET)
    _ZYGOTES[path] = _Zygote(argv, root)
    return dataclasses.replace(jail, zygote=path, description=jail.description + ZYGOTE_SAYS)


ZYGOTE_SAYS = "; each kernel forked from the run's sandboxed zygote into namespaces of its own"


def zygote_ready(jail):
    """True when the jail's zygote is there to fork kernels (it waits for its start)."""
    z = _ZYGOTES.get(jail.zygote) if jail and jail.zygote else None
    return bool(z and z.ready())


def stop_zygote(jail):
    """End the jail's zygote now (the grader that `make grade` keeps ready makes its setup again)."""
    z = _ZYGOTES.pop(jail.zygote, None) if jail and getattr(jail, "zygote", None) else None
    if z is not None:
        z.stop()


@atexit.register
def _stop_zygotes():
    for z in _ZYGOTES.values():
        z.stop()
    _ZYGOTES.clear()
