"""`make test` on a fresh machine: what pip cannot install (bubblewrap, for the grading suites) is
installed by make where it may, and where it is missing the tests that need it are skipped with a
message that names the package and the command, never failed (tools/system_packages.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbtools import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import system_packages  # noqa: E402


def path_without(tmp_path, program):
    """A PATH with every program of this one but `program`: links to them in one folder."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not Path(entry).is_dir():
            continue
        for item in Path(entry).iterdir():
            link = folder / item.name
            if item.name != program and not link.exists() and os.access(item, os.X_OK):
                link.symlink_to(item)
    return str(folder)


@pytest.mark.nbgrader
@pytest.mark.slow
def test_the_grading_suites_skip_with_the_reason_when_bubblewrap_is_missing(tmp_path):
    env = {**os.environ, "PATH": path_without(tmp_path, "bwrap"), "TEST_SKIPS": str(tmp_path / "skips.jsonl")}
    env.pop("SANDBOX", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "nbgrader", "-p", "no:cacheprovider", "-q",
                           "tests/test_grading_e2e.py", "tests/test_sandbox.py", "tests/test_exchange.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert " failed" not in out and " error" not in out, out[-4000:]
    skips = [json.loads(line) for line in (tmp_path / "skips.jsonl").read_text().splitlines()]
    sandbox_skips = [s for s in skips if "bubblewrap is not installed" in s["reason"]]
    assert sum(s["count"] for s in sandbox_skips) >= 30, skips
    assert all("apt-get install bubblewrap" in s["reason"] for s in sandbox_skips)
    summary = subprocess.run([sys.executable, str(ROOT / "tools" / "system_packages.py"), "summary",
                              str(tmp_path / "skips.jsonl")], capture_output=True, text=True).stdout
    assert summary.startswith("Skipped: ") and "bubblewrap is not installed" in summary


def test_missing_program_as_a_user_names_the_package_and_the_sudo_command(monkeypatch, capsys):
    monkeypatch.setattr(system_packages, "found", lambda need: False)
    calls = []
    missing = system_packages.ensure([system_packages.BUBBLEWRAP], run=lambda *a, **k: calls.append(a),
                                     is_root=False, apt="/usr/bin/apt-get")
    assert missing == [system_packages.BUBBLEWRAP] and calls == []
    out = capsys.readouterr().out
    assert "sudo apt-get install bubblewrap" in out and "skipped" in out


def test_missing_program_as_root_is_installed_from_debian(monkeypatch, capsys):
    installed = set()
    monkeypatch.setattr(system_packages, "found", lambda need: need.package in installed)

    def apt(argv, **kwargs):
        if argv[1] == "install":
            installed.update(argv[4:])
    missing = system_packages.ensure([system_packages.BUBBLEWRAP, system_packages.CHROMIUM], run=apt,
                                     is_root=True, apt="apt-get")
    assert missing == [] and installed == {"bubblewrap", "chromium"}


def test_root_without_apt_says_so(monkeypatch, capsys):
    monkeypatch.setattr(system_packages, "found", lambda need: False)
    assert system_packages.ensure([system_packages.CHROMIUM], is_root=True, apt="") == [system_packages.CHROMIUM]
    assert "no apt-get" in capsys.readouterr().out


def test_summary_groups_both_runs_skips_by_reason(tmp_path, capsys):
    skips = tmp_path / "skips.jsonl"
    skips.write_text("\n".join(json.dumps(e) for e in [{"reason": "no GPU", "count": 2},
                                                         {"reason": "no bubblewrap", "count": 40},
                                                         {"reason": "no GPU", "count": 3}]))
    system_packages.summary(skips)
    assert capsys.readouterr().out.splitlines() == ["Skipped: 45 tests, and why:", "     40  no bubblewrap",
                                                    "      5  no GPU"]
    system_packages.summary(tmp_path / "none.jsonl")
    assert capsys.readouterr().out.strip() == "Skipped: nothing."


def test_ci_runs_only_what_the_readme_tells_a_user_to_run():
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert commands == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "make test", "make test-browser"]
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make test-browser" in (readme + "".join(
        p.read_text() for p in (ROOT / "docs").glob("*.md")))
