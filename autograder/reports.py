"""What a grading run writes: grades.csv, the `make grade` table, the cohort report and timings.

Points come from the rows (the gradebook); titles, diagnoses and misconceptions from the
checkers' records in the graded notebooks (records.py).
"""

import csv
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from . import gains, records


def _num(x):
    return f"{x:g}" if isinstance(x, (int, float)) else x


def write_csv(rows, maxima, path):
    """One line per row: assignment, student_id, score, max_score, status, attempts (how many files
    were handed in), late, late_penalty (nbgrader's, already off the score), timestamp, then one column per
    graded test cell of every lesson (`01:test_softmax`, …), then how the kernel was contained
    (`sandbox`: the sandbox and its limits, or "off (…)")."""
    columns = [f"{lesson[:2]}:{cell}" for lesson in sorted(maxima) for cell in maxima[lesson]]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "student_id", "score", "max_score", "status", "attempts", "late",
                         "late_penalty", "timestamp"] + columns + ["sandbox"])
        for row in rows:
            cells = {f"{row.assignment[:2]}:{k}": v for k, v in row.cells.items()}
            writer.writerow([row.assignment, row.student_id, _num(row.score), _num(row.max_score),
                             row.status, row.attempts, "yes" if row.late else "", _num(row.penalty),
                             row.submitted_at] + [_num(cells[c]) if c in cells else "" for c in columns]
                            + [getattr(row, "sandbox", "")])


def write_timings(rows, path):
    Path(path).write_text(json.dumps([{"student_id": r.student_id, "assignment": r.assignment,
                                       "status": r.status, "seconds": r.seconds,
                                       "phases": getattr(r, "phases", {})} for r in rows]))


def row_records(row, maxima, out):
    """{grade_id: CheckRecord} for a graded row, from its graded notebook."""
    if not row.graded:
        return {}
    return records.read_records(out.graded_notebook(row.student_id, row.assignment), row.cells,
                                maxima.get(row.assignment, {}))


# -- the self-learner's table ------------------------------------------------------------------------------
def cell_lines(row, maxima, out):
    """(title, message, cases) per graded cell of a row: the record's heading, first problem and
    case counts; the error the cell raised when it has no record; else the grade id alone."""
    found = row_records(row, maxima, out)
    cells = records.graded_test_cells(out.graded_notebook(row.student_id, row.assignment))
    lines = {}
    for grade_id in maxima[row.assignment]:
        record, error = found.get(grade_id), records.error_of(cells.get(grade_id, {}))
        title = record.heading if record else grade_id
        lines[grade_id] = (title, error or (record.first_problem() if record else ""), cases_text(record))
    return lines


def case_counts(record):
    """{"visible": (failed, not run, total), "hidden": (...)} over a record's cases. A part without
    cases (a quiz item, a property of the whole answer) counts as one visible case."""
    counts = {"visible": [0, 0, 0], "hidden": [0, 0, 0]}
    for part in record.parts:
        cases = part.cases or (records.Case(part.label, False, "passed" if part.passed else "failed"),)
        for case in cases:
            tally = counts["hidden" if case.hidden else "visible"]
            tally[0] += case.outcome == "failed"
            tally[1] += case.outcome == "not run"
            tally[2] += 1
    return {kind: tuple(tally) for kind, tally in counts.items()}


def cases_text(record):
    """'1 of 6 visible (2 not run), 0 of 4 hidden': how many cases failed; 'not run' when the check
    stopped before any case; '' without a record."""
    if record is None:
        return ""
    if not record.parts:
        return "not run"
    counts = case_counts(record)
    shown = []
    for kind in ("visible", "hidden"):
        failed, not_run, total = counts[kind]
        if total or (kind == "hidden" and record.hidden):
            shown.append(f"{failed} of {total} {kind}" + (f" ({not_run} not run)" if not_run else ""))
    return ", ".join(shown)


