"""`make lab` serves JupyterLab on course/ (as root too)."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from nbtools import ROOT


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_make_lab_serves_the_course():
    port, token = free_port(), "course-test-token"
    proc = subprocess.Popen(["make", "lab", f"LAB_PORT={port}",
                             f"LAB_ARGS=--no-browser --ServerApp.ip=127.0.0.1 --IdentityProvider.token={token}"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline, body = time.time() + 60, None
        while time.time() < deadline:
            try:
                url = f"http://127.0.0.1:{port}/api/contents/01_attention?token={token}"
                body = json.loads(urllib.request.urlopen(url, timeout=2).read())
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.5)
        assert body is not None, proc.stdout.read() if proc.poll() is not None else "JupyterLab did not answer"
        assert "01_attention.ipynb" in [c["name"] for c in body["content"]]
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=5)
        assert page.status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
