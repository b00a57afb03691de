"""The concept checks: the questions on a lesson's ideas asked before it (Exercise N.0) and, in other
words, after it (the lesson's last exercise), answered with data and worth 0 points unless the
course's configuration says otherwise (encdec.concepts.config).

A lesson declares its two checks at the end of its checker module, after its other declarations, so
that the check after the lesson takes the number after the last exercise:

    CONCEPTS = concept_checks(1, after=[*EXERCISES, *ORDERINGS])
    check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)

The questions are the lesson's items (encdec.concepts.lessonNN); tools/nbbuild.py writes the cells
(`markdown()`, `answer_source()`, the test cell) without any source in authoring/. The answer is a
dict from question number to answer, a letter for a choice and a number for a number:

    concepts_before = {1: "b", 2: 16, 3: ...}

Before the lesson the answers are recorded and never marked on screen: the check says how many are
answered, and its points (when the configuration gives it any) reward answering. After the lesson
each right answer earns its share, and once every question is answered the check shows every answer
with its explanation. Besides the parts, the record carries `concepts`: the phase, the lesson and,
per question, its concept id and whether it was answered and answered right: the grader computes the
learning gain from it (autograder/gains.py), never from the printed text.
"""

import textwrap

from ..concepts import concepts
from ..concepts.config import points as configured_points
from . import mode
from .core import FAIL, PASS, Checker
from .exercises import NUMBER
from .quiz import Quiz, unanswered
from .running import _caller_namespace

