"""Matching a failure against the catalog of known-wrong implementations (encdec.mistakes).

`diagnose` names the catalog mistake whose output equals the answer's on a case (confirmed on the part's
other cases where more than one does, or where a single match could be a coincidence of one case's
numbers); `diagnose_error` names the mistake that fails with exactly the answer's error, and only when its
failing line reads like the answer's.
"""

import traceback

import numpy as np

from .comparing import _copy, _discrete, _safe, compare
from .running import run_student


def diagnose(got, catalog, case, float32=False, postprocess=None, others=(), student=None, forbidden=(),
             reference=None):
    """The catalog mistake whose output on this case equals the student's, else None.

    When several do (banning only BOS and banning neither BOS nor pad decode alike while the model never
    favours the pad), the other cases of the part (`others`) are run with the answer (`student`) too, and
    the first mistake that agrees with the answer on all of them is named. With the `reference`, a single
    match is confirmed the same way: on another case where the answer is wrong too and the mistake gives
    another output than the answer's, the match was a coincidence of that case's numbers, and nothing is named."""
    matching = [m for m in catalog if _output_equals(m, got, case, float32, postprocess)]
    if reference is not None and student is not None:  # a match only through nan or inf is confirmed, or dropped
        matching = [m for m in matching if m.nonfinite or not _through_nonfinite(m, case, postprocess, reference)
                    or others and _confirmed(m, others, student, forbidden, postprocess, reference, strict=True)]
    if not matching or student is None or not others:
        return matching[0] if matching else None
    if len(matching) == 1:
        return matching[0] if reference is None or _confirmed(matching[0], others, student, forbidden, postprocess,
                                                              reference) else None
    for other in others:
        outcome = run_student(student, _copy(other.args), _copy(other.kwargs), forbidden)
        if outcome.error is not None:
            break
        mine = outcome.value if postprocess is None else _safe(postprocess, outcome.value)
        agreeing = [m for m in matching if _output_equals(m, mine, other, other.float32, postprocess)]
        if agreeing:
            matching = agreeing
        if len(matching) == 1:
            break
    return matching[0]


def _confirmed(mistake, others, student, forbidden, postprocess, reference, strict=False):
    """False when, on one of up to three other cases, the mistake's output is not the answer's (its error or its
    values): where the answer is wrong there, it is wrong in another way; where the answer's tokens are right
    there, the mistake's are not (a cached decoder's tokens that fit one case's model by coincidence). Where an
    answer of floats is right, a catalog entry broader than its slip may be wrong, so that case tells nothing,
    unless the match is `strict` (it held only through nan or inf: then the mistake must be right where the
    answer is); a case where the answer raises tells nothing."""
    for other in others[:3]:
        outcome = run_student(student, _copy(other.args), _copy(other.kwargs), forbidden)
        if outcome.error is not None:
            continue
        mine = outcome.value if postprocess is None else _safe(postprocess, outcome.value)
        if not strict and not _discrete(mine) and _right(mine, other, postprocess, reference):
            continue  # where the answer is right, a mistake broader than its slip may not be (a guard for N = 0)
        if not _output_equals(mistake, mine, other, other.float32, postprocess):
            return False  # wrong where the answer is wrong, or (tokens) where the answer is right
    return True


def _through_nonfinite(mistake, case, postprocess, reference):
    """True where the mistake's output on this case differs from the right one only in entries that are nan or
    inf (a guard for N = 0 left out, and any slip that also divides by that N): its match with the answer says
    only that both divide by zero there, not that they share the mistake's slip."""
    from .probes.base import _arrays, informative
    value, error = mistake.run(_copy(case.args), _copy(case.kwargs))
    try:
        right = reference(*_copy(case.args), **_copy(case.kwargs))
    except Exception:
        return False
    if error is not None:
        return False
    if postprocess is not None:
        value, right = _safe(postprocess, value), _safe(postprocess, right)
    mine, theirs = _arrays(value), _arrays(right)
    if not mine or len(mine) != len(theirs) or any(a.shape != b.shape for a, b in zip(mine, theirs)):
        return False  # another shape is a difference of its own
    with np.errstate(all="ignore"):
        return not informative(value, right) and any(np.any(~np.isfinite(a) & np.isfinite(b))
                                                      for a, b in zip(mine, theirs))


def _right(value, case, postprocess, reference):
    try:
        right = reference(*_copy(case.args), **_copy(case.kwargs))
    except Exception:
        return False
    return compare(value, right if postprocess is None else _safe(postprocess, right), case.float32) is None


def _output_equals(mistake, got, case, float32, postprocess):
    value, error = mistake.run(_copy(case.args), _copy(case.kwargs))
    if error is not None:
        return False
    if postprocess is not None:
        value = _safe(postprocess, value)
    return compare(got, value, float32) is None


def diagnose_error(exc, catalog, case):
    """The catalog mistake that fails on this case with exactly the student's error (type and message).

    Different slips can raise the same error (Q @ K and Q @ K.T on a batched K both stop matmul with
    the same sizes); then the one whose failing line reads most like the student's is named, and none
    when that does not single one out, so that the message never describes code the student did not write.
    A single mistake that fails at another step than the answer, with the same message (the max's keepdims
    left out fails at `x - m`, the sum's at `e / np.sum(e)`: no operator or call in common), is not named
    either."""
    same = []
    for m in catalog:
        _, error = m.run(_copy(case.args), _copy(case.kwargs))
        if error is not None and type(error) is type(exc) and str(error) == str(exc):
            same.append((m, error))
    mine = _tokens(_failing_line(exc))
    if len(same) == 1:  # one mistake fails the same way: named unless it fails at another step than the answer
        steps, their_steps = _steps(mine), _steps(_tokens(_failing_line(same[0][1])))
        return same[0][0] if not (steps and their_steps) or steps & their_steps else None
    if not same:
        return None
    if not mine:
        return None
    scored = sorted(((_likeness(mine, _tokens(_failing_line(error))), i) for i, (_, error) in enumerate(same)),
                    reverse=True)
    (best, i), (second, _) = scored[0], scored[1]
    return same[i][0] if best > second else None


def _steps(tokens):
    """The operations a line's tokens name: its operators and the methods or functions it calls (.sum, .exp)."""
    return {t for t in tokens if t in {"+", "-", "*", "/", "@"} or t.startswith(".")}


def _failing_line(exc):
    """The source of the last line that raised, outside NumPy and the standard library."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "site-packages" not in f.filename and "/lib/python" not in f.filename]
    return (frames[-1].line or "") if frames else ""


def _tokens(line):
    import re
    return set(re.findall(r"[A-Za-z_]\w*|\.\w+|[^\s\w]", line))


def _likeness(a, b):
    return len(a & b) / len(a | b) if a | b else 0.0
