"""The experiment log: one JSON object per line, every experiment kept, the failed ones included.

An experiment changes one variable against a baseline under stated
conditions. Its entry says what was expected (the hypothesis), what changed,
what was held fixed, what came out, and whether the hypothesis held. A failed
experiment is evidence too: keeping it stops the next person from repeating
the same change without a new hypothesis.

Each measured difference comes with a paired bootstrap 95 % interval over the
same items; where that interval holds zero the comparison is a ``tie`` (the
data cannot tell the two sides apart), and an experiment whose differences are
all inside the noise has the outcome ``tie``, not a success or a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labkit.canonical import canonical_json, loads_strict
from labkit.errors import InvalidJSON, LabkitError, validation_problems
from labkit.evaluator.calibration import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    kappa_difference_interval,
    paired_bootstrap,
)
from labkit.tables import interval, text_table

if TYPE_CHECKING:
    from labkit.evaluator.report import EvaluationReport


Outcome = Literal["succeeded", "failed", "tie", "inconclusive"]
Verdict = Literal["tie", "baseline ahead", "changed_to ahead", "undefined"]


class ExperimentLogError(LabkitError, ValueError):
    """An experiment log line is malformed, repeats an id, or an entry changes more than one variable."""


class Experiment(BaseModel):
    """One experiment: the hypothesis, the one variable changed, the conditions held fixed, and the result."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Short unique id.")
    hypothesis: str = Field(min_length=10, description="What the change was expected to do, stated before running it.")
    variable: str = Field(min_length=1, description="The one variable changed.")
    baseline: Any = Field(description="Its value in the baseline.")
    changed_to: Any = Field(description="Its value in the experiment.")
    conditions: dict[str, Any] = Field(
        description="Everything held fixed: rubric hash, subset, model, prompt versions."
    )
    result: dict[str, Any] = Field(description="The measured outcome, baseline and experiment side by side.")
    outcome: Outcome = Field(
        description="succeeded or failed (beyond the noise), tie (inside it), or inconclusive (a measure undefined)."
    )
    evidence_origin: dict[Literal["baseline", "changed_to"], Literal["authored", "captured", "live"]] = Field(
        description="Where the replies measured on each side came from."
    )

    @model_validator(mode="after")
    def _one_variable(self) -> Experiment:
        if self.baseline == self.changed_to:
            raise ValueError(f"{self.variable!r} has the same value in baseline and experiment: nothing was changed")
        if self.variable in self.conditions:
            raise ValueError(f"{self.variable!r} is both the changed variable and a fixed condition")
        return self


def _parse(line: str, *, source: str) -> Experiment:
    try:
        return Experiment.model_validate(loads_strict(line, source=source))
    except InvalidJSON as exc:
        raise ExperimentLogError(str(exc)) from None
    except ValidationError as exc:
        problems = validation_problems(exc, whole="entry")
        raise ExperimentLogError(f"{source}: not a valid experiment: {problems}") from None


def load_experiments(path: str | Path) -> list[Experiment]:
    """Read every experiment of a log, in order; a missing file is an empty log, a bad line is refused."""
    path = Path(path)
    if not path.exists():
        return []
    experiments: list[Experiment] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            raise ExperimentLogError(f"{path.name} line {number} is blank; each line must hold one experiment")
        experiment = _parse(line, source=f"{path.name} line {number}")
        if any(e.id == experiment.id for e in experiments):
            raise ExperimentLogError(
                f"{path.name} line {number}: experiment id {experiment.id!r} repeats an earlier one"
            )
        experiments.append(experiment)
    return experiments


def log_experiment(path: str | Path, experiment: Experiment) -> Path:
    """Append one experiment to the log (whatever its outcome); refuse an id the log already holds."""
    path = Path(path)
    if any(e.id == experiment.id for e in load_experiments(path)):
        raise ExperimentLogError(f"the log already holds experiment {experiment.id!r}; give the new one its own id")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(canonical_json(experiment.model_dump(mode="json")) + "\n")
    return path


def experiments_table(experiments: list[Experiment]) -> Any:
    """Return the log as a table: id, variable, baseline, changed to, outcome, evidence."""
    import pandas as pd

    rows = [
        {
            "id": e.id,
            "variable": e.variable,
            "baseline": str(e.baseline),
            "changed_to": str(e.changed_to),
            "outcome": e.outcome,
            "evidence": " / ".join(e.evidence_origin[k] for k in ("baseline", "changed_to")),
        }
        for e in experiments
    ]
    return text_table(pd.DataFrame(rows, columns=["id", "variable", "baseline", "changed_to", "outcome", "evidence"]))


