"""The likely cause of a failed part: how a Checker finds it, confirms it and words it.

`Causes` is a mixin of Checker (encdec.checks.core): it names a failed part's cause (a catalog match
confirmed against the answer's other parts, a probe's finding, the repair's fix, the tracer's location)
within the check's time budgets, confirms each fix on every part of the same answer once all have run, and
words the cause once per diagnosis ("the same as above." after that), recording it as a misconception.
It reads the Checker's state (parts, _runs, _causes, _own_runs, diagnoses, misconceptions, sizes) and
records parts with Checker.part.
"""

import dataclasses

from . import probes as _probes
from .clock import Stopwatch
from .matching import _confirmed


def with_cause(text, diagnosis):
    """A failure message, followed by its likely cause when one was found."""
    return text + (f"\n      Likely cause: {diagnosis}" if diagnosis else "")



class Causes:
    """Checker's diagnosis of failed parts (a mixin: encdec.checks.core.Checker inherits it)."""

    def _confirmed_earlier(self, mistake, student, cases):
        """The catalog's match, unless an earlier part that ran the same answer (the same function) shows it
        to be a coincidence of this part's case: there, on a case the answer gets wrong, the mistake gives
        another output (each part read through its own postprocess: np.triu(k=2) fits the 2 x 2 mask of a
        loop that skips row 0, and stopping at the first EOS fits a beam ranked by raw totals on one case)."""
        if mistake is None:
            return None
        for answer, earlier in self._runs[:-1]:
            if answer is student and earlier.reference is not None and not _confirmed(
                    mistake, [c for c in (earlier.case, *earlier.others) if all(c is not own for own in cases)],
                    student, earlier.forbidden, earlier.postprocess, earlier.reference):
                return None
        return mistake

    def _failed(self, label, text, mistake, student, weight, cases, case, robust):
        """A failed part, its message followed by its likely cause; the cause kept to be checked again."""
        ok = self.part(label, False, with_cause(text, self.likely_cause(mistake)), weight, cases, case, robust)
        self._causes.append((self.parts[-1], text, mistake, student))
        self._own_runs[id(self.parts[-1])] = self._runs[-1][1] if self._runs else None
        return ok

    def _confirm_repairs(self):
        """Once every part has run: each fix the repair named for one part is run again on the cases of every
        part that checked the same answer (the same code, bound to that part's own object where each part
        builds one). A fix that breaks one of them mended only its own part's cases
        (dropping `+ mask` where that part's masks were all None); it is withdrawn, and the part's cause is
        the fixes that remain, or none. Each part's message is then written again with its cause."""
        from .probes.repair import finding
        changed, seen = {}, set()
        for _, _, mistake, student in self._causes:
            fixes = getattr(mistake, "fixes", ())
            if not fixes or id(mistake) in seen:
                continue  # a later part that took an earlier part's fix (_earlier_fix): confirmed with that part
            seen.add(id(mistake))
            kept = [(edit, copy_) for edit, copy_ in fixes if self._right_on_every_part(copy_, student)]
            if len(kept) < len(fixes):
                changed[id(mistake)] = finding(mistake.exercise, mistake.source, kept, None) if kept else None
        for part, _, mistake, student in self._causes:
            if not self._fits_later_parts(part, mistake, student):
                changed[id(mistake)] = self._other_cause(part, mistake, student)
        if not changed:
            return
        # every cause is written again, in order: a part that said "the same as above" of a withdrawn
        # finding says the finding that stands, or its own
        caused = [m for _, _, m, _ in self._causes if m is not None]
        self.diagnoses = [d for d in self.diagnoses if not any(d == m.diagnosis for m in caused)]
        self.misconceptions = [m for m in self.misconceptions if all(m is not c for c in caused)]
        again = {}
        for part, text, mistake, student in self._causes:
            cause = changed.get(id(mistake), mistake)
            if cause is None and getattr(mistake, "fixes", ()):
                if id(mistake) not in again:  # every fix withdrawn: looked for once more, on every part's cases
                    again[id(mistake)] = self._found_again(part, student)
                cause = again[id(mistake)]
            part.message = with_cause(text, self.likely_cause(cause))

    def _found_again(self, part, student):
        """For a part whose every fix was withdrawn: the repair run again, a copy now taken only where it is
        right on every part of the same answer (a shift dropped mends the small logits, and breaks the large:
        the shift taken into the sum mends both), else the tracer's finding on the case that failed there."""
        own = self._own_runs.get(id(part))
        if own is None or own.error is not None or own.reference is None:
            return None
        from .probes.repair import repair_by
        left = self.REPAIR_SECONDS - getattr(self, "_repaired", 0.0)
        if left > 0.05:
            watch = Stopwatch()
            try:
                found = repair_by(own.student, lambda copy_: self._right_on_every_part(copy_, student), own.exercise,
                                  seconds=left, cases=sum(1 + len(a.others) for answer, a in self._runs
                                                          if answer is student))
            finally:
                self._repaired = getattr(self, "_repaired", 0.0) + watch.spent()
            if found is not None:
                return found
        return self._locate(own, own.reference)

    def _right_on_every_part(self, copy_, student):
        """True when a repair's copy of `student` is right on the cases of every part that checked the same code,
        bound to each part's own object where each part builds one (a part's other answers are not asked)."""
        from .probes.repair import rebound, still_right
        return all(still_right(a, other) for answer, a in self._runs
                   for other in [copy_ if answer is student else rebound(copy_, student, answer)] if other is not None)

    def _fits_later_parts(self, part, mistake, student):
        """False for a catalog mistake that a later part of the same answer shows to be a coincidence of this
        part's case: there the answer is wrong, and the mistake gives another output (each part read through
        its own postprocess: stopping at the first EOS gives a beam's best hypothesis, but not all of them).
        Earlier parts were asked when the part ran (_confirmed_earlier)."""
        if mistake is None or getattr(mistake, "fixes", ()) or not callable(getattr(mistake, "run", None)):
            return True
        own = self._own_runs.get(id(part))
        later = [a for answer, a in self._runs[[a for _, a in self._runs].index(own) + 1:] if answer is student] \
            if own is not None and any(a is own for _, a in self._runs) else []
        return all(a.reference is None or _confirmed(mistake, [a.case, *a.others], student, a.forbidden,
                                                      a.postprocess, a.reference) for a in later)

    def _other_cause(self, part, mistake, student):
        """Another part's catalog mistake for the same answer that fits this part's cases too, else None."""
        own = self._own_runs.get(id(part))
        for _, _, other, answer in self._causes:
            if (own is not None and answer is student and other is not None and other is not mistake
                    and not getattr(other, "fixes", ()) and callable(getattr(other, "run", None))
                    and own.reference is not None and _confirmed(other, [own.case, *own.others], student,
                                                                 own.forbidden, own.postprocess, own.reference)):
                return other
        return None

    TRACE_SECONDS = 1.0  # for the tracer, over the whole check: a failing exercise is diagnosed within ~2 s
    REPAIR_SECONDS = 1.0  # for the probes and the repair, over the whole check

    def _find_slip(self, probes, attempt):
        """The probes' finding (probes.find_slip), the repair given what is left of the check's time for it; first,
        a fix the repair found for an earlier part of the same answer, where it mends this part's cases too."""
        earlier = self._earlier_fix(attempt)
        if earlier is not None:
            return earlier
        attempt.repair_seconds = max(0.0, self.REPAIR_SECONDS - getattr(self, "_repaired", 0.0))
        watch = Stopwatch()
        try:
            return _probes.find_slip(probes, attempt)
        finally:
            self._repaired = getattr(self, "_repaired", 0.0) + watch.spent()

    def _earlier_fix(self, attempt):
        """The finding of an earlier part whose fix (the repair's copy of the answer) is right on this part's cases
        too, else None: one slip is named once, and a later part does not guess another cause for it (a fitted
        factor where the fix is a parenthesis)."""
        from .probes.repair import rebound, still_right
        for _, _, mistake, student in self._causes:
            for _, copy_ in getattr(mistake, "fixes", ()):
                candidate = copy_ if student is attempt.student else rebound(copy_, student, attempt.student)
                if candidate is not None and still_right(attempt, candidate, seconds=0.3):
                    return mistake
        return None

    def _locate(self, attempt, reference):
        """The tracer's finding (probes.locate), within what is left of the check's time for it."""
        left = self.TRACE_SECONDS - getattr(self, "_traced", 0.0)
        if left < 0.1:
            return None
        watch = Stopwatch()
        try:
            return _probes.locate(attempt, reference, seconds=left)
        finally:
            self._traced = getattr(self, "_traced", 0.0) + watch.spent()

    def _case_sizes(self, reference, case):
        """{size name: value} the case gives (the exercise's `sizes` declaration), {} when it declares none."""
        if not self.sizes:
            return {}
        from .sizes import case_sizes
        try:
            return case_sizes(self.sizes, reference, case)
        except Exception:
            return {}

    def _audit(self, probes, attempt, reference):
        """Tests only (inside probes.audit()): run the probes on a passing case, on the answer's output
        and on the reference's, and collect what they find (a correct answer must give nothing)."""
        found = _probes.auditing()
        if found is None:
            return
        of_reference = dataclasses.replace(attempt, got=attempt.expected, student=reference, forbidden=())
        for who, a in (("answer", attempt), ("reference", of_reference)):
            finding = _probes.find_slip(probes, a)
            if finding is not None:
                found.append((self.exercise, a.case.label, who, finding))
        problem = _probes.model_problem(probes, attempt)
        if problem is not None:
            found.append((self.exercise, attempt.case.label, "model", problem))

    def likely_cause(self, mistake):
        """What to print as the likely cause of a failure: the mistake's diagnosis the first time it
        is seen, "the same as above." after that, "" when neither the catalog nor a probe found one.
        A probe's finding may add a detail about this case (where it saw the slip) before it."""
        if mistake is None:
            return ""
        self.misconception(mistake)
        detail = getattr(mistake, "detail", "")
        if mistake.diagnosis in self.diagnoses:
            text = "the same as above."
        else:
            self.diagnoses.append(mistake.diagnosis)
            text = mistake.diagnosis
        return f"{detail} {text[0].upper()}{text[1:]}" if detail else text

    def misconception(self, mistake):
        """Record that the answer shows `mistake` (a catalog Mistake or a probe's Finding: anything with
        exercise, key and diagnosis), once per key; returns its diagnosis."""
        if all(m.key != mistake.key or m.exercise != mistake.exercise for m in self.misconceptions):
            self.misconceptions.append(mistake)
        return mistake.diagnosis
