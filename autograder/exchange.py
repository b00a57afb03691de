"""The course's side of nbgrader's exchange, for a class on a JupyterHub (tools/class/).

    publish           lessons of course/ into the exchange, where students fetch them
    collect           each student's latest submission from the exchange into autograder/submitted/
    release_feedback  the feedback pages back into the exchange, where each student fetches their own

Each runs nbgrader's own command from autograder/ (nbgrader reads nbgrader_config.py from there; its
exchange is CLASS_DIR/exchange). Collecting follows nbgrader's rules: the latest submission of a
lesson is the one graded, with its timestamp. Every submission a student made stays in the
exchange's inbound folder, and every one that was graded also in autograder/attempts/.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .course import HERE

# nbgrader's receipts of a submission: when it was made, and the secret that names its feedback in
# the exchange (nbgrader's release_feedback reads both beside the feedback page).
RECEIPTS = ("timestamp.txt", "submission_secret.txt")
COURSE_ID = "encdec"  # nbgrader_config.py's


def exchange_root():
    return Path(os.environ.get("CLASS_DIR", "/srv/encdec-class")) / "exchange"


def nbgrader(*args):
    """Run `nbgrader ARGS` from autograder/; returns (exit code, what it printed)."""
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([os.path.join(bin_dir, "nbgrader"), *args], cwd=HERE, env=env,
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def _each(command, lessons, *extra):
    failed = 0
    for lesson in lessons:
        code, output = nbgrader(command, lesson, *extra)
        for line in output.splitlines():
            if any(f"{word}]" in line for word in ("INFO", "WARNING", "ERROR")) and "Loading config" not in line:
                print(f"  {line.split('] ', 1)[-1]}" if "] " in line else f"  {line}")
        if code:
            failed += 1
            tail = "\n".join(f"    {line}" for line in output.strip().splitlines()[-5:])
            print(f"error: nbgrader {command} {lesson} failed (exit {code}):\n{tail}", file=sys.stderr)
    return 1 if failed else 0


def require_exchange():
    root = exchange_root()
    if not root.is_dir():
        raise SystemExit(f"error: no nbgrader exchange at {root}: start the class with make class "
                         "(or set CLASS_DIR to the folder make class used)")


def publish(lessons):
    """Release lessons of course/ into the exchange (nbgrader release_assignment --force)."""
    require_exchange()
    return _each("release_assignment", lessons, "--force")


def collect(lessons):
    """Each student's latest submission of each lesson into autograder/submitted/ (nbgrader collect
    --update: a newer submission replaces the one collected before; both stay in the exchange)."""
    require_exchange()
    inbound = exchange_root() / COURSE_ID / "inbound"
    submitted = [lesson for lesson in lessons if any(inbound.glob(f"*+{lesson}+*"))]
    if not submitted:
        print(f"nothing submitted in {inbound} for {', '.join(lessons)}")
        return 0
    return _each("collect", submitted, "--update")


def release_feedback(lessons):
    """Every feedback page of these lessons into the exchange, named by its submission's secret,
    so each student fetches only their own (nbgrader release_feedback)."""
    require_exchange()
    failed = 0
    for lesson in lessons:
        pages = sorted((HERE / "feedback").glob(f"*/{lesson}/*.html"))
        without = sorted({p.parent.parent.name for p in pages
                          if not all((p.parent / name).is_file() for name in RECEIPTS)})
        if without:  # not submitted through the exchange: nbgrader cannot address their page
            print(f"  {lesson}: not released (no submission in the exchange to return it to): {', '.join(without)}")
        extra = (f"--CourseDirectory.student_id_exclude={','.join(without)}",) if without else ()
        failed |= _each("release_feedback", [lesson], *extra)
    return failed


def keep_receipts(submission_folder, feedback_folder):
    """Put nbgrader's receipts of a submission beside its feedback page, so that release_feedback
    can address the page to the submission it was made for."""
    if submission_folder is None:
        return
    for name in RECEIPTS:
        src = Path(submission_folder) / name
        if src.is_file() and Path(feedback_folder).is_dir():
            shutil.copyfile(src, Path(feedback_folder) / name)
