"""The course's side of nbgrader's exchange, for a class on a JupyterHub (tools/class/).

    publish           lessons of course/ into the exchange, where students fetch them
    collect           each student's latest submission from the exchange into autograder/submitted/
    release_feedback  the feedback pages back into the exchange, where each student fetches their own

Each runs nbgrader's own command from autograder/ (nbgrader reads nbgrader_config.py from there; its
exchange is CLASS_DIR/exchange). Collecting follows nbgrader's rules: the latest submission of a
lesson is the one graded, with its timestamp. Every submission a student made stays in the
exchange: in its inbound folder, or in `held/` beside it when it was held back (below); and every
one that was graded also in autograder/attempts/.

Before collecting, a submission is held back, and named, when its folder belongs to another user
than the student it names (nbgrader's `submit --student=someone-else`), when the time in its name
is earlier than the folder itself (a backdated submission), or when it holds a symbolic link (which
collect, run by the course's owner, would follow: a link to the owner's files), since the inbound
folder is writable by every student. The instructor may move a held submission back into inbound to have it collected.
"""

import os
import pwd
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from . import nbgrader_glue
from .course import HERE

# nbgrader's receipts of a submission: when it was made, and the secret that names its feedback in
# the exchange (nbgrader's release_feedback reads both beside the feedback page).
RECEIPTS = ("timestamp.txt", "submission_secret.txt")
# A submission's folder is made within moments of the time in its name; more than this earlier is backdated.
BACKDATED = timedelta(minutes=2)


def course_folder():
    """The course's folder in the exchange (nbgrader_config.py's Exchange.root and course id)."""
    config = nbgrader_glue.load_config()
    return Path(config.Exchange.root) / config.CourseDirectory.course_id


def run_nbgrader(*args):
    """Run `nbgrader ARGS` from autograder/; returns (exit code, what it printed)."""
    nbgrader_glue.put_venv_on_path()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "nbgrader"), *args], cwd=HERE,
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def run_per_lesson(command, lessons, *extra):
    """`nbgrader COMMAND LESSON EXTRA` for each lesson, saying what nbgrader said; 1 if one failed."""
    failed = 0
    for lesson in lessons:
        code, output = run_nbgrader(command, lesson, *extra)
        for line in output.splitlines():
            if line.strip() and "Loading config" not in line:
                print(f"  {line.split('] ', 1)[-1]}" if line.startswith("[") and "] " in line else f"  {line}")
        if code:
            failed += 1
            print(f"error: nbgrader {command} {lesson} failed (exit {code})", file=sys.stderr)
    return 1 if failed else 0


def require_exchange():
    root = course_folder().parent
    if not root.is_dir():
        raise SystemExit(f"error: no nbgrader exchange at {root}: start the class with make class "
                         "(or set CLASS_DIR to the folder make class used)")


def publish(lessons):
    """Release lessons of course/ into the exchange (nbgrader release_assignment --force)."""
    require_exchange()
    return run_per_lesson("release_assignment", lessons, "--force")


def collect(lessons):
    """Each student's latest submission of each lesson into autograder/submitted/ (nbgrader collect
    --update: a newer submission replaces the one collected before; both stay in the exchange),
    after holding back the submissions made in another's name or backdated."""
    require_exchange()
    inbound = course_folder() / "inbound"
    if not inbound.is_dir():
        print(f"nothing submitted: {inbound} does not exist yet (no lesson released: make class, or publish)")
        return 0
    if not os.access(inbound, os.R_OK | os.X_OK):
        raise SystemExit(f"error: cannot list {inbound}: collect as the course folder's owner, who released the lessons")
    for note in hold_back_forged(inbound):
        print(f"  held back: {note}")
    submitted = [lesson for lesson in lessons if any(inbound.glob(f"*+{lesson}+*"))]
    if not submitted:
        print(f"nothing submitted in {inbound} for {', '.join(lessons)}")
        return 0
    return run_per_lesson("collect", submitted, "--update")


def hold_back_forged(inbound):
    """Move out of `inbound` (into `held/` beside it) each submission whose folder belongs to another
    user than the student it names (the collector's own uploads excepted), or whose name gives a time
    earlier than the folder was made. Returns a note for each."""
    from nbgrader.utils import parse_utc
    collector = pwd.getpwuid(os.geteuid()).pw_name
    notes = []
    for folder in sorted(inbound.iterdir()):
        parts = folder.name.rsplit("+", 3)
        if len(parts) < 3 or not folder.is_dir():
            continue
        student, stamp = parts[0], parts[2]
        info = folder.stat()
        try:
            owner = pwd.getpwuid(info.st_uid).pw_name
        except KeyError:
            owner = f"uid {info.st_uid}"
        try:
            named = parse_utc(stamp)  # naive, in UTC
        except (ValueError, TypeError, OverflowError):
            named = None
        made = datetime.fromtimestamp(info.st_ctime, tz=timezone.utc).replace(tzinfo=None)
        links = [str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_symlink()]
        reason = None
        if links:  # nbgrader's collect, run by the course's owner, would copy what a link points to
            reason = f"it holds links ({', '.join(links[:3])}), which nbgrader's submit never makes"
        elif owner not in (student, collector):
            reason = f"submitted in the name of {student} by {owner}"
        elif named is None:
            reason = f"its name gives no time ({stamp!r})"
        elif named < made - BACKDATED:
            reason = f"backdated: named {stamp}, made {made:%Y-%m-%d %H:%M:%S} UTC"
        if reason:
            held = inbound.parent / "held"
            held.mkdir(mode=0o700, exist_ok=True)
            shutil.move(str(folder), str(held / folder.name))
            notes.append(f"{folder.name}: {reason} (now in {held})")
    return notes


def release_feedback(lessons):
    """Every feedback page of these lessons into the exchange, named by its submission's secret,
    so each student fetches only their own (nbgrader release_feedback). Students whose submission
    did not come through the exchange are named and left out: nbgrader cannot address their page."""
    require_exchange()
    failed = 0
    for lesson in lessons:
        pages = sorted((HERE / "feedback").glob(f"*/{lesson}/*.html"))
        if not pages:
            print(f"  {lesson}: no feedback pages in {HERE / 'feedback'} (grade first: make autograde)")
            continue
        without = sorted({p.parent.parent.name for p in pages
                          if not all((p.parent / name).is_file() for name in RECEIPTS)})
        if without:
            print(f"  {lesson}: not released (no submission in the exchange to return it to): {', '.join(without)}")
        extra = (f"--CourseDirectory.student_id_exclude={','.join(without)}",) if without else ()
        failed |= run_per_lesson("release_feedback", [lesson], *extra)
    return failed


def keep_receipts(submission_folder, feedback_folder):
    """Put nbgrader's receipts of a submission beside its feedback page, so that release_feedback
    can address the page to the submission it was made for; a submission without receipts (not from
    the exchange) leaves none there, not an earlier submission's."""
    if not Path(feedback_folder).is_dir():
        return
    for name in RECEIPTS:
        src = Path(submission_folder) / name if submission_folder is not None else None
        if src is not None and src.is_file():
            shutil.copyfile(src, Path(feedback_folder) / name)
        else:
            (Path(feedback_folder) / name).unlink(missing_ok=True)
