"""Which lessons make model calls, and how their runs are authored or recorded.

A lesson module that calls a model provides: ``RUN_CAPTURED`` (a run id),
``SETTINGS``, ``CAPTURED_DESCRIPTION``, ``run_fixtures()`` (the files its
requests depend on) and ``make_requests(adapter)``; one with an authored run
also ``RUN_AUTHORED``, ``AUTHORED_REPLIES`` (question -> reply text) and
``AUTHORED_DESCRIPTION``. ``make_requests(adapter)`` which makes every model
request of the lesson through ``adapter.generate(question, messages)``.
The same lesson code thus produces the authored run, a captured run, and the
requests that replay must match.
"""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from labkit.errors import LabkitError

if TYPE_CHECKING:
    from labkit.recording import RecordedRun

#: Lesson number -> (module, notebook) for lessons whose runs `labkit record` can make.
RECORDABLE: dict[str, tuple[str, str]] = {
    "01": ("labkit.evaluator.lesson", "01_product_evaluator.ipynb"),
    "02": ("labkit.rag.trace", "02a_rag_trace.ipynb"),
    "04": ("labkit.agent.runs", "04_refund_agent.ipynb"),
    "05": ("labkit.system.runs", "05_minimal_system.ipynb"),
    "06": ("labkit.routing.prompts", "06_routing_gate.ipynb"),
}


class UnknownLesson(LabkitError, LookupError):
    """No lesson with that number records model runs."""


def lesson_module(lesson: str) -> ModuleType:
    """Return the module of a recordable lesson."""
    lesson = lesson.zfill(2)
    if lesson not in RECORDABLE:
        raise UnknownLesson(f"lesson {lesson!r} records no model runs; choose one of {', '.join(sorted(RECORDABLE))}")
    return importlib.import_module(RECORDABLE[lesson][0])


def write_authored(lesson: str, *, runs_dir: Path | None = None, created_at: str = "2026-11-29T00:00:00Z") -> Path:
    """Write (or rewrite) a lesson's authored run by running its requests against the authored replies."""
    from labkit.authored import AuthoringAdapter, authored_run, write_authored_run

    module = lesson_module(lesson)
    if not hasattr(module, "AUTHORED_REPLIES"):
        raise UnknownLesson(
            f"lesson {lesson} has no authored model run; record a captured one with `labkit record {lesson}`"
        )
    adapter = AuthoringAdapter(module.AUTHORED_REPLIES, settings=module.SETTINGS)
    module.make_requests(adapter)
    run = authored_run(
        run_id=module.RUN_AUTHORED,
        lesson=lesson.zfill(2),
        description=module.AUTHORED_DESCRIPTION,
        created_at=created_at,
        settings=module.SETTINGS,
        fixtures=module.run_fixtures(),
        exchanges=adapter.exchanges,
    )
    return write_authored_run(run, runs_dir=runs_dir)


#: Lesson -> the module whose captured run sends each case several times with its own seed (`labkit.trials`),
#: recorded with `labkit record NN --repeats`.
REPEAT_MODULES: dict[str, str] = {
    "01": "labkit.evaluator.repeats",
    "04": "labkit.agent.repeats",
    "05": "labkit.system.repeats",
}


def repeats_module(lesson: str) -> ModuleType:
    """Return the module of a lesson's repeated-trials run."""
    lesson = lesson.zfill(2)
    if lesson not in REPEAT_MODULES:
        choices = ", ".join(sorted(REPEAT_MODULES)) or "none yet"
        raise UnknownLesson(f"lesson {lesson!r} has no repeated-trials run; lessons with one: {choices}")
    return importlib.import_module(REPEAT_MODULES[lesson])


def record_captured(
    lesson: str,
    *,
    run_id: str | None = None,
    runs_dir: Path | None = None,
    repeats: bool = False,
    module: ModuleType | None = None,
) -> Path:
    """Make a lesson's requests against the live endpoint in record mode and save a new captured run.

    With ``repeats``, make the lesson's repeated-trials requests instead (each case sent
    with every seed of its module's ``TRIALS``); with ``module``, that run module's
    requests (one of the lesson's `EXTRA_RUN_MODULES`).
    """
    from labkit.boundary import connect

    if module is None:
        module = repeats_module(lesson) if repeats else lesson_module(lesson)
    stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S")
    run_id = run_id or f"{module.RUN_CAPTURED}-{stamp}"
    check_new_run_id(run_id, runs_dir=runs_dir)  # before any request is made
    boundary = connect(module.RUN_CAPTURED, lesson=lesson.zfill(2), settings=module.SETTINGS, mode="record")
    module.make_requests(boundary)
    return boundary.save(
        description=module.CAPTURED_DESCRIPTION + f" Model {boundary.model} at {boundary.endpoint_kind}.",
        fixtures=module.run_fixtures(),
        run_id=run_id,
        runs_dir=runs_dir,
    )


