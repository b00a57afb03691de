"""`make class`'s pieces that can be tried without starting a hub: where the class's state may live,
that the users' environment is a copy and never the course's own, the documented passwords, and the
demonstration log-in. tests/browser/test_class.py runs the whole class in a browser."""

import asyncio
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLASS_TOOLS = ROOT / "tools" / "class"


def load(name):
    spec = importlib.util.spec_from_file_location(name, CLASS_TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hub = load("class_hub")


def test_the_class_folder_may_not_be_inside_the_course_folder():
    with pytest.raises(SystemExit, match="inside the course folder"):
        hub.check_class_dir(ROOT / "class")
    assert not (ROOT / "class").exists()


def test_the_class_folder_must_be_reachable_by_the_students(tmp_path):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    os.chmod(closed, 0o700)
    with pytest.raises(SystemExit, match="cannot reach"):
        hub.check_class_dir(closed / "class")
    assert hub.reachable_by_others("/usr/bin")
    assert not hub.reachable_by_others(closed)


def test_the_users_environment_is_never_the_course_environment(tmp_path):
    """A class folder whose env/ leads to the course's .venv is refused before anything in it is
    touched (the copy edits its interpreter link, pyvenv.cfg and the library)."""
    before = {p: p.read_bytes() for p in (hub.VENV / "pyvenv.cfg",)}
    links = {p: os.readlink(p) for p in (hub.VENV / "bin").glob("python*") if p.is_symlink()}
    os.symlink(hub.VENV, tmp_path / "env")
    with pytest.raises(SystemExit, match="not the course's environment"):
        hub.ensure_env(tmp_path)
    assert {p: p.read_bytes() for p in before} == before
    assert {p: os.readlink(p) for p in links} == links


def test_the_documented_student_password_is_the_one_the_hub_accepts():
    page = (ROOT / "docs" / "class.md").read_text()
    documented = re.search(r"`student1` / `([^`]+)`", page)
    assert documented, "docs/class.md documents the demonstration students' password"
    assert hub.student_password("student1") == documented.group(1)


def test_the_demo_authenticator_accepts_only_the_right_password(tmp_path):
    sys.path.insert(0, str(CLASS_TOOLS))
    try:
        from demo_authenticator import DemoAuthenticator
    finally:
        sys.path.remove(str(CLASS_TOOLS))
    path = tmp_path / "passwords.json"
    path.write_text(json.dumps({"instructor": "s3cret-long", "student1": "student1-encdec"}))
    auth = DemoAuthenticator(passwords_file=str(path))

    def login(name, password):
        return asyncio.run(auth.authenticate(None, {"username": name, "password": password}))

    assert login("student1", "student1-encdec") == "student1"
    assert login("instructor", "s3cret-long") == "instructor"
    assert login("instructor", "student1-encdec") is None
    assert login("student1", "") is None
    assert login("nobody", "student1-encdec") is None


def test_a_course_whose_venv_is_a_link_gets_a_copy_and_the_venv_stays_as_it_was(tmp_path):
    """The users' environment made for a course whose .venv is a link to the real one (as a course
    copy has it): a folder of its own, with its own interpreter link, pyvenv.cfg and library, while
    the course's .venv keeps its own."""
    course = tmp_path / "course"
    (course / "tools").mkdir(parents=True)
    import shutil
    shutil.copytree(CLASS_TOOLS, course / "tools" / "class", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "lib" / "encdec", course / "lib" / "encdec", ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(hub.VENV, course / ".venv")
    spec = importlib.util.spec_from_file_location("class_hub_copy", course / "tools" / "class" / "class_hub.py")
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    venv = hub.VENV
    cfg, link = (venv / "pyvenv.cfg").read_bytes(), os.readlink(venv / "bin" / "python3")
    editable = sorted(p.name for p in venv.glob("lib/python3*/site-packages/__editable__*encdec*"))
    site = next(venv.glob("lib/python3*/site-packages"))
    script = venv / "bin" / "nbgrader"
    script_bytes = script.read_bytes()
    try:
        copy.shared_interpreter()
    except SystemExit as exc:  # no Python every user may run on this machine: nothing to copy
        pytest.skip(str(exc))
    if os.stat(tmp_path).st_dev != os.stat(venv).st_dev:
        pytest.skip("the environment would be copied whole, not linked: another file system")
    (tmp_path / "class").mkdir()
    env = copy.ensure_env(tmp_path / "class")
    assert env.is_dir() and not env.is_symlink() and env.resolve() != venv
    assert (venv / "pyvenv.cfg").read_bytes() == cfg and os.readlink(venv / "bin" / "python3") == link
    assert sorted(p.name for p in venv.glob("lib/python3*/site-packages/__editable__*encdec*")) == editable
    assert not (site / "encdec").exists()  # the course's own .venv still uses the editable library
    assert (next(env.glob("lib/python3*/site-packages")) / "encdec" / "__init__.py").is_file()
    assert os.readlink(env / "bin" / "python3") != link or hub.reachable_by_others(link)
    assert script.read_bytes() == script_bytes  # the scripts were rewritten in the copy only
    assert (env / "bin" / "nbgrader").read_bytes().startswith(f"#!{env}/bin/python".encode())


def test_a_class_folder_with_files_make_class_did_not_make_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("someone's files")
    os.chmod(tmp_path, 0o755)
    with pytest.raises(SystemExit, match="did not make"):
        hub.check_class_dir(tmp_path)
    assert os.stat(tmp_path).st_mode & 0o777 == 0o755 and not (tmp_path / hub.MARKER).exists()


def test_a_stale_pid_file_is_not_the_hub(tmp_path):
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "jupyterhub.pid").write_text(str(os.getpid()))  # a live process, not the hub
    assert hub.hub_pid(tmp_path) is None
    assert not (tmp_path / "hub" / "jupyterhub.pid").exists()
