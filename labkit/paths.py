"""Where the course's folders are: the project root, fixtures, recorded runs and the scratch folder."""

from __future__ import annotations

import os
from pathlib import Path

from labkit.errors import LabkitError


class FolderNotWritable(LabkitError, OSError):
    """An output folder is a file, or cannot be created or written."""


def project_root() -> Path:
    """Return the course checkout: ``$LABKIT_ROOT`` if set, else the folder that holds the ``labkit`` package."""
    override = os.environ.get("LABKIT_ROOT")
    return Path(override).resolve() if override else Path(__file__).resolve().parent.parent


def fixtures_dir() -> Path:
    """Return the folder of committed fixture files."""
    return project_root() / "fixtures"


def recorded_runs_dir() -> Path:
    """Return the folder of committed recorded runs."""
    return project_root() / "recorded_runs"


def notebooks_dir() -> Path:
    """Return the folder of the numbered notebooks."""
    return project_root() / "notebooks"


def scratch_dir() -> Path:
    """Return (and create) the scratch folder, the only place notebooks write: ``$LABKIT_SCRATCH`` or ``scratch/``."""
    override = os.environ.get("LABKIT_SCRATCH")
    path = Path(override) if override else project_root() / "scratch"
    named = f"LABKIT_SCRATCH={override}" if override else f"the scratch folder {path}"
    fix = "point LABKIT_SCRATCH at a folder (it is created if missing)" + ("" if override else " or remove that file")
    if path.exists() and not path.is_dir():
        raise FolderNotWritable(f"{named} is a file, not a folder; {fix}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, or no permission
        raise FolderNotWritable(f"cannot create {named} ({exc.strerror or exc}); {fix}") from None
    return path


def relative_to_root(path: str | Path) -> str:
    """Return ``path`` relative to the project root with forward slashes, for display and for run files."""
    path = Path(path).resolve()
    try:
        return path.relative_to(project_root()).as_posix()
    except ValueError:
        return path.as_posix()


def portable_text(text: str) -> str:
    """Return ``text`` with this machine's scratch and project folders written as ``scratch/`` and relative paths.

    Some error messages name a file by its absolute path; a notebook shows them
    through this function so that its output reads the same on every machine.
    """
    for folder, shown in ((scratch_dir(), "scratch/"), (project_root(), "")):
        for prefix in sorted({str(folder), str(Path(folder).resolve())}, key=len, reverse=True):
            text = text.replace(prefix + os.sep, shown)
    return text


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` all at once: a temporary file beside it, then a rename over the target.

    A reader (or a crash) never sees a half-written file, and nothing but ``path``
    and its own temporary file is touched. Text is written as UTF-8. The file keeps
    the permissions it had, or gets the ones a plain ``open`` would give it (the
    temporary file alone would be readable by its owner only).
    """
    import stat
    import tempfile

    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(temporary, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def writable_folder(path: str | Path) -> Path:
    """Return ``path`` as a folder that exists and can be written, creating it; refuse a file or a folder it cannot write."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FolderNotWritable(f"{path} is a file, not a folder; choose a folder for the output")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FolderNotWritable(
            f"cannot create the folder {path} ({exc.strerror}); choose a folder you can write to"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise FolderNotWritable(f"cannot write into {path} (permission denied); choose a folder you can write to")
    return path
