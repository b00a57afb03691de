"""A second slip behind a missing ban (9.1). The checks' models favour BOS and the pad token where they are
not banned, so an answer that forgets the ban is named for it on every case, and any other slip it makes
stays hidden behind that one. When a ban is named, the answer runs again on the same cases with models that
ban BOS and the pad token themselves (their logits far below every other); where it still differs, that
second slip is diagnosed like the first (catalog, probes, repair) and said in a note. Notes cost no points.
"""

import copy

from ..cases import Attempt, Case
from ..comparing import compare
from ..matching import diagnose
from ..probes import explain_shape, find_slip

FAR_BELOW = -1e9
REPAIR_SECONDS = 1.0  # for this second look only, so only after a ban was named


def bans_named(checker):
    """True when the check named a missing ban of BOS or the pad token (or BOS chosen or returned)."""
    return any("banned" in m.key or m.key.endswith(("special_chosen", "bos_first")) for m in checker.misconceptions)


def banning(model, bos_id):
    """A copy of `model` whose decode (and call) give BOS and the pad token logits far below every other."""
    base = type(model)
    banned = [bos_id, model.config.pad_id]

    def lowered(out):
        logits = out[0] if isinstance(out, tuple) else out
        logits = logits.copy()
        logits[..., banned] = FAR_BELOW
        return (logits, *out[1:]) if isinstance(out, tuple) else logits

    def decode(self, *args, **kwargs):
        return lowered(base.decode(self, *args, **kwargs))

    def call(self, *args, **kwargs):
        return lowered(base.__call__(self, *args, **kwargs))

    twin = copy.copy(model)
    twin.__class__ = type(base.__name__, (base,), {"decode": decode, "__call__": call})
    return twin


def behind_the_ban(checker, fn, parts, reference, catalog, probes, forbidden):
    """Note the first slip the answer still makes on the parts' cases with models that ban for it, if any."""
    if fn is None or not bans_named(checker):
        return
    cases = [Case(case.label, (banning(case.args[0], case.args[2]), *case.args[1:]), dict(case.kwargs),
                  hidden=case.hidden) for part in parts for case in checker.to_run(part)]
    for case in cases:  # a fix must mend every case of every part: one part alone may not tell two fixes apart
        attempt = Attempt(checker.name, case, student=fn, forbidden=tuple(forbidden), reference=reference,
                          others=tuple(c for c in cases if c is not case), repair_seconds=REPAIR_SECONDS)
        outcome = attempt.rerun(attempt.args(), attempt.kwargs())
        attempt.got, attempt.error = outcome.value, outcome.error
        attempt.expected = reference(*attempt.args(), **attempt.kwargs())
        if outcome.error is None and attempt.is_expected(outcome.value):
            continue
        found = (diagnose(outcome.value, catalog, case, others=attempt.others, student=fn, forbidden=forbidden,
                          reference=reference) if outcome.error is None else None) or _second(probes, attempt)
        if found is not None and not bans_named_by(found):
            checker.note(f"behind that, a second slip: with BOS and the pad token banned by the model itself, "
                         f"your code still differs ({case.label}): {found.diagnosis}")
        else:
            problem = compare(outcome.value, attempt.expected) if outcome.error is None else \
                f"it raised {type(outcome.error).__name__}: {outcome.error}"
            shapes = getattr(outcome.value, "shape", None), getattr(attempt.expected, "shape", None)
            if "shape: expected" in problem and None not in shapes and explain_shape(*shapes):
                problem += f": {explain_shape(*shapes)}"
            checker.note(f"with BOS and the pad token banned by the model itself, your code still differs "
                         f"({case.label}): {problem}. That is a second slip, after the ban.")
        return


def _second(probes, attempt):
    """The declared probes' first finding that is not about the ban (which the model now does: a pad where an
    EOS was overwritten reads as a pad chosen), else the repair's and the error probes' (find_slip)."""
    for probe in probes.probes:
        found = probe.safe_find(attempt, probes)
        if found is not None and not bans_named_by(found):
            return found
    return find_slip(None, attempt)


def bans_named_by(finding):
    return "banned" in finding.key or finding.key.endswith(("special_chosen", "bos_first"))
