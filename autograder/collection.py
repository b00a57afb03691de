"""Collection: which file is each student's submission for each lesson, and what was done to find it.

    found = collect(submitted, lessons, students=None, roster=())   # found.jobs, found.notes
    notes = import_canvas_zip(zip_path, submitted, lessons, roster)

The rules, in the order they apply (docs/instructors.md, "Collecting"):
- `submitted/<student>/<lesson>/<lesson>.ipynb` is the submission (nbgrader's layout) when it is
  the only candidate;
- the candidates are every notebook in `submitted/<student>/<lesson>/`, whatever its name, and the
  notebooks dropped flat in `submitted/<student>/` whose names start with the lesson's number
  (`01_attention (1).ipynb`, `01-attention.ipynb`);
- of several candidates, the one with answers (an answer cell that is not the release's stub) is
  graded; when several or none have answers, the newest (modified last). The row's status says
  which was graded and why;
- a student on the roster (`autograder/students.csv`) with no folder gets a row for every lesson;
- a file that belongs to no assigned lesson, a lesson folder that is not assigned and a student
  who is not on the roster are all named in the notes the run prints. Nothing is skipped silently.
A submission's time comes from nbgrader's `timestamp.txt` beside it; `lms.json` (written by the
zip import) says when the LMS marked it late. Submitted files are only ever read.
"""

import json
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .course import lessons as every_lesson
from .jobs import Job

STUB = "raise NotImplementedError"
LMS_FILE = "lms.json"
# Canvas's "Download Submissions": <lastfirst>[_LATE]_<user id>_<submission id>_<original file name>
CANVAS = re.compile(r"^(?P<lastfirst>[^_/]+?)(?P<late>_LATE)?_(?P<user_id>\d+)_(?P<submission_id>\d+)_(?P<filename>.+)$")


@dataclass
class Collected:
    jobs: list = field(default_factory=list)  # jobs.Job, one per (student, assigned lesson)
    notes: list = field(default_factory=list)  # what collection did that the instructor should know


def lesson_of(filename, lessons):
    """The lesson a file name belongs to ('01_attention (1).ipynb' -> '01_attention'), or None."""
    stem = Path(filename).name
    for lesson in lessons:
        if stem.startswith(lesson):
            return lesson
    number = re.match(r"(\d{1,2})(?:[_\- .]|$)", stem)
    if number:
        hits = [lesson for lesson in lessons if int(lesson[:2]) == int(number.group(1))]
        return hits[0] if hits else None
    return None


