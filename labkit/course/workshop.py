"""Student copies of the notebooks, and a checker that tells a learner which exercises are done.

An exercise is three cells, each tagged with its role and with ``ex:<slug>``
(cell metadata ``tags``; the same slug on all three):

- ``exercise``: a markdown cell that states the task; its metadata may hold
  ``{"labkit": {"hide_listings": ["route_criterion"]}}``, the listings (each named as
  the notebook passes it to ``show_source``) that would show the answer, which the
  student copy does not display;
- ``solution``: a code cell with the worked solution; its metadata holds
  ``{"labkit": {"stub": "..."}}``, a skeleton with the same ``def`` lines whose
  body raises ``NotImplementedError("hint: ...")``;
- ``check``: a code cell that calls the learner's code on inputs the task did not
  show, asserts its behaviour and prints ``ex:<slug> passed``.

The solution cell's metadata also lists the answers its check must refuse:
``{"labkit": {"attempts": [{"kind": "wrong", "why": "...", "code": "..."},
{"kind": "shortcut", "why": "...", "code": "..."}]}}``: at least one wrong answer
(a plausible mistake) and one shortcut (the most tempting way around the task, such
as calling the helper a listing above showed). `check_attempts` runs each of them
in the solution's place and reports whether the check refused it.

`student_copy` swaps every solution for its stub, replaces each hidden listing by a
line that says it is hidden, tags every check cell ``raises-exception`` (so that
JupyterLab's and nbclient's Run All go on past an unfinished exercise to the end of
the notebook) and clears outputs. `check_exercises` runs a notebook offline past
errors and reports each exercise as passed, not finished (its code still raises
``NotImplementedError``) or failed.
A cell may run `EXERCISE_CELL_TIMEOUT_S` seconds (``labkit workshop check
--cell-timeout``): one that runs longer (a loop that never ends) stops the notebook
there, its exercise fails naming the cell, and the exercises after it are not run.
"""

from __future__ import annotations

import ast
import subprocess
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
#: The kinds of answer an exercise's check must refuse, besides its stub; each exercise names at least one of each.
ATTEMPT_KINDS = ("wrong", "shortcut")
#: Seconds one cell of a learner's notebook may run when checked: an exercise cell takes a few seconds at most.
EXERCISE_CELL_TIMEOUT_S = 60
#: The cell tag with which JupyterLab and nbclient run on past a cell's error (nbclient's ``allow_errors`` per cell).
RAISES_EXCEPTION = "raises-exception"
#: Where ``labkit workshop export`` writes when given no folder, inside the scratch folder (ignored by git).
DEFAULT_EXPORT = "student"


class WorkshopExportRefused(LabkitError, FileExistsError):
    """The export folder already holds files; an export never overwrites."""


class SolutionWithoutStub(LabkitError, ValueError):
    """A ``solution`` cell has no usable stub in its metadata, so a student copy would give the answer away."""


class ExerciseIncomplete(LabkitError, ValueError):
    """A notebook's exercise cells do not form complete exercise / solution / check triples."""


class ListingNotHidden(LabkitError, ValueError):
    """An exercise asks to hide a listing that the student copy cannot find or cannot remove on its own."""


class ExportInsideClone(LabkitError, ValueError):
    """The export folder is inside the course's git clone and git does not ignore it."""


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
    hide_listings: tuple[str, ...] = ()
    """Listings the student copy does not show, each named as the notebook passes it to ``show_source``."""


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


def _hidden_listings(cell: Any, where: str) -> tuple[str, ...]:
    hidden = cell.get("metadata", {}).get("labkit", {}).get("hide_listings", [])
    if not isinstance(hidden, list) or not all(isinstance(h, str) and h.strip() for h in hidden):
        raise ExerciseIncomplete(
            f"{where}: metadata labkit.hide_listings must be a list of names as the notebook passes them to "
            f'show_source, such as {{"labkit": {{"hide_listings": ["route_criterion"]}}}}; it is {hidden!r}'
        )
    return tuple(h.strip() for h in hidden)


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
        task = cells["exercise"]
        hidden = _hidden_listings(nb.cells[task], _where(name, task, nb.cells[task]))
        exercises.append(Exercise(slug, task, cells["solution"], cells["check"], hidden))
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


