"""A learner's single-user server on the workshop hub, offline as on a laptop: ``python -m labkit.course.hub_singleuser``.

The hub starts this instead of ``jupyterhub-singleuser``. In the learner's own
process (their account, their home) it builds the environment `labkit run` gives
its kernels (`labkit.offline.offline_kernel_env`: replay mode, no keys or endpoint
settings, the Python socket block in every kernel, and a network namespace with
no route out where the system allows one), keeps the hub's ``JUPYTERHUB_*``
settings the server needs, and starts JupyterHub's single-user server with kernels
on Unix sockets (a kernel on TCP ports could not sit in a network namespace) and
no terminals (a shell would sit outside the kernels' guard).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def singleuser_environment(environ: dict[str, str]) -> dict[str, str]:
    """Return the environment of a learner's server: the offline kernel environment plus the hub's settings."""
    from labkit.offline import offline_kernel_env

    home = Path(environ.get("HOME") or Path.cwd())
    private = home / ".labkit"
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = offline_kernel_env(environ, ipython_dir=private / "ipython")
    # offline_kernel_env drops every *_API_TOKEN; the server's own token to the hub must stay.
    env.update({k: v for k, v in environ.items() if k.startswith("JUPYTERHUB_") or k == "JPY_API_TOKEN"})
    env.setdefault("LABKIT_SCRATCH", str(home / "scratch"))
    return env


def singleuser_command(arguments: list[str], *, sockets: Path, as_root: bool) -> list[str]:
    """Return the command of JupyterHub's single-user server with kernels on Unix sockets under ``sockets``."""
    command = [sys.executable, "-m", "jupyterhub.singleuser", "--KernelManager.transport=ipc"]
    command += [f"--KernelManager.ip={sockets / 'kernel'}", "--ServerApp.terminals_enabled=False"]
    command += ["--LabApp.extension_manager=readonly"]  # never ask PyPI about extensions
    return [*command, *(["--allow-root"] if as_root else []), *arguments]


def main(argv: list[str] | None = None) -> int:
    """Start the learner's server offline (replaces this process)."""
    env = singleuser_environment(dict(os.environ))
    sockets = Path(tempfile.mkdtemp(prefix="lk-kernels-"))  # short: a Unix socket path has about 100 characters
    command = singleuser_command(sys.argv[1:] if argv is None else argv, sockets=sockets, as_root=os.geteuid() == 0)
    os.execve(command[0], command, env)


if __name__ == "__main__":
    raise SystemExit(main())
