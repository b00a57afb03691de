"""The class's JupyterHub (started by class_hub.py, which writes the settings this file reads).

Users log in with DemoAuthenticator (a real class swaps in PAM, OAuth or LTI: docs/class.md); each gets
JupyterLab, started as their own Linux user by LocalProcessSpawner, on the class's copy of the
course environment, with the student configuration (nbgrader's Assignments list, no instructor
tools). nbgrader's formgrader runs as the service `encdec`, as the course folder's owner, in
autograder/ (where nbgrader reads the course's nbgrader_config.py); only the instructor may open it.
"""

import json
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub)

S = json.loads(Path(os.environ["CLASS_SETTINGS"]).read_text())
CLASS, ROOT, ENV = Path(S["class_dir"]), Path(S["course_root"]), Path(S["env"])
HUB = CLASS / "hub"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # demo_authenticator

# Where the hub listens, and where it keeps its state: all under CLASS_DIR/hub.
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = S["port"]
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = S["hub_port"]
c.JupyterHub.db_url = f"sqlite:///{HUB / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(HUB / "jupyterhub.pid")
c.ConfigurableHTTPProxy.command = [S["proxy"]]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{S['proxy_api_port']}"
c.ConfigurableHTTPProxy.pid_file = str(HUB / "proxy.pid")

# Who may log in.
c.JupyterHub.authenticator_class = "demo_authenticator.DemoAuthenticator"
c.DemoAuthenticator.passwords_file = str(HUB / "passwords.json")
c.Authenticator.allowed_users = set(S["users"])

# Each user's JupyterLab, as that Linux user, in their home.
c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"
c.Spawner.cmd = [str(ENV / "bin" / "python"), "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.disable_user_config = True  # a user's own ~/.jupyter cannot turn the instructor tools back on
c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": str(CLASS / "config" / "user"),
    "PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
}
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180

# The formgrader: a hub service, reached at /services/encdec/, for the instructor only.
service = {
    "name": S["course_id"],
    "url": f"http://127.0.0.1:{S['service_port']}",
    "command": [str(ROOT / ".venv" / "bin" / "python"), "-m", "jupyterhub.singleuser",
                *(["--allow-root"] if S["course_owner"] == "root" else [])],
    "cwd": str(ROOT / "autograder"),
    "environment": {
        "PATH": f"{ROOT / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",  # nbgrader runs alembic by name
        "CLASS_DIR": str(CLASS),
        "JUPYTERHUB_DEFAULT_URL": "/formgrader",
        "JUPYTER_CONFIG_DIR": str(CLASS / "formgrader"),  # not the owner's own ~/.jupyter
    },
    "oauth_no_confirm": True,
}
if S["course_owner"] != "root":
    service["user"] = S["course_owner"]
c.JupyterHub.services = [service]
c.JupyterHub.load_roles = [
    {"name": "course-instructor", "users": [S["instructor"]],
     "scopes": [f"access:services!service={S['course_id']}"]},
]