def _shows_listing(node: ast.AST) -> str | None:
    """Return the listing a ``show_source(X, ...)`` call shows (``X`` as written), or None for any other node."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return ast.unparse(node.args[0]) if called == "show_source" else None


def _python(source: str, where: str) -> ast.Module:
    from IPython.core.inputtransformer2 import TransformerManager

    try:  # a line magic becomes a call on the same line, so line numbers still match the cell's
        return ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError as exc:
        raise ListingNotHidden(
            f"{where} is not valid Python ({exc.msg}, line {exc.lineno}), so its listings cannot be hidden; fix the cell"
        ) from None


def hide_listings(source: str, hidden: dict[str, str], *, where: str = "cell") -> tuple[str, set[str]]:
    """Return ``source`` with every statement that shows a hidden listing replaced by a line saying so, and what it hid.

    ``hidden`` maps a listing, named as the notebook passes it to ``show_source``, to the slug
    of the exercise that asks the learner to write it. A hidden listing must be shown by a
    statement of its own, ``show_source(X, ...)`` or ``display(show_source(X, ...))``; one
    inside a larger statement raises `ListingNotHidden`, since removing it would change code.
    """
    if "show_source" not in source or not any(name in source for name in hidden):
        return source, set()
    tree = _python(source, where)
    lines = source.splitlines()
    found: set[str] = set()
    for position, statement in reversed(list(enumerate(tree.body))):
        shown = [name for node in ast.walk(statement) if (name := _shows_listing(node)) in hidden]
        if not shown:
            continue
        value = statement.value if isinstance(statement, ast.Expr) else None
        alone = value is not None and (
            _shows_listing(value) is not None
            or (isinstance(value, ast.Call) and ast.unparse(value.func) == "display" and len(value.args) == 1)
        )
        neighbours = tree.body[position - 1 : position] + tree.body[position + 1 : position + 2]
        end = statement.end_lineno or statement.lineno
        shares_a_line = any(n.lineno <= end and (n.end_lineno or n.lineno) >= statement.lineno for n in neighbours)
        if not alone or shares_a_line:
            raise ListingNotHidden(
                f"{where}: show_source({shown[0]}) is part of a larger statement, so the student copy cannot hide it "
                f"without changing code; show it on its own, as show_source({shown[0]}, ...) or "
                f"display(show_source({shown[0]}, ...))"
            )
        said = "; ".join(
            f"the listing of {name} is hidden in this copy: it would give away exercise {SLUG_PREFIX}{hidden[name]}"
            for name in dict.fromkeys(shown)
        )
        lines[statement.lineno - 1 : end] = [f"print({said[0].upper() + said[1:] + '.'!r})"]
        found.update(shown)
    return "\n".join(lines) + ("\n" if source.endswith("\n") else ""), found


def student_copy(nb: Any, *, name: str = "notebook") -> Any:
    """Return the notebook as a learner gets it: solutions replaced by their stubs, hidden listings not shown.

    A solution cell keeps its stub in its metadata but not its recorded attempts, whose reasons
    (``why``) would say what the right answer avoids.

    Every output is cleared, and every check cell is tagged ``raises-exception``, so that
    Restart and Run All (in JupyterLab as under nbclient) goes on past an unfinished or wrong
    exercise: its check shows the error, and the rest of the lesson still runs.
    """
    import copy

    exercises = find_exercises(nb, name=name)
    hidden = {listing: e.slug for e in exercises for listing in e.hide_listings}
    copied = copy.deepcopy(nb)
    copied.metadata.pop("widgets", None)
    shown: set[str] = set()
    for index, cell in enumerate(copied.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        tags = _tags(cell)
        if "solution" in tags:
            cell.source = solution_stub(cell, name=name, index=index)
            cell.metadata.get("labkit", {}).pop("attempts", None)  # wrong answers with their whys: hints
            continue
        if "check" in tags and RAISES_EXCEPTION not in tags:
            cell.metadata["tags"] = [*tags, RAISES_EXCEPTION]
        cell.source, found = hide_listings(cell.source, hidden, where=_where(name, index, cell))
        shown |= found
    missing = [listing for listing in hidden if listing not in shown]
    if missing:
        raise ListingNotHidden(
            f"{name}: exercise {SLUG_PREFIX}{hidden[missing[0]]} asks to hide the listing of {missing[0]}, but no "
            f"code cell shows it with show_source({missing[0]}, ...); name it as the notebook passes it to "
            "show_source, or drop it from the exercise's labkit.hide_listings"
        )
    return copied


def _git_ignores(clone: Path, inside: Path) -> bool | None:
    """Return whether git ignores ``inside`` (a path relative to ``clone``), or None if git cannot tell (no git)."""
    try:
        answer = subprocess.run(
            ["git", "-C", str(clone), "check-ignore", "--quiet", "--", f"{inside.as_posix()}/"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {0: True, 1: False}.get(answer.returncode)  # 128: not a git work tree, so nothing can be committed


def refuse_tracked_folder(destination: Path, clone: Path) -> None:
    """Refuse an export folder inside the git clone ``clone`` unless git ignores it (copies could be committed)."""
    try:
        inside = destination.resolve().relative_to(clone.resolve())
    except ValueError:
        return  # outside the clone
    if inside != Path(".") and _git_ignores(clone, inside) is not False:
        return
    raise ExportInsideClone(
        f"{destination} is inside the course's git clone and git does not ignore it, so the student copies "
        "could be committed with the course by mistake. Export to scratch/student/ (the default; git ignores "
        "scratch/), to a folder outside the clone, or add the folder to .gitignore first."
    )


def default_export_folder() -> Path:
    """Return where ``labkit workshop export`` writes when given no folder: ``scratch/student/``."""
    from labkit.paths import scratch_dir

    return scratch_dir() / DEFAULT_EXPORT


def export_workshop(destination: Path, notebooks: list[Path], *, clone: Path | None = None) -> list[Path]:
    """Write student copies of ``notebooks`` into ``destination`` (which must be new or empty).

    A folder inside the git clone ``clone`` (default: the course's checkout) is refused unless
    git ignores it. Every notebook is read and copied before the first file is written, and
    each file is written atomically, so a bad notebook or an unwritable folder leaves nothing
    half-written.
    """
    import nbformat

    from labkit.course.runner import read_notebook
    from labkit.paths import atomic_write, project_root, writable_folder

    refuse_tracked_folder(destination, clone or project_root())
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


@dataclass(frozen=True)
class Attempt:
    """An answer an exercise's check must refuse: a plausible wrong answer, or a shortcut around the task."""

    slug: str
    """The exercise's slug."""
    kind: Literal["wrong", "shortcut"]
    """``wrong`` (a plausible mistake) or ``shortcut`` (a way around the task that should not pass)."""
    why: str
    """What the attempt does, in a few words, such as "uses > where the rule says does not fall"."""
    code: str
    """The code put in the solution cell's place."""


@dataclass(frozen=True)
class AttemptResult:
    """How an exercise's check answered one attempt: it must refuse it (status ``failed`` or ``not finished``)."""

    attempt: Attempt
    """The attempt that ran."""
    status: Literal["passed", "not finished", "failed", "not run"]
    """The check's verdict on it; ``passed`` means the check let a wrong answer or a shortcut through."""
    message: str
    """The check's error, or why it failed; empty when the attempt passed."""


def exercise_attempts(nb: Any, exercise: Exercise, *, name: str = "notebook") -> list[Attempt]:
    """Return the attempts an exercise's solution cell lists, or raise `ExerciseIncomplete` naming what is missing."""
    cell = nb.cells[exercise.solution]
    where = _where(name, exercise.solution, cell)
    listed = cell.get("metadata", {}).get("labkit", {}).get("attempts", [])
    attempts = []
    for item in listed if isinstance(listed, list) else [listed]:
        if not (
            isinstance(item, dict)
            and item.get("kind") in ATTEMPT_KINDS
            and all(isinstance(item.get(key), str) and item[key].strip() for key in ("why", "code"))
        ):
            raise ExerciseIncomplete(
                f'{where}: each of labkit.attempts must be {{"kind": "wrong" or "shortcut", "why": "...", '
                f'"code": "..."}}; found {item!r}'
            )
        attempts.append(Attempt(exercise.slug, item["kind"], item["why"].strip(), item["code"]))
    missing = [kind for kind in ATTEMPT_KINDS if kind not in {a.kind for a in attempts}]
    if missing:
        raise ExerciseIncomplete(
            f"{where}: exercise {SLUG_PREFIX}{exercise.slug} names no {' and no '.join(missing)} answer in "
            "labkit.attempts; list the most plausible wrong answer and the most tempting shortcut its check must refuse"
        )
    return attempts


def attempts_copy(nb: Any, *, name: str = "notebook") -> tuple[Any, list[tuple[Attempt, Exercise]]]:
    """Return a copy of the notebook in which each attempt runs, with a copy of its check, before the real solution.

    Each exercise's attempts come right before its worked solution, each followed by the
    check; the worked solution then runs as usual, so the rest of the notebook sees it.
    The second value maps each inserted check to its attempt and a stand-in `Exercise`
    whose cell indices point at the inserted cells.
    """
    import copy

    import nbformat

    exercises = find_exercises(nb, name=name)
    by_solution = {e.solution: e for e in exercises}
    copied = copy.deepcopy(nb)
    cells: list[Any] = []
    placed: list[tuple[Attempt, Exercise]] = []
    for index, cell in enumerate(copied.cells):
        exercise = by_solution.get(index)
        if exercise is not None:
            for attempt in exercise_attempts(nb, exercise, name=name):
                cells.append(nbformat.v4.new_code_cell(attempt.code))
                check = copy.deepcopy(copied.cells[exercise.check])
                check.metadata["tags"] = [t for t in _tags(check) if t != "check" and not t.startswith(SLUG_PREFIX)]
                cells.append(check)
                placed.append((attempt, Exercise(exercise.slug, exercise.exercise, len(cells) - 2, len(cells) - 1)))
        cells.append(cell)
    copied.cells = cells
    return copied, placed


def check_attempts(path: Path, *, cell_timeout: int = EXERCISE_CELL_TIMEOUT_S) -> list[AttemptResult]:
    """Run the notebook once with every exercise's wrong answers and shortcuts in place; report each check's verdict.

    A check that lets an attempt through (status ``passed``) is too weak: it would pass a
    learner who made that mistake or took that shortcut.
    """
    from labkit.course.runner import execute, read_notebook

    nb, placed = attempts_copy(read_notebook(path), name=path.name)
    if not placed:
        return []
    execute(nb, path.parent, timeout=cell_timeout, allow_errors=True)
    results = []
    for attempt, where in placed:
        result = exercise_result(nb, where)
        results.append(AttemptResult(attempt, result.status, result.message))
    return results
