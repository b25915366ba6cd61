"""The workshop hub's settings and the JupyterHub configuration made from them.

`HubSettings` holds what the instructor chose (address, port, state folder,
admin name, idle timeout, isolation) and what the launcher found (free internal
ports, the proxy's path). `configure` turns it into JupyterHub's traitlets
configuration; the ``jupyterhub_config.py`` written into the state folder only
calls it. Passwords never go into a file: the hub process reads them from its
environment (``LABKIT_HUB_PASSWORD``, ``LABKIT_HUB_ADMIN_PASSWORD``) and removes
them there, so neither the proxy nor a service started by the hub inherits them.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from labkit.errors import LabkitError

#: Environment variables that carry the room's password and the instructor's (admin) password.
PASSWORD_ENV = "LABKIT_HUB_PASSWORD"
ADMIN_PASSWORD_ENV = "LABKIT_HUB_ADMIN_PASSWORD"
#: A learner's name: lower case (JupyterHub lower-cases it), short enough for a system account with its prefix.
LEARNER_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,23}$"
#: The folder, inside each learner's home, that receives the student copy of the course.
COURSE_FOLDER = "course"
#: What the idle culler may do (JupyterHub 2+ scopes, as jupyterhub-idle-culler's README lists them).
CULLER_SCOPES = ["list:users", "read:users:activity", "read:servers", "delete:servers"]

Isolation = Literal["users", "none"]


class HubPasswordRefused(LabkitError, ValueError):
    """A hub password is missing, too short, or the same for the room and the admin."""


@dataclass(frozen=True)
class HubSettings:
    """Everything the hub's configuration is made from (no passwords)."""

    state: str
    """Folder of the hub's database, cookie secret, logs and configuration."""
    homes: str
    """Folder that holds one home per learner (``homes/<name>``)."""
    notebooks: str
    """Folder of the course's numbered notebooks, exported into each new home."""
    proxy: str
    """The configurable-http-proxy executable."""
    ip: str = "127.0.0.1"
    """Address the room connects to (the proxy's public side)."""
    port: int = 8000
    """Port the room connects to."""
    hub_port: int = 8081
    """Port of the hub's internal API (on 127.0.0.1)."""
    proxy_api_port: int = 8001
    """Port of the proxy's REST API (on 127.0.0.1)."""
    admin: str = "instructor"
    """The instructor's login name; it logs in with the admin password only."""
    isolation: Isolation = "none"
    """``users``: one system account per learner; ``none``: every server runs as the hub's own user."""
    account_prefix: str = "learner-"
    """Prefix of the learners' system accounts (``learner-alice``), so no learner can be ``root``."""
    idle_timeout: int = 3600
    """Seconds without activity after which the idle culler stops a learner's server."""
    cull_every: int = 300
    """Seconds between the idle culler's checks."""
    python: str = field(default_factory=lambda: sys.executable)
    """The course environment's Python, which runs the hub, the culler and every learner's server."""

    def url(self) -> str:
        """Return the address learners open."""
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"http://{host}:{self.port}/"

    def write(self, path: Path) -> Path:
        """Write the settings as JSON (two-space indent, newline at end)."""
        path.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path) -> HubSettings:
        """Read settings written by `write`."""
        return cls(**json.loads(path.read_text(encoding="utf-8")))


def check_passwords(room: str, admin: str) -> None:
    """Refuse passwords JupyterHub's `SharedPasswordAuthenticator` would refuse, with its own rule and message.

    The rule is JupyterHub's, applied by its traits (``user_password`` at least 8
    characters, ``admin_password`` at least 32, the two different), so it stays
    the one the hub enforces at start.
    """
    from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
    from traitlets import TraitError

    if not room or not admin:
        which = "room password" if not room else "admin password"
        raise HubPasswordRefused(
            f"no {which} given: set {PASSWORD_ENV} and {ADMIN_PASSWORD_ENV}, or run the command at a terminal "
            "to be asked for them"
        )
    try:
        SharedPasswordAuthenticator(user_password=room, admin_password=admin)
    except (TraitError, ValueError) as exc:  # a trait validator raises ValueError, which traitlets passes on
        raise HubPasswordRefused(
            f"JupyterHub refuses this password: {exc}. The room password needs at least 8 characters, the admin "
            "password at least 32, and they must differ (a passphrase of several words is easy to read out in a room)."
        ) from None


