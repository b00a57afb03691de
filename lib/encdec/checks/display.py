"""How a test cell's score shows under the cell: "0.75 / 3 points", not a bare 0.75.

nbgrader reads a test cell's partial credit from the plain text of its result (the
execute_result's text/plain must be a number), so the score stays a float whose text is the bare
number. JupyterLab, nbconvert and nbgrader's feedback show the richest format a result offers,
and `Score` offers HTML: the same number with its points.
"""

import html


class Score(float):
    """A checker's score: a float (its repr, and so its text/plain, is the plain number nbgrader
    reads), shown in a notebook as "score / points points"."""

    def __new__(cls, score, points):
        self = super().__new__(cls, score)
        self.points = points
        return self

    def __repr__(self):
        return float.__repr__(self)

    def __reduce__(self):  # copies and pickles keep the points
        return type(self), (float(self), self.points)

    def text(self):
        """'0.75 / 3 points', '1 / 1 point'."""
        return f"{float(self):g} / {float(self.points):g} point{'' if self.points == 1 else 's'}"

    def _repr_html_(self):
        return (f"<span class='encdec-score' title='the score nbgrader records: {float(self)!r}'>"
                f"{html.escape(self.text())}</span>")
