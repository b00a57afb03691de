"""An array flattened by a NumPy function given no axis (`np.insert(targets, 0, bos_id)`, np.append,
np.delete): a batch comes back as one long row. Read from the answer's source, then confirmed on the failing
case: the answer's result has fewer axes than the right one. Exact (the source says it, the case shows it);
tried with the unread parameter (judging.py). The repair mends the same slip when giving axis=-1 is the
only change; this names it where another line must change with it (`shifted[:-1]`, which then cuts the batch).
"""

import ast

import numpy as np

from .base import Probe, _arrays
from .everywhere_axes import _flattening
from .repair import answer_function


class FlattenedWithoutAxis(Probe):
    """probe:flattened:<function>: np.insert, np.append or np.delete with no axis, on a batch."""

    kind = "flattened"
    exact = True

    def find(self, attempt, probes):
        if attempt.error is not None or attempt.student is None:
            return None
        got, right = _arrays(attempt.got), _arrays(attempt.expected)
        if not got or not right or got[0].ndim >= right[0].ndim:
            return None
        fdef = answer_function(attempt.student)
        calls = [n for n in ast.walk(fdef) if _flattening(n)] if fdef is not None else []
        if not calls:
            return None
        call = min(calls, key=lambda n: n.lineno)
        name = f"np.{call.func.attr}"
        return self.finding(attempt, call.func.attr, (
            f"`{ast.unparse(call)}` (line {call.lineno}) gives {name} no axis, so it flattens the array first: a batch "
            f"{tuple(np.shape(right[0]))[:-1]} of rows becomes one long row, and your result has shape "
            f"{tuple(got[0].shape)}. Give axis=-1, so it works along each sequence, and index the last axis "
            "from the end after it (`[..., :-1]`, not `[:-1]`, which cuts the first axis: the batch)."))


FLATTENING_PROBES = [FlattenedWithoutAxis()]
