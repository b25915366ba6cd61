"""The experiment log: one JSON object per line, every experiment kept, the failed ones included.

An experiment changes one variable against a baseline under stated
conditions. Its entry says what was expected (the hypothesis), what changed,
what was held fixed, what came out, and whether the hypothesis held. A failed
experiment is evidence too: keeping it stops the next person from repeating
the same change without a new hypothesis.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labkit.canonical import canonical_json, loads_strict
from labkit.errors import InvalidJSON, LabkitError, validation_problems
from labkit.tables import text_table

if TYPE_CHECKING:
    from labkit.evaluator.report import EvaluationReport


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
    outcome: Literal["succeeded", "failed", "inconclusive"] = Field(description="Whether the hypothesis held.")
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
    """Return the log as a pandas table: id, variable, baseline, changed to, outcome, evidence."""
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


def _kappa(report: EvaluationReport, criterion: str, arrangement: str) -> float | None:
    row = report.agreement_for(criterion, arrangement)
    return None if row is None or row.kappa is None else round(row.kappa, 3)


def _origins(baseline: str, changed_to: str) -> dict[Any, Any]:
    """The origin of each side's evidence; `Experiment` validates that each is authored, captured or live."""
    return {"baseline": baseline, "changed_to": changed_to}


def arrangement_experiment(report: EvaluationReport) -> Experiment:
    """Compare bundled and per-criterion judge calls on one run's held-out labels (one variable: the arrangement)."""
    judged = [c.id for c in report.inputs.rubric.judged()]
    result = {
        c: {"bundled": _kappa(report, c, "bundled"), "per_criterion": _kappa(report, c, "per_criterion")}
        for c in judged
    }
    pairs = [(p["bundled"], p["per_criterion"]) for p in result.values()]
    known = [(bundled, per) for bundled, per in pairs if bundled is not None and per is not None]
    outcome: Literal["succeeded", "failed", "inconclusive"]
    if len(known) < len(pairs):
        outcome = "inconclusive"
    else:
        outcome = "succeeded" if all(per >= bundled for bundled, per in known) else "failed"
    origin = report.origin
    return Experiment(
        id=f"arrangement-{report.run_id}",
        variable="judge arrangement",
        baseline="bundled",
        changed_to="per_criterion",
        hypothesis="Judging each criterion in its own call agrees with the adjudicated labels at least as well as one "
        "bundled call, on every judged criterion (Cohen's kappa).",
        conditions=_conditions(report, judge_model=report.runs.judging.model_id, run_id=report.run_id),
        result={"kappa": result},
        outcome=outcome,
        evidence_origin=_origins(origin, origin),
    )


def judge_model_experiment(baseline: EvaluationReport, candidate: EvaluationReport) -> Experiment:
    """Swap the judge model (one variable) and see whether it still meets the agreement rule where the baseline did."""
    rule = baseline.inputs.rubric.agreement_rule
    result, met = {}, []
    for criterion in [c.id for c in baseline.inputs.rubric.judged()]:
        sides = {}
        for name, report in (("baseline", baseline), ("changed_to", candidate)):
            row = report.agreement_for(criterion, rule.arrangement)
            if row is None:
                raise ExperimentLogError(
                    f"run {report.run_id} has no {rule.arrangement} agreement for {criterion}; evaluate it with that arrangement"
                )
            sides[name] = {
                "kappa": None if row.kappa is None else round(row.kappa, 3),
                "agreement": round(row.percent_agreement, 3),
                "rejected": row.rejected,
                "scorer": report.routing[criterion].scorer,
            }
        result[criterion] = sides
        if sides["baseline"]["scorer"] == "judge":
            met.append(sides["changed_to"]["scorer"] == "judge")
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
        result=result,
        outcome="succeeded" if met and all(met) else ("failed" if met else "inconclusive"),
        evidence_origin=_origins(baseline.origin, candidate.origin),
    )


def generation_model_experiment(baseline: EvaluationReport, candidate: EvaluationReport) -> Experiment:
    """Swap the generation model (one variable) and compare how many descriptions pass each programmatic check."""

    def passes(report: EvaluationReport) -> dict[str, int]:
        names = ("schema", "length", "cost", "numeric_claims")
        return {n: sum(c.status(n) == "pass" for c in report.checks.values()) for n in names}

    before, after = passes(baseline), passes(candidate)
    return Experiment(
        id=f"generation-model-{candidate.run_id}",
        variable="generation model",
        baseline=baseline.runs.generation.model_id,
        changed_to=candidate.runs.generation.model_id,
        hypothesis="The changed model's descriptions pass each programmatic check at least as often as the baseline's.",
        conditions={
            "rubric_sha256": baseline.inputs.rubric.sha256,
            "prompt_version": baseline.runs.generation.prompt_version,
            "products": len(baseline.checks),
            "settings": {k: v for k, v in baseline.runs.generation.settings.items() if k != "response_format"},
        },
        result={"passing": {"baseline": before, "changed_to": after}},
        outcome="succeeded" if all(after[n] >= before[n] for n in before) else "failed",
        evidence_origin=_origins(baseline.origin, candidate.origin),
    )
