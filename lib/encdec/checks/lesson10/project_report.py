"""Exercise 10.8, the project's report (0 points): the check (ProjectReport, one part per item of
review_project), and the course's example run for the notebook's demonstrations."""

import json
from pathlib import Path

import numpy as np

from ..core import Checker
from ..quiz import Quiz, unanswered
from .project_review import EXAMPLE_RUN, review_project


class _ZeroPointChecker(Checker):
    """A Checker for a check worth nothing: its parts are shown without their (zero) worth."""

    def _part_line(self, p):
        line = super()._part_line(p)
        return line.replace("[0 / 0] ", "") if self.points == 0 else line

    def report(self):
        """The report; at 0 points "All checks pass." only when they do (0 of 0 points says nothing)."""
        text = super().report()
        if self.points == 0 and (self.stopped or not all(p.passed for p in self.parts)):
            text = text.replace("\n  All checks pass.", "")
        return text


class ProjectReport(Quiz):
    """The project's report (a dict), checked for consistency with the checkpoint it names. Worth 0 points
    by default (the grader never has the checkpoint); one part per item of review_project."""

    may_be_free = True
    what_to_write = "your run's figures, written as literals (numbers and strings)"

    def marks(self, answer):
        return review_project(answer)

    def check(self, answer=None, points=None):
        import builtins
        from ..running import _caller_namespace
        if answer is None:
            answer = _caller_namespace().get(self.name)
        checker = _ZeroPointChecker(self, points)
        if answer is None:
            from .. import mode
            checker.stop(mode.not_defined(self.name, "answer"), "no answer")
            return checker.result()
        if unanswered(answer):
            checker.stop(f"not answered yet: replace each `...` in `{self.name}` with {self.what_to_write}, and "
                         "delete the `raise NotImplementedError()` line under it. Until you have trained, "
                         "show_review(example_report()) shows what this check says of the course's example run.",
                         "not implemented")
            return checker.result()
        if isinstance(answer, dict):
            answer = {key: value for key, value in answer.items() if value is not builtins.Ellipsis}
        for label, ok, message in self.marks(answer):
            checker.part(label, ok, message)
        if isinstance(answer, dict) and _is_example(answer.get("checkpoint")):
            checker.note("this checkpoint is the course's example run (encdec/data/project_example.npz), not one "
                         "of yours: train your own run (§10.16) and report it")
        return checker.result()


def _is_example(path):
    try:
        return isinstance(path, str) and Path(path).expanduser().resolve() == EXAMPLE_RUN.resolve()
    except OSError:
        return False


PROJECT_REPORT = ProjectReport("10.8", "the project's report", "project_report", points=0)


@PROJECT_REPORT.checked_by
def check_project_report(project_report=None, *, points=None):
    """Reads the report, loads its checkpoint, decodes 100 test examples again; 0 points."""
    return PROJECT_REPORT.check(project_report, points)


def example_report():
    """The report of the course's example run (lib/encdec/data/project_example.npz), as the project asks for it."""
    with np.load(EXAMPLE_RUN, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
    return {**meta["summary"]["report"], "checkpoint": str(EXAMPLE_RUN)}


def show_review(report):
    """The check's items for a report, printed; records and grades nothing (for a demonstration)."""
    for label, ok, message in review_project(report):
        print(f"  {'✓' if ok else '✗'} {label}" + (f": {message}" if message else ""))
