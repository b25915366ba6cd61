"""configurable-http-proxy, JupyterHub's proxy, from npm: pinned, installed into the clone, carried in the wheelhouse.

The pin is ``deploy/proxy/package.json`` with its ``package-lock.json`` (every
dependency at an exact version and integrity hash). `install_proxy` puts it into
``.hub/proxy/`` with ``npm ci``: from the npm registry, or, when the wheelhouse
holds ``npm/`` (`pack_proxy` writes it with ``npm pack``), offline from those
tarballs, each checked against the lock's integrity hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from labkit.errors import LabkitError
from labkit.paths import project_root

#: The oldest Node.js the pinned proxy runs on (its commander needs require() of ES modules).
MIN_NODE = (20, 19)
NPM_FLAGS = ["--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]


class HubProxyMissing(LabkitError, FileNotFoundError):
    """configurable-http-proxy is not installed, or Node.js / npm needed to install it are missing or too old."""


def pin_folder() -> Path:
    """Return the folder of the committed pin (package.json and package-lock.json)."""
    return project_root() / "deploy" / "proxy"


def proxy_folder() -> Path:
    """Return the folder the proxy is installed into (ignored by git)."""
    return project_root() / ".hub" / "proxy"


def proxy_executable(folder: Path | None = None) -> Path:
    """Return the path of the installed configurable-http-proxy."""
    return (folder or proxy_folder()) / "node_modules" / ".bin" / "configurable-http-proxy"


def pinned_version(pins: Path | None = None) -> str:
    """Return the proxy version the pin names."""
    package = json.loads(((pins or pin_folder()) / "package.json").read_text(encoding="utf-8"))
    return str(package["dependencies"]["configurable-http-proxy"])


def locked_packages(pins: Path | None = None) -> list[tuple[str, str, str]]:
    """Return (install path, name, version) of every package the lock file pins, the proxy's dependencies included."""
    lock = json.loads(((pins or pin_folder()) / "package-lock.json").read_text(encoding="utf-8"))
    return [
        (path, path.rsplit("node_modules/", 1)[1], entry["version"]) for path, entry in lock["packages"].items() if path
    ]


def tarball_name(name: str, version: str) -> str:
    """Return the file name ``npm pack`` gives a package (``@colors/colors`` 1.6.0 -> ``colors-colors-1.6.0.tgz``)."""
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def node_version() -> tuple[int, ...] | None:
    """Return the installed Node.js version, or None when there is none."""
    node = shutil.which("node")
    if node is None:
        return None
    result = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    match = re.match(r"v(\d+)\.(\d+)\.(\d+)", result.stdout.strip())
    return tuple(int(part) for part in match.groups()) if match else None


def _npm() -> str:
    npm, version = shutil.which("npm"), node_version()
    if npm is None or version is None:
        raise HubProxyMissing(
            "the hub's proxy (configurable-http-proxy) comes from npm, and Node.js or npm is not installed: "
            "install Node.js 20.19 or newer with npm (Debian: apt-get install nodejs npm), then run the command again"
        )
    if version[:2] < MIN_NODE:
        shown = ".".join(map(str, version))
        raise HubProxyMissing(f"Node.js {shown} is too old for the pinned proxy; install Node.js 20.19 or newer")
    return npm


def _lock_digest(pins: Path) -> str:
    return hashlib.sha256(b"".join((pins / n).read_bytes() for n in ("package.json", "package-lock.json"))).hexdigest()


def wheelhouse_tarballs(wheelhouse: Path | None) -> Path | None:
    """Return the wheelhouse's ``npm/`` folder when it holds every pinned tarball, else None."""
    if wheelhouse is None or not (wheelhouse / "npm").is_dir():
        return None
    folder = wheelhouse / "npm"
    missing = [tarball_name(n, v) for _, n, v in locked_packages() if not (folder / tarball_name(n, v)).is_file()]
    if missing:
        raise HubProxyMissing(
            f"{folder} lacks {len(missing)} of the proxy's tarballs ({', '.join(missing[:3])} ...); "
            "rebuild it on a machine with a network: python -m labkit.course.hub pack-proxy wheelhouse"
        )
    return folder


def install_proxy(*, wheelhouse: Path | None = None, folder: Path | None = None) -> Path:
    """Install the pinned proxy into ``folder`` (``.hub/proxy/``) unless it is there already; return its executable.

    With a wheelhouse that holds ``npm/``, the install is offline, from those tarballs.
    """
    pins, folder = pin_folder(), folder or proxy_folder()
    executable, stamp = proxy_executable(folder), folder / ".labkit-pin"
    if executable.exists() and stamp.is_file() and stamp.read_text(encoding="utf-8") == _lock_digest(pins):
        return executable
    npm, tarballs = _npm(), wheelhouse_tarballs(wheelhouse)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pins / "package.json", folder / "package.json")
    lock = json.loads((pins / "package-lock.json").read_text(encoding="utf-8"))
    if tarballs is not None:  # the lock names no registry; point each package at its tarball in the wheelhouse
        for path, name, version in locked_packages(pins):
            lock["packages"][path]["resolved"] = (tarballs / tarball_name(name, version)).resolve().as_uri()
    (folder / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
    command = [npm, "ci", *NPM_FLAGS, *(["--offline"] if tarballs is not None else [])]
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0 or not executable.exists():
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise HubProxyMissing(
            f"npm could not install configurable-http-proxy {pinned_version(pins)} into {folder}: "
            f"{lines[-1] if lines else 'no output'}. Check the network (or the wheelhouse's npm/ folder) and retry"
        )
    stamp.write_text(_lock_digest(pins), encoding="utf-8")
    return executable


def pack_proxy(wheelhouse: Path) -> list[Path]:
    """Write the pinned proxy and every dependency as npm tarballs into ``wheelhouse/npm`` (needs the registry)."""
    npm, folder = _npm(), wheelhouse / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    specs = sorted({f"{name}@{version}" for _, name, version in locked_packages()})
    result = subprocess.run(
        [npm, "pack", *specs, "--pack-destination", str(folder), "--loglevel=error"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        raise HubProxyMissing(f"npm pack failed: {result.stderr.strip().splitlines()[-1:]}; check the network")
    return sorted(folder / tarball_name(n, v) for n, v in {tuple(s.rsplit("@", 1)) for s in specs})


def proxy_version(executable: Path) -> str | None:
    """Return what the installed proxy says its version is, or None when it does not run."""
    if not executable.exists():
        return None
    try:
        result = subprocess.run(
            [str(executable), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=dict(os.environ),
        )
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None
