"""Correct answers written differently keep every point through the real grader: every correct variant
of every exercise (tests/variants/lessonNN.py) and the corpus of legitimate idioms (tests/variants/idioms.py:
setattr on one's own objects, eval of a constant, files in the notebook's own folder, ...), each pasted into
its lesson's solution notebook and graded as one student by `python -m autograder autograde`, in the
sandbox. Also, from the checkers directly: how many catalog mistakes pass every visible case (the goal is 0).

    python bench/bench_correct.py           # the rows, then every answer that lost a point
    make bench BENCH=correct
"""

import contextlib
import importlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

GROUP = "correct answers written differently, graded through make autograde (goal: every one full marks)"


def answers():
    """[(label, lesson folder, exercise, notebook)] of every variant and every idiom, each in its lesson's
    solution notebook with the rest of the lesson right."""
    from bench_blind import lesson_folder
    from nbtools import checks_module, inject, set_answer, solution
    from variants.idioms import IDIOMS
    found = []
    for k in range(1, 11):
        lesson = f"{k:02d}"
        folder, module = lesson_folder(lesson), checks_module(lesson)
        variants = importlib.import_module(f"variants.lesson{lesson}").ALTERNATIVES
        for exercise in module.EXERCISES:
            for i, impl in enumerate(variants.get(exercise.name, [])):
                found.append((f"{exercise.number} variant {i + 1}", folder, exercise,
                              inject(solution(folder), exercise, impl)))
    by_cell = {e.answer_cell: e for k in range(1, 11) for e in checks_module(f"{k:02d}").EXERCISES}
    for idiom in IDIOMS:
        folder, exercise = lesson_folder(idiom.lesson), by_cell[idiom.cell]
        found.append((f"{exercise.number} idiom: {idiom.idioms}", folder, exercise,
                      set_answer(solution(folder), idiom.cell, idiom.source)))
    return found


def grade_all(jobs=2):
    """[(label, exercise, score, status)] for every answer, graded in one run of the real grader."""
    from nbtools import autograde, course_copy, write_submission
    found = answers()
    with tempfile.TemporaryDirectory(prefix="correct-") as tmp:
        tmp = Path(tmp)
        root = course_copy(tmp / "course")
        for i, (_, folder, _, nb) in enumerate(found):
            write_submission(tmp / "submitted", f"c{i:03d}", folder, nb)
        _, rows, _ = autograde(tmp / "submitted", tmp / "out", jobs=jobs, root=root)
    results = []
    for i, (label, folder, exercise, _) in enumerate(found):
        row = rows.get((f"c{i:03d}", folder), {})
        score = row.get(f"{folder[:2]}:{exercise.grade_id}")
        results.append((label, exercise, float(score) if score not in (None, "") else None, row.get("status", "")))
    return results


def catalog_passing_visible():
    """[(exercise number, catalog key)] of the catalog mistakes that keep full points on the visible cases."""
    from encdec.mistakes import CATALOG
    passing = []
    for k in range(1, 11):
        module = importlib.import_module(f"encdec.checks.lesson{k:02d}")
        for exercise in module.EXERCISES:
            for mistake in CATALOG[exercise.name]:
                with contextlib.redirect_stdout(io.StringIO()):
                    score = exercise.checker(exercise.answer_from(mistake.impl), points=exercise.points, hidden=False)
                if float(score) >= exercise.points:
                    passing.append((exercise.number, mistake.key))
    return passing, sum(len(CATALOG[e.name]) for k in range(1, 11)
                        for e in importlib.import_module(f"encdec.checks.lesson{k:02d}").EXERCISES)


def run(quick=False):
    passing, total = catalog_passing_visible()
    rows = [{"group": GROUP, "name": "catalog mistakes that pass every visible case", "value": len(passing),
             "unit": f"of {total}", "note": ", ".join(f"{n} {k}" for n, k in passing) or "none"}]
    if quick:
        return rows
    results = grade_all()
    full = [r for r in results if r[2] is not None and r[2] >= r[1].points and r[3].startswith("graded")]
    lost = [r for r in results if r not in full]
    rows.insert(0, {"group": GROUP, "name": "correct variants and idioms with full marks", "value": len(full),
                    "unit": f"of {len(results)}",
                    "note": "; ".join(f"{label}: {score} ({status})" for label, _, score, status in lost) or "all"})
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['name']}: {row['value']} {row['unit']}  [{row['note']}]")