def comparisons_table(experiments: list[Experiment]) -> Any:
    """Return one row per measure compared in each experiment: both values, the difference's interval, the verdict.

    Every float is shown to 2 decimals, as the intervals are; the log keeps 3.

    Only experiments decided by these intervals have rows; the judge-model experiment is decided by the
    agreement rule (see `judge_model_experiment`), so it has none.
    """
    import pandas as pd

    columns = ["experiment", "measure", "baseline", "changed_to", "difference_95", "verdict"]
    rows = [
        {"experiment": e.id, **{k: _two_decimals(c[k]) for k in columns[1:]}}
        for e in experiments
        for c in e.result.get("comparisons", [])
    ]
    return text_table(pd.DataFrame(rows, columns=columns))


def _two_decimals(value: Any) -> Any:
    """Return a logged float at the tables' one precision (2 decimals); a count such as ``23/24`` as it is."""
    return f"{value:.2f}" if isinstance(value, float) else value


# --- comparing two sides: a difference inside the noise is a tie ------------------------------------


def tie_or_ahead(low: float | None, high: float | None) -> Verdict:
    """Return who is ahead by a difference's 95 % interval (changed_to minus baseline), or ``tie``.

    ``tie`` when the interval holds zero: the data cannot tell the two sides apart.
    ``undefined`` when there is no interval (a measure that could not be computed).
    """
    if low is None or high is None:
        return "undefined"
    if low <= 0 <= high:
        return "tie"
    return "changed_to ahead" if low > 0 else "baseline ahead"


def comparison(measure: str, baseline: Any, changed_to: Any, low: float | None, high: float | None) -> dict[str, Any]:
    """Return one compared measure as the log keeps it: both values, the difference's interval, the verdict."""
    return {
        "measure": measure,
        "baseline": baseline,
        "changed_to": changed_to,
        "difference_95": interval(low, high),
        "verdict": tie_or_ahead(low, high),
    }


def outcome_of(comparisons: list[dict[str, Any]]) -> Outcome:
    """Return an experiment's outcome for the hypothesis "changed_to does better on every measure".

    ``failed`` if the baseline is ahead on any measure; ``succeeded`` only if the
    change is ahead on every one; ``inconclusive`` if a measure is undefined;
    otherwise ``tie``: the data do not separate the two sides.
    """
    verdicts = [c["verdict"] for c in comparisons]
    if "baseline ahead" in verdicts:
        return "failed"
    if "undefined" in verdicts:
        return "inconclusive"
    return "succeeded" if verdicts and all(v == "changed_to ahead" for v in verdicts) else "tie"


def share_difference_interval(baseline: list[bool], changed: list[bool]) -> tuple[float, float]:
    """Return a paired bootstrap 95 % interval of the pass share's change over the same items (changed - baseline)."""
    import numpy as np

    def difference(x: Any, y: Any, axis: int = -1) -> Any:
        return y.mean(axis=axis) - x.mean(axis=axis)

    samples = (np.array(baseline, dtype=float), np.array(changed, dtype=float))
    result = paired_bootstrap(
        samples, difference, seed=BOOTSTRAP_SEED, resamples=BOOTSTRAP_RESAMPLES, level=0.95
    ).confidence_interval
    return float(result.low), float(result.high)


# --- the lesson's three experiments ------------------------------------------------------------------


