"""Grading at scale, and the mutation proof, through the real driver and nbgrader.

A synthetic class: every student submits every lesson, each notebook one of the solution, a
mutant (a different catalog mistake in every exercise), a correct alternative, or the untouched
release. It is graded with `python -m autograder autograde --jobs 2`; the rows give the throughput, the
seconds per notebook for each lesson, and whether every mutant lost its exercise's points and
every alternative earned full marks. quick=True grades 6 students instead of 100. Each kernel runs
in the sandbox (SANDBOX=off in the environment: without it); bench_sandbox.py measures its cost.
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]


def run(quick=False):
    from grading_class import alternative_notebook, full_marks, grade_id_of, mutant
    from nbtools import autograde, checks_module, course_copy, lessons, release, solution, write_submission

    n_students = 6 if quick else 100
    kinds = ["solution", "mutant-1", "mutant-2", "mutant-3", "alternative", "untouched"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        variants, expected = {}, {}
        for lesson in lessons():
            variants[(lesson, "solution")] = (solution(lesson), full_marks(solution(lesson)))
            variants[(lesson, "untouched")] = (release(lesson), {k: 0.0 for k in full_marks(solution(lesson))})
            for k in range(3):
                nb, scores, _ = mutant(lesson, k)
                variants[(lesson, f"mutant-{k + 1}")] = (nb, scores)
            variants[(lesson, "alternative")] = alternative_notebook(lesson)
        for s in range(n_students):
            for j, lesson in enumerate(lessons()):
                kind = kinds[(s + j) % len(kinds)]
                nb, scores = variants[(lesson, kind)]
                write_submission(tmp / "submitted", f"student{s:03d}", lesson, nb)
                expected[(f"student{s:03d}", lesson)] = (kind, scores)
        root = course_copy(tmp / "course")
        start = time.perf_counter()
        code, rows, output = autograde(tmp / "submitted", tmp / "out", jobs=2, root=root, timeout=6 * 3600)
        wall = time.perf_counter() - start
        timings = json.loads((tmp / "out" / ".work" / "timings.json").read_text())

    n = len(expected)
    per_lesson = {}
    for t in timings:
        per_lesson.setdefault(t["assignment"], []).append(t["seconds"])
    wrong_rows = [key for key, (kind, scores) in expected.items()
                  if key not in rows or abs(float(rows[key]["score"]) - sum(scores.values())) > 1e-6]
    exercises = mutants = caught = accepted = 0
    for lesson in lessons():
        sol = solution(lesson)
        for ex in checks_module(lesson).EXERCISES:
            exercises += 1
            gid = grade_id_of(sol, ex)
            col = f"{lesson[:2]}:{gid}"
            for k in (1, 2, 3):
                graded = [r for key, r in rows.items() if expected[key][0] == f"mutant-{k}" and key[1] == lesson]
                if graded:
                    mutants += 1
                    caught += all(float(r[col]) < ex.points for r in graded)
            alts = [r for key, r in rows.items() if expected[key][0] == "alternative" and key[1] == lesson]
            accepted += bool(alts) and all(float(r[col]) == ex.points for r in alts)
    group = f"grading: {n_students} students x {len(lessons())} lessons, JOBS=2"
    sandbox = sorted({r.get("sandbox", "") for r in rows.values()})
    out = [
        {"group": group, "name": "student code ran in", "value": "; ".join(sandbox)[:60], "unit": "",
         "note": "SANDBOX=off measures without the sandbox; bench_sandbox.py measures both side by side"},
        {"group": group, "name": "notebooks graded", "value": n, "unit": "notebooks",
         "note": f"exit code {code}; {len(wrong_rows)} rows differ from the checkers' own scores"},
        {"group": group, "name": "wall time", "value": wall / 60, "unit": "minutes"},
        {"group": group, "name": "throughput", "value": n / wall * 60, "unit": "notebooks/min"},
        {"group": group, "name": "100 students x 10 lessons, projected", "value": 1000 / (n / wall * 60),
         "unit": "minutes", "note": "goal: under 60"},
    ]
    for lesson, secs in sorted(per_lesson.items()):
        out.append({"group": group, "name": f"seconds per notebook, {lesson}", "value": statistics.mean(secs),
                    "unit": "s", "note": "one worker's time; two run at once"})
    out.append({"group": "mutation proof", "name": "exercises", "value": exercises, "unit": ""})
    out.append({"group": "mutation proof", "name": "mutants caught", "value": f"{caught} of {mutants}", "unit": ""})
    out.append({"group": "mutation proof", "name": "alternatives accepted", "value": f"{accepted} of {exercises}",
                "unit": ""})
    return out
