"""The learning gain, from the concept checks before and after each lesson (encdec.checks.concepts).

The record of a concept check (records.py: the last record of its test cell, used only when it agrees
with the gradebook's score for the cell) carries, per question, its concept and whether it was
answered and answered right. From them:

- a check's score is the fraction of its questions answered right (max = 1). A question left `...`
  counts as wrong; a check with no question answered was not taken;
- a student's normalised gain on a lesson is g = (post - pre) / (1 - pre), when both checks were taken;
  it is undefined, shown "—", when pre = 1 (nothing was left to gain);
- the class's, after Hake (1998), is <g> = (<post> - <pre>) / (1 - <pre>), with the means over the n
  students who took both checks of the lesson ("—" when n = 0 or <pre> = 1);
- a concept's score after the lesson is the share of the students who took the check after it that
  answered its question right: the lowest are what to teach again.

The cohort report (reports.write_report), each student's page (feedback_pages.write_student_pages) and
the `make grade` table (reports.print_table) show them. Never the printed text: only the records.
"""

from dataclasses import dataclass
from html import escape

from . import records

LOWEST = 3  # how many concepts the report names per lesson
DASH = "—"


@dataclass(frozen=True)
class Check:
    """One concept check as recorded: its phase ("before" or "after") and, per question, (concept,
    answered, right)."""

    phase: str
    items: tuple

    @property
    def taken(self):
        return any(answered for _, answered, _ in self.items)

    @property
    def right(self):
        return sum(bool(ok) for _, _, ok in self.items)

    @property
    def score(self):
        return self.right / len(self.items) if self.items else 0.0

    def text(self):
        """'2 / 5 (0.40)', or 'not taken'."""
        return f"{self.right} / {len(self.items)} ({self.score:.2f})" if self.taken else "not taken"


@dataclass(frozen=True)
class Gain:
    """A student's concept checks on one lesson (either may be None: no usable record)."""

    student: str
    lesson: str
    before: Check = None
    after: Check = None

    @property
    def pre(self):
        return self.before.score if self.before is not None and self.before.taken else None

    @property
    def post(self):
        return self.after.score if self.after is not None and self.after.taken else None

    @property
    def g(self):
        return gain(self.pre, self.post)


def gain(pre, post):
    """The normalised gain (post - pre) / (1 - pre), or None when either is missing or pre = 1."""
    if pre is None or post is None or pre >= 1:
        return None
    return (post - pre) / (1 - pre)


def number(x):
    return DASH if x is None else f"{x:.2f}"


def checks_in(notebook, scores, maxima):
    """{phase: Check} of the concept checks in a graded notebook, from the records that agree with
    the gradebook (`scores`: grade_id -> points given; `maxima`: grade_id -> points possible)."""
    found = {}
    for grade_id, cell in records.graded_test_cells(notebook).items():
        output, record = records.record_output(cell)
        if output is None or grade_id not in maxima or not records.agrees(record, scores.get(grade_id), maxima[grade_id]):
            continue
        data = output["data"][records.MIME].get("concepts")
        try:
            items = tuple((str(i["concept"]), bool(i["answered"]), bool(i["answered"] and i["correct"]))
                          for i in data["items"])
            if data["phase"] in ("before", "after") and items:
                found[data["phase"]] = Check(data["phase"], items)
        except (KeyError, TypeError):
            continue
    return found


def gains(rows, maxima, out):
    """[Gain] of every graded row whose notebook holds a concept check's record."""
    found = []
    for row in rows:
        if not row.graded:
            continue
        checks = checks_in(out.graded_notebook(row.student_id, row.assignment), row.cells,
                           maxima.get(row.assignment, {}))
        if checks:
            found.append(Gain(row.student_id, row.assignment, checks.get("before"), checks.get("after")))
    return found


def by_student(rows, maxima, out):
    """{student: [Gain], by lesson}."""
    table = {}
    for g in sorted(gains(rows, maxima, out), key=lambda g: (g.student, g.lesson)):
        table.setdefault(g.student, []).append(g)
    return table


def class_gain(lesson_gains):
    """(n, <pre>, <post>, <g>) over the students who took both checks (means None when n = 0)."""
    both = [(g.pre, g.post) for g in lesson_gains if g.pre is not None and g.post is not None]
    if not both:
        return 0, None, None, None
    pre, post = sum(p for p, _ in both) / len(both), sum(q for _, q in both) / len(both)
    return len(both), pre, post, gain(pre, post)


