"""A pytest plugin (enabled in pyproject.toml) that keeps the test run and its notebook kernels offline.

The test process and every kernel nbval starts run in replay mode, with no API
key or endpoint URL, and refuse connections to other machines. The kernel
environment is the real one less those variables, so kernels keep PATH, HOME and
LABKIT_ROOT; the checkout under test is put first on PYTHONPATH so that a kernel
imports this checkout's labkit, not whichever labkit is installed. Every session
writes into its own temporary scratch folder, never the checkout's ``scratch/``,
so nothing left by an earlier run can decide a result.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_STATE: dict[str, object] = {}


def session_environment(base: dict[str, str], *, checkout: Path, folder: Path) -> dict[str, str]:
    """Return the test session's environment: ``base`` made offline, importing ``checkout``, scratch under ``folder``."""
    from labkit.offline import offline_kernel_env

    env = offline_kernel_env(base, ipython_dir=folder / "ipython")
    paths = [str(checkout), *(part for part in env.get("PYTHONPATH", "").split(os.pathsep) if part)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["LABKIT_SCRATCH"] = str(folder / "scratch")
    return env


def pytest_configure(config: pytest.Config) -> None:
    from labkit.offline import block_network

    folder = Path(tempfile.mkdtemp(prefix="labkit-pytest-"))
    _STATE["saved_env"] = dict(os.environ)
    _STATE["session_folder"] = folder
    env = session_environment(dict(os.environ), checkout=Path(config.rootpath), folder=folder)
    os.environ.clear()
    os.environ.update(env)
    block_network()
    _nbval_kernels_over_ipc(folder)


def _nbval_kernels_over_ipc(folder: Path) -> None:
    """Start nbval's kernels over Unix sockets, so that they can run inside the offline network namespace."""
    if os.name != "posix":
        return
    try:
        import nbval.kernel
        from jupyter_client.manager import KernelManager
    except ImportError:
        return

    class IpcKernelManager(KernelManager):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(transport="ipc", ip=str(folder / "kernel"), **kwargs)

    nbval.kernel.KernelManager = IpcKernelManager  # nbval takes no transport option


def pytest_unconfigure(config: pytest.Config) -> None:
    saved = _STATE.pop("saved_env", None)
    if isinstance(saved, dict):
        os.environ.clear()
        os.environ.update(saved)
    folder = _STATE.pop("session_folder", None)
    if isinstance(folder, Path):
        shutil.rmtree(folder, ignore_errors=True)
