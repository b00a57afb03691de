"""The checks' budget clock (checks/clock.py): CPU time counts, waiting does not, and a wall-clock limit ends a
budget whose answer only waits."""

import time

from encdec.checks.clock import WALL_FACTOR, Deadline, Stopwatch


def _compute(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_computing_spends_a_budget():
    deadline, watch = Deadline(0.05), Stopwatch()
    assert not deadline.passed()
    _compute(0.08)
    assert deadline.passed() and deadline.left() == 0.0
    assert watch.spent() >= 0.08


def test_waiting_spends_nothing_until_the_wall_clock_limit():
    """Time the thread waits (another process holding the CPU, as a loaded machine makes it) is not spent."""
    deadline, watch = Deadline(0.05), Stopwatch()
    time.sleep(0.1)
    assert not deadline.passed()
    assert 0.0 < deadline.left() <= 0.05
    assert watch.spent() < 0.05


def test_an_answer_that_only_waits_is_stopped_by_the_wall_clock():
    deadline, watch = Deadline(0.05), Stopwatch()
    time.sleep(0.05 * WALL_FACTOR + 0.02)
    assert deadline.passed() and deadline.left() == 0.0
    assert watch.spent() >= 0.05
