"""The sandbox's settings: whether graded kernels run in it, and the limits each one gets.

Every limit can be changed in the environment of the grading run, for example
`SANDBOX_MEMORY=4G make autograde`:

| variable            | default | what it limits                                                        |
|---------------------|---------|-----------------------------------------------------------------------|
| SANDBOX_MEMORY      | 2G      | memory of the kernel and everything it starts, files it writes included |
| SANDBOX_PROCESSES   | 256     | processes and threads at once                                         |
| SANDBOX_OPEN_FILES  | 1024    | open files per process                                                |
| SANDBOX_FILE_SIZE   | 1G      | the size of one file it writes                                        |
| SANDBOX_CPU_TIME    | 600     | CPU seconds per process                                               |

GRADE_DASK=tcp://host:8786 (or `make autograde DASK=…`, or `--dask`) grades each notebook on that Dask
cluster (dask_grading.py); without it, on this machine (JOBS=N at once).

SANDBOX=on (the default of `make autograde`) grades only in the sandbox and refuses where it
cannot run; SANDBOX=auto (the default of `make grade`) uses it where it runs and says so where
it does not; SANDBOX=off grades without it, and every row of grades.csv says so.
"""

import os
from dataclasses import dataclass

MODES = ("on", "auto", "off")
UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text):
    """Bytes from '2G', '512M', '1.5G' or a plain number of bytes."""
    text = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    unit = text[-1] if text and text[-1] in UNITS else ""
    number = text[:-1] if unit else text
    try:
        value = float(number) * UNITS[unit]
    except ValueError:
        raise ValueError(f"not a size: {text!r} (write it as 2G, 512M or a number of bytes)") from None
    if value <= 0:
        raise ValueError(f"a size must be positive, got {text!r}")
    return int(value)


def size_text(n):
    """'2 GiB', '512 MiB', '1.5 GiB'."""
    for unit, name in (("T", "TiB"), ("G", "GiB"), ("M", "MiB"), ("K", "KiB")):
        if n >= UNITS[unit]:
            return f"{n / UNITS[unit]:g} {name}"
    return f"{n} bytes"


@dataclass(frozen=True)
class Limits:
    memory: int = 2 * 2**30  # bytes; the kernel's scratch folder and /tmp are in memory, so files count
    processes: int = 256  # processes and threads at once
    open_files: int = 1024  # per process
    file_size: int = 2**30  # bytes, one file
    cpu_time: int = 600  # CPU seconds, per process

    @classmethod
    def from_environment(cls, env=None):
        env = os.environ if env is None else env
        base = cls()

        def number(name, default):
            value = env.get(name)
            if value is None or value == "":
                return default
            if not value.strip().isdigit() or int(value) <= 0:
                raise ValueError(f"{name} must be a positive whole number, got {value!r}")
            return int(value)

        return cls(memory=parse_size(env.get("SANDBOX_MEMORY") or base.memory),
                   processes=number("SANDBOX_PROCESSES", base.processes),
                   open_files=number("SANDBOX_OPEN_FILES", base.open_files),
                   file_size=parse_size(env.get("SANDBOX_FILE_SIZE") or base.file_size),
                   cpu_time=number("SANDBOX_CPU_TIME", base.cpu_time))


def mode(default, env=None):
    """SANDBOX from the environment ('on', 'auto' or 'off'), else `default`."""
    env = os.environ if env is None else env
    value = (env.get("SANDBOX") or default).strip().lower()
    if value not in MODES:
        raise ValueError(f"SANDBOX must be one of {', '.join(MODES)}, got {value!r}")
    return value


def dask_address(env=None):
    """GRADE_DASK from the environment: the Dask scheduler a class is graded on, or None (this machine)."""
    env = os.environ if env is None else env
    return (env.get("GRADE_DASK") or "").strip() or None


PATHS = ("fast", "classic")


def grading_path(env=None):
    """GRADE_PATH from the environment: 'fast' (the default) or 'classic', the way each notebook was
    graded before the fast path (a process server that only imports, a bubblewrap and a fresh Python
    for every kernel, the kernel waited for in steps of 100 to 200 ms and at its shutdown, the scratch
    course on disk, the template made again every run), kept to compare the two
    (`make bench BENCH=grading`). The grades are the same."""
    env = os.environ if env is None else env
    value = (env.get("GRADE_PATH") or "fast").strip().lower()
    if value not in PATHS:
        raise ValueError(f"GRADE_PATH must be one of {', '.join(PATHS)}, got {value!r}")
    return value
