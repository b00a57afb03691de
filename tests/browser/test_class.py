"""A class on the course's JupyterHub, end to end, in chromium: `make class` on a copy of the course,
three students who log in, fetch lesson 01 from the Assignments list and submit it (one correct,
one with a classic mistake, one blank), the instructor who collects, grades, releases feedback and
exports grades with the course's make targets, and each student who fetches their own feedback.

Then what no student may do, each tried as that student's Linux user (what their terminal and
kernels run as): list the exchange's inbound or feedback folders, read another student's home
(their notebooks and nbgrader's copy of their submission, with its secret), reach the course
folder (the gradebook, every collected submission, the solutions), or open the formgrader.

Needs root (Linux users, the hub's LocalProcessSpawner), bubblewrap (the grader's sandbox) and
Node (the hub's proxy; `make class` installs it where missing). Screenshots: screenshots/class-*.png,
copied into docs/ for docs/class.md.
"""

import csv
import io
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from labsession import CHROMIUM, ROOT, SHOTS, free_port

sys.path.insert(0, str(ROOT / "tests"))
from nbtools import checks_module, course_copy, inject, require_sandbox, solution  # noqa: E402

pytestmark = pytest.mark.browser
L1 = "01_attention"
STUDENTS = {"student1": "correct", "student2": "mistake", "student3": "blank"}
MISTAKE = ("scaled_dot_product_attention", "no_scale")  # the scores not divided by sqrt(d_k)

if os.geteuid() != 0 or not shutil.which("useradd"):
    pytest.skip("a class on the hub needs root (Linux users, LocalProcessSpawner)", allow_module_level=True)


