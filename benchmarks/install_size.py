"""Measure the core install (no extras): size on disk, and proof that it holds no PyTorch or CUDA wheels.

Creates a fresh virtual environment in a temporary folder, installs labkit with the tested
pins (`.[test]` is not included: this is what a learner's core install weighs), and reports.

    python3 benchmarks/install_size.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("torch", "nvidia", "triton", "cuda")


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="labkit-install-size-") as tmp:
        env_dir = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        python = env_dir / "bin" / "python"
        empty = folder_bytes(env_dir)
        started = time.perf_counter()
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-c",
                str(ROOT / "constraints.txt"),
                str(ROOT),
            ],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - started
        packages = (
            subprocess.run(
                [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True
            )
            .stdout.lower()
            .splitlines()
        )
        heavy = [p for p in packages if p.split("==")[0].startswith(FORBIDDEN)]
        size = folder_bytes(env_dir) - empty
    print(
        f"core install: {len(packages)} packages, {size / 1e6:.0f} MB added to an empty venv, {seconds:.0f} s to install"
    )
    print("PyTorch/CUDA packages:", ", ".join(heavy) if heavy else "none")
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())
