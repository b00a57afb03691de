"""Grading at scale, the sandbox's cost on it, the mutation proof, and what JOBS=N gives.

A synthetic class: every student submits every lesson, each notebook one of the solution, a
mutant (a different catalog mistake in every exercise), a correct alternative, or the untouched
release. It is graded through the real driver (`python -m autograder autograde --jobs 2`) in four
batches of a quarter of the students each, the sandbox on, off, off, on (so a drift in the
machine's load falls on both modes alike); the rows give the throughput in each mode, the
sandbox's overhead per notebook, the seconds per notebook for each lesson, and whether every mutant
lost its exercise's points and every alternative earned full marks. Then ten students of the class are
graded again with JOBS=1 and JOBS=2, in the sandbox, for the scaling model in docs/large-classes.md.
quick=True grades 8 students instead of 100.
"""

import json
import os
import shutil
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

    n_students = 8 if quick else 100
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
        quarter = n_students // 4
        batches = [[f"student{s:03d}" for s in range(b * quarter, (b + 1) * quarter)] for b in range(4)]
        modes = ["on", "off", "off", "on"]
        rows, timings, wall, count = {}, [], {"on": 0.0, "off": 0.0}, {"on": 0, "off": 0}
        codes, batch_seconds = [], []
        for b, (students, mode) in enumerate(zip(batches, modes)):
            batch = tmp / f"batch{b}"
            for student in students:
                (batch / student).parent.mkdir(parents=True, exist_ok=True)
                (tmp / "submitted" / student).rename(batch / student)
            start = time.perf_counter()
            code, batch_rows, output = autograde(batch, tmp / f"out{b}", jobs=2, root=root, timeout=6 * 3600,
                                                 env={"SANDBOX": mode})
            seconds = time.perf_counter() - start
            wall[mode] += seconds
            batch_seconds.append((mode, seconds / (len(students) * len(lessons()))))
            count[mode] += len(students) * len(lessons())
            codes.append(code)
            rows.update(batch_rows)
            timings += [dict(t, sandbox=mode) for t in
                        json.loads((tmp / f"out{b}" / ".work" / "timings.json").read_text())]
        scaling, few = {}, batches[0][:10]
        for student in few:
            shutil.copytree(tmp / "batch0" / student, tmp / "scaling" / student)
        for jobs in (1, 2):
            start = time.perf_counter()
            autograde(tmp / "scaling", tmp / f"scaling{jobs}", jobs=jobs, root=root, timeout=6 * 3600,
                      env={"SANDBOX": "on"})
            scaling[jobs] = (time.perf_counter() - start) / (len(few) * len(lessons()))

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
    per_notebook = {mode: wall[mode] / count[mode] for mode in wall}
    sandbox = sorted({r.get("sandbox", "").split(":")[0] for r in rows.values()})
    out = [
        {"group": group, "name": "student code ran in", "value": "; ".join(sandbox)[:90], "unit": "",
         "note": "a quarter of the class per batch, the sandbox on, off, off, on"},
        {"group": group, "name": "notebooks graded", "value": n, "unit": "notebooks",
         "note": f"exit codes {codes}; {len(wrong_rows)} rows differ from the checkers' own scores"},
        {"group": group, "name": "wall time, whole class", "value": sum(wall.values()) / 60, "unit": "minutes"},
        {"group": group, "name": "seconds per notebook, sandbox on", "value": per_notebook["on"], "unit": "s",
         "note": f"{count['on']} notebooks, wall time / notebooks"},
        {"group": group, "name": "seconds per notebook, sandbox off", "value": per_notebook["off"], "unit": "s",
         "note": f"{count['off']} notebooks, SANDBOX=off"},
        {"group": group, "name": "sandbox overhead per notebook",
         "value": 100 * (per_notebook["on"] / per_notebook["off"] - 1), "unit": "%", "note": "goal: under 10"},
        {"group": group, "name": "100 students x 10 lessons, projected, sandbox on",
         "value": 1000 * per_notebook["on"] / 60, "unit": "minutes", "note": "goal: under 60"},
    ]
    for b, (mode, secs) in enumerate(batch_seconds):
        out.append({"group": group, "name": f"seconds per notebook, batch {b + 1}, sandbox {mode}", "value": secs,
                    "unit": "s", "note": "the spread between batches of one mode is the machine's noise"})
    for lesson in lessons():
        for mode in ("on", "off"):
            secs = [t["seconds"] for t in timings if t["assignment"] == lesson and t["sandbox"] == mode]
            if secs:
                out.append({"group": group, "name": f"seconds per notebook, {lesson}, sandbox {mode}",
                            "value": statistics.mean(secs), "unit": "s", "note": "one worker's time; two run at once"})
    scale_group = f"grading: JOBS=N on {os.cpu_count()} cores, {len(few)} students x {len(lessons())} lessons, sandbox on"
    for jobs, secs in scaling.items():
        out.append({"group": scale_group, "name": f"seconds per notebook, JOBS={jobs}", "value": secs, "unit": "s",
                    "note": "wall time / notebooks"})
    out.append({"group": scale_group, "name": "speed-up of JOBS=2 over JOBS=1", "value": scaling[1] / scaling[2],
                "unit": "x"})
    out.append({"group": "mutation proof", "name": "exercises", "value": exercises, "unit": ""})
    out.append({"group": "mutation proof", "name": "mutants caught", "value": f"{caught} of {mutants}", "unit": ""})
    out.append({"group": "mutation proof", "name": "alternatives accepted", "value": f"{accepted} of {exercises}",
                "unit": ""})
    return out
