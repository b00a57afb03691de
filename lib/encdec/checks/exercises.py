"""Each graded exercise declared once: its number, title, points, answer and checker.

A lesson's checker module (encdec.checks.lessonNN) declares every exercise it grades right above
the function that checks it, and lists the declarations at its end (EXERCISES, ORDERINGS, QUIZZES;
CONCEPTS, the concept checks before and after the lesson, encdec.checks.concepts):

    SOFTMAX = Exercise("1.1", "softmax", points=3, reference=attention.softmax)

    @SOFTMAX.checked_by
    def check_softmax(softmax=None, *, points=None, hidden=False):
        '''Stable softmax along `axis`.'''
        c = Checker(SOFTMAX, points, hidden)
        ...

Everything else is read from the declaration: the checker's default points and the number and
title in its report and record; the notebook's test cell (its nbgrader id and points, its comment,
the import, the hidden-tests block, the call) and the points in the exercise's heading, both
written by tools/nbbuild.py; and the tests that compare notebook, checker and release.
"""

import functools
import numbers
import re

NUMBER = re.compile(r"(\d+)\.(\d+)")


class Graded:
    """One graded exercise: `number` as students read it ("1.2"), the `title` reports give it, its
    `points`, and `name`, what the notebook's answer is called. The answer cell's nbgrader id is
    `name` unless `cell` says otherwise; the test cell's is "test_" + the answer cell's."""

    has_hidden_tests = True  # the test cell adds harder cases when grading
    may_be_free = False  # whether it may be worth 0 points (the concept checks, encdec.checks.concepts)

    def __init__(self, number, title, name, points, cell=None):
        if not (isinstance(number, str) and NUMBER.fullmatch(number)):
            raise ValueError(f"an exercise number is a string like '1.2', got {number!r}")
        if isinstance(points, bool) or not isinstance(points, numbers.Real) or \
                not (points > 0 or self.may_be_free and points == 0):
            raise ValueError(f"Exercise {number}: points must be a positive number, got {points!r}")
        if not (isinstance(name, str) and name.isidentifier()):
            raise ValueError(f"Exercise {number}: the answer's name must be a Python name, got {name!r}")
        self.number, self.title, self.name, self.points, self.cell = number, title, name, points, cell
        self.checker = None  # the check function, set by @checked_by

    def __repr__(self):
        return f"{type(self).__name__}({self.number!r}, {self.title!r}, points={self.points!r})"

    @property
    def lesson(self):
        return int(NUMBER.fullmatch(self.number).group(1))

    @property
    def answer_cell(self):
        return self.cell or self.name

    @property
    def grade_id(self):
        return f"test_{self.answer_cell}"

    def checked_by(self, check):
        """Decorator: `check` grades this exercise. A failure inside the check itself becomes a
        report and a record with status "error" and no points, never an exception in the cell."""
        if self.checker is not None:
            raise ValueError(f"Exercise {self.number} is already checked by {self.checker.__name__}")

        @functools.wraps(check)
        def checker(*args, **kwargs):
            try:
                return check(*args, **kwargs)
            except Exception as exc:
                from .core import Checker
                c = Checker(self, kwargs.get("points"), bool(kwargs.get("hidden", False)))
                c.stop(f"the check itself failed ({type(exc).__name__}: {exc}), so it gives no points. "
                       "Run the notebook again from the top, then this test; if it fails again, tell "
                       "your instructor.", "error")
                return c.result()

        checker.__doc__ = f"Exercise {self.number} ({points_text(self.points)}): {check.__doc__ or self.title}"
        self.checker = checker
        return checker


class Later:
    """A reference made on first use: Lesson 10's are torch functions, and torch loads on demand."""

    def __init__(self, make):
        self.make = make


