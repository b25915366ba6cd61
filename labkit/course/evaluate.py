"""`labkit evaluate`: record every lesson that calls a model against one endpoint, and gate it lesson by lesson.

For each lesson card (``labkit.<lesson>.card``) the candidate's run is recorded
into ``scratch/evaluations/<model>-<time>/`` (captured runs in the usual format,
never into ``recorded_runs/``), then replayed offline and graded with the
lesson's own checks, beside the committed captured run (the baseline) and the
authored ideal. Each lesson's ``RULE`` decides whether the candidate is not
worse than the baseline; lesson 06 uses the routing gate itself. With the
committed runs as candidate nothing is recorded, and the report's folder is
``scratch/evaluations/committed-<time>/``. The HTML page is `labkit.course.report_card`.

Exit codes, as ``labkit grade-routes``: 0 every rule passed, 2 a rule failed,
1 invalid input or an endpoint error (what was recorded is kept, marked
incomplete, and never graded as if complete).
"""

from __future__ import annotations

import importlib
import re
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from labkit.errors import LabkitError
from labkit.scorecard import Card, Verdict

#: The lessons that call a model, in course order: each module is a lesson's card.
CARDS: tuple[str, ...] = (
    "labkit.evaluator.card",
    "labkit.rag.card",
    "labkit.agent.card",
    "labkit.system.card",
    "labkit.routing.card",
)
Source = Literal["endpoint", "captured", "authored"]


class EndpointFailed(LabkitError, RuntimeError):
    """The endpoint stopped answering while a lesson was being recorded; what was recorded is kept, incomplete."""


class UnknownCardLesson(LabkitError, LookupError):
    """No lesson with that number has a report card."""


@dataclass
class LessonCard:
    """One lesson's row of the report: the three runs' measures and the rule's verdict."""

    lesson: str
    title: str
    rule: str
    candidate: Card | None = None
    baseline: Card | None = None
    ideal: Card | None = None
    verdict: Verdict | None = None
    candidate_run: str | None = None
    error: str | None = None
    requests: int = 0
    latencies: list[float] = field(default_factory=list)


@dataclass
class Evaluation:
    """The whole report: who was evaluated, against what, and one card per lesson."""

    model: str
    candidate: str
    baseline: str
    folder: Path | None
    lessons: list[LessonCard]

    @property
    def exit_code(self) -> int:
        """0 every rule passed, 2 a rule failed, 1 an endpoint error or invalid input."""
        if any(card.error for card in self.lessons):
            return 1
        return 0 if all(card.verdict and card.verdict.passed for card in self.lessons) else 2


def cards(lessons: list[str] | None = None) -> list[ModuleType]:
    """Return the card modules of the chosen lessons (all by default), in course order."""
    loaded = [importlib.import_module(name) for name in CARDS]
    if not lessons:
        return loaded
    wanted = [lesson.zfill(2) for lesson in lessons]
    known = {card.LESSON for card in loaded}
    unknown = sorted(set(wanted) - known)
    if unknown:
        raise UnknownCardLesson(
            f"no report card for lesson(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}"
        )
    return [card for card in loaded if card.LESSON in wanted]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._") or "model"


def replayed(card: ModuleType, run: str | Path) -> Card:
    """Grade a recorded run (a committed run id, or a run folder) by replaying it offline through the lesson."""
    from labkit.boundary import connect

    boundary = connect(str(run), lesson=card.LESSON, settings=card.RUNS.SETTINGS, mode="replay")
    graded: Card = card.grade(boundary)
    return graded


def ideal(card: ModuleType) -> Card:
    """Grade the lesson's authored run, or the lesson's own ideal where it has no authored run (lesson 06)."""
    if hasattr(card.RUNS, "RUN_AUTHORED"):
        return replayed(card, card.RUNS.RUN_AUTHORED)
    result: Card = card.ideal()
    return result