def make(course, *args, env=None, timeout=900):
    """`make ARGS` in the course copy, with the course's own environment (BIN: its .venv is a link,
    and the grader's sandbox runs the environment at its real path)."""
    proc = subprocess.run(["make", "--no-print-directory", f"BIN={ROOT / '.venv' / 'bin'}", *args], cwd=course, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"make {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def as_user(user, code):
    """Run Python as a student's Linux user, as their terminal or kernel would: (exit code, output)."""
    proc = subprocess.run(["runuser", "-u", user, "--", "/usr/bin/python3", "-c", code],
                          capture_output=True, text=True, timeout=60, cwd="/")
    return proc.returncode, proc.stdout + proc.stderr


def lesson_points():
    """The lesson's points, as the solution notebook's graded cells give them."""
    return sum(c.metadata.nbgrader.points for c in solution(L1).cells
               if c.metadata.get("nbgrader", {}).get("grade"))


def answer(kind):
    nb = solution(L1)
    if kind == "mistake":
        exercise = next(e for e in checks_module(L1).EXERCISES if e.name == MISTAKE[0])
        from encdec.mistakes import CATALOG
        impl = next(m.impl for m in CATALOG[MISTAKE[0]] if m.key == MISTAKE[1])
        nb = inject(nb, exercise, impl)
    return json.loads(json.dumps(nb))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A copy of the course (its grading side, Makefile and tools; the .venv shared), so the class's
    gradebook and submissions never touch the repository's."""
    require_sandbox()  # the instructor's make autograde grades in it
    copy = Path(tempfile.mkdtemp(prefix="encdec-course-", dir="/tmp"))
    course_copy(copy)
    for name in ("Makefile", "pyproject.toml", "requirements.txt"):
        shutil.copy2(ROOT / name, copy / name)
    shutil.copytree(ROOT / "tools", copy / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(ROOT / ".venv", copy / ".venv")
    yield copy
    shutil.rmtree(copy, ignore_errors=True)


@pytest.fixture(scope="module")
def hub(course):
    class_dir = Path(tempfile.mkdtemp(prefix="encdec-class-", dir="/tmp"))
    os.chmod(class_dir, 0o755)
    port = free_port(4)
    env = {"CLASS_DIR": str(class_dir)}
    for user in [*STUDENTS, "instructor"]:  # the demo accounts may remain from an earlier class
        home = Path("/home") / user
        if home.is_dir():
            for name in (L1, ".local/share/jupyter/nbgrader_cache", ".jupyter/lab/workspaces"):
                shutil.rmtree(home / name, ignore_errors=True)
    out = make(course, "class", f"CLASS_PORT={port}", "STUDENTS=3", "LESSONS=01", env=env)
    password = json.loads((class_dir / "hub" / "passwords.json").read_text())
    yield {"base": f"http://127.0.0.1:{port}", "env": env, "dir": class_dir, "passwords": password, "out": out}
    make(course, "class-stop", env=env)
    shutil.rmtree(class_dir, ignore_errors=True)


def log_in(browser, hub, user):
    context = browser.new_context(viewport={"width": 1300, "height": 800})
    page = context.new_page()
    page.goto(f"{hub['base']}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub["passwords"][user])
    page.click("#login_submit")
    if user != "instructor":
        page.wait_for_url(f"**/user/{user}/lab**", timeout=180_000)
        page.wait_for_selector(".lm-MenuBar-itemLabel:text('Nbgrader')", timeout=120_000)
    else:
        page.wait_for_url("**/hub/**", timeout=60_000)
    return page


def assignments(page, section="released_assignments_list"):
    """nbgrader's Assignment List, opened from the Nbgrader menu, once the lesson shows in `section`."""
    page.click(".lm-MenuBar-itemLabel:text('Nbgrader')")
    page.click(".lm-Menu-itemLabel:text('Assignment List')")
    page.wait_for_selector(f"#{section} >> text={L1}", timeout=60_000)
    return page


def row_button(page, section, text):
    row = page.locator(f"#{section} .list_item", has_text=L1)
    return row.get_by_role("button", name=text)


def api(page, hub, user, method, path, body=None):
    xsrf = next(c["value"] for c in page.context.cookies() if c["name"] == "_xsrf")
    url = f"{hub['base']}/user/{user}/api/contents/{path}"
    headers = {"X-XSRFToken": xsrf, "Content-Type": "application/json"}
    r = page.request.fetch(url, method=method, headers=headers, data=json.dumps(body) if body else None)
    assert r.ok, f"{method} {path}: {r.status} {r.text()[:300]}"
    return r.json()


@pytest.fixture(scope="module")
def submitted(hub, browser):
    """Each student logs in, fetches lesson 01, answers it (or not) and submits it."""
    pages = {}
    for user, kind in STUDENTS.items():
        page = assignments(log_in(browser, hub, user))
        row_button(page, "released_assignments_list", "Fetch").click()
        row_button(page, "fetched_assignments_list", "Submit").wait_for(timeout=60_000)
        nb_path = f"{L1}/{L1}.ipynb"
        if kind != "blank":
            api(page, hub, user, "PUT", nb_path, {"type": "notebook", "format": "json", "content": answer(kind)})
        row_button(page, "fetched_assignments_list", "Submit").click()
        page.wait_for_selector(f"#submitted_assignments_list >> text={L1}", timeout=60_000)
        pages[user] = page
    # student1, from their terminal, hands in their correct notebook in student2's name
    forged = subprocess.run(
        ["runuser", "-u", "student1", "--", "env", "HOME=/home/student1",
         f"JUPYTER_CONFIG_PATH={hub['dir'] / 'config' / 'user'}", str(hub["dir"] / "env" / "bin" / "nbgrader"),
         "submit", L1, "--student=student2"], cwd="/home/student1", capture_output=True, text=True, timeout=120)
    assert forged.returncode == 0, forged.stdout + forged.stderr
    return pages


@pytest.fixture(scope="module")
def graded(course, hub, submitted):
    """The instructor's round: collect, grade, release the feedback, export the grades."""
    env = hub["env"]
    collected = make(course, "collect", "LESSON=01", env=env)
    graded = make(course, "autograde", "LESSONS=01", env=env)
    released = make(course, "release-feedback", "LESSON=01", env=env)
    exported = make(course, "export", env=env)
    return {"collect": collected, "autograde": graded, "release": released, "export": exported}


def test_the_class_comes_up_with_the_lesson_released(hub):
    assert hub["base"] in hub["out"]
    outbound = hub["dir"] / "exchange" / "encdec" / "outbound" / L1 / f"{L1}.ipynb"
    assert outbound.is_file()
    assert sorted(hub["passwords"]) == ["instructor", *STUDENTS]


def test_each_submission_is_collected_with_its_timestamp(course, graded):
    for user in STUDENTS:
        folder = course / "autograder" / "submitted" / user / L1
        assert (folder / f"{L1}.ipynb").is_file(), graded["collect"]
        assert (folder / "timestamp.txt").read_text().strip()


def test_a_submission_in_another_students_name_is_held_back_not_collected(course, hub, graded):
    """student1's notebook handed in as student2's (nbgrader submit --student=student2) is named
    and moved aside; student2's own submission, with its mistake, is the one collected and graded."""
    assert "held back" in graded["collect"] and "in the name of student2 by student1" in graded["collect"]
    held = list((hub["dir"] / "exchange" / "encdec" / "held").iterdir())
    assert [h.name.split("+")[0] for h in held] == ["student2"] and held[0].stat().st_uid == pwd.getpwnam("student1").pw_uid
    collected = json.loads((course / "autograder" / "submitted" / "student2" / L1 / f"{L1}.ipynb").read_text())
    assert "# --- replaced answer ---" in json.dumps(collected)  # student2's own, with the mistake


def test_grades_csv_and_the_canvas_export_hold_the_three_rows(course, graded):
    maximum = lesson_points()
    with open(course / "autograder" / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == L1}
    assert sorted(rows) == sorted(STUDENTS)
    assert float(rows["student1"]["score"]) == maximum
    assert 0 < float(rows["student2"]["score"]) < maximum
    assert float(rows["student2"][f"01:test_{MISTAKE[0]}"]) == 0
    assert float(rows["student3"]["score"]) == 0
    text = (course / "autograder" / "canvas.csv").read_text()
    table = list(csv.reader(io.StringIO(text)))
    header, points = table[0], table[1]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    column = next(i for i, name in enumerate(header) if name.startswith(L1))
    assert points[0].strip() == "Points Possible" and float(points[column]) == maximum
    by_login = {r[3]: r for r in table[2:]}
    assert sorted(by_login) == sorted(STUDENTS)
    assert float(by_login["student1"][column]) == maximum
    assert float(by_login["student2"][column]) == float(rows["student2"]["score"])
    assert float(by_login["student3"][column]) == 0


def feedback_page(page, hub, user):
    """The student fetches their feedback in the Assignment List and opens the page it brought."""
    page.reload()
    page.wait_for_selector(".lm-MenuBar-itemLabel:text('Nbgrader')", timeout=120_000)
    assignments(page, "submitted_assignments_list")
    # (student1 also lists the notebook they handed in as student2's: the button fetches the lesson's feedback)
    row_button(page, "submitted_assignments_list", "Fetch Feedback").first.click()
    deadline = time.time() + 60
    while time.time() < deadline:
        listing = api(page, hub, user, "GET", f"{L1}/feedback")["content"] if _exists(page, hub, user) else []
        if listing:
            break
        time.sleep(1)
    assert listing, f"{user} got no feedback"
    if user == "student2":
        page.locator("#submitted_assignments_list .list_item", has_text=L1).first.click()  # its details
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "class-assignments.png"))
    stamp = listing[0]["name"]
    page.goto(f"{hub['base']}/user/{user}/files/{L1}/feedback/{stamp}/{L1}.html")
    page.wait_for_load_state("load")
    return page.inner_text("body")


def _exists(page, hub, user):
    xsrf = next(c["value"] for c in page.context.cookies() if c["name"] == "_xsrf")
    r = page.request.get(f"{hub['base']}/user/{user}/api/contents/{L1}/feedback", headers={"X-XSRFToken": xsrf})
    return r.ok


def test_each_student_fetches_their_own_feedback(course, hub, submitted, graded):
    maximum = lesson_points()
    with open(course / "autograder" / "grades.csv") as f:
        scores = {r["student_id"]: float(r["score"]) for r in csv.DictReader(f) if r["assignment"] == L1}
    texts = {user: feedback_page(page, hub, user) for user, page in submitted.items()}
    page = submitted["student2"]
    page.get_by_text("not divided by").first.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -60)")
    page.screenshot(path=str(SHOTS / "class-feedback.png"), full_page=False)
    assert len(set(scores.values())) == 3  # three different scores: each page must show its own
    for user, text in texts.items():
        assert f"{L1} (Score: {scores[user]:.1f} / {float(maximum):.1f})" in text, (user, text[:300])
    assert "not divided by" in texts["student2"] and "d_k" in texts["student2"]
    assert "not divided by" not in texts["student1"]
    for user in STUDENTS:  # the hidden tests stay hidden
        assert "BEGIN HIDDEN TESTS" not in texts[user]


