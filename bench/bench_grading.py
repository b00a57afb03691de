"""Grading at scale, the sandbox's cost on it, the mutation proof, what JOBS=N gives, where a notebook's
time goes on the fast and the classic path side by side, `make grade` per lesson, and the cost of a
class on 1, 2 and 4 Dask workers.

GRADING_BENCH=paths,lessons,dask (any of scale, paths, lessons, dask) runs only those parts; all by
default. The parts after the first:
- paths: the same class (quick: 2 students x 2 lessons; else 10 x every lesson) graded with JOBS=2 in the
  sandbox on the classic path (GRADE_PATH=classic: as graded before) and the fast one, alternating
  classic, fast, fast, classic; seconds per notebook = wall time / notebooks of each run, and the mean
  seconds of each phase per notebook (timings.json, autograder/phases.py), with the sandbox's start
  and the imports (numpy, encdec, torch) timed on their own, in the sandbox;
- lessons: `python -m autograder self --lesson NN` (make grade) for each lesson: the first run (it starts
  the grader that `make grade` keeps ready and makes the lesson's template), the next (graded by that
  grader: the usual run), one in the command's own process (GRADE_SERVER=off) and the first run after
  `make lab`'s warm-up, side by side;
- dask: a class graded through a `dask scheduler` and 1, 2 and 4 `dask worker --nthreads 1` on this
  machine (after one run that warms the workers), seconds per 1,000 notebooks, and the model for N.

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
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]


def run(quick=False):
    parts = [p for p in os.environ.get("GRADING_BENCH", "scale,paths,lessons,dask").split(",") if p]
    rows = []
    for name, part in (("scale", at_scale), ("paths", paths), ("lessons", lessons_self), ("dask", dask_workers)):
        if name in parts:
            rows += part(quick)
    return rows


def load():
    return os.uname().nodename + ": load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def at_scale(quick=False):
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


# -- the fast and the classic path, side by side ------------------------------------------------------
def _small_class(tmp, n_students, chosen):
    from grading_class import alternative_notebook, mutant
    from nbtools import release, solution, write_submission
    kinds = ["solution", "mutant-1", "alternative", "untouched"]
    for s in range(n_students):
        for j, lesson in enumerate(chosen):
            kind = kinds[(s + j) % len(kinds)]
            nb = {"solution": lambda: solution(lesson), "untouched": lambda: release(lesson),
                  "mutant-1": lambda: mutant(lesson, 0)[0], "alternative": lambda: alternative_notebook(lesson)[0]}[kind]()
            write_submission(tmp / "submitted", f"student{s:03d}", lesson, nb)
    return tmp / "submitted"


def _sandbox_micro(library, repeats=3):
    """Median wall seconds of `python -c CODE` through the jail (the sandbox) for a few CODEs, and of plain
    `python -c pass` outside it."""
    import subprocess
    sys.path.insert(0, str(ROOT))
    from autograder import sandbox
    jail = sandbox.start(library)
    found = {}
    for label, code in (("python, no sandbox", None), ("sandbox start (bubblewrap + python)", "pass"),
                        ("import ipykernel (in the sandbox)", "import ipykernel.kernelapp"),
                        ("import numpy (in the sandbox)", "import numpy"),
                        ("import encdec, encdec.checks (in the sandbox)", "import encdec, encdec.checks"),
                        ("import matplotlib.pyplot (in the sandbox)", "import matplotlib.pyplot"),
                        ("import torch (in the sandbox)", "import torch")):
        times = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as work:
                cell = sandbox.Cell(jail, library)
                argv = [sys.executable, "-c", "pass"] if code is None else \
                    [sys.executable, jail.launcher, str(cell.folder / "spec.json"), sys.executable, "-c", code]
                start = time.perf_counter()
                subprocess.run(argv, cwd=work, capture_output=True, env={**os.environ, "PYTHONPATH": str(library)})
                times.append(time.perf_counter() - start)
                cell.close()
        found[label] = statistics.median(times)
    return found


def paths(quick=False):
    from nbtools import autograde, course_copy, lessons
    chosen = lessons()[:2] if quick else lessons()
    n_students = 2 if quick else int(os.environ.get("GRADING_BENCH_STUDENTS", "10"))
    order = ["classic", "fast", "fast", "classic"]
    wall, phases, seconds, scores, loads = {"classic": [], "fast": []}, {"classic": {}, "fast": {}}, \
        {"classic": [], "fast": []}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        submitted = _small_class(tmp, n_students, chosen)
        root = course_copy(tmp / "course")
        n = n_students * len(chosen)
        for k, path in enumerate(order):
            out = tmp / f"out-{k}-{path}"
            loads.append(load())
            start = time.perf_counter()
            code, rows, output = autograde(submitted, out, jobs=2, root=root, timeout=6 * 3600,
                                           env={"SANDBOX": "on", "GRADE_PATH": path})
            wall[path].append((time.perf_counter() - start) / n)
            scores.setdefault(path, {key: r["score"] for key, r in rows.items()})
            for t in json.loads((out / ".work" / "timings.json").read_text()):
                seconds[path].append(t["seconds"])
                for name, value in t.get("phases", {}).items():
                    phases[path].setdefault(name, []).append(value)
        micro = _sandbox_micro(root / "lib")
    group = (f"grading, the classic and the fast path side by side: {n_students} students x {len(chosen)} lessons, "
             f"JOBS=2, sandbox on, runs classic, fast, fast, classic")
    same = scores["classic"] == scores["fast"]
    out = [{"group": group, "name": f"seconds per notebook, {path} path", "value": statistics.mean(wall[path]),
            "unit": "s", "note": f"wall time / notebooks, mean of 2 runs ({', '.join(f'{w:.2f}' for w in wall[path])})"}
           for path in ("classic", "fast")]
    out.append({"group": group, "name": "speed-up of the fast path", "unit": "x",
                "value": statistics.mean(wall["classic"]) / statistics.mean(wall["fast"]),
                "note": f"goal: 2 (0.9 s per notebook); scores {'identical' if same else 'DIFFER'} on both paths"})
    out.append({"group": group, "name": "machine load during the runs", "value": "; ".join(loads)[:200], "unit": ""})
    breakdown = f"grading: where a notebook's time goes (mean seconds per notebook, one job's own time; two run at once)"
    names = list(dict.fromkeys(list(phases["classic"]) + list(phases["fast"])))
    for name in names:
        c, f = phases["classic"].get(name, [0.0]), phases["fast"].get(name, [0.0])
        out.append({"group": breakdown, "name": name, "value": statistics.mean(f), "unit": "s",
                    "note": f"fast path; classic {statistics.mean(c):.2f} s"})
    out.append({"group": breakdown, "name": "a job in all (its row's seconds)", "value": statistics.mean(seconds["fast"]),
                "unit": "s", "note": f"fast path; classic {statistics.mean(seconds['classic']):.2f} s"})
    for name, value in micro.items():
        out.append({"group": breakdown, "name": name, "value": value, "unit": "s",
                    "note": "median of 3, wall time, on its own (what the kernel start and the setup cell hold)"})
    return out


# -- make grade, per lesson ---------------------------------------------------------------------------
def lessons_self(quick=False):
    """Each lesson graded three times: the first run, which starts the grader `make grade` keeps ready
    (autograder/self_server.py) and makes the lesson's template; the next run, graded by that grader (the
    row's value: what a self-learner waits for after each attempt); and a run in the command's own process
    (GRADE_SERVER=off), as every run was before the grader was kept ready; then, the grader stopped, the
    first run after `make lab`'s warm-up (`self --warm --keep-while PID`). The grader is stopped between
    lessons, so that each lesson's first run starts one."""
    import subprocess
    from nbtools import course_copy, lessons
    chosen = lessons()[:2] if quick else lessons()
    out = []
    group = "make grade LESSON=NN (python -m autograder self), seconds, sandbox auto, GRADE_PATH=fast"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "GRADE_SERVER": "on"}
    with tempfile.TemporaryDirectory() as tmp:
        root = course_copy(Path(tmp) / "course")
        grade = [sys.executable, "-m", "autograder", "self", "--out", str(Path(tmp) / "self")]

        def timed(lesson, **extra):
            start = time.perf_counter()
            subprocess.run(grade + ["--lesson", lesson[:2]], cwd=root, capture_output=True, text=True,
                           env={**env, **extra})
            return time.perf_counter() - start
        def after_lab(lesson):
            """The first run after `make lab`'s warm-up (a sleep stands for the lab), its zygote given 8 s."""
            lab = subprocess.Popen(["sleep", "600"])
            try:
                subprocess.run(grade + ["--warm", "--keep-while", str(lab.pid)], cwd=root, capture_output=True, env=env)
                time.sleep(8)
                return timed(lesson)
            finally:
                lab.kill()
                subprocess.run(grade + ["--stop"], cwd=root, capture_output=True, env=env)
        try:
            for lesson in chosen:
                before = load()
                first, warm, here = timed(lesson), timed(lesson), timed(lesson, GRADE_SERVER="off")
                subprocess.run(grade + ["--stop"], cwd=root, capture_output=True, env=env)
                lab = after_lab(lesson)
                out.append({"group": group, "name": lesson, "value": warm, "unit": "s",
                            "note": f"by the grader the first run started; the first run after make lab's warm-up "
                                    f"{lab:.1f} s; with no lab, the first run {first:.1f} s (it starts the grader "
                                    f"and makes the lesson's template); in the command's own process "
                                    f"(GRADE_SERVER=off) {here:.1f} s; goal: 5 s on a quiet machine; {before}"})
        finally:
            subprocess.run(grade + ["--stop"], cwd=root, capture_output=True, env=env)
    return out


