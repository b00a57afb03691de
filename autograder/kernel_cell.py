"""One job's sandbox cell: the folder, kernelspec and cgroups its kernel runs with, and the glue
that makes nbgrader's kernel manager start the kernel there.

    cell = Cell(jail, library)     # before the job: folder (spec.json, kernelspec, sockets), cgroups
    cell.breach()                  # after it: 'failed: <the limit> exceeded', or None
    cell.close()                   # kill what is left in its cgroups, remove them and the folder

The kernel talks to nbgrader over ZeroMQ's unix sockets in the cell's socket folder, which is
shared into the sandbox; jail.py, the kernelspec's argv, starts it in bubblewrap and records how it
ended in status.json (a kernel killed by SIGXCPU ran out of CPU time).
"""

import json
import os
import shutil
import signal
import sys
import tempfile
from itertools import count
from pathlib import Path

from . import cgroups
from .sandbox_start import short_tmp, zygote_ready
from .settings import size_text

SANDBOX_ENV = "AUTOGRADER_SANDBOX"  # in the grading child: the job's sandbox folder
KERNEL_NAME = "course-grading-sandbox"
_JOB_IDS = count()


class Cell:
    """One job's sandbox folder (spec, kernelspec, sockets) and cgroups, made before the job and
    removed after it."""

    def __init__(self, jail, library):
        self.jail = jail
        self.forked = zygote_ready(jail)  # the kernel forked by the run's zygote, or a bubblewrap of its own
        parent = os.path.dirname(jail.zygote) if self.forked else short_tmp()
        self.folder = Path(tempfile.mkdtemp(prefix="ag-", dir=parent))
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
        self.groups = cgroups.make(name, self.jail.limits, self.jail.cgroups)
        spec["cgroups"] = [str(g) for g in self.groups]
        (self.folder / "spec.json").write_text(json.dumps(spec))
        kernel = self.folder / "kernels" / KERNEL_NAME
        kernel.mkdir(parents=True)
        if self.forked:
            client = os.path.join(os.path.dirname(self.jail.launcher), "zygote_client.py")
            argv = [sys.executable, client, str(self.folder / "spec.json"), "-f", "{connection_file}"]
        else:
            argv = [sys.executable, self.jail.launcher, str(self.folder / "spec.json"),
                    sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (kernel / "kernel.json").write_text(json.dumps({
            "argv": argv,
            "display_name": "Python 3 (grading sandbox)", "language": "python",
            "interrupt_mode": "message"}))

    def breach(self):
        """'failed: … limit … exceeded' when the job broke a limit, else None."""
        lim = self.jail.limits
        if cgroups.counter(self.groups, "memory.oom_control", "oom_kill") or \
                cgroups.counter(self.groups, "memory.events", "oom_kill"):
            return (f"failed: memory limit of {size_text(lim.memory)} exceeded "
                    "(the kernel's memory and the files it wrote, together)")
        if cgroups.counter(self.groups, "pids.events", "max"):
            return f"failed: process limit of {lim.processes} exceeded (processes and threads at once)"
        try:
            code = json.loads((self.folder / "status.json").read_text())["returncode"]
        except (OSError, ValueError, KeyError):
            code = None
        if code in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return f"failed: CPU time limit of {lim.cpu_time} s exceeded"
        return None

    def close(self):
        for group in self.groups:
            cgroups.empty_and_remove(group)
        self.groups = []
        shutil.rmtree(self.folder, ignore_errors=True)


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
