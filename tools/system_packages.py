"""What the test suites need that pip cannot install, from the system's packages.

    python tools/system_packages.py test        # before make test: bubblewrap (the grading suites)
    python tools/system_packages.py browser     # before make test-browser: chromium (and bubblewrap)
    python tools/system_packages.py summary F   # after a run: what was skipped, and why (F: the skips file)

A program that is missing is installed from Debian's packages when this runs as root on a machine
with apt-get. Otherwise it prints the package and the command to run (`sudo apt-get install ...`),
and the tests that need it are skipped with that message: a missing program costs its tests, never
the run, so this command always exits 0.
"""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Need:
    program: str  # what the tests look for on PATH
    package: str  # Debian's package that provides it
    why: str  # which tests need it


BUBBLEWRAP = Need("bwrap", "bubblewrap", "the sandbox every graded kernel runs in: the grading suites grade through it")
CHROMIUM = Need("chromium", "chromium", "the browser the browser suite drives (JupyterLab, the site, the class's hub)")
NEEDS = {"test": [BUBBLEWRAP], "browser": [BUBBLEWRAP, CHROMIUM]}


def found(need):
    return shutil.which(need.program) is not None


def install_command(packages):
    return "sudo apt-get install " + " ".join(packages)


def ensure(needs, run=subprocess.run, is_root=None, apt=None):
    """Install what is missing where this may (root, apt-get); returns the needs still missing."""
    missing = [n for n in needs if not found(n)]
    if not missing:
        return []
    is_root = (os.geteuid() == 0) if is_root is None else is_root
    apt = shutil.which("apt-get") if apt is None else apt
    if is_root and apt:
        packages = [n.package for n in missing]
        print(f"Installing {', '.join(packages)} from the system's packages (apt-get) for the tests ...", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            run([apt, "update", "-qq"], env=env, check=False, timeout=600)
            run([apt, "install", "-y", "-qq", *packages], env=env, check=False, timeout=1200,
                stdout=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"  apt-get failed: {exc}")
        missing = [n for n in missing if not found(n)]
    for need in missing:
        how = ("apt-get could not install it" if is_root and apt else
               "this machine has no apt-get: install it with your system's package manager" if not apt else
               f"install it with: {install_command([need.package])}")
        print(f"{need.package} is missing ({need.why}); {how}. "
              "The tests that need it will be skipped and listed at the end.")
    return missing


def summary(skips_file):
    """Print what the runs recorded in `skips_file` as skipped, grouped by reason."""
    counts = {}
    path = Path(skips_file)
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                counts[entry["reason"]] = counts.get(entry["reason"], 0) + entry["count"]
    if not counts:
        print("Skipped: nothing.")
        return
    total = sum(counts.values())
    print(f"Skipped: {total} test{'s' if total != 1 else ''}, and why:")
    for reason, count in sorted(counts.items(), key=lambda item: -item[1]):
        print(f"  {count:5d}  {reason}")


def main(argv):
    if len(argv) >= 1 and argv[0] in NEEDS:
        ensure(NEEDS[argv[0]])
        return 0
    if len(argv) == 2 and argv[0] == "summary":
        summary(argv[1])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
