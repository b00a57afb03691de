"""Questions answered with plain data (a list, a dict) rather than code: the orderings and the tag quiz.

A quiz is a graded exercise (encdec.checks.exercises) whose answer the notebook defines as a
variable, `name`. This base finds that answer in the notebook's namespace, turns its marks into the
check's parts (one part: all or nothing; one part per item: a share of the points each), reports
and records the result like every checker, and builds the practice widget around the subclass's
controls. A subclass says how an answer is marked (`marks`) and what its widget holds (`controls`).

The released answer cell shows the variable to define, with `...` for the answer (e.g.
`block_order = [...]`), above the `raise NotImplementedError()` of nbgrader's stub. An answer that
is still that placeholder is "not answered yet" (status "not implemented", no points); in a dict,
an item still `...` is an item not answered.
"""

from . import mode
from .core import FAIL, PASS, Checker
from .exercises import Graded
from .running import _caller_namespace

RIGHT, WRONG = "#1a7f37", "#b3261e"  # the widgets' colours for a right and a wrong answer


class Quiz(Graded):
    has_hidden_tests = False
    what_to_write = "your answer"  # what replaces the `...` of the placeholder, in the student's words

    def marks(self, answer):
        """[(label, ok, message)]: one mark (all or nothing) or one per item (a share each); or a
        message when the answer cannot be read at all (the check stops there)."""
        raise NotImplementedError

    def controls(self, widgets):
        """(children of the widget under its title, the inputs to watch, update(change) giving feedback)."""
        raise NotImplementedError

    def check(self, answer=None, points=None):
        """Grade the answer (found by name in the notebook when not given)."""
        checker = Checker(self, points)
        if answer is None:
            answer = _caller_namespace().get(self.name)
        if answer is None:
            checker.stop(mode.not_defined(self.name, "answer"), "no answer")
            return checker.result()
        if unanswered(answer):
            checker.stop(f"not answered yet: replace each `...` in `{self.name}` with {self.what_to_write}, "
                         "and delete the `raise NotImplementedError()` line under it.", "not implemented")
            return checker.result()
        if isinstance(answer, dict):  # the items still `...` are not answered
            answer = {key: value for key, value in answer.items() if value is not Ellipsis}
        marks = self.marks(answer)
        if isinstance(marks, str):
            checker.stop(marks, "error")
        else:
            for label, ok, message in marks:
                checker.part(label, ok, message)
        return checker.result()

    def widget(self):
        """The quiz with instant feedback, for practice. Grades nothing."""
        import ipywidgets as w

        children, inputs, update = self.controls(w)
        for box in inputs:
            box.observe(update, names="value")
        title = w.HTML(f"<b>Exercise {self.number}: {self.title}</b> "
                       f"(practice; the graded answer is `{self.name}` below)")
        return w.VBox([title, *children])


def unanswered(answer):
    """Whether an answer is still the stub's placeholder: `...`, or a list, tuple or dict holding
    nothing but `...`."""
    if answer is Ellipsis:
        return True
    items = list(answer.values()) if isinstance(answer, dict) else answer if isinstance(answer, (list, tuple)) else None
    return bool(items) and all(item is Ellipsis for item in items)


def mark(ok, text="", css_class=None, tooltip=None):
    """A ✓ or ✗ with its text, coloured, as HTML for a widget."""
    attributes = (f" class='{css_class}'" if css_class else "") + f" style='color:{RIGHT if ok else WRONG}'" \
        + (f" title='{html(tooltip)}'" if tooltip else "")
    return f"<span{attributes}>{PASS if ok else FAIL}" + (f" {html(text)}" if text else "") + "</span>"


def html(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
