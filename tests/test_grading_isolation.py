"""Students share nothing: each notebook gets a fresh interpreter, a fresh scratch folder and its own
sandbox, even when the grader's process server is warmed (GRADE_PATH=fast, autograder/warm.py), one
run grades everyone, and each kernel is forked from the run's zygote (autograder/zygote.py), which
has NumPy, encdec and the checkers imported already. A student who changes numpy, encdec, builtins
and sys.modules (by names worked out at run time, which the static audit cannot follow) is graded
just before another by the same grading process; the second sees none of it and keeps full marks."""

import json
import uuid

import nbformat
import pytest

from grading_class import FIRST, full_marks
from nbtools import autograde, cell_score, course_copy, solution, write_submission

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]
TOKEN = "leak" + uuid.uuid4().hex[:8]

POLLUTER = f"""
import importlib as _il, sys as _sys, types as _types
def _name(*parts):
    return "".join(parts)
for _module in (_name("num", "py"), _name("enc", "dec"), _name("built", "ins")):
    setattr(_il.import_module(_module), "{TOKEN}", "set by the student graded before")
_sys.modules["{TOKEN}"] = _types.ModuleType("{TOKEN}")
open("{TOKEN}.txt", "w").write("left behind")
"""

OBSERVER = f"""
import builtins, json, os, sys
import numpy, encdec
print("SEEN " + json.dumps([hasattr(numpy, "{TOKEN}"), hasattr(encdec, "{TOKEN}"), hasattr(builtins, "{TOKEN}"),
                            "{TOKEN}" in sys.modules, os.path.exists("{TOKEN}.txt"),
                            any("{TOKEN}" in name for name in os.listdir("/tmp"))]))
print("PROC " + json.dumps(sorted(os.listdir("/proc"))))
"""


def test_a_module_level_change_is_invisible_to_the_next_student(tmp_path):
    polluter = solution(FIRST)
    polluter.cells.append(nbformat.v4.new_code_cell(POLLUTER))
    observer = solution(FIRST)
    observer.cells.append(nbformat.v4.new_code_cell(OBSERVER))
    write_submission(tmp_path / "submitted", "a-polluter", FIRST, polluter)
    write_submission(tmp_path / "submitted", "b-observer", FIRST, observer)
    root = course_copy(tmp_path / "course")
    code, rows, output = autograde(tmp_path / "submitted", tmp_path / "out", jobs=1, root=root)
    assert ("b-observer", FIRST) in rows, output[-3000:]
    graded = nbformat.read(str(tmp_path / "out" / "autograded" / "b-observer" / FIRST / f"{FIRST}.ipynb"), as_version=4)
    seen = [line for c in graded.cells if c.cell_type == "code" for o in c.get("outputs", [])
            for line in o.get("text", "").splitlines() if line.startswith("SEEN ")]
    assert seen == ["SEEN " + json.dumps([False] * 6)], seen
    # the kernel was forked by the run's zygote (autograder/zygote.py), whose kernels' /proc holds no
    # process at all, not a bubblewrap of its own (whose /proc holds its namespace's processes)
    proc = [json.loads(line[5:]) for c in graded.cells if c.cell_type == "code" for o in c.get("outputs", [])
            for line in o.get("text", "").splitlines() if line.startswith("PROC ")]
    assert proc and "cpuinfo" in proc[0] and not any(name.isdigit() for name in proc[0]), proc
    row = rows[("b-observer", FIRST)]
    assert row["status"] == "graded"
    for grade_id, points in full_marks(solution(FIRST)).items():
        assert cell_score(row, FIRST, grade_id) == points
    timings = json.loads((tmp_path / "out" / ".work" / "timings.json").read_text())
    assert [t["student_id"] for t in timings] == ["a-polluter", "b-observer"]  # one after the other, in one run
