"""The instructor's gradebook in chromium: a class graded by `python -m autograder autograde` shows
in nbgrader's formgrader, served by an instructor's JupyterLab started in autograder/ (so nbgrader
reads nbgrader_config.py), with the formgrader extension as installed (not `make lab`'s student
config, which turns it off). Both students and the scores the gradebook holds are on the page:
the correct student's full points, the other's partial score. Screenshot: screenshots/formgrader.png.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from labsession import ROOT, SHOTS, TOKEN, free_port

sys.path.insert(0, str(ROOT / "tests"))
from nbtools import checks_module, course_copy, inject, solution, write_submission  # noqa: E402

pytestmark = pytest.mark.browser
L1 = "01_attention"
ROSTER = "id,first_name,last_name,email,lms_user_id\nalice,Alice,Ames,,101\nbob,Bob,Brown,,102\n"
BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Two students graded through the course's own grader in a copy of the course: alice correct,
    bob with a classic mistake in the first exercise. Returns the copy and what nbgrader's gradebook
    holds: each student's score and maximum for the lesson, and over the whole course."""
    from encdec.mistakes import CATALOG
    from nbgrader.api import Gradebook
    root = course_copy(tmp_path_factory.mktemp("course"))
    ag = root / "autograder"
    (ag / "students.csv").write_text(ROSTER)
    (ag / "assignments.csv").write_text(f"name,duedate\n{L1},2026-12-01 12:00:00 UTC\n")
    first = checks_module(L1).EXERCISES[0]
    write_submission(ag / "submitted", "alice", L1, solution(L1))
    write_submission(ag / "submitted", "bob", L1, inject(solution(L1), first, CATALOG[first.name][0].impl))
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde", "--jobs", "2"], cwd=root,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GRADE_CELL_TIMEOUT": "30", "GRADE_TIMEOUT": "120"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with Gradebook(f"sqlite:///{ag / 'gradebook.db'}", "encdec") as gb:
        held = {}
        for student in ("alice", "bob"):
            sub, whole = gb.find_submission(L1, student), gb.find_student(student)
            held[student] = {"lesson": (sub.score, sub.max_score), "course": (whole.score, whole.max_score)}
    return root, held


@pytest.fixture(scope="module")
def formgrader(graded, tmp_path_factory):
    """An instructor's JupyterLab started in autograder/ of the graded copy."""
    root, _ = graded
    ag = root / "autograder"
    home = tmp_path_factory.mktemp("instructor")
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "JUPYTER_CONFIG_DIR")}
    env.update({"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",  # nbgrader calls alembic by name
                "JUPYTER_CONFIG_DIR": str(home / "config"),  # no ~/.jupyter of whoever runs the tests
                "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
                "JUPYTERLAB_SETTINGS_DIR": str(home / "settings")})
    port = free_port()
    log = open(home / "server.log", "w")
    root_flag = ["--allow-root"] if os.geteuid() == 0 else []
    proc = subprocess.Popen(
        [os.path.join(BIN, "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={TOKEN}", *root_flag],
        cwd=ag, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            json.loads(urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2).read())
            break
        except OSError:
            time.sleep(0.5)
    if proc.poll() is not None or time.time() >= deadline:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        raise RuntimeError(f"Jupyter did not start: {(home / 'server.log').read_text()[-3000:]}")
    yield {"base": base, "log": home / "server.log"}
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def shown(score, max_score):
    """A score as the formgrader writes it (roundToPrecision(x, 2): "10 / 10", "9.25 / 10")."""
    return f"{round(score, 2):g} / {round(max_score, 2):g}"


def settle(page, rows):
    """Wait until the page's table (filled by the formgrader's JavaScript from its API) has loaded."""
    page.wait_for_function("!document.body.innerText.includes('Loading, please wait')", timeout=30_000)
    return {rows.nth(i).inner_text() for i in range(rows.count())}


def test_formgrader_shows_the_gradebook(browser, graded, formgrader):
    _, held = graded
    alice, bob = held["alice"]["lesson"], held["bob"]["lesson"]
    assert alice[0] == alice[1] > bob[0] > 0, held  # the gradebook: full points and a partial score
    context = browser.new_context(viewport={"width": 1400, "height": 700})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        base = formgrader["base"]
        # Manage Students: every student of the roster, with the overall score over the course's lessons
        page.goto(f"{base}/formgrader/manage_students?token={TOKEN}")
        rows = page.locator("#main-table tr")
        text = settle(page, rows)
        for student, name in (("alice", "Ames, Alice"), ("bob", "Brown, Bob")):
            row = next((r for r in text if r.startswith(name) and f"\t{student}\t" in r), None)
            assert row is not None, text
            assert shown(*held[student]["course"]) in row, (row, held[student])
        # the lesson's submissions, as the instructor opens them to review and grade by hand
        page.goto(f"{base}/formgrader/gradebook/{L1}/{L1}?token={TOKEN}")
        text = settle(page, rows)
        page.click("#toggle_names")  # "Show All Names": the list is anonymous until asked
        text = {rows.nth(i).inner_text() for i in range(rows.count())}
        assert len(text) == 2, text
        assert any(r.strip().startswith("Ames, Alice") and shown(*alice) in r for r in text), (text, alice)
        assert any(r.strip().startswith("Brown, Bob") and shown(*bob) in r for r in text), (text, bob)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "formgrader.png"), full_page=True)
        assert not errors, errors
    finally:
        context.close()
