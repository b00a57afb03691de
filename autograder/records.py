"""Reading the checkers' structured records out of graded notebooks.

Every checker leaves, in its test cell's outputs, one display output of MIME type
`application/vnd.encdec.check+json`: the exercise, its points and score, each part with its
cases (visible or hidden; passed, failed or not run) and the misconceptions found, by catalog
key. The reports read these records, never the printed text.

The gradebook stays the judge of points: a record is used only when it agrees with the score
nbgrader gave its cell (a cell that wrote to stderr scored 0 whatever its record says, and
student code can display things too). The last record of a cell is the checker's own: the
checker emits it after the student's code has run. A cell without a usable record (an old
graded notebook, a cell whose kernel died) has a score and nothing else.
"""

from dataclasses import dataclass
from pathlib import Path

MIME = "application/vnd.encdec.check+json"
SCHEMA = 1
OUTCOMES = ("passed", "failed", "not run")


@dataclass(frozen=True)
class Case:
    label: str
    hidden: bool  # one of the hidden grading cases
    outcome: str  # "passed", "failed" or "not run"


@dataclass(frozen=True)
class Part:
    label: str
    weight: float
    passed: bool
    cases: tuple  # of Case
    message: str  # the readable problem, "" when it passed
    worth: float = None  # the points the part is worth (None in records made before parts carried it)
    earned: bool = None  # whether it earned them (a robust part whose cases pass may not)


@dataclass(frozen=True)
class Misconception:
    key: str  # the catalog key (@mistake(exercise, key, diagnosis)): what reports count by
    exercise: str  # the catalog's exercise name, e.g. "scaled_dot_product_attention"
    diagnosis: str  # the words the student read


@dataclass(frozen=True)
class CheckRecord:
    """One checked exercise, as its checker recorded it."""

    exercise: str  # the number students read, e.g. "1.2"
    title: str
    points: float
    score: float
    hidden: bool  # whether the hidden grading cases were included
    status: str  # "checked", "not implemented", "delegated", "no answer", "tampered" or "error"
    message: str  # the text that stopped the check early, "" when it ran to the end
    parts: tuple  # of Part
    misconceptions: tuple  # of Misconception
    notes: tuple  # of str

    @property
    def heading(self):
        """How reports name the exercise: '1.2 scaled_dot_product_attention'."""
        return f"{self.exercise} {self.title}"

    def first_problem(self):
        """One line for a table: what stopped the check, or the first failed part and its first
        misconception ('' when every part passed)."""
        if self.message:
            return self.message
        failed = next((p for p in self.parts if not p.passed), None)
        if failed is None:
            return ""
        problem = (failed.message.splitlines() or [""])[0]
        text = f"{failed.label}: {problem}" if problem else failed.label
        if self.misconceptions:
            text += f" -> {self.misconceptions[0].diagnosis}"
        return text


def _text(value):
    return value if isinstance(value, str) else ""


def parse(data):
    """A CheckRecord from a record's JSON, or None when it is not one this reader understands."""
    try:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            return None
        parts = tuple(
            Part(_text(p.get("label")), float(p.get("weight", 1.0)), bool(p.get("passed")),
                 tuple(Case(_text(c.get("label")), bool(c.get("hidden")),
                            c.get("outcome") if c.get("outcome") in OUTCOMES else "not run")
                       for c in p.get("cases") or ()),
                 _text(p.get("message")),
                 float(p["worth"]) if isinstance(p.get("worth"), (int, float)) else None,
                 bool(p["earned"]) if isinstance(p.get("earned"), bool) else None)
            for p in data.get("parts") or ())
        found = tuple(Misconception(m["key"], _text(m.get("exercise")), _text(m.get("diagnosis")))
                      for m in data.get("misconceptions") or () if isinstance(m.get("key"), str))
        return CheckRecord(str(data["exercise"]), _text(data.get("title")), float(data["points"]),
                           float(data["score"]), bool(data.get("hidden")), _text(data.get("status")),
                           _text(data.get("message")), parts, found,
                           tuple(n for n in data.get("notes") or () if isinstance(n, str)))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def record_output(cell):
    """(output, CheckRecord) of the checker's record among a test cell's outputs (the last one
    that parses), or (None, None)."""
    found = (None, None)
    for output in cell.get("outputs", []):
        if output.get("output_type") in ("display_data", "execute_result") and MIME in output.get("data", {}):
            record = parse(output["data"][MIME])
            if record is not None:
                found = (output, record)
    return found


def cell_record(cell):
    """The checker's record in a test cell, or None."""
    return record_output(cell)[1]


def agrees(record, score, maximum):
    """Whether a record tells the same points as the gradebook's score for its cell."""
    return (record is not None and score is not None and abs(record.score - float(score)) < 1e-6
            and abs(record.points - float(maximum)) < 1e-6)


def graded_test_cells(notebook_path):
    """{grade_id: cell} of the graded code cells of a notebook ({} when there is no notebook)."""
    import nbformat
    if not Path(notebook_path).exists():
        return {}
    nb = nbformat.read(str(notebook_path), as_version=4)
    return {c.metadata.nbgrader.grade_id: c for c in nb.cells
            if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("grade")}


def read_records(notebook_path, scores, maxima):
    """{grade_id: CheckRecord} of a graded notebook, keeping the records that agree with the
    gradebook (`scores`: grade_id -> points given; `maxima`: grade_id -> points possible)."""
    records = {}
    for grade_id, cell in graded_test_cells(notebook_path).items():
        record = cell_record(cell)
        if grade_id in maxima and agrees(record, scores.get(grade_id), maxima[grade_id]):
            records[grade_id] = record
    return records


def error_of(cell):
    """'Name: value' of the first error a cell raised (the kernel's error output), or ''."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {output.get('evalue')}"[:300]
    return ""
