"""The cases each check runs, recorded for the tests that examine the cases themselves (the sizes
of the visible cases, the values of the arguments an answer must read): tests only.

    with recording() as seen:
        exercise.checker(answer)
    for s in seen: s.exercise, s.part, s.case, s.reference
"""

import contextlib
from dataclasses import dataclass

_recorders = []


@dataclass
class Seen:
    """One case a check ran: its exercise ("1.2"), the part it belongs to, the Case, and the reference
    it was compared with (a function, or the reference object whose method is the exercise)."""

    exercise: str
    part: str
    case: object
    reference: object


@contextlib.contextmanager
def recording():
    seen = []
    _recorders.append(seen)
    try:
        yield seen
    finally:
        _recorders.remove(seen)


def saw(exercise, part, case, reference):
    """Called by a check for every case it runs; records it while recording() is active."""
    if _recorders:
        _recorders[-1].append(Seen(exercise, part, case, reference))
