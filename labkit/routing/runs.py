"""Lesson 06's first captured run (``06-routing-smollm2``), in which the model echoed each ticket id.

The lesson's recordable requests now live in `labkit.routing.prompts` (the model returns only a
route and the application keeps the ids); this module replays the first run, where the model
rewrote one id and so the grader refuses the run as incomplete.

The model sees the routing policy as its system prompt and one ticket per
fresh conversation (its id and message as JSON); never the expected routes or
the penalties. Its raw replies are kept in a recorded run. `routing_run` turns
them into a run the grader reads, without repairing anything: a reply that is
not a JSON object with the ticket's id and a route is counted as malformed and
its ticket gets no prediction, so the grader refuses the run as incomplete.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.canonical import file_sha256, loads_strict
from labkit.paths import fixtures_dir
from labkit.routing.grader import ROUTES
from labkit.routing.suite import POLICY

RUN_CAPTURED = "06-routing-smollm2"
CAPTURED_DESCRIPTION = (
    "Routes chosen by a real model for the ten routing model inputs: the policy as system prompt, one ticket per "
    "fresh conversation, schema-constrained JSON; labels and penalties never in the prompt."
)
INSTRUCTION = 'Reply with only a JSON object: {"id": the ticket id unchanged, "route": one queue name}.'
#: The reply schema; the bundled server turns it into a grammar (see `labkit.serve`).
ROUTE_FORMAT = {
    "type": "json_object",
    "schema": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "route": {"type": "string", "enum": list(ROUTES)}},
        "required": ["id", "route"],
    },
}
SETTINGS = {"temperature": 0, "seed": 0, "max_tokens": 40, "response_format": ROUTE_FORMAT}


def run_fixtures() -> list[Path]:
    """Return the files the routing requests depend on."""
    folder = fixtures_dir() / "routing"
    return [folder / "model-inputs.json", folder / "suite.json"]


def routing_messages(ticket: dict[str, str]) -> list[dict[str, str]]:
    """Return one fresh conversation for a ticket: the policy, then the ticket as JSON data."""
    return [
        {"role": "system", "content": POLICY + INSTRUCTION},
        {"role": "user", "content": json.dumps({"id": ticket["id"], "message": ticket["message"]}, ensure_ascii=False)},
    ]


def make_requests(adapter: Any) -> list[tuple[str, str]]:
    """Ask the model to route each model input; return ``(ticket id, raw reply text)`` in input order."""
    from labkit.routing.grader import load

    inputs, _ = load(fixtures_dir() / "routing" / "model-inputs.json")
    replies = []
    for ticket in inputs:
        messages = routing_messages(ticket)
        completion = adapter.generate(messages[-1]["content"], messages)
        replies.append((ticket["id"], completion.choices[0].message.content or ""))
    return replies


@dataclass(frozen=True)
class Malformed:
    """A reply the grader cannot use, kept with what was wrong."""

    id: str
    raw: str
    problem: str


def parse_route_reply(ticket_id: str, raw: str) -> tuple[str | None, str | None]:
    """Return ``(route, None)`` for a well-formed reply, or ``(None, problem)``; an unknown route is kept as is."""
    try:  # json.loads refuses bad syntax and a raw control character (a line break, say) inside a string;
        data = loads_strict(raw, source="reply")  # its hooks add a repeated key, NaN and 1e999
    except ValueError as error:  # loads_strict raises each of these as InvalidJSON, a ValueError
        return None, f"not strict JSON: {error}"  # the error names the cause
    if not isinstance(data, dict) or set(data) != {"id", "route"}:
        return None, "not an object with exactly id and route"
    if data["id"] != ticket_id:
        return None, f"id changed to {data['id']!r}"
    if not isinstance(data["route"], str):
        return None, "route is not text"
    return data["route"], None


def routing_run(
    replies: list[tuple[str, str]],
    *,
    label: str,
    suite_sha256: str,
    parse: Callable[[str, str], tuple[str | None, str | None]] = parse_route_reply,
) -> tuple[dict[str, Any], list[Malformed]]:
    """Build a gradable run (``origin: captured``) from raw replies, and list the malformed ones separately.

    ``parse(ticket id, raw reply)`` returns ``(route, None)`` or ``(None, problem)``.
    """
    predictions, malformed = [], []
    for ticket_id, raw in replies:
        route, problem = parse(ticket_id, raw)
        if problem:
            malformed.append(Malformed(ticket_id, raw, problem))
        else:
            predictions.append({"id": ticket_id, "route": route})
    run = {"label": label, "origin": "captured", "suite_sha256": suite_sha256, "predictions": predictions}
    return run, malformed


def captured_replies(run: str | Path = RUN_CAPTURED) -> list[dict[str, Any]]:
    """Replay a recorded run of these requests; return one row per ticket, in input order.

    Each row holds the ticket ``id``, its ``raw reply`` exactly as captured, and what the
    recording kept about the call: ``tokens`` (prompt plus reply, as the server counted them),
    ``latency_s`` and ``retries``. Replay refuses a request that differs from the recorded one.
    """
    from labkit.boundary import connect
    from labkit.recording import load_run

    replies = make_requests(connect(str(run), lesson="06", settings=SETTINGS, mode="replay"))
    calls = {json.loads(b.request["messages"][-1]["content"])["id"]: b for b in load_run(run).bindings}
    return [
        {
            "id": ticket_id,
            "raw reply": raw,
            "tokens": usage.total_tokens if (usage := calls[ticket_id].usage) else None,
            "latency_s": calls[ticket_id].latency_s,
            "retries": calls[ticket_id].retries,
        }
        for ticket_id, raw in replies
    ]


def recording_summary(
    run: str | Path = RUN_CAPTURED, *, settings: dict[str, Any] = SETTINGS, instruction: str | None = INSTRUCTION
) -> str:
    """Describe a recorded run in a few lines: its origin and model, the server, the settings, the prompt's end.

    The second line names the kind of endpoint the run recorded and when the run was made (``created_at``,
    which docs/recording.md maps to the server that answered). The last line counts the calls' transport errors
    and retries, as the recording kept them. ``instruction=None`` leaves out the system prompt.
    """
    from labkit.recording import load_run

    recorded = load_run(run)
    shown = {key: value for key, value in settings.items() if key != "response_format"}
    errors = sum(len(binding.transport_errors) for binding in recorded.bindings)
    retries = sum(binding.retries for binding in recorded.bindings)
    prompt = [] if instruction is None else ["system prompt: the policy printed in section 1, then", instruction]
    return "\n".join(
        [
            f"{recorded.run_id}: origin={recorded.origin}, model={recorded.model.id}",
            f"endpoint kind recorded: {recorded.model.endpoint_kind}, created_at: {recorded.created_at}",
            f"settings: {shown} + the reply schema",
            *prompt,
            f"calls: {len(recorded.bindings)}, transport errors: {errors}, retries: {retries}",
        ]
    )


def captured_calls(suite: dict[str, Any], run: str | Path = RUN_CAPTURED) -> Any:
    """Return `captured_replies` as a table indexed by ticket id, with each ticket's expected route first.

    The columns are ``expected``, ``raw reply (captured)``, ``tokens`` and ``latency_s``.
    """
    import pandas as pd

    expected = {case["id"]: case["expected"] for case in suite["cases"]}
    calls = pd.DataFrame(captured_replies(run)).set_index("id").drop(columns="retries")
    calls.insert(0, "expected", calls.index.map(expected))
    return calls.rename(columns={"raw reply": "raw reply (captured)"})


def suite_sha256() -> str:
    """Return the SHA-256 of the committed suite file, which every run must name."""
    return file_sha256(fixtures_dir() / "routing" / "suite.json")
