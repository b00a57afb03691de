"""The feedback pages the course writes itself, besides nbgrader's per-lesson feedback:

- a failure page, at the place a lesson's feedback goes, for a submission that could not be
  graded (failed or tampered): what went wrong and what to do; for a statement the static audit
  does not allow, in plain words: the line, what is not allowed and why (audit_message);
- one page per student across lessons (`feedback/<student>/index.html`), for office hours.

Plain, self-contained HTML: no script, nothing loaded from the internet, and text that wraps.
"""

from html import escape
from pathlib import Path

from . import gains

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
    (("tampered: the notebook changed files outside its own folder",),
     "Your notebook wrote to files outside its own folder (the course's files, the gradebook or the Python "
     "environment); they were put back. A notebook may write files in its own folder (a relative path such as "
     "scratch.txt) or under /tmp. Remove the lines that write elsewhere and hand it in again."),
    (("tampered",),
     "Your notebook changes what the tests rely on (NumPy, the course library or the checkers), or writes "
     "outside its own folder. Keep your notebook to your answers to the exercises, remove the lines named above, "
     "and hand it in again. If you think this is a mistake, talk to your instructor: they see exactly what was found."),
)

# The static audit's findings (autograder/audit.py), in the student's words: what each kind does and why
# it cannot be graded. The full list is in docs/students.md, "What a submission may not do".
SAID = {"replaces": "changes", "internals": "uses", "process": "calls", "writes": "writes to"}
WHY = {
    "replaces": "The tests compare your answers with NumPy and with the course's own code; a notebook that changes "
                "NumPy, torch, the course library, the checkers, Python's builtins or the machinery that runs the "
                "tests cannot be graded, so this lesson scores 0.",
    "internals": "The checkers watch how your answer runs (with Python's profiler) and rely on Python's import "
                 "system; a notebook that traces the interpreter, walks the garbage collector's objects, uses ctypes, "
                 "reloads the course's modules or hooks into how cells are run cannot be graded, so this lesson "
                 "scores 0.",
    "process": "The grader runs your notebook in one Python process and times it; a notebook that ends that process, "
               "kills or forks processes, or installs signal handlers or timers cannot be graded, so this lesson "
               "scores 0.",
    "writes": "A notebook may write files in its own folder (a relative path such as scratch.txt) or under /tmp; a "
              "file written anywhere else could overwrite the course's files, so this lesson scores 0.",
}


def audit_message(findings):
    """(what was found, why it is not allowed, what to do): sentences for the student, `code` in backticks."""
    found = [f"Your notebook {f.verb or SAID[f.kind]} `{f.subject}` ({f.where})"
             + (", outside its own folder." if f.kind == "writes" else ".") for f in findings[:5]]
    if len(findings) > 5:
        found.append(f"And {len(findings) - 5} more, each named for your instructor.")
    why = [WHY[kind] for kind in dict.fromkeys(f.kind for f in findings)]
    todo = (f"Remove {'that line' if len(findings) == 1 else 'those lines'} and submit again. Everything else is "
            "allowed: setattr, eval and files on your own objects and in your own folder. If you think this is a "
            "mistake, talk to your instructor: they see exactly what was found.")
    return found, why, todo


def _with_code(text):
    """Escaped text whose `backticked` parts are shown as code."""
    parts = escape(text).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick stays as it is
        parts[-2:] = ["`".join(parts[-2:])]
    return "".join((f"<code>{p}</code>" if p else "``") if i % 2 else p for i, p in enumerate(parts))


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
    findings = getattr(row, "audit", None)
    if findings:
        found, why, todo = audit_message(findings)
        wrong = ("<div class=\"status\"><p><strong>What is not allowed.</strong></p>\n"
                 + "".join(f"<p>{_with_code(t)}</p>\n" for t in found + why) + "</div>\n")
    else:
        wrong, todo = f"<p class=\"status\"><strong>What went wrong.</strong> {escape(row.status)}</p>\n", advice(row.status)
    body = (f"<h1>Lesson {escape(job.lesson)}: not graded</h1>\n"
            f"<p>Student: {escape(job.student)}. Score: 0 / {row.max_score or 0:g} points.</p>\n"
            + wrong + f"<p><strong>What to do.</strong> {_with_code(todo)}</p>\n"
            + (f"<p>The file graded: {escape(job.path.name)}.</p>\n" if job.path else ""))
    path.write_text(_page(f"{job.lesson}: not graded", body))
    return path


def write_student_pages(rows, attempts, feedback, concepts=None):
    """feedback/<student>/index.html for every student with a row: each lesson's score, status,
    attempts and lateness, a link to the lesson's feedback, and the misconceptions the checkers
    named at the latest attempt; with `concepts` ({student: [gains.Gain]}), their concept checks
    before and after each lesson and the gain. Returns the folder they are in."""
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
        lines += gains.html_lines((concepts or {}).get(student, []))
        page, html = folder / "index.html", _page(f"{student}: every lesson", "\n".join(lines))
        if not page.exists() or page.read_text() != html:  # a page whose rows did not change is left as it was
            page.write_text(html)
    return feedback / "<student>" / "index.html"
