"""The feedback pages the course writes itself, besides nbgrader's per-lesson feedback:

- a failure page, at the place a lesson's feedback goes, for a submission that could not be
  graded (failed or tampered): what went wrong and what to do;
- one page per student across lessons (`feedback/<student>/index.html`), for office hours.

Plain, self-contained HTML: no script, nothing loaded from the internet, and text that wraps.
"""

from html import escape
from pathlib import Path

STYLE = """<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }
table { border-collapse: collapse; width: 100%; table-layout: auto; }
th, td { border: 1px solid #ccc; padding: .3rem .5rem; text-align: left; vertical-align: top;
         white-space: normal; overflow-wrap: anywhere; }
.status { padding: .8rem 1rem; border-left: .3rem solid #d55e00; background: #fdf1e8; overflow-wrap: anywhere; }
.ok { border-left-color: #009e73; background: #e8f7f1; }
</style>"""

ADVICE = (
    (("failed: the notebook file is empty", "failed: not valid JSON", "failed: not a valid notebook"),
     "The file is not a notebook Jupyter can read (it may have been cut short, or saved under the wrong "
     "format). Open it in JupyterLab: if it does not open, take a fresh copy of the lesson from course/, "
     "paste your answers into it, save it, and hand it in again."),
    (("failed: a cell ran past the time limit", "failed: grading took longer"),
     "A cell ran longer than grading allows. Look for a loop that never ends or a computation far larger "
     "than the exercise needs, then use Kernel → Restart Kernel and Run All Cells: it should finish in a "
     "few minutes. Hand it in again once it does."),
    (("failed: the kernel died",),
     "Python itself stopped while running your notebook (often too much memory, or a call that crashes "
     "the interpreter). Run Kernel → Restart Kernel and Run All Cells to find the cell, fix it, and hand "
     "the notebook in again."),
    (("failed: no notebook",),
     "No notebook for this lesson was found in your submission. Hand in the lesson's notebook under its "
     "own name, e.g. 01_attention.ipynb."),
    (("tampered",),
     "Your notebook changes what the tests rely on (NumPy, the course library or the checkers), or writes "
     "files. Keep your notebook to your answers to the exercises, remove the lines named above, and hand it "
     "in again. If you think this is a mistake, talk to your instructor: they see exactly what was found."),
)


def advice(status):
    for starts, text in ADVICE:
        if status.startswith(starts):
            return text
    return ("Grading stopped before your notebook could be scored. Run Kernel → Restart Kernel and Run All "
            "Cells to check that it runs from top to bottom, then hand it in again, or ask your instructor.")


def _page(title, body):
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"{STYLE}</head><body>\n{body}\n</body></html>\n")


def write_failure_page(path, job, row):
    """The feedback page of a submission that was not graded: the reason, what to do, a zero."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = (f"<h1>Lesson {escape(job.lesson)}: not graded</h1>\n"
            f"<p>Student: {escape(job.student)}. Score: 0 / {row.max_score or 0:g} points.</p>\n"
            f"<p class=\"status\"><strong>What went wrong.</strong> {escape(row.status)}</p>\n"
            f"<p><strong>What to do.</strong> {escape(advice(row.status))}</p>\n"
            + (f"<p>The file graded: {escape(job.path.name)}.</p>\n" if job.path else ""))
    path.write_text(_page(f"{job.lesson}: not graded", body))
    return path


def write_student_pages(rows, attempts, feedback):
    """feedback/<student>/index.html for every student with a row: each lesson's score, status,
    attempts and lateness, a link to the lesson's feedback, and the misconceptions the checkers
    named at the latest attempt. Returns the folder they are in."""
    feedback = Path(feedback)
    latest = {}
    for a in attempts:
        latest[(a["student"], a["assignment"])] = a
    by_student = {}
    for row in rows:
        by_student.setdefault(row.student_id, []).append(row)
    for student, own in by_student.items():
        folder = feedback / student
        folder.mkdir(parents=True, exist_ok=True)
        total, maximum = sum(r.score for r in own), sum(r.max_score for r in own)
        lines = [f"<h1>{escape(student)}: every lesson</h1>",
                 f"<p>{total:g} / {maximum:g} points over {len(own)} lessons.</p>",
                 "<table><tr><th>lesson</th><th>points</th><th>status</th><th>attempts</th><th>late</th>"
                 "<th>feedback</th></tr>"]
        causes = []
        for r in sorted(own, key=lambda r: r.assignment):
            page = folder / r.assignment / f"{r.assignment}.html"
            link = f"<a href=\"{r.assignment}/{r.assignment}.html\">open</a>" if page.exists() else ""
            late = "yes" + (f" (penalty {r.penalty:g})" if r.penalty else "") if r.late else ""
            lines.append(f"<tr><td>{escape(r.assignment)}</td><td>{r.score:g} / {r.max_score:g}</td>"
                         f"<td>{escape(r.status)}</td><td>{r.attempts or ''}</td><td>{late}</td><td>{link}</td></tr>")
            a = latest.get((student, r.assignment))
            for heading, key, diagnosis in (a["misconceptions"] if a else []):
                causes.append(f"<li><strong>{escape(r.assignment)} · {escape(heading)}</strong>: "
                              f"Likely cause: {escape(diagnosis)}</li>")
        lines.append("</table>")
        if causes:
            lines += ["<h2>What the checkers found at the latest attempt</h2>", "<ul>"] + causes + ["</ul>"]
        page, html = folder / "index.html", _page(f"{student}: every lesson", "\n".join(lines))
        if not page.exists() or page.read_text() != html:  # a page whose rows did not change is left as it was
            page.write_text(html)
    return feedback / "<student>" / "index.html"
