"""The evaluation record of one description, kept apart from the description a shopper sees.

The shopper sees `UserDescription`: a title and a body. Everything needed to
diagnose it lives in `EvaluationRecord`: the rubric version and hash, the
generation settings, each criterion's label with who gave it and why (the
judge's explanation, or the failing claim with the supplied fact), cost,
latency, and the agreement evidence that allowed the judge to score.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.evaluator.calibration import Agreement, Routing
from labkit.evaluator.checks import CheckReport, parse_description
from labkit.evaluator.generation import Generation
from labkit.evaluator.judge import JudgeLabel
from labkit.evaluator.rubric import Criterion, Rubric

Scorer = Literal["judge", "programmatic", "human_review", "not_judged", "human"]


class UserDescription(BaseModel):
    """What the shop shows: nothing but the title and the description."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: str = Field(description="The product title.")
    description: str = Field(description="The description body.")


class CriterionResult(BaseModel):
    """One criterion's release label, who gave it, and the evidence for it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    criterion: str = Field(description="Which criterion.")
    label: str | None = Field(description="The label; None while it waits for a person or a judge call.")
    passed: bool | None = Field(description="Whether the label is a passing one; None without a label.")
    scorer: Scorer = Field(description="Who gave the label, or who must.")
    explanation: str | None = Field(description="The judge's explanation, when the judge labeled it.")
    evidence: list[str] = Field(
        description="Programmatic evidence: failing claims with the supplied facts, check details."
    )
    agreement: Agreement | None = Field(description="The judge's held-out agreement on this criterion, if judged.")


class EvaluationRecord(BaseModel):
    """Everything recorded about one generated description, apart from the description itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    product_id: str = Field(description="Which product.")
    run_id: str = Field(description="The recorded run the description comes from.")
    origin: str = Field(description="authored, captured or live.")
    rubric_version: str = Field(description="The rubric fixed before generation.")
    rubric_sha256: str = Field(description="Its hash, as recorded in the generation.")
    prompt_version: str = Field(description="The generation prompt's version.")
    model_id: str = Field(description="The generating model.")
    generation_settings: dict[str, Any] = Field(description="Every setting of the generation request.")
    description_sha256: str = Field(description="SHA-256 of the exact reply text.")
    checks: CheckReport = Field(description="The programmatic checks.")
    criteria: list[CriterionResult] = Field(description="One result per rubric criterion, in rubric order.")
    prompt_tokens: int = Field(description="Prompt tokens of the generation call.")
    completion_tokens: int = Field(description="Completion tokens of the generation call.")
    usage_source: str = Field(description="reported by the endpoint, or estimated (authored runs).")
    cost_usd: float = Field(description="Generation cost from the price table.")
    judge_cost_usd: float = Field(
        description="Cost of the judge calls on this description in the release arrangement, from the price table."
    )
    latency_s: float | None = Field(description="Measured generation seconds; None for an authored run.")
    release: Literal["release", "blocked", "awaiting_human_review"] = Field(
        description="What the release rule decides."
    )


def user_description(text: str) -> UserDescription | None:
    """Return what a shopper would see for a reply text, or None when the reply is not the output schema."""
    output, _ = parse_description(text)
    return UserDescription(title=output.title, description=output.description) if output else None


def failing_label(criterion: Criterion) -> str:
    """Return the label a criterion gets when a check fails it: its first allowed label that does not pass."""
    return next(label for label in criterion.allowed_labels if label not in criterion.pass_labels)


def release_decision(results: list[CriterionResult]) -> Literal["release", "blocked", "awaiting_human_review"]:
    """Return the release rule's decision: one failing criterion blocks, one unscored criterion holds the release."""
    if any(r.passed is False for r in results):
        return "blocked"
    if all(r.passed for r in results):
        return "release"
    return "awaiting_human_review"


def check_evidence(criterion: Criterion, checks: CheckReport) -> list[str]:
    """Return the checks' evidence for one criterion: each gating check's detail, each failing claim beside its fact."""
    claims_failed = "numeric_claims" in criterion.checks and checks.status("numeric_claims") == "fail"
    evidence = [
        f"{r.name}: {r.detail}"
        for r in checks.results
        if r.name in criterion.checks and not (r.name == "numeric_claims" and claims_failed)
    ]
    if "numeric_claims" in criterion.checks:
        evidence += [f"'{c.text}': claims {c.claimed}, facts say {c.fact or 'nothing'}" for c in checks.failed_claims()]
    return evidence


def criterion_result(
    criterion: Criterion,
    checks: CheckReport,
    *,
    routing: Routing | None,
    judged: JudgeLabel | None,
    agreement: Agreement | None,
) -> CriterionResult:
    """Return one criterion's release label: a failing check decides first, then the routing, then the judge.

    A criterion gated by a failing check fails whatever the judge said; one the
    agreement rule routes to people waits for them; a judge label counts only
    where the rule lets the judge score.
    """
    failed = any(r.name in criterion.checks and r.status == "fail" for r in checks.results)
    known: dict[str, Any] = {
        "criterion": criterion.id,
        "explanation": judged.explanation if judged else None,
        "evidence": check_evidence(criterion, checks),
        "agreement": agreement,
    }
    if criterion.scored_by == "programmatic" or failed:
        label = failing_label(criterion) if failed else criterion.pass_labels[0]
        return CriterionResult(label=label, passed=not failed, scorer="programmatic", **known)
    if routing is None or routing.scorer == "human_review":
        return CriterionResult(label=None, passed=None, scorer="human_review", **known)
    if judged is None:  # the judge may score it, but was not asked about this description
        return CriterionResult(label=None, passed=None, scorer="not_judged", **known)
    passed = judged.verdict in criterion.pass_labels
    return CriterionResult(label=judged.verdict, passed=passed, scorer="judge", **known)


def build_record(
    generation: Generation,
    checks: CheckReport,
    rubric: Rubric,
    *,
    run_id: str,
    routing: dict[str, Routing],
    agreements: dict[str, Agreement],
    judge_labels: dict[str, JudgeLabel],
    judge_cost_usd: float,
) -> EvaluationRecord:
    """Combine checks, judge labels and routing into one record under the rubric's pass rules."""
    results = [
        criterion_result(
            criterion,
            checks,
            routing=routing.get(criterion.id),
            judged=judge_labels.get(criterion.id),
            agreement=agreements.get(criterion.id),
        )
        for criterion in rubric.criteria
    ]
    return EvaluationRecord(
        **_generation_fields(generation),
        run_id=run_id,
        checks=checks,
        criteria=results,
        judge_cost_usd=judge_cost_usd,
        release=release_decision(results),
    )


def _generation_fields(generation: Generation) -> dict[str, Any]:
    """Return the record's fields copied from the generation and its call: versions, settings, usage and cost."""
    call = generation.call
    return {
        "product_id": generation.product_id,
        "origin": call.origin,
        "rubric_version": generation.rubric_version,
        "rubric_sha256": generation.rubric_sha256,
        "prompt_version": generation.prompt_version,
        "model_id": call.model_id,
        "generation_settings": {k: v for k, v in call.request.items() if k not in ("model", "messages")},
        "description_sha256": hashlib.sha256(call.reply_text.encode("utf-8")).hexdigest(),
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens,
        "usage_source": call.usage_source,
        "cost_usd": call.cost_usd,
        "latency_s": call.latency_s,
    }
