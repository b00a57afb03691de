"""Two ways a right formula gives inf or nan on large inputs:
- a log taken of a softmax's output (`np.log(softmax(z))`, or `p = softmax(z)` then `np.log(p)`): where a
  probability underflows to 0 (a logit far below its row's largest), the log is -inf, and the loss inf or nan;
- np.exp of an unshifted argument (`np.exp(scores)`): above about 709 it is inf in float64, and a softmax's
  inf / inf is nan. Confirmed by running the answer again with NumPy's overflow made an error: the error must
  come from a line of the answer's that calls exp.

Each is confirmed on the failing case: the answer's result holds inf or nan where the right one is finite.
Exact (the source says it and the case shows it), so each is tried with the unread parameter, before the
exercise's property probes, which would say only that the result is not finite.
"""

import ast

import numpy as np

from .base import Probe, _arrays
from .failing import failing_line
from .nodes import NO_VALUE, value_in_frame
from .repair import answer_function


def _logs_of_softmax(fdef):
    """The `np.log(...)` calls of the function whose argument is a softmax's output."""
    from_softmax = {t.id for a in ast.walk(fdef) if isinstance(a, ast.Assign) and _softmax_called(a.value)
                    and not _logged(a.value) for t in a.targets if isinstance(t, ast.Name)}
    found = []
    for call in ast.walk(fdef):
        if isinstance(call, ast.Call) and ast.unparse(call.func) in ("np.log", "numpy.log", "torch.log") \
                and call.args:
            arg = call.args[0]
            if isinstance(arg, ast.Name) and arg.id in from_softmax or _softmax_called(arg):
                found.append(call)
    return found


def _called(node, names):
    return any(isinstance(c, ast.Call) and ast.unparse(c.func).split(".")[-1] in names for c in ast.walk(node))


def _softmax_called(node):
    return _called(node, ("softmax",))


def _logged(node):
    return _called(node, ("log", "log_softmax", "logsumexp"))


class LogOfSoftmax(Probe):
    """probe:log_of_softmax: -inf from the log of an underflowed probability."""

    kind = "log_of_softmax"
    exact = True

    def find(self, attempt, probes):
        if not _not_finite_where_right_is(attempt):
            return None
        fdef = answer_function(attempt.student)
        calls = _logs_of_softmax(fdef) if fdef is not None else []
        if not calls:
            return None
        return self.finding(attempt, "", (
            f"`{ast.unparse(calls[0])}` takes the log of probabilities, and a probability that underflows to 0 (a "
            "logit far below its row's largest, as in this case) has log -inf: the loss becomes inf or nan. "
            "Compute the log-probabilities from the logits directly, z - max(z) - log(sum(exp(z - max(z)))) "
            "along the vocabulary axis, and take p = exp of that where p is needed."))


def _not_finite_where_right_is(attempt):
    """True when the answer returned inf or nan where the right result is finite everywhere."""
    if attempt.error is not None or attempt.student is None:
        return False
    got, right = _arrays(attempt.got), _arrays(attempt.expected)
    return bool(got) and not all(np.all(np.isfinite(a)) for a in got) and all(np.all(np.isfinite(a)) for a in right)


def _exp_calls(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] == "exp"]


def _too_large(call, frame):
    """True when the exp call's argument, read in the failing frame, holds a number whose exp overflows."""
    value = value_in_frame(call.args[0], frame) if call.args else NO_VALUE
    try:
        return value is not NO_VALUE and bool(np.nanmax(np.asarray(value, dtype=float)) > np.log(np.finfo(float).max))
    except (TypeError, ValueError):
        return False


class ExpOverflow(Probe):
    """probe:exp_overflow: np.exp of an argument not shifted by its maximum overflows to inf."""

    kind = "exp_overflow"
    exact = True

    def find(self, attempt, probes):
        if not _not_finite_where_right_is(attempt):
            return None
        with np.errstate(over="raise"):
            outcome = attempt.rerun(attempt.args(), attempt.kwargs())
        if not isinstance(outcome.error, FloatingPointError) or "overflow" not in str(outcome.error):
            return None
        found = failing_line(outcome.error)
        calls = _exp_calls(found[2]) if found is not None else []
        if not calls:
            return None
        calls.sort(key=lambda call: not _too_large(call, found[0]))  # the exp that overflows, of two on the line
        line = found[1].strip()
        fdef = answer_function(attempt.student)
        same = [n for n in _exp_calls(fdef) if ast.unparse(n) == ast.unparse(calls[0])] if fdef is not None else []
        where = f"On line {same[0].lineno}, `{line}`" if same else f"`{line}`"
        return self.finding(attempt, "", (
            f"{where}: `{ast.unparse(calls[0])}` overflows. np.exp of a number above about 709 is inf in float64, "
            "and this case's values are that large; a softmax then divides inf by inf (nan), and a log of a sum "
            "of exps is inf. Subtract each row's largest value before the exp, m = z.max(axis=-1, keepdims=True), "
            "then np.exp(z - m): a softmax is unchanged by the shift, and a log-sum-exp gets it back as "
            "m + log(sum(exp(z - m)))."))


STABILITY_PROBES = [LogOfSoftmax(), ExpOverflow()]
