"""Where a graded notebook's time goes, measured where it is spent (`make bench BENCH=grading` shows
the sums; timings.json keeps them per row).

In the grading child (nbgrader_glue.autograde_submission): reset() at its start, configure(config)
on the job's nbgrader configuration, mark() at the steps it takes; summary() then gives seconds per
phase: nbgrader's work before the kernel (its configuration, the converters, the sanitising
preprocessors), the kernel's start (the sandbox, Python, ipykernel, the course's guard), the cells by
kind (the setup cell with its imports, the answers, the checks, the others), the kernel's shutdown,
nbgrader's work after the cells (the scores into the job's gradebook) and the feedback page.
"""

import time

from jupyter_client.manager import AsyncKernelManager

_MARKS = {}
_CELLS = {}
SETUP_CELL = "setup"  # the grade_id of each lesson's first code cell, its imports


def reset():
    _MARKS.clear()
    _CELLS.clear()
    mark("start")


def mark(name):
    _MARKS[name] = time.perf_counter()


def cell_kind(cell):
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if meta.get("grade_id") == SETUP_CELL:
        return "cells: the setup cell (imports)"
    if meta.get("solution"):
        return "cells: answers"
    if meta.get("grade"):
        return "cells: checks"
    return "cells: the others"


def _on_cell_start(cell=None, **_):
    """A cell's time runs from its start to the next cell's (or the kernel's shutdown): nbclient calls
    no hook of ours when its reply has come (nbgrader's Execute takes on_cell_executed)."""
    _close_cell()
    _MARKS["cell"] = time.perf_counter()
    _MARKS["cell kind"] = cell_kind(cell or {})


def _close_cell():
    if "cell" in _MARKS:
        kind = _MARKS.pop("cell kind")
        _CELLS[kind] = _CELLS.get(kind, 0.0) + time.perf_counter() - _MARKS.pop("cell")


def _on_notebook_start(**_):
    mark("kernel ready")


class TimedKernelManager(AsyncKernelManager):
    """nbgrader's kernel manager, with the kernel's launch and shutdown marked."""

    async def start_kernel(self, **kw):
        mark("kernel launch")
        return await super().start_kernel(**kw)

    async def shutdown_kernel(self, now=False, restart=False):
        _close_cell()
        mark("shutdown begins")
        try:
            return await super().shutdown_kernel(now=now, restart=restart)
        finally:
            mark("shutdown ends")


def configure(config):
    """The job's nbgrader configuration, with the hooks that mark the kernel's start and each cell."""
    config.Execute.kernel_manager_class = TimedKernelManager
    config.Execute.on_notebook_start = _on_notebook_start
    config.Execute.on_cell_start = _on_cell_start
    return config


def _span(a, b):
    if a in _MARKS and b in _MARKS:
        return max(0.0, _MARKS[b] - _MARKS[a])
    return None


def summary():
    """{phase: seconds} of this process's job, from the marks made."""
    found = {"nbgrader: before the kernel (configuration, converters, sanitising)": _span("start", "kernel launch"),
             "kernel start (sandbox, Python, ipykernel, the guard)": _span("kernel launch", "kernel ready"),
             **_CELLS,
             "kernel shutdown": _span("shutdown begins", "shutdown ends"),
             "nbgrader: after the cells (scores into the job's gradebook)": _span("shutdown ends", "autograded"),
             "feedback page": _span("autograded", "feedback")}
    spent = sum(v for v in found.values() if v)
    total = _span("start", "feedback") or _span("start", "autograded")
    if total is not None:
        found["nbgrader: the rest (between the kernel's steps)"] = max(0.0, total - spent)
    return {k: round(v, 4) for k, v in found.items() if v is not None}