def test_a_student_cannot_list_the_inbound_or_the_feedback_of_the_exchange(hub, submitted, graded):
    for folder in ("inbound", "feedback"):
        path = hub["dir"] / "exchange" / "encdec" / folder
        code, out = as_user("student2", f"import os; print(os.listdir({str(path)!r}))")
        assert code != 0 and "PermissionError" in out, out
    code, out = as_user("student2", f"import os; print(os.listdir({str(hub['dir'] / 'exchange' / 'encdec' / 'outbound')!r}))")
    assert code == 0 and L1 in out  # the released lesson is open to everyone


def test_a_student_cannot_replace_the_courses_folder_in_the_exchange(hub, submitted):
    course_folder = hub["dir"] / "exchange" / "encdec"
    code, out = as_user("student2", f"import os; os.rename({str(course_folder)!r}, {str(course_folder) + '-mine'!r})")
    assert code != 0 and "PermissionError" in out, out
    assert course_folder.is_dir()


def test_a_student_cannot_read_another_students_home_or_nbgrader_copy(hub, submitted):
    assert Path("/home/student1/.local/share/jupyter/nbgrader_cache/encdec").is_dir()  # it is there
    for target in ("/home/student1", f"/home/student1/{L1}/{L1}.ipynb",
                   "/home/student1/.local/share/jupyter/nbgrader_cache"):
        code, out = as_user("student2", f"import os; p={target!r}; print(os.listdir(p) if os.path.isdir(p) else open(p).read())")
        assert code != 0 and "PermissionError" in out, (target, out)
    code, out = as_user("student1", f"print(len(open('/home/student1/{L1}/{L1}.ipynb').read()))")
    assert code == 0, out  # the owner can


