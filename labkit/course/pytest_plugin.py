"""A pytest plugin (enabled in pyproject.toml) that keeps the test run and its notebook kernels offline.

The test process and every kernel nbval starts run in replay mode, with no API
key, and refuse connections to other machines.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_STATE: dict[str, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    from labkit.offline import block_network, offline_kernel_env

    folder = Path(tempfile.mkdtemp(prefix="labkit-pytest-ipython-"))
    _STATE["saved_env"] = dict(os.environ)
    _STATE["ipython_dir"] = folder
    os.environ.clear()
    os.environ.update(offline_kernel_env(ipython_dir=folder))
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
    folder = _STATE.pop("ipython_dir", None)
    if isinstance(folder, Path):
        shutil.rmtree(folder, ignore_errors=True)
