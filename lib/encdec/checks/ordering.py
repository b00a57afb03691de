"""Ordering exercises: put the steps of a mechanism in the order they happen.

The graded answer is plain code, a list of the step numbers as the notebook shows them, e.g.
`block_order = [4, 1, 3, 5, 2]`, graded all or nothing. The same feedback is offered instantly by
an ipywidgets version (`Ordering.widget()`), which grades nothing. On a wrong answer the message
names the first pair that is out of order and why the order is what it is.
"""

from dataclasses import dataclass

from .quiz import Quiz, mark


@dataclass(frozen=True)
class Step:
    text: str
    why: str  # why this step comes where it does, in the student's words


class Ordering(Quiz):
    """`steps` in the true order; `shown` the order the notebook lists them (a permutation of
    range(len(steps))), so the student sees them shuffled and numbered 1..N."""

    what_to_write = "the step numbers, in the order the steps happen"

    def __init__(self, number, title, name, *, points, steps, shown):
        super().__init__(number, title, name, points)
        if sorted(shown) != list(range(len(steps))):
            raise ValueError(f"Exercise {number}: shown={shown} must be a permutation of 0..{len(steps) - 1}")
        self.steps, self.shown = list(steps), list(shown)

    # the numbers the student sees
    def number_of(self, canonical_index):
        return self.shown.index(canonical_index) + 1

    def text(self, number):
        return self.steps[self.shown[number - 1]].text

    @property
    def answer(self):
        return [self.number_of(i) for i in range(len(self.steps))]

    def prompt(self):
        """The numbered, shuffled list as Markdown."""
        return "\n".join(f"{n}. {self.text(n)}" for n in range(1, len(self.steps) + 1))

    def feedback(self, answer):
        """(ok, message) for a proposed answer (a list of step numbers)."""
        N = len(self.steps)
        if not isinstance(answer, (list, tuple)):
            return False, (f"`{self.name}` should be a list of the step numbers in order, "
                           f"e.g. {list(range(1, N + 1))}; got {type(answer).__name__}")
        if any(a is Ellipsis for a in answer):
            return False, (f"`{self.name}` still holds `...`: replace it with {self.what_to_write}, "
                           f"each of 1..{N} once")
        try:
            numbers = [int(a) for a in answer]
            if any(int(a) != a for a in answer):
                raise ValueError
        except (TypeError, ValueError):
            return False, f"`{self.name}` should hold whole step numbers 1..{N}; got {list(answer)!r}"
        missing = sorted(set(range(1, N + 1)) - set(numbers))
        repeated = sorted({n for n in numbers if numbers.count(n) > 1})
        outside = sorted({n for n in numbers if not 1 <= n <= N})
        if len(numbers) != N or missing or repeated or outside:
            problems = []
            if len(numbers) != N:
                problems.append(f"it has {len(numbers)} entries, not {N}")
            if missing:
                problems.append(f"step(s) {missing} are missing")
            if repeated:
                problems.append(f"step(s) {repeated} appear more than once")
            if outside:
                problems.append(f"{outside} are not step numbers (1..{N})")
            return False, f"use each step number 1..{N} exactly once: " + "; ".join(problems)
        ranks = [self.shown[n - 1] for n in numbers]  # canonical index of each chosen step
        if ranks == list(range(N)):
            return True, "this is the order in which the steps happen."
        pos = next(i for i, r in enumerate(ranks) if r != i)
        early, due = ranks[pos], pos  # step `early` sits where step `due` belongs
        return False, (f"step {self.number_of(early)} (\"{self.steps[early].text}\") comes too early: "
                       f"you put it before step {self.number_of(due)} (\"{self.steps[due].text}\"), "
                       f"which must come first. {self.steps[early].why}")

    def marks(self, answer):
        """All or nothing: one mark for the whole order."""
        ok, message = self.feedback(answer)
        return [("the order of the steps", ok, "" if ok else message)]

    def controls(self, widgets):
        """Dropdowns, one per position, and the feedback under them."""
        w = widgets
        N = len(self.steps)
        options = [("(choose a step)", 0)] + [(f"{n}. {self.text(n)}", n) for n in range(1, N + 1)]
        boxes = [w.Dropdown(options=options, value=0, description=f"{pos}.",
                            layout=w.Layout(width="95%"), style={"description_width": "2em"})
                 for pos in range(1, N + 1)]
        result = w.HTML(value="<i>Choose a step for every position.</i>")

        def update(_=None):
            answer = [b.value for b in boxes]
            if 0 in answer:
                result.value = "<i>Choose a step for every position.</i>"
                return
            ok, message = self.feedback(answer)
            result.value = mark(ok, message, css_class="ordering-feedback")

        return [*boxes, result], boxes, update