def has_answers(raw):
    """Whether a notebook's bytes hold an answer: an answer cell without the release's stub."""
    try:
        nb = json.loads(raw.decode("utf-8"))
        cells = [c for c in nb.get("cells", []) if c.get("metadata", {}).get("nbgrader", {}).get("solution")
                 and c.get("cell_type") == "code"]
    except (ValueError, UnicodeDecodeError, AttributeError):
        return False
    text = ["".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source", "") for c in cells]
    return any(STUB not in t and t.strip() for t in text)


def pick(candidates):
    """(chosen, why) among candidates [(name, raw bytes, mtime)]: the one with answers, else the
    newest; among several with answers, the newest."""
    answered = [c for c in candidates if has_answers(c[1])]
    pool = answered or candidates
    chosen = max(pool, key=lambda c: (c[2], c[0]))
    others = ", ".join(repr(c[0]) for c in candidates if c is not chosen)
    if answered and len(answered) < len(candidates):
        why = "the only one with answers" if len(answered) == 1 else "the newest with answers"
    else:
        why = "the newest" + (", none has answers" if not answered else ", all have answers")
    return chosen, f"{len(candidates)} notebooks for this lesson: graded {chosen[0]!r} ({why}; not {others})"


def read_timestamp(folder):
    """nbgrader's submission time (timestamp.txt in the lesson folder), or None."""
    path = Path(folder) / "timestamp.txt"
    if not path.is_file():
        return None
    from nbgrader.utils import parse_utc
    try:
        return parse_utc(path.read_text().strip())
    except (ValueError, OverflowError):
        return None


def read_lms(folder):
    path = Path(folder) / LMS_FILE
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        return {}


def collect(submitted, lessons, students=None, roster=()):
    """A job per (student, lesson) for the assigned `lessons`, for every student folder (those
    `students` names, when given) and every student on the roster; notes say what was done."""
    submitted = Path(submitted)
    found = Collected()
    course = every_lesson()
    folders = {p.name: p for p in sorted(submitted.iterdir()) if p.is_dir() and not p.name.startswith(".")} \
        if submitted.is_dir() else {}
    if submitted.is_dir():
        for p in sorted(submitted.iterdir()):
            if p.is_file() and not p.name.startswith("."):
                found.notes.append(f"ignored {p.name}: a file directly in {submitted.name}/, not in a student's folder")
    names = sorted(set(folders) | set(roster))
    if students:
        unknown = [s for s in students if s not in names]
        found.notes += [f"{s}: no folder in {submitted.name}/ and not on the roster" for s in unknown]
        names = [s for s in names if s in students] + unknown
    unassigned = {}
    for student in names:
        sdir = folders.get(student)
        if roster and student not in roster:
            found.notes.append(f"{student}: not on the roster (autograder/students.csv); graded anyway")
        if sdir is None:
            found.jobs += [Job(student, lesson) for lesson in lessons]
            continue
        flat = {}
        for p in sorted(sdir.iterdir()):
            if p.name.startswith(".") or p.name in ("timestamp.txt", LMS_FILE):
                continue
            if p.is_dir():
                if p.name in course and p.name not in lessons:
                    unassigned.setdefault(p.name, []).append(student)
                elif p.name not in course:
                    found.notes.append(f"{student}/{p.name}/: a folder that is no lesson's, ignored")
                continue
            lesson = lesson_of(p.name, course) if p.suffix == ".ipynb" else None
            if lesson in lessons:
                flat.setdefault(lesson, []).append(p)
            elif lesson is not None:
                unassigned.setdefault(lesson, []).append(student)
            else:
                found.notes.append(f"{student}/{p.name}: names no lesson, ignored")
        for lesson in lessons:
            found.jobs.append(_job(Job(student, lesson), sdir, flat.get(lesson, [])))
    for lesson, who in sorted(unassigned.items()):
        found.notes.append(f"{lesson}: not assigned in this run, so not graded (submitted by "
                           f"{len(set(who))} student{'s' if len(set(who)) != 1 else ''}: {', '.join(sorted(set(who))[:5])}"
                           + (", …" if len(set(who)) > 5 else "") + ")")
    return found


def _job(job, sdir, flat):
    """Fill a job from the student's folder: the submission's bytes and time, or why there is none."""
    folder = sdir / job.lesson
    expected = folder / f"{job.lesson}.ipynb"
    inside = sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
    paths = inside + [p for p in flat if p not in inside]  # the expected name is one candidate among them
    if folder.is_dir():
        job.timestamp = read_timestamp(folder)
        job.late = bool(read_lms(folder).get("late"))
    if not paths:
        if folder.is_dir():
            job.status = f"failed: no notebook in {sdir.name}/{job.lesson}/ (the lesson folder is empty)"
        return job
    candidates = [(p.name, p.read_bytes(), p.stat().st_mtime) for p in paths]
    if len(candidates) == 1:
        name, raw, _ = candidates[0]
        path = paths[0]
        if path != expected:
            where = "dropped in the student's folder" if path.parent == sdir else "in the lesson folder"
            job.note = f"submitted as {name}, {where}; expected {job.lesson}/{job.lesson}.ipynb"
    else:
        (name, raw, _), job.note = pick(candidates)
        path = next(p for p in paths if p.name == name)
    job.path, job.raw = path, raw
    return job


# -- an LMS's zip of every submission ----------------------------------------------------------------
def canvas_student(lastfirst, user_id, roster):
    """The roster's id for a Canvas submitter (by lms_user_id, else by last+first name), or None."""
    for sid, fields in roster.items():
        if str(fields.get("lms_user_id") or "") == user_id:
            return sid
    for sid, fields in roster.items():
        name = (str(fields.get("last_name") or "") + str(fields.get("first_name") or "")).lower()
        if name and re.sub(r"[^a-z0-9]", "", name) == lastfirst.lower():
            return sid
    return None


def import_canvas_zip(zip_path, submitted, lessons, roster):
    """Put each notebook of a Canvas "Download Submissions" zip at
    submitted/<student>/<lesson>/<lesson>.ipynb, with lms.json (where it came from, whether Canvas
    marked it late). A notebook already there with other bytes is moved to `.replaced/` in its
    lesson folder first, never overwritten. Returns the notes, one per entry."""
    submitted, notes = Path(submitted), []
    by_pair = {}
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = Path(info.filename).name
            m = CANVAS.match(name)
            if not m:
                notes.append(f"{info.filename}: not Canvas's <name>_<user id>_<submission id>_<file> pattern, skipped")
                continue
            lesson = lesson_of(m["filename"], lessons) if name.endswith(".ipynb") else None
            if lesson is None:
                notes.append(f"{name}: {'names no assigned lesson' if name.endswith('.ipynb') else 'not a notebook'}, skipped")
                continue
            student = canvas_student(m["lastfirst"], m["user_id"], roster)
            if student is None:
                student = m["lastfirst"]
                if roster:
                    notes.append(f"{name}: Canvas user {m['user_id']} is not on the roster; filed as {student!r}")
            stamp = datetime(*info.date_time, tzinfo=timezone.utc).timestamp()
            by_pair.setdefault((student, lesson), []).append((name, archive.read(info), stamp, m))
    for (student, lesson), entries in sorted(by_pair.items()):
        chosen, why = (entries[0], "") if len(entries) == 1 else pick([e[:3] for e in entries])
        entry = next(e for e in entries if e[0] == chosen[0])
        name, raw, _, m = entry
        folder = submitted / student / lesson
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / f"{lesson}.ipynb"
        said = f"{student}/{lesson}: {name}" + (" (late, says Canvas)" if m["late"] else "")
        if dest.is_file() and dest.read_bytes() == raw:
            notes.append(said + ": already collected")
            continue
        if dest.is_file():
            keep = folder / ".replaced" / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{dest.name}"
            keep.parent.mkdir(exist_ok=True)
            shutil.move(dest, keep)
            said += f"; the earlier file kept as {keep.relative_to(submitted)}"
        dest.write_bytes(raw)
        (folder / LMS_FILE).write_text(json.dumps({"lms": "canvas", "file": name, "user_id": m["user_id"],
                                                   "submission_id": m["submission_id"], "late": bool(m["late"])}))
        notes.append(said + (f"; {why}" if why else ""))
    return notes
