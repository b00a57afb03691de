"""Helpers for tests that open, edit, run and grade the course notebooks."""

import csv
import importlib
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, COURSE = ROOT / "solutions", ROOT / "course"


def lessons(every=False):
    """Every lesson in solutions/ (COURSE_LESSONS=01,02 narrows it, e.g. while one is being written,
    or `pytest -m lesson05`; every=True ignores that)."""
    import os
    only = [] if every else [x for x in os.environ.get("COURSE_LESSONS", "").split(",") if x]
    return sorted(p.name for p in SOLUTIONS.iterdir()
                  if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name) and (p / f"{p.name}.ipynb").exists()
                  and (not only or p.name[:2] in only))


def read(path):
    return nbformat.read(str(path), as_version=4)


def solution(lesson):
    return read(SOLUTIONS / lesson / f"{lesson}.ipynb")


def release(lesson):
    return read(COURSE / lesson / f"{lesson}.ipynb")


def checks_module(lesson):
    return importlib.import_module(f"encdec.checks.lesson{lesson[:2]}")


def cell(nb, grade_id):
    for c in nb.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            return c
    raise KeyError(f"no cell with grade_id {grade_id!r}")


def graded_cells(nb):
    return [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def injection_source(exercise, impl):
    """Source that, appended to the exercise's answer cell, replaces the answer with `impl`."""
    src = textwrap.dedent(inspect.getsource(impl))
    lines = src.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def "))
    src = "\n".join(lines[start:])  # without the decorator, however many lines it spans
    module = sys.modules[impl.__module__]
    names = set()
    codes = [impl.__code__]
    while codes:
        code = codes.pop()
        names |= set(code.co_names)
        codes += [c for c in code.co_consts if hasattr(c, "co_names")]
    imports = sorted(n for n in names if n in vars(module) and n != exercise.name and n != impl.__name__
                     and not n.startswith("__"))
    lines = [f"from {module.__name__} import {n}" for n in imports] + [src]
    if exercise.method:
        lines.append(f"{exercise.name}.{exercise.method} = {impl.__name__}")
    return "\n".join(lines)


def inject(nb, exercise, impl):
    """A copy of nb whose answer to `exercise` is `impl` (a catalog mistake or a variant)."""
    nb = nbformat.from_dict(nb)
    c = cell(nb, exercise.answer_cell)
    c.source = c.source + "\n\n# --- replaced answer ---\n" + injection_source(exercise, impl)
    return nb


def set_answer(nb, grade_id, source):
    nb = nbformat.from_dict(nb)
    cell(nb, grade_id).source = source
    return nb


def write_submission(submitted, student, lesson, nb):
    path = Path(submitted) / student / lesson / f"{lesson}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, (str, bytes)):
        path.write_bytes(nb if isinstance(nb, bytes) else nb.encode())
    else:
        nbformat.write(nb, str(path))
    return path


def course_copy(dest):
    """A private copy of the course's grading side (autograder code, lib/, solutions/, course/):
    grading runs there, so nothing a test submission does can touch the repository."""
    import shutil
    dest = Path(dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".work", "submitted", "autograded",
                                    "feedback", "gradebook.db", "grades.csv", "report.md", "attempts",
                                    "students.csv", "assignments.csv")
    for folder in ("autograder", "lib", "solutions", "course"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    return dest


_SANDBOX_MISSING = []


def sandbox_missing():
    """Why the grading sandbox cannot run on this machine (bubblewrap missing or unusable), or None.
    Probed once per test process, as `make autograde` probes it."""
    if not _SANDBOX_MISSING:
        from autograder import sandbox
        try:
            sandbox.start(ROOT / "lib")
            _SANDBOX_MISSING.append(None)
        except sandbox.Unavailable as exc:
            _SANDBOX_MISSING.append(str(exc))
    return _SANDBOX_MISSING[0]


def require_sandbox(env=None):
    """Skip the calling test (or fixture) when grading would need the sandbox and it cannot run here:
    `make autograde` grades only in the sandbox. With SANDBOX=off the tests grade without it, knowingly."""
    import os

    import pytest
    if {**os.environ, **(env or {})}.get("SANDBOX") == "off":
        return
    why = sandbox_missing()
    if why:
        pytest.skip(f"grading needs the sandbox, and it cannot run here: {why}. "
                    "As root, make test installs bubblewrap itself.")


def autograde(submitted, out, jobs=2, extra=(), timeout=3000, root=ROOT, env=None):
    """Run the real grading driver; returns (exit code, rows as dicts keyed by (student, lesson), output).
    Skips the caller where the sandbox it grades in cannot run (require_sandbox)."""
    import os
    require_sandbox(env)
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde",
                           "--submitted", str(submitted), "--out", str(out), "--jobs", str(jobs), *extra],
                          cwd=root, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    rows = {}
    csv_path = Path(out) / "grades.csv"
    if csv_path.exists():
        with open(csv_path) as f:
            for row in csv.DictReader(f):
                rows[(row["student_id"], row["assignment"])] = row
    return proc.returncode, rows, proc.stdout + proc.stderr


def cell_score(row, lesson, grade_id):
    return float(row[f"{lesson[:2]}:{grade_id}"])
