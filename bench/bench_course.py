"""Whole-course execution time: every solution notebook run top to bottom, demonstrations included,
one after the other in fresh kernels, as a student's Run All would. Goal: under 2 minutes on 2 cores.
"""

import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUP = "Whole course, every solution notebook run top to bottom (Run All, one kernel at a time)"


def run(quick=False):
    import nbformat
    from nbclient import NotebookClient

    lessons = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and p.name[:2].isdigit())
    if quick:
        lessons = lessons[:3]
    rows, total = [], 0.0
    for lesson in lessons:
        folder = ROOT / "solutions" / lesson
        nb = nbformat.read(folder / f"{lesson}.ipynb", as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
        seconds = time.perf_counter() - start
        total += seconds
        errors = [o.ename for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        rows.append({"group": GROUP, "name": lesson, "value": seconds, "unit": "s",
                     "note": f"raised {errors[0]}" if errors else ""})
    rows.append({"group": GROUP, "name": f"all {len(lessons)} lessons", "value": total, "unit": "s",
                 "note": "goal: under 120 s" if not quick else "quick: the first three lessons only"})
    return rows
