"""The golden set: three fixture cases the minimal system must pass, and `passed`, which scores one.

The cases: the exact policy sentence with its citation, a ticket count for the
caller's team, and an unsupported question that must decline. The policy case
compares text exactly, so a correct paraphrase fails it as surely as a wrong
answer: three passes are a smoke test, not evidence for a release.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class GoldenCase(BaseModel):
    """One golden case: a request and what its result must show."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    question: str = Field(min_length=1, description="The question asked.")
    team: str = Field(min_length=1, description="The caller's team, supplied by the application.")
    status: Literal["answered", "insufficient_evidence"] = Field(
        description="The status the result must have."
    )
    cites: str | None = Field(default=None, description="A citation id the result must include.")
    text: str | None = Field(
        default=None, description="The exact answer text the result must have."
    )
    count: int | None = Field(
        default=None, ge=0, description="The count the tool's observation must report."
    )


GOLDEN: tuple[GoldenCase, ...] = (
    GoldenCase(
        question="How many days do customers have to request a refund?",
        team="team-a",
        status="answered",
        cites="refund_policy.pdf#p1",
        text="Customers can request a refund within 30 days.",
    ),
    GoldenCase(
        question="How many refund tickets does my team have?",
        team="team-a",
        status="answered",
        count=2,
    ),
    GoldenCase(
        question="What is the home address of the support manager?",
        team="team-a",
        status="insufficient_evidence",
    ),
)

#: A count whose intent has no tickets for any team: the tool answers zero, which is a real answer.
EMPTY_COUNT_QUESTION = "How many order cancellation tickets does my team have?"

#: Every question the lesson asks the model, in the order `labkit.system.runs.make_requests` asks.
QUESTIONS: tuple[str, ...] = (*(case.question for case in GOLDEN), EMPTY_COUNT_QUESTION)


def unmet(result: dict[str, Any], case: GoldenCase) -> list[str]:
    """Return every rule of ``case`` that ``result`` breaks, each in words; empty when it passes.

    The rules, in the book's order: the status, then the citation, the exact text
    and the count, each only where the case names one.
    """
    broken = []
    if result.get("status") != case.status:
        broken.append(f"status {result.get('status')}, expected {case.status}")
    if case.cites is not None and case.cites not in result.get("citation_ids", []):
        broken.append(f"cites {result.get('citation_ids', [])}, expected {case.cites}")
    if case.text is not None and result.get("text") != case.text:
        broken.append(f"text {result.get('text')!r} is not exactly {case.text!r}")
    counted = result.get("observation", {}).get("count")
    if case.count is not None and counted != case.count:
        broken.append(f"count {counted}, expected {case.count}")
    return broken


def passed(result: dict[str, Any], case: GoldenCase) -> bool:
    """Return whether a result meets its golden case: it breaks none of the case's rules."""
    return not unmet(result, case)


def run_golden(
    system: Any, *, prefix: str = "golden"
) -> list[tuple[GoldenCase, str, dict[str, Any], bool]]:
    """Ask each golden case on a fresh thread; return ``(case, session id, result, passed)``."""
    rows = []
    for case in GOLDEN:
        session_id = system.new_session(prefix)
        result = system.ask(case.question, case.team, session_id)
        rows.append((case, session_id, result, passed(result, case)))
    return rows


def score_line(rows: list[tuple[GoldenCase, str, dict[str, Any], bool]]) -> str:
    """Return the book's one-line score: ``N/3 golden cases passed``."""
    return f"{sum(ok for *_, ok in rows)}/{len(rows)} golden cases passed"
