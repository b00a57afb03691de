"""The parts of a check that runs its cases itself (Exercise 6.7, whose answer returns (pair, new
corpus), which core.compare (arrays) cannot read): each part observes the answer (`observe(fn,
case)`), compares what it saw with the reference's, and on a difference names the catalog mistake
that behaves the same way on the case (told apart on the part's other cases when several do).
_Malformed is a result that cannot be read; _PlainChecker speaks of plain Python, not NumPy."""

from ... import subwords
from .. import recording
from ..core import Checker, run_student, with_cause


class _Malformed(Exception):
    """The answer's result cannot be read as (pair, corpus); the message says why."""


def _observed(observe, fn, case):
    """What `observe` sees of fn on the case: its value, or ("unreadable", why) for a result of another form."""
    try:
        return observe(fn, case)
    except _Malformed as exc:
        return ("unreadable", str(exc))


def _run_observed(observe, fn, case, forbidden):
    """(value, outcome): what `observe` saw of the answer on the case, run safely; value None when it raised."""
    outcome = run_student(lambda: _observed(observe, fn, case), forbidden=forbidden)
    return outcome.value if outcome.error is None else None, outcome


def _same_as(mistake, observe, case, value):
    """Whether a catalog mistake, observed the same way, gives `value` on the case."""
    try:
        return _observed(observe, mistake.impl, case) == value
    except Exception:
        return False


def _diagnose_observed(observe, fn, case, value, catalog, others, forbidden):
    """The catalog mistake whose observation equals the answer's on the case; several are told apart on
    the part's other cases."""
    matching = [m for m in catalog if _same_as(m, observe, case, value)]
    for other in others:
        if len(matching) <= 1:
            break
        mine, outcome = _run_observed(observe, fn, other, forbidden)
        if outcome.error is not None:
            break
        agreeing = [m for m in matching if _same_as(m, observe, other, mine)]
        matching = agreeing or matching
    return matching[0] if matching else None


def _unreadable(value):
    return isinstance(value, tuple) and len(value) == 2 and value[0] == "unreadable"


def _check_observed(c, label, fn, cases, observe, expect, say, catalog, forbidden):
    """One part: every case's observation of the answer must equal `expect(case)`."""
    if c.stopped:
        return False
    every, cases = list(cases), c.to_run(cases)
    for case in cases:
        recording.saw(c.exercise, label, case, subwords.bpe_merge_step)
        value, outcome = _run_observed(observe, fn, case, forbidden)
        c._absorb(outcome, case.label)
        others = [o for o in every if o is not case]
        if outcome.error is not None:
            if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                c._explain_error(outcome)
                return c.part(label, False, c.stopped, cases=cases, failed=case)
            return c.part(label, False, f"[{case.label}] {c._explain_error(outcome)}", cases=cases, failed=case)
        expected = expect(case)
        if value != expected:
            problem = value[1] if _unreadable(value) else say(value, expected, case)
            found = _diagnose_observed(observe, fn, case, value, catalog, others, forbidden)
            return c.part(label, False, with_cause(f"[{case.label}] {problem}", c.likely_cause(found)),
                          cases=cases, failed=case)
    return c.part(label, True, cases=cases)


class _PlainChecker(Checker):
    """A Checker whose messages speak of plain Python: this exercise needs no NumPy."""

    def _explain_error(self, outcome):
        text = super()._explain_error(outcome)
        if outcome.delegated:
            self.stopped = text = text.replace("Write it yourself with NumPy.", "Write it yourself, in plain Python.")
        return text
