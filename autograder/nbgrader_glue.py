"""nbgrader, configured for the course: its configuration, its API, and the calls grading makes
(generate_assignment, autograde, generate_feedback, the gradebook, the validator)."""

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from . import phases, sandbox
from .course import COURSE, HERE, ROOT, SOLUTIONS, matching

# Added to nbgrader's feedback steps when the course grades (not when nbgrader's own commands run).
FEEDBACK_STEPS = ["autograder.feedback.RecordsAsHTML"]


def put_venv_on_path():
    """nbgrader runs `alembic` by name: the interpreter's own bin/ must come first on PATH.
    Called before nbgrader is used, and before grading processes are started (they inherit it)."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + path


def load_config(config_dir=HERE, **overrides):
    """nbgrader_config.py plus CourseDirectory overrides (root, directories, db_url)."""
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(config_dir)).load_config()
    for key, value in overrides.items():
        setattr(config.CourseDirectory, key, value)
    return config


def feedback_config():
    """load_config() with the HTML exporter set as nbgrader's GenerateFeedback sets it (its feedback template,
    bootstrap's CSS): what the process server's warm-up builds each lesson's page with."""
    import nbgrader.api
    config = load_config()
    formgrader = os.path.join(os.path.dirname(nbgrader.api.__file__), "server_extensions", "formgrader")
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [os.path.join(formgrader, "templates")]
    config.HTMLExporter.extra_template_paths = [os.path.join(formgrader, "static", "node_modules", "bootstrap",
                                                             "dist", "css")]
    return config


def api_for(config):
    put_venv_on_path()
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    coursedir = CourseDirectory(config=config)
    return NbGraderAPI(coursedir=coursedir, config=config)


def scratch_config(root, release, course=ROOT):
    """A course directory of its own for one grading job; `course` holds the solutions/ and
    autograder/ it uses (a private snapshot of the course when grading)."""
    course = Path(course)
    config = load_config(course / "autograder", root=str(root), source_directory=str(course / "solutions"),
                         release_directory=str(release),
                         submitted_directory="submitted", autograded_directory="autograded",
                         feedback_directory="feedback", db_url=f"sqlite:///{root / 'gradebook.db'}")
    steps = list(config.GenerateFeedback.preprocessors)
    config.GenerateFeedback.preprocessors = steps + [s for s in FEEDBACK_STEPS if s not in steps]
    return sandbox.configure_kernel(config)  # in a sandboxed job, its kernels start in the sandbox


def gradebook_url(folder):
    return f"sqlite:///{Path(folder) / 'gradebook.db'}"


# -- the template gradebook, and what it says ----------------------------------------------------------
def prepare_template(work, course, digest="", lessons=None):
    """A gradebook holding the lessons' source cells (what OverwriteCells restores from), and their
    release/: `work`/template. It is kept between runs of the same course (`digest`, its hash,
    integrity.course_hash) and grows by the lessons a run needs that it lacks (`lessons`, every
    lesson when None); a template made from another course, or whose files changed since they
    were made, is made again."""
    template = Path(work) / "template"
    stamp, manifest = template / "course.sha256", template / "manifest.json"
    if not (digest and stamp.is_file() and stamp.read_text() == digest and _intact(template, manifest)):
        if template.exists():
            shutil.rmtree(template)
        template.mkdir(parents=True)
        stamp.write_text(digest)
    wanted = matching(None) if lessons is None else [lesson for lesson in matching(None) if lesson in set(lessons)]
    missing = [lesson for lesson in wanted if not (template / "release" / lesson / f"{lesson}.ipynb").is_file()]
    if missing:
        api = api_for(scratch_config(template, template / "release", course))
        for lesson in missing:
            result = api.generate_assignment(lesson, force=True, create=True)
            if not result["success"]:
                raise SystemExit(f"generate_assignment {lesson} failed:\n{result.get('error') or result.get('log')}")
        manifest.write_text(json.dumps(_listing(template, manifest)))
    return template


