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
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

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


class PromptClient(AsyncKernelClient):
    """jupyter_client's client, waiting for a new kernel as it does (a reply to kernel_info on the shell
    channel, then a message on IOPub, which says that IOPub is connected, then IOPub drained), in
    steps of 20 ms where it waits 200 ms: on a local kernel's sockets, replies come within
    milliseconds, and each 200 ms step was time in which nothing ran."""

    STEP = 0.02

    async def wait_for_ready(self, timeout=None):
        deadline = time.time() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                msg = None
            if msg is not None and msg["msg_type"] == "kernel_info_reply" and await self._iopub_connected():
                self._handle_kernel_info_reply(msg)
                break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.time() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")
        while await self._iopub_connected(steps=1):  # drain what the kernel_info requests left there
            pass

    async def _iopub_connected(self, steps=10):
        for _ in range(steps):
            try:
                await self.iopub_channel.get_msg(timeout=self.STEP)
                return True
            except Empty:
                continue
        return False


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


class PromptKernelManager(TimedKernelManager):
    """The fast path's kernel manager: its client prompt, and the end of its process seen within 10 ms."""

    client_class = DottedObjectName("autograder.phases.PromptClient")
    client_factory = Type(default_value=PromptClient, klass=AsyncKernelClient)

    async def _async_wait(self, pollinterval=0.1):
        """Whether the kernel's process has ended, asked every 10 ms rather than every 100."""
        await super()._async_wait(pollinterval=min(pollinterval, 0.01))


def configure(config, prompt=False):
    """The job's nbgrader configuration, with the hooks that mark the kernel's start and each cell
    (`prompt`, on the fast path: the kernel waited for in steps of 10 to 20 ms)."""
    config.Execute.kernel_manager_class = PromptKernelManager if prompt else TimedKernelManager
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
