"""The repair's copies of an answer run on a part's cases (repair.py makes them): each run bounded by the repair's
deadline (the answer's own frames are stopped once it passes, so that a copy which loops forever ends) and by
memory (an edit that builds something huge fails with a MemoryError), and its result compared with the
reference's, computed once a case.
"""

import contextlib
import dataclasses
import resource
import sys

from .tracer import student_code


class _OutOfTime(Exception):
    pass


class _Runner:
    """The answer's copies run on the part's cases, with the reference's results computed once each."""

    def __init__(self, attempt, deadline):
        self.attempt, self.deadline = attempt, deadline
        self.cases = [attempt.case, *attempt.others] if attempt is not None else []
        self.expected = {}
        self.whole = {}  # case -> whether its whole result can be compared (the reference's equals itself)
        self.depth = 0

    def right(self, fn, k):
        """True when `fn` gives the reference's result on case k, within the time left: its whole result,
        before any postprocess (a part that reads one property of the result, its dtype, would let an edit
        pass that breaks the rest)."""
        at = dataclasses.replace(self.attempt, case=self.cases[k], others=(), postprocess=None)
        if k not in self.expected:
            self.expected[k] = self.attempt.reference(*at.args(), **at.kwargs())
        at = dataclasses.replace(at, expected=self.expected[k])
        outcome = self.bounded(lambda: at.rerun(at.args(), at.kwargs(), student=fn))
        if outcome is None or outcome.error is not None:
            return False
        if k not in self.whole:
            self.whole[k] = self._whole(at)
        if self.whole[k]:
            return at.is_expected(outcome.value)
        read = dataclasses.replace(self.attempt, case=self.cases[k], others=())  # the part's reading of it
        return dataclasses.replace(read, expected=read.output(self.expected[k])).is_expected(outcome.value)

    def _whole(self, at):
        """True when a whole result can be compared: the reference's equals itself (a list of (tokens, score)
        pairs, a beam's, is not an array and is read as the part reads it)."""
        try:
            return at.is_expected(at.expected)
        except Exception:
            return False

    def bounded(self, run):
        """run(), with the answer's frames stopped once the deadline passes and its memory capped; a run
        inside a run (right() inside the test of a copy) is bounded once."""
        if self.depth:
            return run()
        deadline = self.deadline

        def local(frame, event, arg):
            if deadline.passed():
                raise _OutOfTime()
            return local

        def call(frame, event, arg):
            return local if student_code(frame.f_code.co_filename) else None

        previous = sys.gettrace()
        sys.settrace(call)
        self.depth += 1
        try:
            with _memory_capped():
                return run()
        except _OutOfTime:
            return None
        finally:
            self.depth -= 1
            sys.settrace(previous)


MEMORY_HEADROOM = 512 * 2 ** 20  # what a copy may allocate beyond what the process holds already


@contextlib.contextmanager
def _memory_capped():
    """The process's data limit (RLIMIT_DATA, which NumPy's and torch's allocations count against) lowered
    for the run of a copy to what it holds now plus MEMORY_HEADROOM, so that an edit which builds something
    huge fails with a MemoryError instead of taking the machine's memory. Where the process cannot read
    its own size (a graded kernel's /proc holds no process), the sandbox's own limit stands."""
    try:
        status = open("/proc/self/status").read()
        held = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmData:"))) * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    except (OSError, StopIteration, ValueError):
        yield
        return
    cap = held + MEMORY_HEADROOM
    if soft != resource.RLIM_INFINITY:
        cap = min(cap, soft)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
