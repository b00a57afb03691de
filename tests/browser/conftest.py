"""A JupyterLab started the way `make lab` starts it, and Debian's chromium driven by Playwright."""

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from labsession import CHROMIUM, ROOT, SHOTS, TOKEN, free_port  # noqa: E402


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """JupyterLab on a copy of course/ and solutions/, so running notebooks changes nothing in the repo."""
    home = tmp_path_factory.mktemp("lab")
    for folder in ("course", "solutions"):
        shutil.copytree(ROOT / folder, home / folder)
    shutil.copytree(ROOT / "course", home / "student")  # a student's working copy, edited by the tests
    # Render every cell (no lazy windowing), so the page shows the whole notebook to the test.
    # Nothing else is set here: the news pop-up and the instructor tools are `make lab`'s to turn off.
    settings = home / "settings"
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    port = free_port()
    log = open(home / "lab.log", "w")
    proc = subprocess.Popen(
        ["make", "lab", f"LAB_DIR={home}", f"LAB_PORT={port}",
         f"LAB_ARGS=--no-browser --ServerApp.ip=127.0.0.1 --IdentityProvider.token={TOKEN}"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
             "JUPYTERLAB_SETTINGS_DIR": str(settings)})
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            json.loads(urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2).read())
            break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    else:
        pass
    if proc.poll() is not None:
        raise RuntimeError(f"JupyterLab did not start: see {home / 'lab.log'}")
    yield {"base": base, "home": home, "log": home / "lab.log"}
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (sudo apt-get install chromium); "
                    "as root, make test-browser installs it itself")
    SHOTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(f"page error: {e}"))
    yield pg
    context.close()