def print_table(rows, maxima, out):
    """The `make grade` table: per lesson, each exercise with its points, how many of its visible
    and hidden cases failed and, when it lost points, what its checker found first."""
    print()
    explained = False
    for row in rows:
        lesson = row.assignment
        head = f"Lesson {lesson}: {_num(row.score)} / {_num(row.max_score)} points"
        if not row.graded:
            print(f"{head}  [{row.status}]")
            if getattr(row, "audit", None):  # what the static audit does not allow, in plain words
                from .feedback_pages import audit_message
                found, why, todo = audit_message(row.audit)
                print("\n".join(f"    {line}" for line in found + why + [todo]))
            continue
        found = row_records(row, maxima, out)
        hidden = any(record.hidden for record in found.values())
        print(head + (", hidden grading cases included" if hidden else ""))
        lines = cell_lines(row, maxima, out)
        width = max(len(title) for title, _, _ in lines.values())
        cases_width = max(len(cases) for _, _, cases in lines.values())
        if cases_width:
            print(f"    {'':<{width}} {'points':>11}  cases failed")
        for cell, maximum in maxima[lesson].items():
            title, message, cases = lines[cell]
            got = row.cells.get(cell, 0.0)
            mark = "✓" if got == maximum else "✗"
            print((f"  {mark} {title:<{width}} {_num(got):>5} / {_num(maximum):<3}"
                   + (f"  {cases:<{cases_width}}" if cases_width else "")
                   + (f"  {message}" if got < maximum and message else "")).rstrip())
        explained = explained or hidden
    total, maximum = sum(r.score for r in rows), sum(r.max_score for r in rows)
    print(f"\nTotal: {_num(round(total, 2))} / {_num(maximum)} points")
    for line in gains.table_lines(rows, maxima, out):  # the concept checks before and after each lesson
        print(line)
    if explained:
        print("Hidden cases: the harder cases that grading adds to the visible tests in your notebook. "
              "A part of a check stops at its first failing case, so the cases after it are not run.")


def print_feedback_pages(rows, out):
    """Where each graded lesson's feedback page is (its real path, relative to the current folder
    when it lies below it)."""
    pages = [(row.assignment, out.feedback / row.student_id / row.assignment / f"{row.assignment}.html")
             for row in rows if row.graded]
    pages = [(lesson, page) for lesson, page in pages if page.exists()]
    if not pages:
        return
    print("\nFeedback, one page per lesson (open it in a browser):")
    for lesson, page in pages:
        print(f"  {_shown_path(page)}")


def _shown_path(path):
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# -- the cohort report -----------------------------------------------------------------------------------
def misconception_counts(rows, maxima, out):
    """{(lesson, exercise heading, catalog key): (students, diagnosis)}: how many students' graded
    notebooks showed each misconception. Counted by key, so a reworded diagnosis counts the same;
    the words shown are the first student's."""
    counts, words = Counter(), {}
    for row in rows:
        seen = set()
        for record in row_records(row, maxima, out).values():
            for m in record.misconceptions:
                if m.key.startswith("trace:"):  # where the answer went wrong, not a misconception to count
                    continue
                key = (row.assignment, record.heading, m.key)
                seen.add(key)
                words.setdefault(key, m.diagnosis)
        counts.update(seen)
    return {key: (n, words[key]) for key, n in counts.items()}


def write_report(rows, maxima, out, path, attempts=(), copies=None):
    """autograder/report.md: score distribution per lesson and how often each misconception occurred
    (and, from the gradebook's `attempts`, at the first attempt against the latest); `copies`:
    {(student, lesson): [(exercise, reference, similarity)]} of answers close to the reference."""
    lines = ["# Cohort report", "", f"{time.strftime('%Y-%m-%d %H:%M')} · "
             f"{len({r.student_id for r in rows})} students · {len(rows)} lesson submissions", ""]
    status = Counter(r.status.split(":")[0].split(" (")[0] for r in rows)
    lines.append("Submissions: " + ", ".join(f"{n} {s}" for s, n in sorted(status.items())))
    lines += ["", "Student code ran in: " + "; ".join(sorted({getattr(r, "sandbox", "") or "?" for r in rows}))]
    lines += ["", "## Scores per lesson", "", "| lesson | graded | mean | median | min | max | distribution (0-20-40-60-80-100 %) |",
              "|---|---|---|---|---|---|---|"]
    for lesson in sorted(maxima):
        scores = [float(r.score) for r in rows if r.assignment == lesson and r.graded]
        maximum = sum(maxima[lesson].values()) or 1
        if not scores:
            lines.append(f"| {lesson} | 0 | | | | | |")
            continue
        buckets = Counter(min(int(100 * x / maximum) // 20, 4) for x in scores)
        bars = " ".join(f"{'▁▂▃▄▅▆▇█'[min(7, 8 * buckets[b] // len(scores))]}{buckets[b]}" for b in range(5))
        lines.append(f"| {lesson} | {len(scores)} | {statistics.mean(scores):.1f} / {maximum:g} | "
                     f"{statistics.median(scores):g} | {min(scores):g} | {max(scores):g} | {bars} |")
    lines += ["", "## Misconceptions named by the checkers", "",
              "How many students' graded notebooks showed each misconception (count, lesson, exercise, "
              "the catalog's key, diagnosis).", ""]
    counts = misconception_counts(rows, maxima, out)
    if counts:
        lines += ["| students | lesson | exercise | key | misconception |", "|---|---|---|---|---|"]
        for (lesson, title, key), (n, diagnosis) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0])):
            lines.append(f"| {n} | {lesson} | {title} | `{key}` | {diagnosis.replace('|', '/')} |")
    else:
        lines.append("None: no graded notebook showed a known misconception.")
    lines += gains.report_lines(rows, maxima, out)
    lines += attempts_section(attempts)
    lines += copies_section(copies or {})
    lines += cautions_section(rows)
    problems = [r for r in rows if not r.graded]
    if problems:
        lines += ["", "## Not graded", "", "| student | lesson | status |", "|---|---|---|"]
        lines += [f"| {r.student_id} | {r.assignment} | {r.status.replace('|', '/')} |" for r in problems]
    Path(path).write_text("\n".join(lines) + "\n")


