"""Keep a process offline: refuse every network connection that leaves this machine.

The notebooks and tests run with no network. `block_network()` makes that a
checked fact instead of a hope: a connection to anything but loopback or a
Unix socket raises `NetworkBlocked` at once, naming the address.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}
# What an offline kernel's environment loses: keys and where a model endpoint is; everything else
# (PATH, HOME, PYTHONPATH, LABKIT_ROOT, ...) is kept so the kernel runs the same code as its parent.
_REMOVED_NAMES = {"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "LABKIT_API_KEY"}
_REMOVED_SUFFIXES = ("_API_KEY", "_API_TOKEN", "_ACCESS_TOKEN", "_SECRET_KEY", "_BASE_URL", "_API_BASE", "_ENDPOINT")
_STARTUP = """\
# Written by labkit: keeps this IPython kernel offline (see labkit/offline.py).
try:
    import labkit.offline as _labkit_offline
    _labkit_offline.block_network()
    del _labkit_offline
except ImportError:
    pass
"""


class NetworkBlocked(LabkitError, OSError):
    """A connection to another machine was attempted while the process is offline."""


def _is_local(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return True  # not an internet address (a Unix socket path, say)
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(host: Any) -> None:
    raise NetworkBlocked(
        f"network access to {host!r} is blocked: labkit runs offline. "
        "Use replay mode (the default), or the bundled local model on 127.0.0.1 (`labkit serve`)."
    )


def block_network() -> None:
    """Refuse, from now on in this process, connections and name lookups for non-local hosts."""
    if getattr(socket, "_labkit_offline", False):
        return
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex
    original_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            _refuse(address[0])
        return original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            _refuse(address[0])
        return original_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local(host):
            _refuse(host)
        return original_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket._labkit_offline = True  # type: ignore[attr-defined]


def offline_kernel_env(base: dict[str, str] | None = None, *, ipython_dir: Path | None = None) -> dict[str, str]:
    """Return an environment whose IPython kernels start offline, in replay mode, with no API key.

    The kernel loads a startup file from a private IPython folder that calls
    `block_network()` before the first cell runs.
    """
    env = dict(os.environ if base is None else base)
    folder = ipython_dir or Path(tempfile.mkdtemp(prefix="labkit-ipython-"))
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-labkit-offline.py").write_text(_STARTUP, encoding="utf-8")
    env["IPYTHONDIR"] = str(folder)
    env["LABKIT_MODE"] = "replay"
    env["LABKIT_OFFLINE"] = "1"
    for name in [name for name in env if is_credential_or_endpoint(name)]:
        del env[name]
    return env


def is_credential_or_endpoint(name: str) -> bool:
    """Tell whether an environment variable holds a key or an endpoint URL, which an offline kernel must not see."""
    upper = name.upper()
    return upper in _REMOVED_NAMES or upper.endswith(_REMOVED_SUFFIXES)
