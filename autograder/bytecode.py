"""The course library's bytecode, compiled before the sandbox's kernels import it, and kept from run to
run.

    compile_library(library, kept=work / "bytecode")

Sandboxed kernels cannot write their own .pyc files into the read-only library, so the grader compiles
it first. Each run's snapshot of the library (integrity.snapshot_course) is a fresh copy without
bytecode, which would take all of its modules' compiling again (about 0.4 s on two cores, before the
kernel zygote can start its imports). The compiled files are kept in the run's work folder, outside
every sandbox, and copied into the next snapshot before it is compiled: compileall then compiles only
the modules whose source changed (by the same test Python's imports make: the source's size and
modification time, which the snapshot's copy keeps), and every kernel's import checks them again.
Bytecode is kept only from a compile, never from a snapshot a kernel has run on.
"""

import compileall
import shutil
from pathlib import Path

CACHE = "__pycache__"


def _copy_caches(source, target):
    for folder in Path(source).rglob(CACHE):
        shutil.copytree(folder, Path(target) / folder.relative_to(source), dirs_exist_ok=True)


def compile_library(library, kept=None):
    """Compile every module of `library` that lacks current bytecode; with `kept` (a folder of the grader's
    own), start from the bytecode kept there by the last run, and keep this run's there."""
    library = Path(library)
    if kept is not None and Path(kept).is_dir():
        _copy_caches(kept, library)
    before = {path: path.stat().st_mtime_ns for path in library.rglob("*.pyc")}
    compileall.compile_dir(str(library), quiet=1)
    after = {path: path.stat().st_mtime_ns for path in library.rglob("*.pyc")}
    if kept is not None and after != before:
        shutil.rmtree(kept, ignore_errors=True)
        _copy_caches(library, kept)
