"""The first cell of every lesson: is everything the course needs installed?"""

import importlib.metadata
import importlib.util
import sys

PACKAGES = ["numpy", "matplotlib", "ipywidgets", "torch", "encdec"]
HINT = ("From the repository root run `make lab`: it installs everything into .venv and opens "
        "JupyterLab with that environment's kernel.")


def check_environment(packages=PACKAGES):
    """Print [OK] or [FAIL] per package (found and its version, without importing it); True when all are there."""
    ok = sys.version_info >= (3, 11)
    print(f"[{'OK' if ok else 'FAIL'}] Python {sys.version.split()[0]}" + ("" if ok else " (3.11+ needed)"))
    for name in packages:
        try:
            found = importlib.util.find_spec(name) is not None
            version = importlib.metadata.version(name) if found else ""
        except Exception as exc:  # a broken install can fail in many ways; report, never crash
            found, version = False, f"{type(exc).__name__}: {exc}"
        print(f"[{'OK' if found else 'FAIL'}] {name} {version}" + ("" if found else " is not installed"))
        ok = ok and found
    if not ok:
        print(HINT)
    return ok
