"""nbgrader's configuration in the student's JupyterLab: `make lab` puts this folder first on
JUPYTER_CONFIG_PATH, so nbgrader's Validate button and assignment list find it (and do not warn
that there is none). Instructors grade with autograder/nbgrader_config.py. Where a course runs on a
shared JupyterHub, its exchange and course id stay in the hub's own nbgrader configuration."""

import os

from jupyter_core.paths import jupyter_data_dir

c = get_config()  # noqa: F821 (provided by nbgrader)

c.Execute.timeout = 60  # seconds per cell, as when grading (autograder/nbgrader_config.py)

# The assignment list reads nbgrader's exchange. On one's own machine there is no course server's
# /srv/nbgrader/exchange, so the list reads a private, empty one (and says "no assignments")
# instead of an error about a missing exchange directory.
c.Exchange.root = os.path.join(jupyter_data_dir(), "nbgrader", "exchange")
os.makedirs(c.Exchange.root, exist_ok=True)
