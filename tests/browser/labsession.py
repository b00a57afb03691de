"""Where the browser tests' JupyterLab lives and what it is called: the screenshots folder, chromium,
the server's token. (A module of its own, so the tests import it by a name no other folder uses.)"""

import os
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TOKEN = "course-browser-test"


def free_port(n=1):
    """A port on 127.0.0.1 with the n - 1 ports after it free too (a hub needs four in a row)."""
    for base in range(20000, 40000, 97):
        try:
            for k in range(n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", base + k))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {n} free ports in a row")
