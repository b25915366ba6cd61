#!/usr/bin/env python3
"""The course's two commands, from a fresh clone with only Python 3.11+ on the machine.

    python3 course.py run     # execute every notebook headless and offline; table of status and seconds
    python3 course.py test    # unit tests plus every notebook under nbval in strict mode

and, for contributors and CI:

    python3 course.py lint    # ruff check, ruff format --check and mypy (installs the `dev` extra)

Each creates (or reuses) the virtual environment `.venv/` in this folder and installs
labkit with the tested pins in `constraints.txt` before running. `--extras embed,local,mcp`
right after the command also installs optional extras (their tests then run instead of
skipping). Other arguments go to `labkit run` or to `pytest`. Only the standard library
is used here.
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
COMMANDS = ("run", "test", "lint")
OPTIONAL_EXTRAS = ("embed", "local", "mcp", "dev", "browser")
LINTERS = (
    ("ruff", "check", "."),
    ("ruff", "format", "--check", "."),
    ("mypy", "labkit", "benchmarks", "course.py"),
)


def _install_fingerprint(extras: str) -> str:
    digest = hashlib.sha256(extras.encode())
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def pip_command(extras: str) -> list[str]:
    """Return the pip install command; with a `wheelhouse/` folder (or $LABKIT_WHEELHOUSE) it stays offline."""
    command = [
        str(PYTHON),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-c",
        "constraints.txt",
        "-e",
        f".[{extras}]",
    ]
    wheelhouse = Path(os.environ.get("LABKIT_WHEELHOUSE", ROOT / "wheelhouse"))
    if wheelhouse.is_dir():
        command += ["--no-index", "--find-links", str(wheelhouse)]
    return command


def ensure_environment(extras: str) -> None:
    """Create `.venv` if needed and install labkit with the pinned versions unless already current."""
    if sys.version_info < (3, 11):  # noqa: UP036 -- course.py may be started by an older python3; this says so
        sys.exit(f"labkit needs Python 3.11 or newer; this is {sys.version.split()[0]}. Run with python3.11 or newer.")
    if not PYTHON.exists():
        print(f"Creating the virtual environment {VENV.relative_to(ROOT)}/ ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = _install_fingerprint(extras)
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print(f"Installing labkit[{extras}] with the tested pins (first time: a few minutes) ...", flush=True)
    if subprocess.call(pip_command(extras), cwd=ROOT) != 0:
        sys.exit("Installing labkit failed; the pip output above says why. Fix it and run the command again.")
    STAMP.write_text(wanted)


def lint(rest: list[str]) -> int:
    """Run every linter in turn (all of them, even after a failure); nonzero if any reported a finding."""
    failed = []
    for tool, *arguments in LINTERS:
        print(f"$ {tool} {' '.join(arguments)}", flush=True)
        if subprocess.call([str(BIN / tool), *arguments, *rest], cwd=ROOT) != 0:
            failed.append(tool)
    if failed:
        print(f"lint: {', '.join(failed)} reported findings; fix them (ruff format . rewrites the formatting)")
    return 1 if failed else 0


def _extras(rest: list[str], *, needed: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """Split a leading `--extras a,b` off the arguments; return the pip extras string (with ``needed``) and the rest."""
    chosen: list[str] = []
    if rest[:1] == ["--extras"]:
        if len(rest) < 2:
            sys.exit(f"--extras needs a comma-separated list, such as --extras {','.join(OPTIONAL_EXTRAS)}")
        chosen, rest = [e.strip() for e in rest[1].split(",") if e.strip()], rest[2:]
        unknown = sorted(set(chosen) - set(OPTIONAL_EXTRAS))
        if unknown:
            sys.exit(f"unknown extras {unknown}; the optional extras are {', '.join(OPTIONAL_EXTRAS)}")
    return ",".join(["test", *sorted({*chosen, *needed})]), rest


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    command = argv[0]
    extras, rest = _extras(argv[1:], needed=("dev",) if command == "lint" else ())
    ensure_environment(extras)
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    if command == "run":
        return subprocess.call([str(BIN / "labkit"), "run", *rest], cwd=ROOT, env=env)
    if command == "lint":
        return lint(rest)
    return subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
