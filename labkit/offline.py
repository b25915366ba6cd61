"""Keep a process offline: refuse every network connection that leaves this machine.

The notebooks and tests run with no network. Two guards make that a checked
fact instead of a hope. `block_network()` (every process, every system): a
connection, datagram or name lookup for anything but loopback or a Unix socket
raises `NetworkBlocked` at once, naming the address. `isolate_network()` (Linux,
where user namespaces are allowed): the kernel and its children start in a
network namespace with only loopback, so even code that bypasses Python's
sockets has no route out. ``python -m labkit.offline CMD ...`` runs a command so.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import socket
import subprocess
import sys
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


_AUDITED = {"socket.connect", "socket.sendto", "socket.sendmsg"}
_LOOKUPS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr"}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # An audit hook sees every socket call made from C, so a raw ``_socket`` socket or UDP ``sendto`` is caught too.
    if event in _AUDITED:
        sock, address = args[0], args[1]
        internet = getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple)
        if internet and not _is_local(address[0]):
            _refuse(address[0])
    elif event in _LOOKUPS and args and not _is_local(args[0]):
        _refuse(args[0])


def block_network() -> None:
    """Refuse, from now on in this process, connections, datagrams and name lookups for non-local hosts.

    The check is a `sys.addaudithook` hook, so it holds for the ``socket`` module and the
    raw ``_socket`` below it alike; it cannot be removed. A child process is not covered:
    `isolate_network` (a network namespace) is what keeps children offline.
    """
    if getattr(socket, "_labkit_offline", False):
        return
    sys.addaudithook(_audit)
    socket._labkit_offline = True  # type: ignore[attr-defined]


_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
GUARD_NAMESPACE = "network namespace (no route out) + Python socket block"
GUARD_PYTHON = "Python socket block only (no network namespace on this system)"
GUARD_PYTHON_TCP = "Python socket block only (a kernel on TCP ports cannot sit in a network namespace)"


class NamespaceUnavailable(LabkitError, OSError):
    """The operating system refused a new network namespace (not Linux, or user namespaces are off)."""


def isolate_network() -> None:
    """Move this process into new user and network namespaces whose only interface is loopback (Linux).

    Call it in a process with one thread, before ``exec``: everything started from it,
    children included, has no route to any other machine.
    """
    import ctypes
    import fcntl
    import struct

    if not sys.platform.startswith("linux"):
        raise NamespaceUnavailable(f"network namespaces need Linux; this is {sys.platform}")
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise NamespaceUnavailable(f"unshare(CLONE_NEWUSER | CLONE_NEWNET) failed: {os.strerror(error)}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
            handle.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:  # bring loopback up, so 127.0.0.1 works
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))


@functools.cache
def network_namespace_available() -> bool:
    """Return whether this system lets labkit start kernels in a network namespace (``LABKIT_NETNS=0`` says no)."""
    if os.environ.get("LABKIT_NETNS", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(
        [sys.executable, "-c", "from labkit.offline import isolate_network; isolate_network()"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return probe.returncode == 0


def offline_guard() -> str:
    """Return which offline guard the course's kernels run under, in words."""
    return GUARD_NAMESPACE if network_namespace_available() else GUARD_PYTHON


def _kernel_spec(folder: Path) -> Path:
    """Write a ``python3`` kernel spec whose kernel starts inside a network namespace; return its Jupyter folder."""
    spec = folder / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "labkit.offline",
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
    ]
    kernel = {"argv": argv, "display_name": "Python 3 (labkit, offline)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel, indent=2) + "\n", encoding="utf-8")
    return folder / "jupyter"


def offline_kernel_env(base: dict[str, str] | None = None, *, ipython_dir: Path | None = None) -> dict[str, str]:
    """Return an environment whose IPython kernels start offline, in replay mode, with no API key.

    The kernel loads a startup file from a private IPython folder that calls
    `block_network()` before the first cell runs. Where the system allows it, the
    ``python3`` kernel spec found first (``JUPYTER_PATH``) also starts the kernel in a
    network namespace with no route out (`isolate_network`); ``LABKIT_OFFLINE_GUARD``
    says which guard holds.
    """
    env = dict(os.environ if base is None else base)
    folder = ipython_dir or Path(tempfile.mkdtemp(prefix="labkit-ipython-"))
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-labkit-offline.py").write_text(_STARTUP, encoding="utf-8")
    env["IPYTHONDIR"] = str(folder)
    env["LABKIT_OFFLINE_GUARD"] = offline_guard()
    if network_namespace_available():
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(_kernel_spec(folder)), env.get("JUPYTER_PATH")]))
    env["LABKIT_MODE"] = "replay"
    env["LABKIT_OFFLINE"] = "1"
    for name in [name for name in env if is_credential_or_endpoint(name)]:
        del env[name]
    return env


def is_credential_or_endpoint(name: str) -> bool:
    """Tell whether an environment variable holds a key or an endpoint URL, which an offline kernel must not see."""
    upper = name.upper()
    return upper in _REMOVED_NAMES or upper.endswith(_REMOVED_SUFFIXES)


def _connection_transport(argv: list[str]) -> str | None:
    """Return the transport named in a kernel's connection file (``-f FILE`` in its command), if any."""
    if "-f" not in argv[:-1]:
        return None
    try:
        return json.loads(Path(argv[argv.index("-f") + 1]).read_text(encoding="utf-8")).get("transport")
    except (OSError, ValueError, AttributeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """Run a command inside a new network namespace with only loopback: ``python -m labkit.offline CMD ...``."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m labkit.offline COMMAND [ARG ...]", file=sys.stderr)
        return 2
    if _connection_transport(argv) == "tcp":
        # A kernel on TCP ports inside the namespace could not be reached from outside it; keep the Python block.
        os.environ["LABKIT_OFFLINE_GUARD"] = GUARD_PYTHON_TCP
        os.execvp(argv[0], argv)
    try:
        isolate_network()
    except (NamespaceUnavailable, OSError) as exc:
        print(
            f"labkit.offline: cannot isolate the network: {exc}; set LABKIT_NETNS=0 to use the Python block only",
            file=sys.stderr,
        )
        return 1
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
