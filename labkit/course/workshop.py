"""Student copies of the notebooks, and a checker that tells a learner whether an exercise now behaves as asked.

Notebook cells carry tags (cell metadata ``tags``):
- ``exercise``: a cell the learner edits; kept in the student copy.
- ``solution``: a worked answer; in the student copy its code is replaced by a short stub.
- ``check``: a cell that asserts what an exercise should produce; `check_exercises` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.paths import FolderNotWritable

SOLUTION_STUB = "# Your solution here. (The worked solution is not part of the student copy.)\n"


class WorkshopExportRefused(LabkitError, FileExistsError):
    """The export folder already holds files; an export never overwrites."""


@dataclass(frozen=True)
class ExerciseCheck:
    """How one ``check`` cell fared when the learner's notebook ran."""

    cell: int
    """The code cell's number, counting from 1."""
    passed: bool
    """True when the cell ran without an error."""
    message: str
    """The error name and message when it failed."""


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def student_copy(nb: Any) -> Any:
    """Return a copy of a notebook with every output cleared and every ``solution`` cell stubbed."""
    import copy

    copied = copy.deepcopy(nb)
    copied.metadata.pop("widgets", None)
    for cell in copied.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        if "solution" in _tags(cell):
            cell.source = SOLUTION_STUB
    return copied


def export_workshop(destination: Path, notebooks: list[Path]) -> list[Path]:
    """Write student copies of ``notebooks`` into ``destination`` (which must be new or empty).

    Every notebook is read and copied before the first file is written, and each file is
    written atomically, so a bad notebook or an unwritable folder leaves nothing half-written.
    """
    import nbformat

    from labkit.course.runner import read_notebook
    from labkit.paths import atomic_write, writable_folder

    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise WorkshopExportRefused(
            f"{destination} already exists and is not an empty folder; an export never overwrites. Choose a new folder."
        )
    copies = [(path.name, nbformat.writes(student_copy(read_notebook(path)))) for path in notebooks]
    folder = writable_folder(destination)
    written = []
    for name, text in copies:
        try:
            written.append(atomic_write(folder / name, text.rstrip("\n") + "\n"))
        except OSError as exc:
            raise FolderNotWritable(
                f"cannot write {folder / name} ({exc.strerror}); choose a folder you can write to"
            ) from None
    return written


def check_exercises(path: Path) -> list[ExerciseCheck]:
    """Run a learner's notebook offline to the end and report each ``check`` cell."""

    from labkit.course.runner import execute, read_notebook

    nb = read_notebook(path)
    execute(nb, path.parent, allow_errors=True)
    code = [c for c in nb.cells if c.cell_type == "code"]
    results = []
    for number, cell in enumerate(code, start=1):
        if "check" not in _tags(cell):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        message = f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else ""
        results.append(ExerciseCheck(number, not errors, message))
    return results
