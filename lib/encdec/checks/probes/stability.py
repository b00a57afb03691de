"""A log taken of a softmax's output (`np.log(softmax(z))`, or `p = softmax(z)` then `np.log(p)`): where a
probability underflows to 0 (a logit far below its row's largest), the log is -inf, and the loss inf or nan.

Read from the answer's source, then confirmed on the failing case: the answer's result holds inf or nan where
the right one is finite. Exact (the source says it and the case shows it), so it is tried with the unread
parameter, before the exercise's property probes, which would say only that the result is not finite.
"""

import ast

import numpy as np

from .base import Probe, _arrays
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
        if attempt.error is not None or attempt.student is None:
            return None
        got, right = _arrays(attempt.got), _arrays(attempt.expected)
        if not got or all(np.all(np.isfinite(a)) for a in got) or not all(np.all(np.isfinite(a)) for a in right):
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


STABILITY_PROBES = [LogOfSoftmax()]