TITLES = {"before": "concepts before the lesson", "after": "concepts after the lesson"}
SECTIONS = {"before": "Before you start: what do you already know?", "after": "After the lesson: check yourself"}
WORDS = {3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven"}
WIDTH = 100


class ConceptCheck(Quiz):
    """The check before (`phase` "before") or after ("after") a lesson: its items, in order."""

    may_be_free = True  # worth 0 points by default
    what_to_write = 'your answer: a letter in quotes for a choice ("b"), a number for a number'

    def __init__(self, number, phase, items, *, points):
        super().__init__(number, TITLES[phase], f"concepts_{phase}", points)
        self.phase, self.items = phase, list(items)
        self.partner = None  # the other check of the lesson

    @property
    def answer(self):
        return {n: item.answer for n, item in enumerate(self.items, start=1)}

    # -- the notebook's cells (tools/nbbuild.py) ------------------------------------------------------------
    def markdown(self):
        points = f"{self.points:g} point" + ("" if self.points == 1 else "s")
        count = WORDS.get(len(self.items), str(len(self.items)))
        if self.phase == "before":
            worth = ("This check counts for nothing (0 points): it shows where you start." if not self.points else
                     f"It is worth {points}, earned by answering every question, right or wrong: it shows "
                     "where you start.")
            intro = (f"{count} questions on the ideas this lesson teaches, before it teaches them. Answer with what "
                     f"you know now, and guess when you do not know. {worth} Your answers are recorded, and they "
                     f"come back after the lesson: Exercise {self.partner.number} asks about the same ideas in "
                     "other words, and then shows every answer with its explanation.")
        else:
            worth = ("This check counts for nothing (0 points)." if not self.points else
                     f"Each right answer earns its share of the {points}.")
            intro = (f"The ideas of Exercise {self.partner.number} again, in other words, with other numbers or in "
                     f"other situations. {worth} Once every question is answered, the test cell shows the right "
                     "answers with their explanations. Your scores before and after the lesson give your "
                     "learning gain (`make grade` shows it).")
        lines = [f"## {SECTIONS[self.phase]}", "", f"### Exercise {self.number} — {self.title} ({points})", "",
                 intro]
        for n, item in enumerate(self.items, start=1):
            lines += ["", f"**{n}.** {item.prompt}"]
            if item.options:
                lines += [""] + [f"- ({letter}) {text}" for letter, text in zip(item.letters, item.options)]
            else:
                close = f" ({item.tolerance:g} either way counts as right)" if item.tolerance else ""
                lines[-1] += f" *Answer with a number{close}.*"
        lines += ["", f"Write your answers in the cell below, by question number: a letter in quotes for a choice "
                      f"(`\"b\"`), a number for a number (`6`, `0.25`). Then run the test cell under it."]
        return "\n".join(lines)

    def answer_source(self):
        """The answer cell: the variable with `...` for every answer, above the solution."""
        blanks = ", ".join(f"{n}: ..." for n in range(1, len(self.items) + 1))
        right = ", ".join(f"{n}: {value!r}" if isinstance(value, str) else f"{n}: {value:g}"
                          for n, value in self.answer.items())
        return "\n".join([f"{self.name} = {{{blanks}}}  # your answers: a letter in quotes, or a number",
                          "### BEGIN SOLUTION", f"{self.name} = {{{right}}}", "### END SOLUTION"])

    # -- checking ----------------------------------------------------------------------------------------------
    def check(self, answer=None, points=None):
        """Record the answers; after the lesson, mark them and explain them (once all are answered)."""
        c = ConceptChecker(self, points)
        if answer is None:
            answer = _caller_namespace().get(self.name)
            c.before = _caller_namespace().get(self.partner.name) if self.phase == "after" else None
        if answer is None:
            c.stop(mode.not_defined(self.name, "answer"), "no answer")
            return c.result()
        if unanswered(answer):
            c.stop(f"not answered yet: replace each `...` in `{self.name}` with {self.what_to_write}, and delete "
                   "the `raise NotImplementedError()` line under it.", "not implemented")
            return c.result()
        if not isinstance(answer, dict):
            c.stop(f"`{self.name}` should be a dict from question number to answer, like "
                   f"{{1: \"b\", 2: 6, ...}}; got {type(answer).__name__}", "error")
            return c.result()
        outside = [repr(key) for key in answer if key not in range(1, len(self.items) + 1) or isinstance(key, bool)]
        if outside:
            c.stop(f"`{self.name}` has keys that are not question numbers 1..{len(self.items)}: "
                   f"{', '.join(outside)}", "error")
            return c.result()
        c.results = self.mark(answer)
        if self.phase == "before":
            for n, _, value, _, problem in c.results:
                c.part(f"question {n} answered", value is not None, problem)
        elif any(value is None for _, _, value, _, _ in c.results):
            missing = [str(n) for n, _, value, _, _ in c.results if value is None]
            c.part("every question answered", False,
                   f"question{'s' if len(missing) > 1 else ''} {', '.join(missing)} not answered yet: a guess is "
                   "fine. The answers and their explanations are shown once every question is answered.")
        else:
            for n, item, value, right, _ in c.results:
                c.part(f"question {n}: {item.concept}", right,
                       "" if right else f"you answered {_shown(item, value)}; the answer is {item.shown_answer()}")
        return c.result()

    def mark(self, answer):
        """[(number, item, value or None, right, problem)] for a dict of answers."""
        out = []
        for n, item in enumerate(self.items, start=1):
            given = answer.get(n, ...)
            if given is Ellipsis:
                out.append((n, item, None, False, "not answered yet"))
                continue
            value, problem = item.read(given)
            out.append((n, item, value, value is not None and item.is_right(value), problem))
        return out


def _shown(item, value):
    return f"({value})" if item.options else f"{value:g}"


class ConceptChecker(Checker):
    """A Checker whose report never marks the answers before the lesson, and whose record says, per
    question, the concept and whether it was answered and answered right."""

    def __init__(self, check, points=None):
        super().__init__(check, points)
        self.check_, self.results, self.before = check, [], None

    def record(self):
        data = super().record()
        trusted = self.status not in ("tampered", "error")
        got = {n: (value is not None, right) for n, _, value, right, _ in self.results} if trusted else {}
        data["concepts"] = {
            "phase": self.check_.phase, "lesson": self.check_.lesson,
            "items": [{"number": n, "concept": item.concept, "answered": got.get(n, (False, False))[0],
                       "correct": all(got.get(n, (False, False)))}
                      for n, item in enumerate(self.check_.items, start=1)]}
        return data

    def report(self):
        lines = [self.summary()]
        if self.stopped:
            return "\n".join(lines + [f"  {FAIL} {self.stopped}"])
        N = len(self.results)
        answered = [n for n, _, value, _, _ in self.results if value is not None]
        if self.check_.phase == "before":
            lines.append(f"  {len(answered)} of {N} questions answered.")
            lines += [f"  {FAIL} question {n}: {problem}" for n, _, value, _, problem in self.results if value is None]
            lines += _wrap("Your answers are recorded. The right answers, with their explanations, come after the "
                           f"lesson, in Exercise {self.check_.partner.number}, which asks about the same ideas again.")
            return "\n".join(lines)
        if len(answered) < N:
            lines.append(f"  {len(answered)} of {N} questions answered.")
            lines += [f"  {FAIL} question {n}: {problem}" for n, _, value, _, problem in self.results if value is None]
            lines += _wrap("The answers and their explanations are shown once every question is answered (a guess "
                           "is fine).")
            return "\n".join(lines)
        right = sum(ok for _, _, _, ok, _ in self.results)
        lines.append(f"  {right} of {N} right." + self._before_text())
        for n, item, value, ok, _ in self.results:
            head = (f"{n}. {item.shown_answer()} is right." if ok else
                    f"{n}. you answered {_shown(item, value)}; the answer is {item.shown_answer()}.")
            lines += _wrap(f"{head} {item.explanation}", f"  {PASS if ok else FAIL} ", "      ")
        return "\n".join(lines)

    def _before_text(self):
        """' Before the lesson: 2 of 5.' when the notebook holds answers to the check before it."""
        before = self.before
        if not isinstance(before, dict) or unanswered(before):
            return ""
        marks = self.check_.partner.mark({k: v for k, v in before.items() if k in range(1, 100)})
        if not any(value is not None for _, _, value, _, _ in marks):
            return ""
        return f" Before the lesson (Exercise {self.check_.partner.number}): {sum(m[3] for m in marks)} of {len(marks)}."


def _wrap(text, first="  ", rest="  "):
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def concept_checks(lesson, after, config=None):
    """The two concept checks of lesson `lesson`: Exercise N.0 before it, and after it the exercise
    numbered after the last of `after` (the lesson's other declarations). `config`: another points file."""
    items = concepts(lesson)
    last = max((int(NUMBER.fullmatch(g.number).group(2)) for g in after), default=0)
    before = ConceptCheck(f"{lesson}.0", "before", [c.pre for c in items],
                          points=configured_points(lesson, "before", config))
    later = ConceptCheck(f"{lesson}.{last + 1}", "after", [c.post for c in items],
                         points=configured_points(lesson, "after", config))
    before.partner, later.partner = later, before

    @before.checked_by
    def check_concepts_before(concepts_before=None, *, points=None):
        """Recorded, never marked on screen: the answers come back after the lesson."""
        return before.check(concepts_before, points)

    @later.checked_by
    def check_concepts_after(concepts_after=None, *, points=None):
        """Each right answer earns its share; every answer is explained once all are answered."""
        return later.check(concepts_after, points)

    for check in (before, later):  # the test cells import the checkers from the lesson's module
        check.checker.__module__ = f"{__name__.rpartition('.')[0]}.lesson{int(lesson):02d}"
    return [before, later]
