"""The cgroups that hold a graded kernel's memory and processes, where this machine lets the
grader create them (cgroups v1, or v2 with the controllers delegated).

    kind()                                  # 'v1', 'v2' or '' (then rlimits stand in)
    groups = make(name, limits, kind)       # a job's groups, with its limits written
    counter(groups, 'memory.events', 'oom_kill')
    empty_and_remove(group)                 # kill what is left in it, then remove it
    remove_stale()                          # groups of runs that died without removing theirs

A group is named autograder-<pid of its run>-<job>: a run whose pid is alive keeps its groups.
"""

import os
import signal
import time
from pathlib import Path

V1 = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids"))
ROOT = Path("/sys/fs/cgroup")
BASES = V1 + (ROOT,)


def kind():
    """'v1' or 'v2' when this process may create memory and pids cgroups (tried, not guessed), else ''."""
    if all((p / "cgroup.procs").exists() for p in V1):
        return "v1" if all(_can_create(p, ("cgroup.procs",)) for p in V1) else ""
    if (ROOT / "cgroup.controllers").exists():
        try:
            if not {"memory", "pids"} <= set((ROOT / "cgroup.subtree_control").read_text().split()):
                (ROOT / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            return ""
        return "v2" if _can_create(ROOT, ("memory.max", "pids.max")) else ""
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


def make(name, limits, version):
    """The job's groups (a list of paths, empty without cgroups), made with the memory and
    process limits of `limits` (settings.Limits). The caller removes them (empty_and_remove)."""
    groups = []
    try:
        if version == "v1":
            memory, pids = V1[0] / name, V1[1] / name
            for group in (memory, pids):
                group.mkdir()
                groups.append(group)
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
            (pids / "pids.max").write_text(str(limits.processes))
        elif version == "v2":
            group = ROOT / name
            group.mkdir()
            groups.append(group)
            (group / "memory.max").write_text(str(limits.memory))
            if (group / "memory.swap.max").exists():
                (group / "memory.swap.max").write_text("0")
            (group / "pids.max").write_text(str(limits.processes))
    except BaseException:
        for group in groups:
            empty_and_remove(group)
        raise
    return groups


def counter(groups, filename, key):
    """The value of `key` in the groups' `filename` (memory.events, pids.events…), 0 when absent."""
    for group in groups:
        path = Path(group) / filename
        if path.exists():
            for line in path.read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key and value.strip().isdigit() and int(value) > 0:
                    return int(value)
    return 0


def remove_stale(bases=BASES):
    """Remove the cgroups of grading runs that ended without closing them (a run killed mid-job),
    killing what is left in them."""
    for base in bases:
        for group in base.glob("autograder-*-*") if base.is_dir() else ():
            pid = group.name.split("-")[-2]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                empty_and_remove(group)


def empty_and_remove(group):
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
