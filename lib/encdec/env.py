"""The first cell of every lesson: is everything the course needs importable?"""

import importlib
import sys

PACKAGES = ["numpy", "matplotlib", "ipywidgets", "torch", "encdec"]
HINT = ("From the repository root run `make lab`: it installs everything into .venv and opens "
        "JupyterLab with that environment's kernel.")


def check_environment(packages=PACKAGES):
    """Print [OK] or [FAIL] per package; returns True when everything is there."""
    ok = sys.version_info >= (3, 11)
    print(f"[{'OK' if ok else 'FAIL'}] Python {sys.version.split()[0]}" + ("" if ok else " (3.11+ needed)"))
    for name in packages:
        try:
            module = importlib.import_module(name)
            print(f"[OK] {name} {getattr(module, '__version__', '')}")
        except Exception as exc:  # an install can be broken in many ways; report, do not crash
            ok = False
            print(f"[FAIL] {name}: {type(exc).__name__}: {exc}")
    if not ok:
        print(HINT)
    return ok
