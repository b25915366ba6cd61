"""Per-step reply schemas: what a run with required fields would send, and which recorded replies they let through.

The recorded runs send one shared `labkit.agent.router.DECISION_SCHEMA` to router
and agent alike, and it requires no field. `ROUTE_REPLY` and `PROPOSAL` are the
schemas each step could send instead: the router's requires a ``route`` and nothing
else; the agent's has one branch per tool whose ``arguments`` are that tool's own
Pydantic class (`IntentFilter`, `CountRows`, `SummarizeRequests`), so its required
fields and bounds come from the code that validates the call. `fixed_schema_verdicts`
checks a recorded run's replies against them. It sends nothing: no run was
recorded with these schemas, so what a model would write under them is not known.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from labkit.agent.router import ROUTES
from labkit.agent.tools import CountRows, IntentFilter, SummarizeRequests


class RouteReply(BaseModel):
    """The router's reply under its own schema: a route, required, and no other field."""

    model_config = ConfigDict(extra="forbid")
    route: Literal[ROUTES]  # type: ignore[valid-type]  # the four routes, one tuple shared with the router


class FilterProposal(BaseModel):
    """A proposal to call `filter_by_intent`: its arguments must be a valid `IntentFilter`."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["filter_by_intent"]
    arguments: IntentFilter


class CountProposal(BaseModel):
    """A proposal to call `count_rows`: its arguments must be a valid `CountRows`."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["count_rows"]
    arguments: CountRows


class SummarizeProposal(BaseModel):
    """A proposal to call `summarize_requests`: its arguments must be a valid `SummarizeRequests`."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["summarize_requests"]
    arguments: SummarizeRequests


class FinalArguments(BaseModel):
    """The arguments of a final answer: the answer text, required."""

    model_config = ConfigDict(extra="forbid")
    answer: str = Field(description="'<count> <intent words> requests in <caller_scope>'")


class FinalProposal(BaseModel):
    """A proposal of the final answer: ``arguments`` must hold the ``answer``."""

    model_config = ConfigDict(extra="forbid")
    decision: Literal["final_answer"]
    arguments: FinalArguments


#: The agent's reply under a per-tool schema: the ``decision`` picks the branch, the branch fixes the arguments.
PROPOSAL: TypeAdapter[Any] = TypeAdapter(
    Annotated[FilterProposal | CountProposal | SummarizeProposal | FinalProposal, Field(discriminator="decision")]
)
#: The router's reply under its own schema.
ROUTE_REPLY: TypeAdapter[Any] = TypeAdapter(RouteReply)


def proposal_branches() -> list[dict[str, Any]]:
    """Read `PROPOSAL`'s JSON schema (what a request would send) back as one row per decision and its fields."""
    schema = PROPOSAL.json_schema()
    rows = []
    for ref in schema["discriminator"]["mapping"].values():
        branch = schema["$defs"][ref.rsplit("/", 1)[1]]
        arguments = schema["$defs"][branch["properties"]["arguments"]["$ref"].rsplit("/", 1)[1]]
        required = arguments.get("required", [])
        rows.append(
            {
                "decision": branch["properties"]["decision"]["const"],
                "required arguments": ", ".join(required),
                "optional arguments": ", ".join(k for k in arguments["properties"] if k not in required) or "-",
                "extra fields": "refused" if arguments.get("additionalProperties") is False else "allowed",
            }
        )
    return rows


def verdict(raw: str, *, step: str) -> str:
    """Return ``fits`` when ``raw`` fits the ``route`` or ``agent`` step's own schema, else its first error."""
    adapter = ROUTE_REPLY if step == "route" else PROPOSAL
    try:
        adapter.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"] if part not in PROPOSAL_TAGS)
        return f"{where or 'reply'}: {first['type']}"
    return "fits"


#: The discriminator values Pydantic puts in an error's location; left out of the error shown.
PROPOSAL_TAGS = ("filter_by_intent", "count_rows", "summarize_requests", "final_answer")


def fixed_schema_verdicts(results: Sequence[Any]) -> list[dict[str, Any]]:
    """Return how a recorded run's replies fare under the per-step schemas: one row per step and `verdict`, counted.

    ``results`` are the run's `labkit.agent.runs.CaseResult` objects; every reply a
    router or agent node recorded is checked. Rows come route first, then agent,
    ``fits`` first, then the errors from most to least frequent. Nothing is sent.
    """
    seen: dict[str, Counter[str]] = {"route": Counter(), "agent": Counter()}
    for result in results:
        for event in (result.state or {}).get("events", []):
            if "raw" in event:
                step = "route" if event["kind"].startswith("route") else "agent"
                seen[step][verdict(event["raw"], step=step)] += 1
    return [
        {"step": step, "verdict": name, "replies": n}
        for step, verdicts in seen.items()
        for name, n in sorted(verdicts.items(), key=lambda item: (item[0] != "fits", -item[1], item[0]))
    ]
