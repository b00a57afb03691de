"""What every check of Lesson 10 shares: TorchChecker (messages that speak of PyTorch, and the last
answer that earned every part, for yours_or_ours), one torch thread per check, tensors turned into
NumPy arrays, and the checks made of parts decided by observing the answer run (_check_parts), with
the catalog mistake or the probe that behaves the same way as the diagnosis.
"""

import contextlib
import functools
import io

import numpy as np

from ..cases import Attempt, Case
from ..causes import with_cause
from ..clock import Stopwatch
from ..comparing import compare
from ..core import Checker
from ..probes import find_slip
from ..probes.repair import repair_by
from .torch_references import references


class Returned(Exception):
    """An answer returned something of the wrong kind (the message says what)."""


DELEGATED = {  # library functions an answer may not call, in the words the student reads
    "Seq2Seq.greedy_decode": "your code calls `model.greedy_decode`, the course's decoding without a cache. "
                             "This exercise asks you to write the decoding loop yourself, with a cache.",
}


_PASSED = {}  # exercise number -> the last answer object whose check earned every part (for yours_or_ours)


class TorchChecker(Checker):
    """A Checker whose messages speak of PyTorch, not NumPy. It remembers the last answer that earned every
    part of its check, so that a demonstration right after the test cell (yours_or_ours) need not run the
    same check again; grading never reads it."""

    def find(self, obj, name, kind="function"):
        self.answer = super().find(obj, name, kind)
        return self.answer

    def result(self):
        score = super().result()
        answer = getattr(self, "answer", None)
        if answer is not None and self.status == "checked" and self.parts and all(self.earned(p) for p in self.parts):
            _PASSED[self.exercise] = answer
        return score

    def _explain_error(self, outcome):
        if isinstance(outcome.error, Returned):
            return str(outcome.error)
        text = super()._explain_error(outcome)
        if outcome.delegated:
            text = DELEGATED.get(outcome.delegated) or text.replace("Write it yourself with NumPy.",
                                                                    "Write it yourself, in PyTorch.")
            self.stop(text, "delegated")
        return text


def _one_thread(check):
    """Run a check with torch on one thread (restored afterwards): the models are tiny, and threads only
    fight each other on a machine that grades several notebooks at once."""
    @functools.wraps(check)
    def run(*args, **kwargs):
        torch = references().torch
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return check(*args, **kwargs)
        finally:
            torch.set_num_threads(before)
    return run


def _to_numpy(value):
    """Tensors (alone or in a tuple) -> NumPy arrays (floats as float64); anything else unchanged."""
    if isinstance(value, (tuple, list)):
        return tuple(_to_numpy(v) for v in value)
    torch = references().torch
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.numpy() if not value.is_floating_point() else value.double().numpy()
    return value


def _same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return compare(a, b) is None
    return a == b


def _diagnose_part(observe, student_summary, catalog, *args, history=()):
    """The mistake whose behaviour in this part equals the student's, else None. When several do (the same
    library call fails the same way for many slips), the one that also behaved as the answer did in the
    parts already checked (`history`: (observe, args, summary)) is named, and none if that leaves several."""
    same = []
    for m in catalog:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                summary, _, _ = observe(m.impl, *args)
            except Exception:
                continue
        if _same(summary, student_summary):
            same.append(m)
    if len(same) <= 1:
        return same[0] if same else None
    agreeing = []
    for m in same:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                if all(_same(seen_observe(m.impl, *seen_args)[0], seen) for seen_observe, seen_args, seen in history):
                    agreeing.append(m)
            except Exception:
                continue
    return agreeing[0] if len(agreeing) == 1 else None


def _check_parts(c, fn, parts, catalog):
    """Parts decided by observe(fn, *args) -> (summary, problem message or '', outcome or None).

    Stops the exercise on delegation or a missing implementation; a part with a problem is recorded
    with the diagnosis of the first catalog mistake that behaves the same way, else of the part's own
    probe, when the part has one: a fourth item, probe(summary) -> Finding or None (a kind of slip read
    from the student's summary)."""
    history = []  # (observe, args, the answer's summary) of the parts checked so far
    for label, observe, args_list, *probe in parts:
        if c.stopped:
            break
        for args in args_list:
            summary, problem, outcome = observe(fn, *args)
            history.append((observe, args, summary))
            if outcome is not None:
                c._absorb(outcome, label)
                if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                    c._explain_error(outcome)
                    c.part(label, False, c.stopped)
                    break
            if summary[0] == "error":
                found = _diagnose_part(observe, summary, catalog, *args, history=history[:-1])
                if found is None:
                    found = _repaired(c, fn, parts)
                if found is None and outcome is not None and outcome.error is not None:
                    found = _error_cause(c, Case(label, tuple(args)), outcome.error)
                diagnosis = c.likely_cause(found)
                c.part(label, False, with_cause(c._explain_error(outcome), diagnosis))
                break
            if problem:
                found = _diagnose_part(observe, summary, catalog, *args, history=history[:-1])
                if found is None and probe:
                    try:
                        found = probe[0](summary)
                    except Exception:  # a probe is an extra: the check stands without it
                        found = None
                if found is None:
                    found = _repaired(c, fn, parts)
                diagnosis = c.likely_cause(found)
                c.part(label, False, with_cause(problem, diagnosis))
                break
        else:
            c.part(label, True)


OBSERVED_REPAIR_SECONDS = 0.6  # for one failing part, within the check's REPAIR_SECONDS


def _repaired(c, fn, parts):
    """The repair (probes.repair_by): one edit of the answer after which every part passes on every input,
    the parts not run yet included, so that a change that mends only this part's inputs is not named."""
    def right(candidate):
        for _, observe, args_list, *_ in parts:
            for args in args_list:
                summary, problem, _ = observe(candidate, *args)
                if problem or summary[0] == "error":
                    return False
        return True
    return repaired_with(c, fn, right)


def repaired_with(c, fn, right, kinds=None):
    """The repair of `fn` with the check's own test of a copy, `right(candidate)`, within what is left of the
    check's time for it (and at most OBSERVED_REPAIR_SECONDS), else None (`kinds`: only those edits)."""
    left = max(0.0, c.REPAIR_SECONDS - getattr(c, "_repaired", 0.0))
    watch = Stopwatch()
    try:
        return repair_by(fn, right, c.name, seconds=min(left, OBSERVED_REPAIR_SECONDS), kinds=kinds) if left > 0.05 \
            else None
    finally:
        c._repaired = getattr(c, "_repaired", 0.0) + watch.spent()


def _plain(f):
    """The function under a decorator (torch.no_grad() wraps every function in one shared code object)."""
    return getattr(f, "__wrapped__", f)


def _error_cause(c, case, error):
    """A shape error's tensors and step (TorchShapeError, or NumPy's ShapeError), as a Finding, or None:
    the always-on error probes (probes.ERROR_PROBES) alone."""
    return find_slip(None, Attempt(c.name, case, error=error))