def record(card: ModuleType, folder: Path, *, model: str, on_reply: Callable[[float], None] | None = None) -> Path:
    """Make a lesson's requests against the live endpoint in record mode; save the captured run under ``folder``.

    If the endpoint fails midway, the exchanges recorded so far are saved as
    ``<run>-incomplete`` and `EndpointFailed` says where; that run is never graded.
    """
    import openai

    from labkit.boundary import connect, redact_url

    runs = card.RUNS
    boundary = connect(f"{card.LESSON}-{_slug(model)}", lesson=card.LESSON, settings=runs.SETTINGS, mode="record")
    boundary.observer = on_reply
    description = f"{runs.CAPTURED_DESCRIPTION} Recorded by `labkit evaluate` from {model} at {boundary.endpoint_kind}."
    try:
        runs.make_requests(boundary)
    except (openai.APIError, OSError) as exc:  # EndpointUnreachable and UnusableReply are OSErrors
        kept = boundary.save(
            description="INCOMPLETE: the endpoint failed before the lesson finished; not gradable. " + description,
            fixtures=runs.run_fixtures(),
            run_id=f"{boundary.run_id}-incomplete",
            runs_dir=folder,
        )
        raise EndpointFailed(
            redact_url(
                f"lesson {card.LESSON}: the endpoint {boundary.endpoint.base_url if boundary.endpoint else ''} failed "
                f"after {len(boundary.recorder.bindings)} recorded exchange(s) ({type(exc).__name__}: {exc}). "
                f"What was recorded is kept, marked incomplete, in {kept.parent}; check the endpoint and run "
                "`labkit evaluate` again."
            )
        ) from None
    return boundary.save(description=description, fixtures=runs.run_fixtures(), run_id=boundary.run_id, runs_dir=folder)


@contextmanager
def _progress(card: ModuleType, lesson: LessonCard, *, enabled: bool) -> Iterator[Callable[[float], None]]:
    """Yield a callback that counts requests and shows the endpoint's median latency so far (tqdm, on stderr)."""
    from labkit.recording import load_run

    try:
        expected = len(load_run(card.RUNS.RUN_CAPTURED).bindings)
    except LabkitError:
        expected = None
    bar = None
    if enabled:
        from tqdm import tqdm

        bar = tqdm(total=expected, desc=f"{card.LESSON} {card.TITLE}", unit="req", leave=True)

    def on_reply(seconds: float) -> None:
        lesson.requests += 1
        lesson.latencies.append(seconds)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"median {statistics.median(lesson.latencies):.2f} s")

    try:
        yield on_reply
    finally:
        if bar is not None:
            bar.close()


def _new_folder(model: str, folder: Path | None) -> Path:
    """Create the evaluation's own new folder: ``folder``, or one named by model and time under the scratch folder."""
    from labkit.paths import FolderNotWritable, scratch_dir, writable_folder

    if folder is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S")
        folder = writable_folder(scratch_dir() / "evaluations") / f"{_slug(model)}-{stamp}"
        for n in range(2, 100):  # a second evaluation within the same second gets the next free name
            if not folder.exists():
                break
            folder = folder.with_name(f"{_slug(model)}-{stamp}-{n}")
    if folder.exists():
        raise FolderNotWritable(f"{folder} already exists; an evaluation is written into a new folder: choose another")
    return writable_folder(folder)


def evaluate(
    *,
    candidate: Source = "endpoint",
    baseline: Source = "captured",
    lessons: list[str] | None = None,
    folder: Path | None = None,
    progress: bool = True,
) -> Evaluation:
    """Evaluate the candidate (a live endpoint, or the committed captured runs) lesson by lesson; see the module."""

    chosen = cards(lessons)
    model = "committed captured runs"
    if candidate == "endpoint":
        from labkit.boundary import endpoint_from_env

        model = endpoint_from_env().model
        folder = _new_folder(model, folder)
    else:  # nothing is recorded; the folder holds the report page
        from labkit.paths import writable_folder

        folder = _new_folder("committed", None) if folder is None else writable_folder(folder)
    report = Evaluation(model=model, candidate=candidate, baseline=baseline, folder=folder, lessons=[])
    for card in chosen:
        row = LessonCard(card.LESSON, card.TITLE, card.RULE)
        report.lessons.append(row)
        row.ideal = ideal(card)
        row.baseline = row.ideal if baseline == "authored" else replayed(card, card.RUNS.RUN_CAPTURED)
        if candidate == "endpoint":
            assert folder is not None  # made above for an endpoint candidate
            try:
                with _progress(card, row, enabled=progress) as on_reply:
                    path = record(card, folder, model=model, on_reply=on_reply)
            except EndpointFailed as exc:
                row.error = str(exc)
                break
            row.candidate_run = str(path.parent)
            row.candidate = replayed(card, path.parent)
        else:
            row.candidate_run = card.RUNS.RUN_CAPTURED
            row.candidate = replayed(card, card.RUNS.RUN_CAPTURED)
        row.verdict = card.decide(row.candidate, row.baseline)
    return report