#: Lesson -> further modules whose requests its runs hold: lesson 02b (part B) and 02a's ranking example, and
#: lesson 06's first captured run (ids echoed by the model), kept beside the two-prompt run that `labkit record 06`
#: now makes.
EXTRA_RUN_MODULES: dict[str, tuple[str, ...]] = {
    "02": ("labkit.rag.runs", "labkit.rag.ranking"),
    "05": ("labkit.system.prompt_fix",),
    "06": ("labkit.routing.runs",),
}


def run_modules(lesson: str) -> list[ModuleType]:
    """Return every module that makes a lesson's recorded requests (two for lessons 02 and 06)."""
    lesson = lesson.zfill(2)
    names = ([RECORDABLE[lesson][0]] if lesson in RECORDABLE else []) + list(EXTRA_RUN_MODULES.get(lesson, ()))
    names += [REPEAT_MODULES[lesson]] if lesson in REPEAT_MODULES else []
    return [importlib.import_module(name) for name in names]


def module_of_run(run: RecordedRun) -> ModuleType | None:
    """Return the lesson module that made a run: the one whose id is the longest equal to or prefixing the run's.

    ``04-agent-smollm2-repeats`` is the repeats module's own id, though ``04-agent-smollm2`` prefixes it.
    """
    modules = run_modules(run.lesson)
    matches = []  # (length of the matching id, module): the longest wins, so 05-x-repeats is not taken for 05-x
    for module in modules:
        ids = [getattr(module, name, None) for name in ("RUN_AUTHORED", "RUN_CAPTURED")]
        matches += [(len(i), module) for i in ids if i and (run.run_id == i or run.run_id.startswith(i + "-"))]
    if matches:
        return max(matches, key=lambda match: match[0])[1]
    return modules[0] if len(modules) == 1 else None


def missing_lesson_fixtures(run: RecordedRun) -> list[str]:
    """Return the fixtures the run's lesson declares (``run_fixtures()``) that the run does not list with a hash."""
    from labkit.paths import relative_to_root

    module = module_of_run(run)
    if module is None:
        return []
    declared = {relative_to_root(path) for path in module.run_fixtures()}
    return sorted(rel for rel in declared if rel not in run.fixtures)


def verify_course_runs(runs_dir: Path | None = None) -> list[tuple[str, RecordedRun | None, str]]:
    """`labkit.recording.verify_runs`, plus: each run lists every fixture its lesson's requests depend on."""
    from labkit.recording import verify_runs

    results = []
    for name, loaded, problem in verify_runs(runs_dir):
        missing = missing_lesson_fixtures(loaded) if loaded is not None else []
        if missing:
            problem = (
                f"run {name!r}: field 'fixtures' lacks {missing}, which lesson {loaded.lesson}'s requests depend on "  # type: ignore[union-attr]
                "(its run_fixtures()); the fixture may have changed unseen. Restore the run from git or record it again"
            )
            loaded = None
        results.append((name, loaded, problem))
    return results


def check_new_run_id(run_id: str, *, runs_dir: Path | None = None) -> None:
    """Refuse a run id that is not a plain folder name, or whose folder already exists, before recording."""
    import re

    from labkit.errors import RecordedRunError
    from labkit.paths import recorded_runs_dir
    from labkit.recording import RUN_ID_PATTERN

    if not re.fullmatch(RUN_ID_PATTERN, run_id):
        raise RecordedRunError(
            f"run id {run_id!r} is not a folder name under recorded_runs/: use lower-case letters, digits, "
            "'.', '_' and '-', starting with a letter or digit (for example 06-routing-mymodel)"
        )
    if ((runs_dir or recorded_runs_dir()) / run_id).exists():
        raise RecordedRunError(
            f"recorded_runs/{run_id} already exists; a run is never overwritten. Choose a new --run-id."
        )


def cells_showing_runs(notebook: Path, names: list[str]) -> list[int]:
    """Return the numbers (from 1) of the code cells whose source names any of ``names`` (run ids or constants)."""
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    code = [c for c in cells if c.cell_type == "code"]
    return [number for number, cell in enumerate(code, start=1) if any(name in cell.source for name in names)]
