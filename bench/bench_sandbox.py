"""What the sandbox costs per graded notebook, measured side by side.

A small class (every lesson, the solution, a mutant, a correct alternative and the untouched
release, in turn) is graded with `python -m autograder autograde --jobs 2`, alternately with
SANDBOX=on and SANDBOX=off, `rounds` times each, so that both modes see the same machine at the
same time. The figure is the ratio of the mean seconds per notebook (one worker's time, from
timings.json), and of the wall times; the scores must be the same in both modes.
quick=True grades 2 students and 2 rounds; otherwise 4 students and 2 rounds. On a busy machine,
more rounds of fewer students (run(students=1, rounds=4)) keep the two modes closer in time.
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]


def kernel_start(repeats=8):
    """Seconds to start a kernel and run one cell that imports the course library, with and
    without the sandbox, alternating: the sandbox's fixed cost per notebook, apart from grading."""
    import os
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config
    sys.path.insert(0, str(ROOT))
    from autograder import sandbox
    library = ROOT / "lib"
    jail = sandbox.start(library)
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", sandbox.SANDBOX_ENV, "JUPYTER_PATH")}
    times = {True: [], False: []}
    with tempfile.TemporaryDirectory() as work:
        try:
            os.environ["PYTHONPATH"] = str(library)
            for i in range(repeats):
                for jailed in ((True, False) if i % 2 == 0 else (False, True)):
                    start = time.perf_counter()
                    cell = sandbox.Cell(jail, library) if jailed else None
                    for k in (sandbox.SANDBOX_ENV, "JUPYTER_PATH"):
                        os.environ.pop(k, None)
                        if cell:
                            os.environ[k] = str(cell.folder)
                    config = sandbox.configure_kernel(Config())
                    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy, encdec, encdec.checks")])
                    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
                    extra = {"kernel_name": config.Execute.kernel_name} if cell else {}
                    NotebookClient(nb, config=config, resources={"metadata": {"path": work}}, timeout=120, **extra).execute()
                    if cell:
                        cell.close()
                    times[jailed].append(time.perf_counter() - start)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
    return statistics.median(times[True]), statistics.median(times[False])


def run(quick=False, students=None, rounds=None):
    from grading_class import alternative_notebook, mutant
    from nbtools import autograde, course_copy, lessons, release, solution, write_submission

    n_students, rounds = (students or (2 if quick else 4)), (rounds or 2)
    kinds = ["solution", "mutant-1", "alternative", "untouched"]
    per_notebook = {"on": [], "off": []}
    wall = {"on": [], "off": []}
    scores = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for s in range(n_students):
            for j, lesson in enumerate(lessons()):
                kind = kinds[(s + j) % len(kinds)]
                nb = {"solution": lambda: solution(lesson), "untouched": lambda: release(lesson),
                      "mutant-1": lambda: mutant(lesson, 0)[0],
                      "alternative": lambda: alternative_notebook(lesson)[0]}[kind]()
                write_submission(tmp / "submitted", f"student{s:03d}", lesson, nb)
        root = course_copy(tmp / "course")
        for r in range(rounds):
            for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
                out = tmp / f"out-{mode}-{r}"
                start = time.perf_counter()
                code, rows, output = autograde(tmp / "submitted", out, jobs=2, root=root, timeout=6 * 3600,
                                               env={"SANDBOX": mode})
                wall[mode].append(time.perf_counter() - start)
                timings = json.loads((out / ".work" / "timings.json").read_text())
                per_notebook[mode] += [t["seconds"] for t in timings]
                scores.setdefault(mode, {k: v["score"] for k, v in rows.items()})
                states = {v.get("sandbox", "") for v in rows.values()}
                if mode == "on" and not all(s.startswith("bubblewrap") for s in states):
                    raise RuntimeError(f"the sandbox did not run: {states}\n{output[-2000:]}")
    n = len(scores["on"])
    start_on, start_off = kernel_start()
    on, off = statistics.mean(per_notebook["on"]), statistics.mean(per_notebook["off"])
    group = f"sandbox: {n_students} students x {len(lessons())} lessons, JOBS=2, {rounds} round(s) per mode, alternating"
    same = scores["on"] == scores["off"]
    return [
        {"group": group, "name": "seconds per notebook, sandbox on", "value": on, "unit": "s",
         "note": "one worker's time; two run at once"},
        {"group": group, "name": "seconds per notebook, sandbox off", "value": off, "unit": "s"},
        {"group": group, "name": "overhead per notebook", "value": 100 * (on / off - 1), "unit": "%",
         "note": f"goal: under 10; {n} notebooks per run; scores {'identical' if same else 'DIFFER'} in both modes"},
        {"group": group, "name": "kernel start and one cell, on / off (median of 8, alternating)",
         "value": start_on - start_off, "unit": "s", "note": f"{start_on:.2f} s / {start_off:.2f} s: the fixed cost per notebook"},
        {"group": group, "name": "wall time per run, on / off", "value": statistics.mean(wall["on"]) / statistics.mean(wall["off"]),
         "unit": "x", "note": f"{statistics.mean(wall['on']):.0f} s / {statistics.mean(wall['off']):.0f} s"},
    ]
