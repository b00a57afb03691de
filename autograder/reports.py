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

from . import records


def _num(x):
    return f"{x:g}" if isinstance(x, (int, float)) else x


def write_csv(rows, maxima, path):
    """One line per row: assignment, student_id, score, max_score, status, then one column per
    graded test cell of every lesson (`01:test_softmax`, …)."""
    columns = [f"{lesson[:2]}:{cell}" for lesson in sorted(maxima) for cell in maxima[lesson]]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "student_id", "score", "max_score", "status"] + columns)
        for row in rows:
            cells = {f"{row.assignment[:2]}:{k}": v for k, v in row.cells.items()}
            writer.writerow([row.assignment, row.student_id, _num(row.score), _num(row.max_score),
                             row.status] + [_num(cells[c]) if c in cells else "" for c in columns])


def write_timings(rows, path):
    Path(path).write_text(json.dumps([{"student_id": r.student_id, "assignment": r.assignment,
                                       "status": r.status, "seconds": r.seconds} for r in rows]))


def row_records(row, maxima, out):
    """{grade_id: CheckRecord} for a graded row, from its graded notebook."""
    if not row.graded:
        return {}
    return records.read_records(out.graded_notebook(row.student_id, row.assignment), row.cells,
                                maxima.get(row.assignment, {}))


# -- the self-learner's table ------------------------------------------------------------------------------
def cell_lines(row, maxima, out):
    """(title, message) per graded cell of a row: the record's heading and first problem; the
    error the cell raised when it has no record; else the grade id alone."""
    found = row_records(row, maxima, out)
    cells = records.graded_test_cells(out.graded_notebook(row.student_id, row.assignment))
    lines = {}
    for grade_id in maxima[row.assignment]:
        record, error = found.get(grade_id), records.error_of(cells.get(grade_id, {}))
        title = record.heading if record else grade_id
        lines[grade_id] = (title, error or (record.first_problem() if record else ""))
    return lines


def print_table(rows, maxima, out):
    """The `make grade` table: per lesson, each exercise with its points and, when it lost points,
    what its checker found first."""
    print()
    for row in rows:
        lesson = row.assignment
        head = f"Lesson {lesson}: {_num(row.score)} / {_num(row.max_score)} points"
        if not row.graded:
            print(f"{head}  [{row.status}]")
            continue
        print(head)
        lines = cell_lines(row, maxima, out)
        width = max(len(title) for title, _ in lines.values())
        for cell, maximum in maxima[lesson].items():
            title, message = lines[cell]
            got = row.cells.get(cell, 0.0)
            mark = "✓" if got == maximum else "✗"
            print(f"  {mark} {title:<{width}} {_num(got):>5} / {_num(maximum):<3}"
                  + (f"  {message}" if got < maximum and message else ""))
    total, maximum = sum(r.score for r in rows), sum(r.max_score for r in rows)
    print(f"\nTotal: {_num(round(total, 2))} / {_num(maximum)} points")


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
                key = (row.assignment, record.heading, m.key)
                seen.add(key)
                words.setdefault(key, m.diagnosis)
        counts.update(seen)
    return {key: (n, words[key]) for key, n in counts.items()}


def write_report(rows, maxima, out, path):
    """autograder/report.md: score distribution per lesson and how often each misconception occurred."""
    lines = ["# Cohort report", "", f"{time.strftime('%Y-%m-%d %H:%M')} · "
             f"{len({r.student_id for r in rows})} students · {len(rows)} lesson submissions", ""]
    status = Counter(r.status.split(":")[0].split(" (")[0] for r in rows)
    lines.append("Submissions: " + ", ".join(f"{n} {s}" for s, n in sorted(status.items())))
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
    problems = [r for r in rows if not r.graded]
    if problems:
        lines += ["", "## Not graded", "", "| student | lesson | status |", "|---|---|---|"]
        lines += [f"| {r.student_id} | {r.assignment} | {r.status.replace('|', '/')} |" for r in problems]
    Path(path).write_text("\n".join(lines) + "\n")