def concept_scores(lesson_gains):
    """[(concept, right, students)] after the lesson, over the students who took that check, in the
    order the check asks them."""
    taken = [g.after for g in lesson_gains if g.post is not None]
    if not taken:
        return []
    return [(concept, sum(check.items[i][2] for check in taken), len(taken))
            for i, (concept, _, _) in enumerate(taken[0].items)]


def lowest(lesson_gains, k=LOWEST):
    """The k concepts with the lowest share right after the lesson (ties in the check's order),
    leaving out those every student got right."""
    scored = [(right / n, i, concept, right, n) for i, (concept, right, n) in enumerate(concept_scores(lesson_gains))]
    return [(concept, right, n) for share, _, concept, right, n in sorted(scored) if share < 1][:k]


# -- what the outputs show ----------------------------------------------------------------------------------
def report_lines(rows, maxima, out):
    """The cohort report's section: per lesson, <pre>, <post>, <g>, n and the concepts to teach again."""
    by_lesson = {}
    for g in gains(rows, maxima, out):
        by_lesson.setdefault(g.lesson, []).append(g)
    lines = ["", "## Concept checks: the learning gain", "",
             "Every lesson opens with a concept check and closes with a parallel one (worth 0 points unless "
             "autograder/concept_checks.toml says otherwise). A score is the fraction of a check's questions "
             "answered right. ⟨g⟩ = (⟨post⟩ − ⟨pre⟩) / (1 − ⟨pre⟩) (Hake 1998), the means taken over the n "
             "students who took both checks; — when n = 0 or ⟨pre⟩ = 1. The last column names the concepts "
             "with the lowest share of right answers after the lesson: what to teach again.", ""]
    if not by_lesson:
        return lines + ["No graded notebook holds a concept check yet."]
    lines += ["| lesson | n (both) | ⟨pre⟩ | ⟨post⟩ | ⟨g⟩ | before only | after only | lowest after the lesson |",
              "|---|---|---|---|---|---|---|---|"]
    for lesson in sorted(by_lesson):
        found = by_lesson[lesson]
        n, pre, post, g = class_gain(found)
        only_before = sum(1 for x in found if x.pre is not None and x.post is None)
        only_after = sum(1 for x in found if x.post is not None and x.pre is None)
        weakest = ", ".join(f"`{c}` {right}/{total}" for c, right, total in lowest(found)) or \
            ("none: every concept right" if concept_scores(found) else DASH)
        lines.append(f"| {lesson} | {n} | {number(pre)} | {number(post)} | {number(g)} | {only_before} | "
                     f"{only_after} | {weakest} |")
    return lines


def table_lines(rows, maxima, out):
    """The `make grade` lines: the self-learner's score before and after each lesson, and the gain."""
    found = gains(rows, maxima, out)
    if not found:
        return []
    lines = ["", "Concept checks, before and after each lesson (the fraction right; gain g = (after − before) "
                 "/ (1 − before)):"]
    for g in sorted(found, key=lambda g: g.lesson):
        lines.append(f"  Lesson {g.lesson}: before {g.before.text() if g.before else 'not taken'}, "
                     f"after {g.after.text() if g.after else 'not taken'}, gain {number(g.g)}")
    return lines


def html_lines(own):
    """A student page's section: their score before and after each lesson, and the gain."""
    if not own:
        return []
    lines = ["<h2>Concept checks: before and after each lesson</h2>",
             "<p>The fraction of the questions answered right, and the normalised gain g = (after − before) / "
             "(1 − before), the share of what was left to learn that was learned (— when it cannot be "
             "computed).</p>",
             "<table><tr><th>lesson</th><th>before</th><th>after</th><th>gain g</th></tr>"]
    for g in own:
        before = g.before.text() if g.before else "not taken"
        after = g.after.text() if g.after else "not taken"
        lines.append(f"<tr><td>{escape(g.lesson)}</td><td>{escape(before)}</td><td>{escape(after)}</td>"
                     f"<td>{number(g.g)}</td></tr>")
    return lines + ["</table>"]