class Exercise(Graded):
    """An exercise answered with code: a function `name`, or the method `method` of class `name`.

    `reference` is the implementation it is checked against (a `Later` when it is made on first
    use); `sizes` and `reads` declare the sizes its cases give and the values its answer must read
    (encdec.checks.sizes); `answer_from(impl)` turns a function (a catalog mistake or a correct variant) into an
    answer the checker accepts.
    """

    def __init__(self, number, name, points, reference=None, *, method=None, cell=None, sizes=None, reads=(),
                 weights=None):
        super().__init__(number, name if method is None else f"{name}.{method}", name, points, cell)
        self._reference, self.method = reference, method
        self.weights = dict(weights or {})  # {part label: weight} where a part is not worth 1 (core.Checker.worth)
        # the sizes its cases give (encdec.checks.sizes), and the arguments or configuration values the
        # answer must read rather than assume: both vary across the visible cases
        self.sizes, self.reads = sizes or {}, tuple(reads)

    @property
    def reference(self):
        return self._reference.make() if isinstance(self._reference, Later) else self._reference

    def answer_from(self, impl):
        if self.method is None:
            return impl
        return type(self.name, (self.reference,), {self.method: impl})


def points_text(points):
    """'3 points', '1 point', '2.5 points'."""
    return f"{points:g} point" + ("" if points == 1 else "s")


def _order(graded):
    return tuple(int(n) for n in NUMBER.fullmatch(graded.number).groups())


def declared(module):
    """The exercises a lesson's checker module grades (its EXERCISES, ORDERINGS, QUIZZES and CONCEPTS), in
    the order of their numbers. A ValueError names the module and the exercise when a declaration
    is incomplete: no checker, a number of another lesson or used twice, or not listed at all."""
    where = module.__name__
    lesson = re.search(r"lesson(\d+)$", where)
    listed = [*module.EXERCISES, *getattr(module, "ORDERINGS", []), *getattr(module, "QUIZZES", []),
              *getattr(module, "CONCEPTS", [])]
    for graded in listed:
        if lesson and graded.lesson != int(lesson.group(1)):
            raise ValueError(f"{where}: Exercise {graded.number} is numbered for lesson {graded.lesson}")
        if graded.checker is None:
            raise ValueError(f"{where}: Exercise {graded.number} ({graded.title}) has no checker: decorate "
                             "its check function with @<declaration>.checked_by")
        if getattr(module, graded.checker.__name__, None) is not graded.checker:
            raise ValueError(f"{where}: Exercise {graded.number}'s checker {graded.checker.__name__} is not "
                             f"importable under that name from {where}")
    numbers_seen = [g.number for g in listed]
    for number in numbers_seen:
        if numbers_seen.count(number) > 1:
            raise ValueError(f"{where}: Exercise {number} is declared {numbers_seen.count(number)} times")
    for value in vars(module).values():
        if isinstance(value, Graded) and value not in listed:
            raise ValueError(f"{where}: Exercise {value.number} ({value.title}) is declared but listed in "
                             "none of EXERCISES, ORDERINGS, QUIZZES, CONCEPTS")
    return sorted(listed, key=_order)


def yours_or_ours(exercises, number, answer, passed=None):
    """The student's answer to exercise `number` of `exercises` when its visible test passes, else the
    course's reference (with a note), so that a demonstration runs before the exercise is done. Grades
    nothing. `passed`: the answer object whose check just earned every part, which needs no new check."""
    import contextlib
    import io

    from .record import collected
    exercise = next(e for e in exercises if e.number == number)
    if answer is not None:
        if passed is answer:
            print(f"(using your {exercise.name}: its test passes)")
            return answer
        with contextlib.redirect_stdout(io.StringIO()), collected():  # nothing shown, nothing recorded
            score = exercise.checker(answer, hidden=False)
        if score == exercise.points:
            print(f"(using your {exercise.name}: its test passes)")
            return answer
    print(f"(your {exercise.name} does not pass its test yet, so the course's own stands in for it here)")
    return exercise.reference
