"""Lesson 06 with two real runs: the bundled model routes the suite under two prompt versions, and the gate decides.

The application owns the ticket ids: the model sees the routing policy and one
ticket's text per fresh conversation, and returns only a route, constrained by
the reply schema to the four queue names. The application pairs each reply with
the id of the ticket it sent, so a model cannot rewrite an id (as it did in the
first captured run, `labkit.routing.runs`). Both prompt versions run over the
same suite with the same generation settings; only the system prompt differs,
so the gate compares two workflow versions of one model.

``make_requests`` is the lesson's recordable entry point (``labkit record 06``);
`captured_pair` replays a recorded run and returns the baseline and candidate
runs in the grader's format, with every malformed reply listed, never repaired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labkit.canonical import loads_strict
from labkit.routing.grader import ROUTES
from labkit.routing.runs import Malformed, routing_run, run_fixtures, suite_sha256
from labkit.routing.suite import POLICY
from labkit.serve import local_response_format

__all__ = [
    "CAPTURED_DESCRIPTION",
    "PROMPTS",
    "ROUTE_ONLY_FORMAT",
    "RUN_CAPTURED",
    "SETTINGS",
    "captured_pair",
    "captured_replies",
    "captured_table",
    "gate_run",
    "make_requests",
    "parse_route",
    "prompt_difference",
    "prompt_messages",
    "run_fixtures",
]

RUN_CAPTURED = "06-routing-smollm2-prompts"
CAPTURED_DESCRIPTION = (
    "Routes chosen by a real model for the ten routing model inputs under two prompt versions (baseline and "
    "candidate): the policy as system prompt, one ticket's text per fresh conversation, the reply constrained to "
    "a route name; the application keeps the ticket ids; labels and penalties never in the prompt."
)
_REPLY = 'Reply with only a JSON object: {"route": one queue name}.'

#: Prompt version -> system prompt. The candidate adds an explicit order of decisions to the same policy.
PROMPTS = {
    "baseline": POLICY + _REPLY,
    "candidate": POLICY + "Decide in this order and stop at the first yes.\n"
    "1. Is the shop down right now, or can no customer place an order because checkout fails? urgent_support.\n"
    "2. Is it about an invoice, a charge, a refund or paying for a plan? billing.\n"
    "3. Does the customer want to buy something new or ask what something costs? sales.\n"
    "4. Otherwise: support.\n" + _REPLY,
}

#: The reply schema: one route from the enum and nothing else; the bundled server turns it into a grammar.
ROUTE_ONLY_FORMAT = local_response_format(
    {
        "type": "object",
        "properties": {"route": {"type": "string", "enum": list(ROUTES)}},
        "required": ["route"],
        "additionalProperties": False,
    }
)
SETTINGS = {"temperature": 0, "seed": 0, "max_tokens": 24, "response_format": ROUTE_ONLY_FORMAT}


def prompt_difference(baseline: str | None = None, candidate: str | None = None) -> str:
    """Say what the candidate prompt adds to the baseline, refusing a pair that differs in more than one insertion.

    By default it compares the two `PROMPTS`; both start with the policy printed in section 1.
    """
    import difflib

    old = PROMPTS["baseline"] if baseline is None else baseline
    new = PROMPTS["candidate"] if candidate is None else candidate
    edits = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(edits) != 1 or edits[0][0] != "insert":
        raise ValueError("the candidate prompt must be the baseline with one passage inserted")
    _, at, _, start, end = edits[0]
    shared = "the policy printed in section 1" if old[:at] == POLICY else repr(old[:at])
    return (
        f"both prompts: {shared}, then\n{old[at:]}\n\nthe candidate inserts, just before that line:\n{new[start:end]}"
    )


def prompt_messages(version: str, text: str) -> list[dict[str, str]]:
    """Return one fresh conversation: the prompt version's system prompt, then the ticket's text (no id)."""
    if version not in PROMPTS:
        raise KeyError(f"no prompt version {version!r}; choose one of {', '.join(PROMPTS)}")
    return [{"role": "system", "content": PROMPTS[version]}, {"role": "user", "content": text}]


def make_requests(adapter: Any) -> dict[str, list[tuple[str, str]]]:
    """Route every model input under each prompt version; return version -> ``(ticket id, raw reply)`` in input order."""
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import load

    inputs, _ = load(fixtures_dir() / "routing" / "model-inputs.json")
    replies: dict[str, list[tuple[str, str]]] = {}
    for version in PROMPTS:
        replies[version] = []
        for ticket in inputs:
            completion = adapter.generate(f"{version}: {ticket['id']}", prompt_messages(version, ticket["message"]))
            replies[version].append((ticket["id"], completion.choices[0].message.content or ""))
    return replies


def parse_route(raw: str) -> tuple[str | None, str | None]:
    """Return ``(route, None)`` for a reply that is a JSON object with only a text route, else ``(None, problem)``.

    An unknown route name is returned as is, for the grader to refuse; nothing is mapped or repaired.
    """
    try:
        data = loads_strict(raw, source="reply")
    except ValueError as error:  # also a repeated key, NaN or a raw control character in a string
        return None, f"not strict JSON: {error}"  # the error names the cause
    if not isinstance(data, dict) or set(data) != {"route"}:
        return None, "not an object with exactly route"
    if not isinstance(data["route"], str):
        return None, "route is not text"
    return data["route"], None


def gate_run(
    replies: list[tuple[str, str]], *, label: str, suite_sha256: str
) -> tuple[dict[str, Any], list[Malformed]]:
    """Build a gradable run (``origin: captured``) from ``(ticket id, raw reply)`` pairs; list malformed replies apart."""
    return routing_run(replies, label=label, suite_sha256=suite_sha256, parse=lambda _id, raw: parse_route(raw))


def captured_replies(run: str | Path = RUN_CAPTURED) -> tuple[str, dict[str, list[tuple[str, str]]]]:
    """Replay a recorded two-prompt run; return its model's name and, per prompt version, ``(ticket id, raw reply)`` pairs."""
    from labkit.boundary import connect

    boundary = connect(str(run), lesson="06", settings=SETTINGS, mode="replay")
    return boundary.model, make_requests(boundary)


def captured_table(suite: dict[str, Any], run: str | Path = RUN_CAPTURED) -> tuple[str, Any]:
    """Replay a recorded two-prompt run; return its model's name and a table of raw replies per prompt version.

    The table is indexed by ticket id, with the suite's ``expected`` route first.
    """
    import pandas as pd

    model, replies = captured_replies(run)
    table = pd.DataFrame({f"{version} prompt": dict(pairs) for version, pairs in replies.items()})
    expected = {case["id"]: case["expected"] for case in suite["cases"]}
    table.insert(0, "expected", table.index.map(expected))
    return model, table.rename_axis("id")


def captured_pair(run: str | Path = RUN_CAPTURED) -> tuple[dict[str, Any], dict[str, Any], list[Malformed]]:
    """Replay a recorded two-prompt run (an id, folder or file); return the baseline run, the candidate run and every malformed reply.

    The runs carry labels ``<model>-<version>-prompt`` and the committed suite's SHA-256, ready for
    `labkit.routing.grader.compare` (a malformed reply leaves its ticket out, so the grader refuses the run).
    """
    model, replies = captured_replies(run)
    sha = suite_sha256()
    built = {
        version: gate_run(replies[version], label=f"{model}-{version}-prompt", suite_sha256=sha) for version in PROMPTS
    }
    malformed = [m for version in PROMPTS for m in built[version][1]]
    return built["baseline"][0], built["candidate"][0], malformed