def test_a_student_cannot_reach_the_course_folder(course, hub, graded):
    for target in ("autograder/submitted/student1", "autograder/gradebook.db", "autograder/grades.csv",
                   "autograder/feedback/student1", f"solutions/{L1}/{L1}.ipynb"):
        path = course / target
        assert path.exists(), target
        code, out = as_user("student2", f"import os; p={str(path)!r}; print(os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read()[:10])")
        assert code != 0 and "PermissionError" in out, (target, out)


def test_students_see_the_assignments_list_and_none_of_the_instructor_tools(hub, submitted):
    page = submitted["student1"]
    page.goto(f"{hub['base']}/user/student1/lab")
    page.wait_for_selector(".lm-MenuBar-itemLabel:text('Nbgrader')", timeout=120_000)
    page.click(".lm-MenuBar-itemLabel:text('Nbgrader')")
    items = page.locator(".lm-Menu-itemLabel").all_inner_texts()
    page.keyboard.press("Escape")
    assert "Assignment List" in items
    assert not {"Formgrader", "Course List", "Create Assignment"} & set(items), items
    xsrf = next(c["value"] for c in page.context.cookies() if c["name"] == "_xsrf")
    r = page.request.get(f"{hub['base']}/user/student1/formgrader", headers={"X-XSRFToken": xsrf})
    assert r.status == 404  # the server extension is off in the student's own server too


def test_only_the_instructor_opens_the_formgrader(hub, browser, submitted, graded):
    url = f"{hub['base']}/services/encdec/formgrader"
    student = submitted["student3"]
    response = student.goto(url)
    assert response.status == 403, (response.status, student.url)
    page = log_in(browser, hub, "instructor")
    response = page.goto(url)
    assert response.ok and "/services/encdec/formgrader" in page.url
    page.wait_for_selector(f"text={L1}", timeout=60_000)
    page.screenshot(path=str(SHOTS / "class-formgrader.png"))


def test_class_stop_ends_the_hub_and_every_users_process(course, hub, graded):
    """Last: `make class-stop` stops the hub, the users' servers and kernels, the formgrader and the proxy."""
    import urllib.request
    out = make(course, "class-stop", env=hub["env"])
    assert "stopped" in out
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{hub['base']}/hub/health", timeout=5)
    service = json.loads((hub["dir"] / "hub" / "settings.json").read_text())["service_port"]
    with pytest.raises(OSError):  # the formgrader, which runs as the course folder's owner, ended too
        urllib.request.urlopen(f"http://127.0.0.1:{service}/", timeout=5)
    for user in [*STUDENTS, "instructor"]:
        left = subprocess.run(["pgrep", "-u", user], capture_output=True, text=True).stdout.split()
        assert not left, f"{user} still runs {left}"
    assert not (hub["dir"] / "hub" / "jupyterhub.pid").exists()
