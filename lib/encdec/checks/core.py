"""The checking layer's Checker: tests that teach.

A checker compares a student's function (or class) with the reference on fixed and randomised
inputs, and on a mismatch says *what* is wrong: it matches the student's output against a
catalog of known-wrong implementations (encdec.mistakes) and names the misconception, or
else reports the shape mismatch or the first differing index, expected vs got.

When no catalog entry matches, the exercise's probes (encdec.checks.probes) look for the *kind* of
slip (a weight used transposed, two parameters swapped, the heads mixed up, a wrong scale, ...) and
name it in the student's terms; a finding is recorded like a catalog misconception.

This module holds Part (one graded part) and the Checker: it checks the parts, scores them (the partial-credit
rule), prints the report and publishes the record. Beside it: running.py (running the student's code),
comparing.py (comparing values), cases.py (Case, Attempt), matching.py (matching the catalog) and causes.py
(the Checker's diagnosis of failed parts, a mixin it inherits). The names the checkers and tests import from
here are re-exported: run_student, reference_allowed, compare, RTOL, RTOL32, Case, Attempt, diagnose,
diagnose_error, with_cause.

It is written for nbgrader test cells:
- the cell's last expression is the checker's return value, a float between 0 and the
  exercise's points, which nbgrader records as partial credit;
- every message goes to stdout. Student code runs with warnings captured and stdout/stderr
  redirected, because nbgrader gives zero to a test cell that writes anything to stderr;
- a checker never raises: a crash of student code becomes a message and lost points;
- next to the printed report, each check publishes a record (Checker.record(): the exercise, the
  points, each part and case with its outcome, the misconceptions by catalog key), which the
  grader reads instead of the text (encdec.checks.record).
"""

import math
from dataclasses import dataclass, field

from . import inputs
from . import mode
from . import probes as _probes
from . import recording
from .cases import Attempt, Case  # noqa: F401 (Case: the checkers and tests import it from here)
from .causes import Causes, with_cause
from .comparing import RTOL, RTOL32  # noqa: F401 (imported from here)
from .comparing import _copy, _other_structure, _safe, _same_numbers, _with_shape_reason, compare
from .display import Score
from .matching import diagnose, diagnose_error
from .rebinding import rebind  # noqa: F401 (the checkers import it from here)
from .record import SCHEMA, publish
from .running import _caller_namespace, run_student
from .running import reference_allowed  # noqa: F401 (the tests import it from here)

PASS, FAIL, HELD = "✓", "✗", "–"  # HELD: a robust part whose cases pass, not earned (Checker.earned)


# -- the checker ------------------------------------------------------------------------------------
@dataclass
class Part:
    """One graded part of a check (a case group): its cases' outcomes ("passed", "failed", "not run")
    in order. A `robust` part (large or tiny inputs, float32) counts only when every part of ordinary values
    passed; `values` is False for a part that checks a rule rather than values (inputs left unchanged)."""

    label: str
    weight: float
    passed: bool
    message: str = ""
    cases: list = field(default_factory=list)  # [(label, hidden, outcome)]
    robust: bool = False
    values: bool = True