def table_rows(report: Evaluation) -> list[dict[str, str]]:
    """Return one row per lesson and measure: candidate, baseline and ideal values, and the lesson's verdict."""
    rows = []
    for lesson in report.lessons:
        measures = (lesson.candidate or lesson.baseline or lesson.ideal or Card([])).measures
        for i, measure in enumerate(measures):

            def shown(card: Card | None, name: str = measure.name) -> str:
                if card is None:
                    return "-"
                return next((m.shown for m in card.measures if m.name == name), "-")

            verdict = ""
            if i == 0:
                if lesson.error:
                    verdict = "ERROR"
                elif lesson.verdict is not None:
                    verdict = "pass" if lesson.verdict.passed else "FAIL"
            rows.append(
                {
                    "lesson": f"{lesson.lesson} {lesson.title}" if i == 0 else "",
                    "measure": measure.name,
                    "candidate": shown(lesson.candidate),
                    "baseline": shown(lesson.baseline),
                    "ideal": shown(lesson.ideal),
                    "verdict": verdict,
                }
            )
    return rows


def render_table(report: Evaluation) -> str:
    """Return the report as a fixed-width text table, each lesson's rule and verdict reason below it."""
    rows = table_rows(report)
    columns = ("lesson", "measure", "candidate", "baseline", "ideal", "verdict")
    heads = {
        "lesson": "lesson",
        "measure": "measure",
        "candidate": "candidate",
        "baseline": f"baseline ({report.baseline})",
        "ideal": "authored ideal",
        "verdict": "rule",
    }
    width = {c: max([len(heads[c])] + [len(r[c]) for r in rows]) for c in columns}
    lines = [f"candidate: {report.model}", ""]
    lines.append("  ".join(heads[c].ljust(width[c]) for c in columns).rstrip())
    lines.append("  ".join("-" * width[c] for c in columns))
    lines += ["  ".join(r[c].ljust(width[c]) for c in columns).rstrip() for r in rows]
    lines.append("")
    for lesson in report.lessons:
        if lesson.error:
            lines.append(f"{lesson.lesson}: ERROR: {lesson.error}")
        elif lesson.verdict is not None:
            outcome = "passes" if lesson.verdict.passed else "fails"
            lines.append(f"{lesson.lesson}: {outcome} the rule ({lesson.rule}): {lesson.verdict.reason}")
    return "\n".join(lines)


def as_json(report: Evaluation) -> dict[str, Any]:
    """Return the report as JSON-ready data (for CI)."""

    def card_json(card: Card | None) -> list[dict[str, Any]] | None:
        if card is None:
            return None
        return [{"name": m.name, "value": m.value, "shown": m.shown} for m in card.measures]

    return {
        "model": report.model,
        "candidate": report.candidate,
        "baseline": report.baseline,
        "folder": None if report.folder is None else str(report.folder),
        "exit_code": report.exit_code,
        "lessons": [
            {
                "lesson": lesson.lesson,
                "title": lesson.title,
                "rule": lesson.rule,
                "passed": None if lesson.verdict is None else lesson.verdict.passed,
                "reason": lesson.error or (lesson.verdict.reason if lesson.verdict else None),
                "candidate_run": lesson.candidate_run,
                "requests": lesson.requests,
                "median_latency_s": round(statistics.median(lesson.latencies), 3) if lesson.latencies else None,
                "candidate": card_json(lesson.candidate),
                "baseline": card_json(lesson.baseline),
                "ideal": card_json(lesson.ideal),
            }
            for lesson in report.lessons
        ],
    }
