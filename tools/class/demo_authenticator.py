"""The demonstration class's log-in: each account's password is in a file only root can read.

A real class swaps this for its own authenticator (docs/class.md, "Logging in"): PAM for the
machine's own accounts, OAuth, or LTI for Canvas and Moodle. Nothing else in the class depends on
how people log in, only on the user names matching the Linux accounts.
"""

import hmac
import json

from jupyterhub.auth import Authenticator
from traitlets import Unicode


class DemoAuthenticator(Authenticator):
    """Accepts a user name and its password from `passwords_file` ({"name": "password", ...})."""

    passwords_file = Unicode(help="JSON file mapping each user name to its password").tag(config=True)

    def _passwords(self):
        with open(self.passwords_file) as f:
            return json.load(f)

    async def authenticate(self, handler, data):
        name, given = data.get("username", ""), data.get("password", "")
        expected = self._passwords().get(name)
        if expected is not None and hmac.compare_digest(expected.encode(), given.encode()):
            return name
        self.log.warning("Failed log-in for %r", name)
        return None