def _conditions(report: EvaluationReport, **extra: Any) -> dict[str, Any]:
    rubric = report.inputs.rubric
    return {
        "rubric_version": rubric.version,
        "rubric_sha256": rubric.sha256,
        "subset": "held_out",
        "items": len(report.inputs.labels.held_out),
        "judge_prompt": report.runs.judging.prompt_version,
        **extra,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _origins(baseline: str, changed_to: str) -> dict[Any, Any]:
    """The origin of each side's evidence; `Experiment` validates that each is authored, captured or live."""
    return {"baseline": baseline, "changed_to": changed_to}


def kappa_comparison(
    criterion: str, baseline: EvaluationReport, changed: EvaluationReport, *, arrangements: tuple[str, str]
) -> dict[str, Any]:
    """Compare the judge's kappa on one criterion between two (report, arrangement) sides, on the same items."""
    labels = baseline.inputs.labels
    held_out = labels.held_out
    sides = []
    for report, arrangement in ((baseline, arrangements[0]), (changed, arrangements[1])):
        row = report.agreement_for(criterion, arrangement)
        if row is None:
            raise ExperimentLogError(
                f"run {report.run_id} has no {arrangement} agreement for {criterion}; evaluate it with that arrangement"
            )
        judged = report.runs.judging.labels(arrangement=arrangement, source="labeled", criterion=criterion)  # type: ignore[arg-type]  # per_criterion or bundled
        sides.append((row, [judged.get(p) for p in held_out]))
    low, high = kappa_difference_interval(labels.column(held_out, criterion), sides[0][1], sides[1][1])
    return comparison(f"kappa, {criterion}", _rounded(sides[0][0].kappa), _rounded(sides[1][0].kappa), low, high)


def arrangement_experiment(report: EvaluationReport) -> Experiment:
    """Compare bundled and per-criterion judge calls on one run's held-out labels (one variable: the arrangement)."""
    judged = [c.id for c in report.inputs.rubric.judged()]
    arrangements = ("bundled", "per_criterion")
    comparisons = [kappa_comparison(c, report, report, arrangements=arrangements) for c in judged]
    return Experiment(
        id=f"arrangement-{report.run_id}",
        variable="judge arrangement",
        baseline="bundled",
        changed_to="per_criterion",
        hypothesis="Judging each criterion in its own call agrees with the adjudicated labels better than one "
        "bundled call (Cohen's kappa), on every judged criterion.",
        conditions=_conditions(report, judge_model=report.runs.judging.model_id, run_id=report.run_id),
        result={"comparisons": comparisons},
        outcome=outcome_of(comparisons),
        evidence_origin=_origins(report.origin, report.origin),
    )


def judge_model_experiment(baseline: EvaluationReport, candidate: EvaluationReport) -> Experiment:
    """Swap the judge model (one variable) and see whether it still meets the agreement rule where the baseline did.

    The outcome is the rule's: it is applied to the point estimates, as in release.
    The kappa differences are kept in the result as ``kappa_differences`` for the
    record, but they decide nothing, so `comparisons_table` leaves them out: one
    mechanism per experiment.
    """
    rule = baseline.inputs.rubric.agreement_rule
    judged = [c.id for c in baseline.inputs.rubric.judged()]
    arrangements = (rule.arrangement, rule.arrangement)
    comparisons = [kappa_comparison(c, baseline, candidate, arrangements=arrangements) for c in judged]
    scorers = {c: {"baseline": baseline.routing[c].scorer, "changed_to": candidate.routing[c].scorer} for c in judged}
    met = [s["changed_to"] == "judge" for s in scorers.values() if s["baseline"] == "judge"]
    return Experiment(
        id=f"judge-model-{candidate.run_id}",
        variable="judge model",
        baseline=baseline.runs.judging.model_id,
        changed_to=candidate.runs.judging.model_id,
        hypothesis="The changed judge model meets the agreement rule on every criterion where the baseline judge does.",
        conditions=_conditions(
            baseline,
            arrangement=rule.arrangement,
            min_kappa=rule.min_kappa,
            min_percent_agreement=rule.min_percent_agreement,
        ),
        result={"scorer": scorers, "kappa_differences": comparisons},
        outcome="succeeded" if met and all(met) else ("failed" if met else "inconclusive"),
        evidence_origin=_origins(baseline.origin, candidate.origin),
    )


#: The checks the generation-model experiment compares; cost is not one (see below).
COMPARED_CHECKS = ("schema", "length", "numeric_claims")


def generation_model_experiment(baseline: EvaluationReport, candidate: EvaluationReport) -> Experiment:
    """Swap the generation model and compare, check by check, how many descriptions pass.

    The cost check is left out: cost is tokens times prices the course wrote, and an
    authored run's tokens are estimates priced for a made-up model, so the two sides'
    costs do not compare.
    """
    products = list(baseline.checks)
    comparisons = []
    for name in COMPARED_CHECKS:
        before = [baseline.checks[p].status(name) == "pass" for p in products]
        after = [candidate.checks[p].status(name) == "pass" for p in products]
        low, high = share_difference_interval(before, after)
        n = len(products)
        comparisons.append(comparison(f"passes {name}", f"{sum(before)}/{n}", f"{sum(after)}/{n}", low, high))
    return Experiment(
        id=f"generation-model-{candidate.run_id}",
        variable="generation model",
        baseline=baseline.runs.generation.model_id,
        changed_to=candidate.runs.generation.model_id,
        hypothesis="The changed model's descriptions pass the programmatic checks more often than the baseline's, "
        "on every check.",
        conditions={
            "rubric_sha256": baseline.inputs.rubric.sha256,
            "prompt_version": baseline.runs.generation.prompt_version,
            "products": len(products),
            "settings": {k: v for k, v in baseline.runs.generation.settings.items() if k != "response_format"},
        },
        result={"comparisons": comparisons},
        outcome=outcome_of(comparisons),
        evidence_origin=_origins(baseline.origin, candidate.origin),
    )


#: Where `log_lesson_experiments` writes lesson 01's log (under the repository's scratch directory).
LESSON_LOG = "01_experiments.jsonl"


def log_lesson_experiments(
    authored: EvaluationReport, captured: EvaluationReport, log: str | Path | None = None
) -> list[Experiment]:
    """Run lesson 01's four experiments, log each to a fresh log, and return the log as read back.

    The experiments: the judge arrangement in each run, then the judge model and the
    generation model, each swapped from the authored run to the captured one. ``log``
    defaults to `LESSON_LOG` under the scratch directory; an old log there is replaced.
    """
    from labkit.paths import scratch_dir

    path = Path(log) if log is not None else scratch_dir() / LESSON_LOG
    path.unlink(missing_ok=True)
    for experiment in (
        arrangement_experiment(authored),
        arrangement_experiment(captured),
        judge_model_experiment(authored, captured),
        generation_model_experiment(authored, captured),
    ):
        log_experiment(path, experiment)
    return load_experiments(path)
