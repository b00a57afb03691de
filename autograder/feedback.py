"""A feedback step (an nbconvert preprocessor run by nbgrader's generate_feedback): each test
cell's check record is shown as a short table of its parts and their cases, visible and hidden,
with the misconceptions found, instead of the record's one-line summary. (The page around it:
feedback_exporter.py.)"""

from html import escape

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from . import records

MARKS = {"passed": "✓", "failed": "✗", "not run": "·"}


def _points(x):
    return f"{x:g}"


def render(record):
    """The HTML that stands for a record in the feedback."""
    head = (f"Exercise {escape(record.exercise)} · {escape(record.title)}: "
            f"{_points(record.score)} / {_points(record.points)} points")
    html = [f'<div class="encdec-check"><p><strong>{head}</strong>'
            + (" (with the hidden grading cases)" if record.hidden else "") + "</p>"]
    if record.message:
        html.append(f"<p>✗ {escape(record.message)}</p>")
    if record.parts:
        html.append("<table><tr><th></th><th>points</th><th>part</th><th>cases (✓ passed, ✗ failed, · not run)</th></tr>")
        for part in record.parts:
            cases = "; ".join(f"{MARKS[c.outcome]} {escape(c.label)}" + (" (hidden)" if c.hidden else "")
                              for c in part.cases)
            earned = part.passed if part.earned is None else part.earned
            worth = "" if part.worth is None else f"{_points(round(part.worth if earned else 0.0, 2))} / {_points(round(part.worth, 2))}"
            mark = "✓" if earned else ("–" if part.passed else "✗")
            html.append(f"<tr><td>{mark}</td><td>{worth}</td><td>{escape(part.label)}</td><td>{cases}</td></tr>")
        html.append("<tr><td colspan='4'>Each part is worth its share of the exercise's points and is earned when "
                    "all its cases pass; a part marked – passes, but counts only once the answer is right on the "
                    "ordinary inputs.</td></tr>" if any(p.passed and p.earned is False for p in record.parts) else "")
        html.append("</table>")
    for m in record.misconceptions:
        html.append(f"<p>Likely cause: {escape(m.diagnosis)}</p>")
    html.append("</div>")
    return "\n".join(html)


class RecordsAsHTML(Preprocessor):
    """Give the checker's record in every graded test cell an HTML form, when it agrees with the
    score nbgrader gave the cell."""

    enabled = Bool(True).tag(config=True)  # nbconvert's preprocessors are off unless enabled

    def preprocess_cell(self, cell, resources, index):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            return cell, resources
        from nbgrader.utils import determine_grade
        try:
            output, record = records.record_output(cell)
            score, maximum = determine_grade(cell, self.log)
        except Exception:  # a cell nbgrader cannot score keeps its outputs as they are
            return cell, resources
        if records.agrees(record, score, maximum):
            output.data["text/html"] = render(record)
        return cell, resources
