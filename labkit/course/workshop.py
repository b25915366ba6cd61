"""Student copies of the notebooks, and a checker that tells a learner which exercises are done.

An exercise is three cells, each tagged with its role and with ``ex:<slug>``
(cell metadata ``tags``; the same slug on all three):

- ``exercise``: a markdown cell that states the task;
- ``solution``: a code cell with the worked solution; its metadata holds
  ``{"labkit": {"stub": "..."}}``, a skeleton with the same ``def`` lines whose
  body raises ``NotImplementedError("hint: ...")``;
- ``check``: a code cell that calls the learner's code on inputs the task did not
  show, asserts its behaviour and prints ``ex:<slug> passed``.

`student_copy` swaps every solution for its stub and clears outputs;
`check_exercises` runs a notebook offline past errors and reports each exercise
as passed, not finished (its code still raises ``NotImplementedError``) or failed.
A cell may run `EXERCISE_CELL_TIMEOUT_S` seconds (``labkit workshop check
--cell-timeout``): one that runs longer (a loop that never ends) stops the notebook
there, its exercise fails naming the cell, and the exercises after it are not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from labkit.errors import LabkitError
from labkit.paths import FolderNotWritable

#: The three roles of an exercise's cells, in the order they appear.
ROLES = ("exercise", "solution", "check")
#: The cell type each role must have.
ROLE_CELL_TYPES = {"exercise": "markdown", "solution": "code", "check": "code"}
SLUG_PREFIX = "ex:"
#: Seconds one cell of a learner's notebook may run when checked: an exercise cell takes a few seconds at most.
EXERCISE_CELL_TIMEOUT_S = 60


class WorkshopExportRefused(LabkitError, FileExistsError):
    """The export folder already holds files; an export never overwrites."""


class SolutionWithoutStub(LabkitError, ValueError):
    """A ``solution`` cell has no usable stub in its metadata, so a student copy would give the answer away."""


class ExerciseIncomplete(LabkitError, ValueError):
    """A notebook's exercise cells do not form complete exercise / solution / check triples."""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a notebook: its slug and where its three cells are."""

    slug: str
    """The name after ``ex:`` in the cells' tags, such as ``validator-backed-count``."""
    exercise: int
    """Index (from 0, among all cells) of the markdown task cell."""
    solution: int
    """Index of the code cell with the worked solution (the stub in a student copy)."""
    check: int
    """Index of the code cell that checks the learner's code."""


@dataclass(frozen=True)
class ExerciseResult:
    """How one exercise fared when the learner's notebook ran."""

    slug: str
    """The exercise's slug."""
    status: Literal["passed", "not finished", "failed", "not run"]
    """``passed``; ``not finished`` (the code still raises ``NotImplementedError``); ``failed``; or
    ``not run`` (an earlier cell ran out of time and the notebook stopped there)."""
    message: str
    """The error's name and message (the hint, or the assertion that failed); empty when passed."""


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _slugs(cell: Any) -> list[str]:
    return [t[len(SLUG_PREFIX) :] for t in _tags(cell) if t.startswith(SLUG_PREFIX)]


def _where(name: str, index: int, cell: Any) -> str:
    first = next((line for line in str(cell.get("source", "")).splitlines() if line.strip()), "")
    return f"{name} cell {index} ({first[:60]!r})"


def find_exercises(nb: Any, *, name: str = "notebook") -> list[Exercise]:
    """Return the notebook's exercises in order, or raise `ExerciseIncomplete` naming the cell at fault."""
    found: dict[str, dict[str, int]] = {}
    for index, cell in enumerate(nb.cells):
        roles = [r for r in ROLES if r in _tags(cell)]
        slugs = _slugs(cell)
        if not roles and not slugs:
            continue
        if len(roles) != 1 or len(slugs) != 1:
            raise ExerciseIncomplete(
                f"{_where(name, index, cell)} has roles {roles} and slugs {slugs}; an exercise cell needs exactly "
                f"one of the tags {', '.join(ROLES)} and exactly one 'ex:<slug>' tag"
            )
        role, slug = roles[0], slugs[0]
        if cell.cell_type != ROLE_CELL_TYPES[role]:
            raise ExerciseIncomplete(
                f"{_where(name, index, cell)} is tagged {role!r} but is a {cell.cell_type} cell; "
                f"make it a {ROLE_CELL_TYPES[role]} cell"
            )
        cells = found.setdefault(slug, {})
        if role in cells:
            raise ExerciseIncomplete(
                f"{_where(name, index, cell)}: exercise {slug!r} already has a {role!r} cell (cell {cells[role]}); "
                "give each exercise its own slug"
            )
        cells[role] = index
    exercises = []
    for slug, cells in found.items():
        missing = [r for r in ROLES if r not in cells]
        if missing:
            raise ExerciseIncomplete(f"{name}: exercise {slug!r} has no {' or '.join(missing)} cell; add it")
        if not cells["exercise"] < cells["solution"] < cells["check"]:
            raise ExerciseIncomplete(
                f"{name}: exercise {slug!r} must have its task, solution and check cells in that order"
            )
        exercises.append(Exercise(slug, cells["exercise"], cells["solution"], cells["check"]))
    return sorted(exercises, key=lambda e: e.exercise)


