"""The router: the model proposes one of four routes; the application validates the label.

``structured`` questions go to the dataset tools, ``unstructured`` ones to the
summarization tool, ``profile`` ones to the user's profile, and everything
else (sports, CRM, anything outside support data) is ``out_of_scope`` and is
declined without any data-tool call. The router sees the question and the
caller's permitted scope, never the data. A reply that is not JSON, or names
no known route, is an invalid route: it is reported, never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from labkit.agent.dataset import INTENTS
from labkit.agent.identity import Caller

#: The four routes a question can take (book section 12.4): the router picks exactly one.
ROUTES = ("structured", "unstructured", "profile", "out_of_scope")
#: What the agent may propose: a tool, or its final answer.
DECISIONS = ("filter_by_intent", "count_rows", "summarize_requests", "final_answer")
#: What the model may answer, router and agent alike (one lesson, one set of settings): the router replies
#: ``{"route": ...}``, the agent ``{"decision": ..., "arguments": {...}}``. The argument names are listed so the local
#: server's grammar stays small; their bounds are checked by the tools' Pydantic models, not here.
DECISION_SCHEMA = {
    "type": "object",
    "properties": {
        "route": {"type": "string", "enum": list(ROUTES)},
        "decision": {"type": "string", "enum": list(DECISIONS)},
        "arguments": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "intent": {"type": "string", "enum": list(INTENTS)},
                "limit": {"type": "integer"},
                "rows": {"type": "string"},
                "answer": {"type": "string"},
            },
        },
    },
}


def schema_as_shown() -> dict[str, Any]:
    """Return a copy of `DECISION_SCHEMA` for reading: the 27 intent names stand as one placeholder."""
    shown = json.loads(json.dumps(DECISION_SCHEMA))
    shown["properties"]["arguments"]["properties"]["intent"]["enum"] = [f"<{len(INTENTS)} intents>"]
    return shown


ROUTER_POLICY = (
    "You route questions for a customer-support data assistant. Choose exactly one route:\n"
    "- structured: counts, filters or lists of labelled support requests (for example by intent such as get_refund);\n"
    "- unstructured: a summary or description of what customers write in support requests;\n"
    "- profile: the user's own preferences for how answers are shown (remember, change or recall them);\n"
    "- out_of_scope: anything else, such as sports, CRM records, sales leads or general knowledge.\n"
    'Reply with only a JSON object: {"route": the route}.'
)


@dataclass(frozen=True)
class RouteResult:
    """The router's validated label, or the problem that made it invalid."""

    route: str | None
    """One of the four routes, or None when the reply was invalid."""
    raw: str
    """The model's reply text, unchanged."""
    problem: str | None
    """Why the reply was not a valid route, or None."""
    ignored: tuple[str, ...] = ()
    """Fields of the reply other than ``route`` (the shared schema allows them; the router does not use them)."""


def router_messages(question: str, caller: Caller) -> list[dict[str, str]]:
    """Return the router's conversation: the policy, then the caller's scope and the question as JSON."""
    return [
        {"role": "system", "content": ROUTER_POLICY},
        {"role": "user", "content": json.dumps({"caller_scope": caller.caller_scope, "question": question})},
    ]


def parse_decision(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Return ``({decision, arguments}, None)`` for a well-formed agent reply, else ``(None, problem)``.

    A ``route`` field (which the shared schema allows) is not part of an agent
    reply; it is left out of the result and named in ``ignored``.
    """
    try:
        data = json.loads(raw)
    except ValueError:
        return None, "not JSON"
    if (
        not isinstance(data, dict)
        or not {"decision", "arguments"} <= set(data)
        or set(data) - {"decision", "arguments", "route"}
    ):
        return None, "not an object with decision and arguments"
    if not isinstance(data["decision"], str) or not isinstance(data["arguments"], dict):
        return None, "decision must be text and arguments an object"
    return {
        "decision": data["decision"],
        "arguments": data["arguments"],
        "ignored": sorted(set(data) - {"decision", "arguments"}),
    }, None


def parse_route(raw: str) -> RouteResult:
    """Validate a router reply: its ``route`` must be one of the four; other fields are named in ``ignored``."""
    try:
        data = json.loads(raw)
    except ValueError:
        return RouteResult(None, raw, "not JSON")
    if not isinstance(data, dict) or "route" not in data:
        return RouteResult(None, raw, "not an object with a route")
    ignored = tuple(sorted(set(data) - {"route"}))
    if data["route"] not in ROUTES:
        return RouteResult(None, raw, f"{data['route']!r} is not a route", ignored)
    return RouteResult(data["route"], raw, None, ignored)


def route_question(question: str, caller: Caller, adapter: Any) -> RouteResult:
    """Ask the model (through the boundary) to route ``question``; return the validated label."""
    completion = adapter.generate(f"route:{question}", router_messages(question, caller))
    return parse_route(completion.choices[0].message.content or "")
