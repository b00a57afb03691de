"""The project sets itself up from nothing: pins agree, targets exist, the package imports."""

import re
import subprocess

from nbtools import ROOT


def pins_from_requirements():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def pins_from_environment():
    pins, python = {}, None
    for line in (ROOT / "environment.yml").read_text().splitlines():
        stripped = line.split("#")[0].strip()
        m = re.fullmatch(r"-\s*([A-Za-z0-9_.\-]+)==([^\s]+)", stripped)
        if m:
            pins[m.group(1).lower()] = m.group(2)
        m = re.fullmatch(r"-\s*python=([\d.]+)", stripped)
        if m:
            python = m.group(1)
    return pins, python


def test_environment_yml_pins_equal_requirements():
    env, python = pins_from_environment()
    assert env == pins_from_requirements(), "environment.yml and requirements.txt pin different versions"
    assert python == "3.11"


def test_environment_yml_installs_the_package_itself():
    assert "- -e ." in (ROOT / "environment.yml").read_text()


def test_torch_is_pinned_to_the_course_version():
    assert pins_from_requirements()["torch"] == "2.13.0"


def test_every_requirement_is_pinned_exactly():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.]+", line), f"not an exact pin: {line}"


def test_make_knows_the_documented_targets():
    out = subprocess.run(["make", "-pn", "-f", "Makefile", "help"], cwd=ROOT, capture_output=True, text=True).stdout
    for target in ("install", "lab", "test"):
        assert re.search(rf"^{target}:", out, re.M), f"make has no {target} target"


def test_make_lab_serves_course_and_allows_root():
    out = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "--notebook-dir=course" in out
    import os
    if os.getuid() == 0:
        assert "--allow-root" in out


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_package_imports_from_the_venv_checkout():
    import encdec
    assert "lib/encdec" in encdec.__file__.replace("\\", "/")