def attempts_section(attempts):
    """Report lines on resubmissions: per misconception, how many students showed it at their first
    attempt and at their latest (submissions handed in more than once), from the gradebook."""
    first, last, many = {}, {}, set()
    for a in attempts:
        pair = (a["assignment"], a["student"])
        first.setdefault(pair, a)
        last[pair] = a
        if a["attempt"] > 1:
            many.add(pair)
    if not many:
        return []
    counts, words = {}, {}
    for pair in many:
        for which, attempt in (("first", first[pair]), ("latest", last[pair])):
            for heading, key, diagnosis in attempt["misconceptions"]:
                k = (pair[0], heading, key)
                counts.setdefault(k, Counter())[which] += 1
                words.setdefault(k, diagnosis)
    lines = ["", "## Resubmissions: misconceptions at the first attempt and at the latest", "",
             f"{len(many)} submissions were handed in more than once ({len({p[1] for p in many})} students).", ""]
    if not counts:
        return lines + ["No known misconception at either attempt."]
    lines += ["| first | latest | lesson | exercise | key | misconception |", "|---|---|---|---|---|---|"]
    for (lesson, title, key), n in sorted(counts.items(), key=lambda kv: (-kv[1]["first"], kv[0])):
        lines.append(f"| {n['first']} | {n['latest']} | {lesson} | {title} | `{key}` | "
                     f"{words[(lesson, title, key)].replace('|', '/')} |")
    return lines


def cautions_section(rows):
    """Report lines on the static audit's cautions: statements whose target is known only at run time."""
    found = [(r.student_id, r.assignment, c) for r in rows for c in getattr(r, "cautions", None) or ()]
    if not found:
        return []
    lines = ["", "## Cautions from the audit", "",
             "Statements whose target the static audit (autograder/audit.py) could not know before the notebook "
             "ran: setattr or exec on something computed, a write to a path worked out at run time, another "
             "program run. They do not change the score, and the student is not told: the guard in the kernel "
             "checked at run time that nothing the checks rely on was replaced (had it been, every check of the "
             "lesson scored 0 and its feedback names what), and the sandbox contained the rest. For you to read.",
             "", "| student | lesson | where, the code, what it does |", "|---|---|---|"]
    return lines + [f"| {s} | {lesson} | {c.replace('|', '/')} |" for s, lesson, c in sorted(found)]


def copies_section(copies):
    """Report lines on answers whose normalised syntax tree is close to the reference's."""
    if not copies:
        return []
    lines = ["", "## Answers close to the reference source", "",
             "Answers whose syntax tree, with names and docstrings normalised, is at least 90 % like the "
             "solution notebook's or the library's. The course is open, so this is for you to judge (a "
             "short answer has few ways to be written), not a penalty.", "",
             "| student | lesson | exercise | close to | similarity |", "|---|---|---|---|---|"]
    for (student, lesson), found in sorted(copies.items()):
        for exercise, where, ratio in found:
            lines.append(f"| {student} | {lesson} | {exercise} | {where} | {ratio:.0%} |")
    return lines