def read_passwords(environ: dict[str, str] | None = None) -> tuple[str, str]:
    """Return (room, admin) passwords from the environment, asking at the terminal for any that is not set."""
    import getpass

    environ = dict(os.environ if environ is None else environ)
    found = []
    for name, label in ((PASSWORD_ENV, "room password (learners)"), (ADMIN_PASSWORD_ENV, "admin password")):
        value = environ.get(name, "")
        if not value and sys.stdin.isatty():
            value = getpass.getpass(f"{label}: ")
        found.append(value)
    return found[0], found[1]


def configure(c: Any, settings: HubSettings, *, room_password: str, admin_password: str) -> None:
    """Fill a JupyterHub traitlets config ``c`` for the workshop room described by ``settings``."""
    state, python = Path(settings.state), settings.python
    c.JupyterHub.bind_url = settings.url()
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = settings.hub_port
    c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = True  # a stopped hub stops every learner's server (their homes stay)
    c.ConfigurableHTTPProxy.command = [settings.proxy]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
    c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")

    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = room_password
    c.SharedPasswordAuthenticator.admin_password = admin_password
    c.Authenticator.admin_users = {settings.admin}
    c.Authenticator.allow_all = True
    c.Authenticator.username_pattern = LEARNER_NAME_PATTERN

    spawner = "IsolatedLearnerSpawner" if settings.isolation == "users" else "SharedLearnerSpawner"
    c.JupyterHub.spawner_class = f"labkit.course.hub_spawner.{spawner}"
    c.LearnerHomes.homes = settings.homes
    c.LearnerHomes.notebooks = settings.notebooks
    c.LearnerHomes.account_prefix = settings.account_prefix
    c.Spawner.cmd = [python, "-m", "labkit.course.hub_singleuser"]
    c.Spawner.default_url = f"/lab/tree/{COURSE_FOLDER}"
    c.Spawner.http_timeout = 120  # a room logging in at once shares the cores; a server may take a while
    c.Spawner.start_timeout = 180

    culler = [python, "-m", "jupyterhub_idle_culler", f"--timeout={settings.idle_timeout}"]
    c.JupyterHub.services = [{"name": "idle-culler", "command": [*culler, f"--cull-every={settings.cull_every}"]}]
    c.JupyterHub.load_roles = [{"name": "idle-culler", "scopes": CULLER_SCOPES, "services": ["idle-culler"]}]


def configure_from_environment(c: Any, settings_file: str) -> None:
    """Configure the hub from its settings file and the passwords in its environment, then drop them from it."""
    room = os.environ.pop(PASSWORD_ENV, "")
    admin = os.environ.pop(ADMIN_PASSWORD_ENV, "")
    check_passwords(room, admin)
    configure(c, HubSettings.read(Path(settings_file)), room_password=room, admin_password=admin)


CONFIG_FILE = """\
# Written by labkit (python -m labkit.course.hub) at every start; edit the command's options, not this file.
from labkit.course.hub_config import configure_from_environment

configure_from_environment(c, {settings!r})  # noqa: F821 (JupyterHub defines c)
"""


def write_config(settings: HubSettings) -> Path:
    """Write the settings and the ``jupyterhub_config.py`` that reads them into the state folder; return the latter."""
    state = Path(settings.state)
    written = settings.write(state / "hub-settings.json")
    config = state / "jupyterhub_config.py"
    config.write_text(CONFIG_FILE.format(settings=str(written)), encoding="utf-8")
    return config
