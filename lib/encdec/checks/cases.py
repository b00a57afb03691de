"""The cases a check runs and the attempts the probes inspect.

A Case is one input to try (its arguments, the label the student reads, whether it is float32 or hidden);
an Attempt is one case as the probes (encdec.checks.probes) see it: the answer's output or error next to the
reference's, with what they need to run the answer again on other inputs or other cases.
"""

import dataclasses
from dataclasses import dataclass, field

from .comparing import _copy, _safe, compare
from .running import run_student


@dataclass
class Case:
    """One input to try: positional args, keyword args, a label the student reads."""

    label: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    float32: bool = False
    hidden: bool = False
    alike: tuple = ()  # pairs of sizes this case makes equal on purpose, e.g. (("m", "n"),) for a causal mask
    given: dict = field(default_factory=dict)  # sizes of what the check builds for it, e.g. {"h": 3} (sizes.py)


@dataclass
class Attempt:
    """One case as the probes see it (encdec.checks.probes): the answer's output (`got`, after
    `postprocess`) or the exception it raised, and the reference's output (`expected`)."""

    exercise: str  # the answer's name in the notebook, as catalog mistakes name it
    case: Case
    got: object = None
    expected: object = None
    error: BaseException = None
    student: object = None
    forbidden: tuple = ()
    postprocess: object = None
    names: tuple = None
    others: tuple = ()  # the part's other cases, on which a probe's finding is confirmed (Attempt.on)
    reference: object = None
    case_sizes: dict = field(default_factory=dict)  # the sizes the case gives, by name (checks.sizes)
    repair_seconds: float = 0.6  # what the repair probe may spend on this case (the check's budget left)

    @property
    def sizes(self):
        return self.case_sizes

    @property
    def float32(self):
        return self.case.float32

    def args(self):
        """A fresh copy of the case's positional arguments."""
        return _copy(self.case.args)

    def kwargs(self):
        return _copy(self.case.kwargs)

    def output(self, value):
        return value if self.postprocess is None else _safe(self.postprocess, value)

    def matches(self, value):
        """True when the answer's output equals `value` (another computation's output on this case)."""
        return compare(self.got, self.output(value), self.float32, self.names) is None

    def right(self):
        """True when the answer's own output on this case is the reference's (a passing case, in an audit)."""
        return self.error is None and compare(self.got, self.expected, self.float32, self.names) is None

    def is_expected(self, value):
        """True when `value` equals the reference's output: a variant that is not a slip on this case."""
        return compare(self.output(value), self.expected, self.float32, self.names) is None

    def rerun(self, args, kwargs=None, student=None):
        """The answer (or `student`) run again, safely, on other inputs: an Outcome."""
        return run_student(self.student if student is None else student, args, kwargs or {}, self.forbidden)

    def on(self, case):
        """The same answer on another case: an Attempt with its output (or error) and the reference's."""
        outcome = self.rerun(_copy(case.args), _copy(case.kwargs))
        expected = self.output(self.reference(*_copy(case.args), **_copy(case.kwargs)))
        got = None if outcome.error is not None else self.output(outcome.value)
        return dataclasses.replace(self, case=case, got=got, expected=expected, error=outcome.error, others=())