def solution_stub(cell: Any, *, name: str = "notebook", index: int = 0) -> str:
    """Return a solution cell's stub, or raise `SolutionWithoutStub` naming the cell when it has none."""
    stub = cell.get("metadata", {}).get("labkit", {}).get("stub")
    where = _where(name, index, cell)
    if not isinstance(stub, str) or not stub.strip():
        raise SolutionWithoutStub(
            f"{where} is tagged 'solution' but has no stub: add metadata "
            '{"labkit": {"stub": "<the same def lines, body raising NotImplementedError(\'hint: ...\')>"}}'
        )
    if "NotImplementedError" not in stub:
        raise SolutionWithoutStub(f"{where}: its stub must raise NotImplementedError with a hint, so a check can tell")
    try:
        compile(stub, where, "exec")
    except SyntaxError as exc:
        raise SolutionWithoutStub(f"{where}: its stub is not valid Python ({exc.msg}, line {exc.lineno})") from None
    return stub


def student_copy(nb: Any, *, name: str = "notebook") -> Any:
    """Return a copy of a notebook with every output cleared and every ``solution`` cell replaced by its stub."""
    import copy

    copied = copy.deepcopy(nb)
    copied.metadata.pop("widgets", None)
    for index, cell in enumerate(copied.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        if "solution" in _tags(cell):
            cell.source = solution_stub(cell, name=name, index=index)
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
    copies = [(path.name, nbformat.writes(student_copy(read_notebook(path), name=path.name))) for path in notebooks]
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


def _first_error(cell: Any) -> dict[str, Any] | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _printed(cell: Any) -> str:
    return "".join(str(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def exercise_result(nb: Any, exercise: Exercise) -> ExerciseResult:
    """Return how ``exercise`` fared in an executed notebook, read from its solution and check cells' outputs."""
    error = _first_error(nb.cells[exercise.check])
    if error is None:
        if f"ex:{exercise.slug} passed" in _printed(nb.cells[exercise.check]):
            return ExerciseResult(exercise.slug, "passed", "")
        return ExerciseResult(exercise.slug, "failed", f"the check did not print 'ex:{exercise.slug} passed'")
    unfinished = error["ename"] == "NotImplementedError"
    solution_error = _first_error(nb.cells[exercise.solution])
    if solution_error is not None and not unfinished:  # the learner's own cell failed first: show that
        error = solution_error
        unfinished = error["ename"] == "NotImplementedError"
    message = f"{error['ename']}: {error['evalue']}"
    return ExerciseResult(exercise.slug, "not finished" if unfinished else "failed", message)


def _timed_out(nb: Any, exercise: Exercise, cell: int, timeout: int, exercises: list[Exercise]) -> ExerciseResult:
    """Return how ``exercise`` fared when cell ``cell`` ran past ``timeout`` seconds and the notebook stopped there."""
    roles = {e.solution: (e.slug, "solution") for e in exercises} | {e.check: (e.slug, "check") for e in exercises}
    slug, role = roles.get(cell, (None, None))
    limit = f"ran past the {timeout} s limit for one cell and was stopped"
    if cell in (exercise.solution, exercise.check):
        return ExerciseResult(
            exercise.slug,
            "failed",
            f"its {role} cell (cell {cell}) {limit}; look for a loop that never ends, "
            "or give a slow cell more time with --cell-timeout",
        )
    if exercise.check < cell:
        return exercise_result(nb, exercise)
    stopped = f"ex:{slug}'s {role} cell" if slug else "a cell that is not an exercise's"
    return ExerciseResult(exercise.slug, "not run", f"the notebook stopped at cell {cell} ({stopped}), which {limit}")


def check_exercises(path: Path, *, cell_timeout: int = EXERCISE_CELL_TIMEOUT_S) -> list[ExerciseResult]:
    """Run a learner's notebook offline to the end (past errors) and report each exercise.

    Each cell may run ``cell_timeout`` seconds; a cell that runs longer stops the run, and
    the report names it (its exercise's slug and its cell index).
    """
    from nbclient.exceptions import CellTimeoutError

    from labkit.course.runner import execute, read_notebook

    if isinstance(cell_timeout, bool) or not isinstance(cell_timeout, int) or cell_timeout < 1:
        raise ValueError(f"cell_timeout must be a whole number of seconds, 1 or more, not {cell_timeout!r}")
    nb = read_notebook(path)
    exercises = find_exercises(nb, name=path.name)
    if not exercises:
        return []
    try:
        execute(nb, path.parent, timeout=cell_timeout, allow_errors=True)
    except CellTimeoutError as exc:
        cell = getattr(exc, "labkit_cell", -1)
        return [_timed_out(nb, exercise, cell, cell_timeout, exercises) for exercise in exercises]
    return [exercise_result(nb, exercise) for exercise in exercises]


def exercise_report(name: str, results: list[ExerciseResult]) -> tuple[str, int]:
    """Return the checker's printed report and its exit code (0 only when every exercise passed)."""
    if not results:
        return f"{name} has no exercises", 0
    width = max(len(r.slug) for r in results) + len(SLUG_PREFIX)
    lines = [f"{SLUG_PREFIX + r.slug:<{width}}  {r.status}" + (f": {r.message}" if r.message else "") for r in results]
    passed = sum(r.status == "passed" for r in results)
    lines.append(f"{passed} of {len(results)} exercises in {name} pass")
    for status in ("not finished", "failed", "not run"):
        slugs = [r.slug for r in results if r.status == status]
        if slugs:
            lines.append(f"{status}: {', '.join(slugs)}")
    return "\n".join(lines), 0 if passed == len(results) else 1