class Checker(Causes):
    """Collects the parts of one exercise's check, prints the report, publishes the record and
    returns the score.

    `exercise` is the exercise's declaration (encdec.checks.exercises): its number, title and
    points; `points` overrides the declared points. The check stops early, with a status the
    record carries, when there is nothing to check: "no answer" (nothing of that name), "not
    implemented" (the stub still raises NotImplementedError), "delegated" (the answer calls the
    reference), "tampered" (code the checks rely on was replaced), "error" (an answer of the wrong
    kind, an object that cannot be built, a check that failed). Otherwise the status is "checked".
    """

    def __init__(self, exercise, points=None, hidden=False):
        self.exercise, self.title = exercise.number, exercise.title
        self.declaration = exercise
        self.name = getattr(exercise, "name", exercise.title)  # what catalog mistakes and probes call it
        self.points = exercise.points if points is None else points
        self.hidden = hidden
        self.parts = []  # Part
        self.notes = []
        self.stopped = None  # a message that ends the check early (no answer, delegation)
        self.status = "checked"
        self.diagnoses = []  # the diagnoses shown so far (each explained once)
        self.misconceptions = []  # the catalog mistakes named, each once
        self._runs = []  # (answer, an attempt holding a part's cases): what a repair is checked on again
        self._causes = []  # (part, its message without the cause, the cause, the answer) of failed parts
        self._own_runs = {}  # id(part) -> the attempt of that part's own cases
        self.weights = dict(getattr(exercise, "weights", None) or {})  # {part label: weight}, declared
        self.sizes = dict(getattr(exercise, "sizes", None) or {})  # the sizes its cases give (checks.sizes)

    # finding the answer
    def find(self, obj, name, kind="function"):
        """The student's answer: `obj` if given, else the name looked up in the notebook."""
        if obj is None:
            obj = _caller_namespace().get(name)
        if obj is None:
            self.stop(mode.not_defined(name, kind), "no answer")
            return None
        if kind == "class" and not isinstance(obj, type):
            self.stop(f"`{name}` should be a class, got {type(obj).__name__}", "error")
            return None
        if kind == "function" and not callable(obj):
            self.stop(f"`{name}` should be a function, got {type(obj).__name__}", "error")
            return None
        return obj

    def stop(self, message, status):
        """End the check early: `message` says why, `status` is what the record calls it."""
        self.stopped, self.status = message, status

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    # recording parts
    def part(self, label, ok, message="", weight=1.0, cases=(), failed=None, robust=False, values=True):
        """Record one part. `cases` are the cases the part ran through, in order; `failed` is the one
        it stopped at (the cases after it were not run); its weight is the exercise's declared weight
        for `label`, else `weight`. Returns ok."""
        weight = self.weights.get(label, weight)
        outcomes, after_failure = [], False
        for case in cases:
            if after_failure or (failed is None and not ok):
                outcome = "not run"
            elif case is failed:
                outcome, after_failure = "failed", True
            else:
                outcome = "passed"
            outcomes.append((case.label, bool(case.hidden), outcome))
        self.parts.append(Part(label, weight, bool(ok), message, outcomes, robust, values))
        return ok

    def _own_reference(self, called):
        """False only where the reference the answer called is plainly another function than the exercise's own
        (5.3's post-norm block calling the library's pre-norm DecoderBlock); True where they are one, or unknown."""
        reference = getattr(self.declaration, "reference", None)
        method = getattr(self.declaration, "method", None)
        if method and reference is not None:
            reference = getattr(reference, method, None)
        qualname = getattr(reference, "__qualname__", None)
        return not isinstance(qualname, str) or qualname.split(".")[-1] == called.split(".")[-1]

    def _explain_error(self, outcome):
        if outcome.delegated:
            own = self._own_reference(outcome.delegated)
            self.stop(f"your code calls the reference `{outcome.delegated}` from encdec, " + (
                "the very function this exercise asks you to write. Write it yourself with NumPy." if own else
                "which this exercise does not let you call: it computes another form of what you are asked to write, "
                "or a part of it. Write the steps yourself with NumPy."), "delegated")
            return self.stopped
        exc = outcome.error
        if isinstance(exc, NotImplementedError):
            self.stop("not implemented yet: replace `raise NotImplementedError()` with your code", "not implemented")
            return self.stopped
        return f"your code raised {outcome.error_text}"

    def _absorb(self, outcome, label):
        if outcome.warnings:
            shown = "; ".join(sorted(set(outcome.warnings))[:2])
            self.note(f"your code warned ({label}): {shown}. Warnings cost no points, "
                      "but they often point at overflow or division by zero.")
        if outcome.printed.strip():
            self.note("your code printed while being checked (not shown here).")

    def to_run(self, cases):
        """The cases this check runs: the visible ones, and the hidden ones when grading."""
        return [case for case in cases if self.hidden or not case.hidden]

    def check_cases(self, label, student, reference, cases, catalog=(), forbidden=(), weight=1.0,
                    names=None, postprocess=None, probes=None, robust=False, inputs_kept=True):
        """One part: every case must match the reference; on the first mismatch diagnose it.
        An answer that changes an input array or a model's parameters in place, or returns the very same array
        on two calls (a cache), fails the part (`inputs_kept=False`: an exercise whose own part checks that).
        `robust`: the part tests large, tiny or float32 inputs, and counts only when the others pass.

        `reference(*args, **kwargs)` computes the expected value; `catalog` is a list of Mistake;
        `probes` (encdec.checks.probes.Probes) look for the kind of slip when no catalog entry matches.
        `postprocess(value)` maps outputs before comparison (e.g. drop parts not being checked).
        Returns True when the part passes.
        """
        if self.stopped:
            return False
        every = list(cases)  # every case, hidden ones too, confirms a probe's finding
        models = [held for case in every for held in inputs.held_parameters(student, case.args, case.kwargs)]
        try:  # the models the cases give, put back as they were whatever the answer (or a probe's run of it) did
            return self._check_each(label, student, reference, every, catalog, forbidden, weight, names,
                                    postprocess, probes, robust, inputs_kept)
        finally:
            inputs.put_back(models)

    def _check_each(self, label, student, reference, every, catalog, forbidden, weight, names, postprocess, probes,
                    robust, inputs_kept):
        cases = self.to_run(every)
        if cases:
            self._runs.append((student, Attempt(self.name, cases[0], student=student, forbidden=tuple(forbidden),
                                                postprocess=postprocess, names=names, reference=reference,
                                                others=tuple(cases[1:]))))
        for case in cases:
            recording.saw(self.exercise, label, case, reference)
            args, kwargs = _copy(case.args), _copy(case.kwargs)
            held = inputs.held_parameters(student, args, kwargs)
            outcome = run_student(student, args, kwargs, forbidden)
            in_models = inputs.put_back(held)
            self._absorb(outcome, case.label)
            expected = reference(*_copy(case.args), **_copy(case.kwargs))
            if postprocess is not None:
                expected = postprocess(expected)
            attempt = Attempt(self.name, case, expected=expected, student=student, forbidden=tuple(forbidden),
                              postprocess=postprocess, names=names, reference=reference,
                              others=tuple(c for c in every if c is not case))
            if outcome.error is not None:
                if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                    self._explain_error(outcome)
                    return self.part(label, False, self.stopped, weight, cases, case, robust)
                attempt.error = outcome.error
                attempt.case_sizes = self._case_sizes(reference, case)
                mistake = diagnose_error(outcome.error, catalog, case) or self._find_slip(probes, attempt)
                msg = self._explain_error(outcome)
                return self._failed(label, _join(case, msg, ""), mistake, student, weight, cases, case, robust)
            got = outcome.value if postprocess is None else _safe(postprocess, outcome.value)
            attempt.got = got
            attempt.case_sizes = self._case_sizes(reference, case)
            problem = compare(got, expected, case.float32, names)
            if problem and "shape: expected" in problem:
                problem = _with_shape_reason(problem, got, expected, names, attempt.case_sizes)
            if problem:
                mistake = (_probes.setting_slip(attempt) or self._confirmed_earlier(
                               diagnose(got, catalog, case, case.float32, postprocess,
                                        others=[c for c in cases if c is not case], student=student,
                                        forbidden=forbidden, reference=reference), student, every)
                           or (None if _other_structure(got, expected) else self._find_slip(probes, attempt))
                           or (None if _other_structure(got, expected) or _same_numbers(got, expected)
                               else self._locate(attempt, reference)))
                return self._failed(label, _join(case, problem, ""), mistake, student, weight, cases, case, robust)
            changed = inputs_kept and inputs.changed_inputs(student, args, kwargs, case.args, case.kwargs)
            shared = not (changed or in_models) and inputs_kept and inputs.result_shared(
                student, case.args, case.kwargs, outcome.value, lambda a, k: run_student(student, a, k, forbidden))
            if changed or in_models or shared:
                said = (inputs.message(student, changed) if changed else inputs.parameter_message(student, in_models)
                        if in_models else inputs.shared_message())
                return self.part(label, False, _join(case, said, ""), weight, cases, case, robust)
            self._audit(probes, attempt, reference)
        return self.part(label, True, "", weight, cases, robust=robust)

    def check(self, label, condition_fn, message, weight=1.0):
        """A part decided by a predicate (run safely): condition_fn() -> bool."""
        if self.stopped:
            return False
        outcome = run_student(condition_fn)
        self._absorb(outcome, label)
        if outcome.error is not None:
            return self.part(label, False, self._explain_error(outcome), weight)
        return self.part(label, bool(outcome.value), "" if outcome.value else message, weight)

    # the result
    # the partial-credit rule, the one place it is written (AUTHORING.md, "How points are given"):
    # each part (case group) is worth the exercise's points times its weight over the sum of the weights
    # (weights are 1 unless the exercise's declaration says otherwise); a part is earned when every one of
    # its cases passes; a robust part (large, tiny or float32 inputs) and a rule part (the inputs left
    # unchanged) are earned only when every part of ordinary values is earned too, so that neither handling
    # extreme inputs nor keeping a rule is worth points on its own.
    def worth(self, part):
        """The points `part` is worth."""
        total = sum(p.weight for p in self.parts)
        return self.points * part.weight / total if total else 0.0

    def earned(self, part):
        """Whether `part` earns its worth."""
        ordinary = part.values and not part.robust
        return part.passed and (ordinary or all(p.passed for p in self.parts if p.values and not p.robust))

    def score(self):
        if self.stopped or not self.parts:
            return 0.0
        earned = sum(self.worth(p) for p in self.parts if self.earned(p))
        return math.floor(earned * 100 + 1e-9) / 100

    def summary(self):
        """'Exercise 1.2 · scaled_dot_product_attention: 2.25 / 4 points'."""
        return (f"Exercise {self.exercise} · {self.title}: {_fmt_points(self.score())} / "
                f"{_fmt_points(self.points)} points")

    def report(self):
        score = self.score()
        lines = [self.summary() + ("  (with the hidden grading cases)" if self.hidden else "")]
        if self.stopped:
            lines.append(f"  {FAIL} {self.stopped}")
        for p in self.parts:
            if not (self.stopped and not p.passed and p.message == self.stopped):
                lines.append(self._part_line(p))
        for note in self.notes:
            lines.append(f"  note: {note}")
        if score == self.points:
            lines.append("  All checks pass.")
        return "\n".join(lines)

    def _part_line(self, p):
        """'  ✓ [0.75 / 0.75] label' or '  ✗ [0 / 0.75] label: message'."""
        if self.stopped:
            worth = ""
        else:
            got = self.worth(p) if self.earned(p) else 0.0
            worth = f"[{_fmt_points(round(got, 2))} / {_fmt_points(round(self.worth(p), 2))}] "
        message, mark = p.message, PASS if p.passed else FAIL
        if p.passed and not self.earned(p):
            message, mark = ("it passes, but it counts only once the answer's values are right on the ordinary "
                             "inputs (the parts above)"), HELD
        return f"  {mark} {worth}{p.label}" + (f": {message}" if message else "")

    def record(self):
        """The check as data, for the grader (the contract: encdec.checks.record)."""
        return {
            "schema": SCHEMA, "exercise": self.exercise, "title": self.title, "points": self.points,
            "score": self.score(), "hidden": bool(self.hidden), "status": self.status,
            "message": self.stopped or None,
            "parts": [{"label": p.label, "weight": p.weight, "passed": p.passed, "robust": p.robust, "values": p.values,
                       "worth": round(self.worth(p), 4), "earned": bool(self.earned(p)) and not self.stopped,
                       "cases": [{"label": label, "hidden": hidden, "outcome": outcome}
                                 for label, hidden, outcome in p.cases],
                       "message": p.message or None} for p in self.parts],
            "misconceptions": [{"key": m.key, "exercise": m.exercise, "diagnosis": m.diagnosis}
                               for m in self.misconceptions],
            "notes": list(self.notes),
        }

    def result(self):
        """Print the report to stdout, publish the record, and return the score (the test cell's value)."""
        from . import guard
        self._confirm_repairs()
        changed = guard.violations()
        if changed:
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            self.stop(f"the code the tests rely on was modified ({shown} replaced), so this check "
                      "cannot be trusted: no points. Remove the code that changes it and run the notebook again.",
                      "tampered")
            self.parts, self.misconceptions = [], []
        print(self.report())
        publish(self.record(), f"Exercise {self.exercise} · {_fmt_points(self.score())} / "
                               f"{_fmt_points(self.points)} points")
        return Score(self.score(), self.points)


def _fmt_points(x):
    return f"{x:g}"


def _join(case, problem, diagnosis):
    return with_cause(f"[{case.label}] {problem}", diagnosis)

