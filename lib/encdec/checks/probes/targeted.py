"""A few of the repair's edits tried first, on their own, where the answer's source has their pattern: each gives one
or two copies to run, so it is confirmed within a fraction of a second even where running the answer is slow (a
decoder over a batch of sources), where the whole repair would spend its budget on other edits first. Now: a
cache read before the step's row is appended to it (streams.py), and one array appended at every step of a loop
that writes into it in place (containers.py). Exact (the source has the pattern, and the moved
statement makes the answer right on every case of the part); always on, before the repair (judging.py).
"""

from .base import Probe
from .repair import _edits, answer_function, repair
from .containers import _one_array_appended
from .streams import _read_before_update

TARGETED_SECONDS = 0.8  # for one failing case: the copies and their runs on the part's cases


class Targeted(Probe):
    """repair:<kind>: the repair with only `kinds` (its finding is the repair's)."""

    kind = "targeted"
    exact = True

    def __init__(self, *kinds):
        self.kinds = list(kinds)

    def find(self, attempt, probes):
        if attempt.error is not None or attempt.student is None or not has_pattern(attempt.student, self.kinds):
            return None  # no copy to try: the answer is not run again
        return repair(attempt, TARGETED_SECONDS, self.kinds)


def has_pattern(student, kinds):
    """True when the answer's source has the pattern of one of the repair's edits `kinds` (a copy to try)."""
    fdef = answer_function(student)
    return fdef is not None and any(True for _ in _edits(fdef, kinds))


TARGETED_PROBES = [Targeted(_read_before_update), Targeted(_one_array_appended)]
