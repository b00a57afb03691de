"""What a grading run sets up before its first job (autograder/bytecode.py, sandbox_start.start with the
zygote, pipeline.lessons_to_warm): each piece shortens the wait for `make grade` and must not change
what is graded."""

import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from autograder import bytecode, pipeline, sandbox_start
from autograder.jobs import Job
from nbtools import ROOT


def _pyc(library):
    return {p.relative_to(library): p.read_bytes() for p in Path(library).rglob("*.pyc")}


def _library(tmp_path, name):
    library = tmp_path / name
    shutil.copytree(ROOT / "lib" / "encdec" / "checks" / "probes", library / "probes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return library


def test_bytecode_kept_by_one_run_serves_the_next_and_a_changed_module_is_compiled_again(tmp_path):
    kept = tmp_path / "kept"
    first = _library(tmp_path, "first")
    bytecode.compile_library(first, kept)
    compiled = _pyc(first)
    assert compiled and _pyc(kept) == compiled  # every module compiled, and kept

    second = tmp_path / "second"  # the next run's snapshot: a copy of the sources, which keeps their times
    shutil.copytree(first, second, ignore=shutil.ignore_patterns("__pycache__"))
    edited = second / "probes" / "edits.py"
    stat = edited.stat()
    edited.write_text(edited.read_text() + "\nEDITED = True\n")
    os.utime(edited, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    bytecode.compile_library(second, kept)
    now = _pyc(second)
    assert now.keys() == compiled.keys()
    changed = {path for path in now if now[path] != compiled[path]}
    assert changed == {Path("probes") / "__pycache__" / Path(importlib.util.cache_from_source("edits.py")).name}
    assert _pyc(kept) == now  # the kept bytecode follows the change


def test_bytecode_that_no_compile_changed_is_not_copied_back(tmp_path):
    kept = tmp_path / "kept"
    bytecode.compile_library(_library(tmp_path, "first"), kept)
    marker = kept / "probes" / "__pycache__" / "marker"
    marker.write_text("left alone")
    second = tmp_path / "second"
    shutil.copytree(tmp_path / "first", second, ignore=shutil.ignore_patterns("__pycache__"))
    bytecode.compile_library(second, kept)
    assert marker.read_text() == "left alone"


def _started():
    try:
        return sandbox_start.start(ROOT / "lib")
    except sandbox_start.Unavailable as exc:
        pytest.skip(f"the sandbox cannot run here: {exc}")


def test_the_zygote_starts_before_the_probe_and_is_ready_after_it(monkeypatch):
    _started()
    order = []
    probe, zygote = sandbox_start._probe, sandbox_start.start_zygote
    monkeypatch.setattr(sandbox_start, "_probe", lambda *a: order.append("probe") or probe(*a))
    monkeypatch.setattr(sandbox_start, "start_zygote", lambda *a: order.append("zygote") or zygote(*a))
    jail = sandbox_start.start(ROOT / "lib", modules=["numpy"])
    try:
        assert order == ["zygote", "probe"]
        assert jail.zygote and sandbox_start.zygote_ready(jail)
        assert jail.description.startswith("bubblewrap") and jail.description.endswith(sandbox_start.ZYGOTE_SAYS)
    finally:
        sandbox_start._ZYGOTES.pop(jail.zygote).stop()


def test_a_failed_probe_stops_the_zygote_it_started(monkeypatch):
    _started()
    before = set(sandbox_start._ZYGOTES)
    started = []
    zygote = sandbox_start.start_zygote
    monkeypatch.setattr(sandbox_start, "start_zygote", lambda *a: started.append(zygote(*a)) or started[-1])
    monkeypatch.setattr(sandbox_start, "_probe", lambda *a: "the probe failed (a test)")
    with pytest.raises(sandbox_start.Unavailable, match="the probe failed"):
        sandbox_start.start(ROOT / "lib", modules=["numpy"])
    assert started and set(sandbox_start._ZYGOTES) == before
    deadline = time.monotonic() + 10
    root = Path(started[0].zygote).parent
    while root.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not root.exists()


def _job(student, lesson):
    return Job(student, lesson, Path(f"/nowhere/{student}/{lesson}.ipynb"), raw=b"{}")


@pytest.mark.parametrize("jobs, warmed", [
    ([("me", "03_decoder")], ["03_decoder"]),  # make grade: one notebook
    ([("a", "03_decoder"), ("b", "03_decoder"), ("a", "10_capstone")], ["03_decoder"]),
    ([("a", "03_decoder"), ("a", "10_capstone")], []),
])
def test_the_feedback_pages_built_ahead(jobs, warmed):
    assert pipeline.lessons_to_warm([_job(*j) for j in jobs]) == warmed


def test_the_scratch_in_memory_is_removed_with_its_process_and_a_dead_ones_by_the_next(tmp_path):
    import subprocess
    import sys

    from autograder.jobs import scratch_in_memory
    gone = tmp_path / f"ag-scratch-{2 ** 22 + 12345}-abc"  # an id above pid_max's default: no such process
    gone.mkdir()
    (gone / "job").mkdir()
    mine = tmp_path / f"ag-scratch-{os.getpid()}-keep"  # a live process's (this one's)
    mine.mkdir()
    other = tmp_path / "ag-scratch-unnamed"  # no process id in its name: left alone
    other.mkdir()
    made = scratch_in_memory(tmp_path)
    assert made.parent == tmp_path and made.name.startswith(f"ag-scratch-{os.getpid()}-")
    assert not gone.exists() and mine.exists() and other.exists()

    code = ("import sys; from pathlib import Path; from autograder.jobs import scratch_in_memory; "
            f"print(scratch_in_memory(Path({str(tmp_path)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() and not Path(out.strip()).exists()  # removed when that process ended
