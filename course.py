#!/usr/bin/env python3
"""The course's two commands, from a fresh clone with only Python 3.11+ on the machine.

    python3 course.py run     # execute every notebook headless and offline; table of status and seconds
    python3 course.py test    # unit tests plus every notebook under nbval in strict mode

Each creates (or reuses) the virtual environment `.venv/` in this folder and installs
labkit with the tested pins in `constraints.txt` before running. Arguments after the
command go to `labkit run` or to `pytest`. Only the standard library is used here.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".labkit-install"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
EXTRAS = {"run": "test", "test": "test"}


def _install_fingerprint(extras: str) -> str:
    digest = hashlib.sha256(extras.encode())
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def ensure_environment(extras: str) -> None:
    """Create `.venv` if needed and install labkit with the pinned versions unless already current."""
    if sys.version_info < (3, 11):
        sys.exit(f"labkit needs Python 3.11 or newer; this is {sys.version.split()[0]}. Run with python3.11 or newer.")
    if not PYTHON.exists():
        print(f"Creating the virtual environment {VENV.relative_to(ROOT)}/ ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = _install_fingerprint(extras)
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print(f"Installing labkit[{extras}] with the tested pins (first time: a few minutes) ...", flush=True)
    command = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "-c", "constraints.txt", "-e", f".[{extras}]"]
    if subprocess.call(command, cwd=ROOT) != 0:
        sys.exit("Installing labkit failed; the pip output above says why. Fix it and run the command again.")
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in EXTRAS:
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    command, rest = argv[0], argv[1:]
    ensure_environment(EXTRAS[command])
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    if command == "run":
        return subprocess.call([str(BIN / "labkit"), "run", *rest], cwd=ROOT, env=env)
    return subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