# -- a class on Dask workers --------------------------------------------------------------------------
def dask_workers(quick=False, counts=(1, 2, 4)):
    import signal
    import socket
    import subprocess
    from nbtools import autograde, course_copy, lessons
    chosen = lessons()[:2] if quick else lessons()
    n_students = 2 if quick else 3
    bin_dir = Path(sys.executable).parent
    per_notebook, loads = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        submitted = _small_class(tmp, n_students, chosen)
        root = course_copy(tmp / "course")
        n = n_students * len(chosen)
        env = {**os.environ, "PYTHONPATH": str(root), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        for count in counts:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            procs = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                       "--no-dashboard"], cwd=root, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)]
            time.sleep(3)
            for w in range(count):
                folder = tmp / f"w{count}-{w}"
                folder.mkdir()
                procs.append(subprocess.Popen([str(bin_dir / "dask"), "worker", f"tcp://127.0.0.1:{port}", "--nthreads",
                                               "1", "--no-dashboard"], cwd=root, env={**env, "AUTOGRADER_WORKER_DIR": str(folder)},
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            try:
                time.sleep(5)
                address = f"tcp://127.0.0.1:{port}"
                autograde(submitted, tmp / f"warm-{count}", extra=["--dask", address], root=root, timeout=6 * 3600)
                loads[count] = load()
                start = time.perf_counter()
                code, rows, output = autograde(submitted, tmp / f"out-{count}", extra=["--dask", address], root=root,
                                               timeout=6 * 3600)
                per_notebook[count] = (time.perf_counter() - start) / n
                if len(rows) != n:
                    raise RuntimeError(f"{count} workers: {len(rows)} rows of {n}\n{output[-2000:]}")
            finally:
                for proc in procs:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait()
    cores = os.cpu_count()
    group = (f"grading on Dask: {n_students} students x {len(chosen)} lessons, `dask worker --nthreads 1` on this "
             f"machine ({cores} cores), after a run that warms the workers")
    out = []
    for count, secs in per_notebook.items():
        note = f"{secs:.2f} s per notebook; {loads[count]}"
        if count > cores:
            note += f"; {count} workers on {cores} cores: oversubscribed"
        out.append({"group": group, "name": f"seconds per 1,000 notebooks, {count} worker(s)", "value": 1000 * secs,
                    "unit": "s", "note": note})
    one = per_notebook[counts[0]]
    out.append({"group": group, "name": "model: seconds per 1,000 notebooks on N workers, one core each",
                "value": f"1000 x {one:.2f} / N", "unit": "",
                "note": "while the instructor's process keeps up (it records every row: see docs/large-classes.md)"})
    return out