def _listing(template, manifest):
    return {str(p.relative_to(template)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(template.rglob("*"))
            if p.is_file() and p != manifest and "__pycache__" not in p.parts}


def _intact(template, manifest):
    try:
        return json.loads(manifest.read_text()) == _listing(template, manifest)
    except (OSError, ValueError):
        return False


def max_points(template, lesson):
    """{grade_id: points} of a lesson's graded code cells, in notebook order."""
    from nbgrader.api import Gradebook
    with Gradebook(gradebook_url(template)) as gb:
        nb = gb.find_notebook(lesson, lesson)
        return {c.name: c.max_score for c in nb.grade_cells if c.cell_type == "code"}


def read_grades(root, lesson, student):
    """{grade_id: (score, max_score)} of one graded submission, from its gradebook."""
    from nbgrader.api import Gradebook
    with Gradebook(gradebook_url(root)) as gb:
        nb = gb.find_submission_notebook(lesson, lesson, student)
        # auto_score, not score: a manual score in the gradebook could only come from tampering
        return {g.name: (g.auto_score, g.max_score) for g in nb.grades if g.cell_type == "code"}


# -- one submission -----------------------------------------------------------------------------------
def failure_reason(log):
    """A one-line reason from nbgrader's log of a failed autograde."""
    text = log or ""
    for signs, reason in (
        (("DeadKernelError", "Kernel died", "kernel died"), "the kernel died while running the notebook"),
        (("CellTimeoutError", "Timeout waiting for", "timed out"), "a cell ran past the time limit"),
        (("JSONDecodeError", "NotJSONError", "Notebook does not appear to be JSON"), "not valid JSON"),
        (("ValidationError",), "not a valid notebook"),
        (("partial credit cannot be greater",), "a test cell reported more points than it is worth"),
    ):
        if any(sign in text for sign in signs):
            return reason
    last = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (last[-1][:160] if last else "nbgrader could not grade it")


def autograde_submission(spec):
    """Grade the submission waiting in a scratch course directory, then write its feedback.

    spec: {"root", "lesson", "student", "release", "course"} (paths as strings). Returns
    {"status": "graded", "cells": {grade_id: (score, max_score)}, "feedback_ok": bool}
    or {"status": "failed: <reason>"}. Runs inside the sandbox (sandbox.run).
    """
    root, lesson, student = Path(spec["root"]), spec["lesson"], spec["student"]
    phases.reset()
    config = phases.configure(scratch_config(root, Path(spec["release"]), spec["course"]),
                              prompt=bool(spec.get("quick_shutdown")))
    if spec.get("quick_shutdown"):  # the scores are in: kill the kernel rather than wait for it to exit
        config.Execute.shutdown_kernel = "immediate"
    api = api_for(config)
    result = api.autograde(lesson, student, force=True, create=True)
    phases.mark("autograded")
    if not result["success"]:
        return {"status": f"failed: {failure_reason((result.get('log') or '') + (result.get('error') or ''))}",
                "phases": phases.summary()}
    cells = read_grades(root, lesson, student)
    feedback = api.generate_feedback(lesson, student, force=True)
    phases.mark("feedback")
    return {"status": "graded", "cells": cells, "feedback_ok": bool(feedback["success"]), "phases": phases.summary()}


# -- release and validate -------------------------------------------------------------------------------
def release(only=None):
    """Regenerate course/ from solutions/: every lesson, plus the shared Markdown pages and figures."""
    api = api_for(load_config())
    for lesson in matching([only] if only else None):
        result = api.generate_assignment(lesson, force=True, create=True)
        if not result["success"]:
            print(result.get("log", ""), result.get("error", ""), file=sys.stderr)
            raise SystemExit(f"generate_assignment {lesson} failed")
        print(f"released course/{lesson}/{lesson}.ipynb")
    for page in sorted(SOLUTIONS.glob("*.md")):
        shutil.copyfile(page, COURSE / page.name)
        print(f"copied course/{page.name}")
    if (SOLUTIONS / "figures").is_dir():  # the diagrams the lessons embed (tools/figures.py draws them)
        shutil.rmtree(COURSE / "figures", ignore_errors=True)
        shutil.copytree(SOLUTIONS / "figures", COURSE / "figures")
        print("copied course/figures/")


def validate(paths):
    """nbgrader's validator on each notebook; 1 when a test cell fails or a locked cell changed."""
    put_venv_on_path()
    from nbgrader.validator import Validator
    validator = Validator(config=load_config())
    failed_any = False
    for path in paths:
        results = validator.validate(str(path))
        failed = results.get("failed", [])
        changed = results.get("changed", []) + results.get("type_changed", [])
        if failed:
            failed_any = True
            print(f"FAIL {path}: {len(failed)} test cell(s) fail")
            for cell in failed:
                error = cell.get("raw_error", "").strip()
                print("  " + "\n  ".join(error.splitlines()[:12]))
        elif changed:
            failed_any = True
            print(f"FAIL {path}: locked cells were changed")
        else:
            print(f"PASS {path}")
    return 1 if failed_any else 0
