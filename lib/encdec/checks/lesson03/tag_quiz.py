"""The tag quiz, a new kind of check (Exercise 3.6 is one): the tags LEARNED, CONFIG and STATE and
what each means, Item (a quantity, its tag and why) and TagQuiz (its marking, feedback and widgets)."""

from dataclasses import dataclass

from ..quiz import Quiz, html, mark


TAGS = ("LEARNED", "CONFIG", "STATE")
MEANING = {
    "LEARNED": "a parameter: set by the optimiser, one step at a time, to lower the loss, and saved with the model",
    "CONFIG": "set by a person before the run, or by a fixed formula of other CONFIG values: the same for every "
              "input, and never changed by the optimiser",
    "STATE": "computed by the running program from the inputs (or from the training so far); it lives for one "
             "forward pass, one decoding run or a whole training run",
}


@dataclass(frozen=True)
class Item:
    text: str
    tag: str  # one of TAGS
    why: str  # why this item carries its tag, in the student's words


class TagQuiz(Quiz):
    """Tag each quantity [LEARNED], [CONFIG] or [STATE]. The graded answer is a dict from the item
    numbers the notebook shows to tags, e.g. `quantity_tags = {1: LEARNED, 2: CONFIG, ...}`; every
    item is worth the same share of the points, and every wrong item gets its own explanation."""

    def __init__(self, number, title, name, *, points, items):
        super().__init__(number, title, name, points)
        if any(item.tag not in TAGS for item in items):
            raise ValueError(f"Exercise {number}: every tag must be one of {TAGS}")
        self.items = list(items)

    def prompt(self):
        """The numbered list of quantities, as Markdown."""
        return "\n".join(f"{n}. {item.text}" for n, item in enumerate(self.items, start=1))

    @property
    def answer(self):
        return {n: item.tag for n, item in enumerate(self.items, start=1)}

    @staticmethod
    def _tag(value):
        """'LEARNED', '[learned]', ' Learned ' -> 'LEARNED'; anything else -> None."""
        if not isinstance(value, str):
            return None
        word = value.strip().strip("[]").strip().upper()
        return word if word in TAGS else None

    def _normalise(self, answer):
        """(tags by item number, problems with the answer as a whole)."""
        N = len(self.items)
        example = "{1: LEARNED, 2: CONFIG, ...}"
        if not isinstance(answer, dict):
            return None, (f"`{self.name}` should be a dict from item number to tag, like {example}; "
                          f"got {type(answer).__name__}")
        tags, unknown = {}, []
        for key, value in answer.items():
            try:
                n = int(key)
                if n != key and str(n) != str(key).strip():
                    raise ValueError
            except (TypeError, ValueError):
                unknown.append(repr(key))
                continue
            if not 1 <= n <= N:
                unknown.append(repr(key))
                continue
            tags[n] = value
        if unknown:
            return None, (f"`{self.name}` has keys that are not item numbers 1..{N}: {', '.join(unknown)}. "
                          f"Use the numbers of the list, like {example}")
        return tags, ""

    def feedback(self, answer):
        """[(n, ok, message)] per item, or a message when the answer cannot be read at all."""
        tags, problem = self._normalise(answer)
        if tags is None:
            return problem
        results = []
        for n, item in enumerate(self.items, start=1):
            if n not in tags:
                results.append((n, False, "no tag given for this item"))
                continue
            given = self._tag(tags[n])
            if given is None:
                results.append((n, False, f"{tags[n]!r} is not a tag: use LEARNED, CONFIG or STATE"))
            elif given != item.tag:
                results.append((n, False, f"you said {given}, but it is {item.tag}: {item.why} "
                                          f"({item.tag} means {MEANING[item.tag]}.)"))
            else:
                results.append((n, True, ""))
        return results

    def marks(self, answer):
        """One mark per item: each earns the same share of the points."""
        results = self.feedback(answer)
        if isinstance(results, str):
            return results
        return [(f"{n}. {self.items[n - 1].text}", ok, message) for n, ok, message in results]

    def controls(self, widgets):
        """One dropdown per item, a mark beside it."""
        w = widgets
        options = [("(choose)", None)] + [(tag, tag) for tag in TAGS]
        boxes = [w.Dropdown(options=options, value=None, description=f"{n}.",
                            layout=w.Layout(width="14em"), style={"description_width": "2em"})
                 for n in range(1, len(self.items) + 1)]
        notes = [w.HTML(value="") for _ in self.items]
        rows = [w.HBox([box, w.HTML(value=html(item.text).replace("`", ""), layout=w.Layout(width="34em")), note])
                for box, item, note in zip(boxes, self.items, notes)]

        def update(_=None):
            for box, item, note in zip(boxes, self.items, notes):
                if box.value is None:
                    note.value = ""
                elif box.value == item.tag:
                    note.value = mark(True)
                else:
                    note.value = mark(False, item.why, tooltip=item.why)

        return rows, boxes, update
