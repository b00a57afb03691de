"""The sandbox's interface: what the rest of the grader uses of it, in one place.

    jail = start(library=...)             # once per run: is bubblewrap there, and does it work?
    jail = start(library=..., modules=kernel_modules(lessons))   # the fast path: kernels forked from
                                          # a zygote that starts before the probe (or start_zygote later)
    outcome = run(task, arg, workdir=..., library=..., timeout=600, jail=jail)

The work is done by one module per job:
    sandbox_start.py  probing and starting the jail (bubblewrap, the Python paths, the rlimits)
    cgroups.py        the cgroups that hold a job's memory and processes
    kernel_cell.py    one job's sandbox cell (folder, kernelspec, sockets) and nbgrader's kernel glue
    timed_process.py  one task in a process of its own, with a time limit
    jail.py           the launcher that starts a graded kernel inside bubblewrap
    zygote.py         the run's kernel zygote (in bubblewrap), which forks each job's kernel into a
                      sandbox of its own; zygote_client.py is that kernel's kernelspec

The interface is the whole contract: `start`, `start_zygote`, `stop_zygote`, `zygote_ready`, `kernel_modules`,
`run`, `Outcome`, `Unavailable` and `configure_kernel` (which nbgrader_glue calls on the configuration of the
job's nbgrader).
"""

from .cgroups import remove_stale as remove_stale_groups
from .kernel_cell import KERNEL_NAME, SANDBOX_ENV, Cell, configure_kernel
from .sandbox_start import Jail, Unavailable, describe, kernel_modules, start, start_zygote, stop_zygote, zygote_ready
from .timed_process import Outcome, run

__all__ = ["Cell", "Jail", "KERNEL_NAME", "Outcome", "SANDBOX_ENV", "Unavailable", "configure_kernel", "describe",
           "kernel_modules", "remove_stale_groups", "run", "start", "start_zygote", "stop_zygote", "zygote_ready"]
