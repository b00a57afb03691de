"""Where the browser tests' JupyterLab lives and what it is called: the screenshots folder, chromium,
the server's token. (A module of its own, so the tests import it by a name no other folder uses.)"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TOKEN = "course-browser-test"
