"""The clock of the checks' time budgets (the repair's, the tracer's, the whole check's).

A budget is counted in this thread's CPU time, so that what a diagnosis finds does not depend on what else
the machine runs: a class graded in two jobs on two cores, or a test suite beside it, gives each answer the
same search as a quiet machine does, only slower. A wall-clock limit WALL_FACTOR times as long still ends a
budget whose answer waits without computing (time.sleep, a lock), which uses no CPU time.

CPU time cannot run ahead of wall-clock time in one thread, so the CPU clock (slower to read than the wall
clock, about 0.6 µs) is read only once the wall clock has passed the budget: a tracer that asks at every line
pays for it only in the part of its run that a loaded machine stretched.
"""

import time

WALL_FACTOR = 4.0  # a budget of s seconds of CPU time ends after 4 s of wall-clock time at the latest


class Deadline:
    """`seconds` of this thread's CPU time from now, or WALL_FACTOR times as long on the wall clock."""

    def __init__(self, seconds):
        wall, cpu = time.perf_counter(), time.thread_time()
        self.seconds = seconds
        self._earliest = wall + seconds  # before this, the CPU time spent is below `seconds` for sure
        self._wall = wall + WALL_FACTOR * seconds
        self._cpu = cpu + seconds

    def passed(self):
        wall = time.perf_counter()
        if wall < self._earliest:
            return False
        return wall > self._wall or time.thread_time() > self._cpu

    def left(self):
        """The seconds of CPU time left (0 once passed), the wall clock's limit counted in the same unit."""
        wall_left = (self._wall - time.perf_counter()) / WALL_FACTOR
        return max(0.0, min(self._cpu - time.thread_time(), wall_left))


class Stopwatch:
    """What a budget has spent since it started: the CPU time, or the wall-clock time over WALL_FACTOR where that
    is more (an answer that waited), in the unit Deadline counts in."""

    def __init__(self):
        self._wall, self._cpu = time.perf_counter(), time.thread_time()

    def spent(self):
        return max(time.thread_time() - self._cpu, (time.perf_counter() - self._wall) / WALL_FACTOR)
