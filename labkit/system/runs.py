"""Lesson 05's recorded runs, and the tables notebook 05 shows of them.

The authored run holds replies the course wrote to show the intended
behaviour; the captured run holds what the bundled local model (SmolLM2-135M,
schema-constrained JSON) replied to the same requests. `make_requests` makes
every model request of the lesson through the real workflow, identically for
authoring, recording and replay.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labkit.system.contract import SETTINGS
from labkit.system.golden import EMPTY_COUNT_QUESTION, GOLDEN
from labkit.system.policy import embeddings_path, policy_path
from labkit.tables import text_table

#: Re-exported: `labkit.course.lessons` reads a lesson's settings from its run module.
SETTINGS = SETTINGS
RUN_AUTHORED = "05-system-authored"
RUN_CAPTURED = "05-system-smollm2"
AUTHORED_DESCRIPTION = (
    "Replies written by the course to show the minimal system's intended behaviour: the exact policy sentence "
    "with its page, two count tool calls, and a decline. No model produced them."
)
CAPTURED_DESCRIPTION = (
    "Replies captured from a real model for lesson 05's golden set and empty-count question through the "
    "LangGraph workflow, schema-constrained JSON."
)

_TOOL_CALL: dict[str, Any] = {"kind": "tool_call", "text": "", "citation_ids": [], "tool_args": None}
AUTHORED_REPLIES: dict[str, str] = {
    GOLDEN[0].question: json.dumps(
        {
            "kind": "answer",
            "text": "Customers can request a refund within 30 days.",
            "citation_ids": ["refund_policy.pdf#p1"],
            "tool_args": None,
        }
    ),
    GOLDEN[1].question: json.dumps({**_TOOL_CALL, "tool_args": {"intent": "get_refund"}}),
    GOLDEN[2].question: json.dumps(
        {"kind": "insufficient_evidence", "text": "", "citation_ids": [], "tool_args": None}
    ),
    EMPTY_COUNT_QUESTION: json.dumps({**_TOOL_CALL, "tool_args": {"intent": "cancel_order"}}),
}


def run_fixtures() -> list[Path]:
    """Return the files this lesson's requests depend on (their hashes go into every run)."""
    return [policy_path(), embeddings_path()]


def make_requests(adapter: Any, *, trace_path: str | Path | None = None) -> list[tuple[str, str, dict[str, Any]]]:
    """Ask the golden set, each case on a fresh thread, then the empty count for team-b; return ``(question, team, result)``."""
    from labkit.system.golden import run_golden
    from labkit.system.workflow import MinimalSystem

    system = MinimalSystem(adapter, trace_path=trace_path)
    asked = [(case.question, case.team, result) for case, _, result, _ in run_golden(system)]
    empty = system.ask(EMPTY_COUNT_QUESTION, "team-b", system.new_session("empty-count"))
    return [*asked, (EMPTY_COUNT_QUESTION, "team-b", empty)]


# --- what notebook 05 shows ------------------------------------------------------------------------


def golden_table(rows: list[tuple[Any, str, dict[str, Any], bool]]) -> Any:
    """Return a pandas table of a golden run: question, expected status, the result's status, text and count, verdict."""
    import pandas as pd

    table = pd.DataFrame(
        [
            {
                "question": case.question,
                "expected": case.status,
                "status": result["status"],
                "text": result.get("text", ""),
                "count": result.get("observation", {}).get("count"),
                "passed": ok,
            }
            for case, _, result, ok in rows
        ]
    )
    return table.set_index("question").astype({"count": "Int64"})


def failure_table(rows: list[tuple[Any, str, dict[str, Any], bool]], lines: list[dict[str, Any]]) -> Any:
    """Return a pandas table of the failed golden cases, read from their trace lines: statuses, why, raw reply, tool observation."""
    import pandas as pd

    by_session = {line["session_id"]: line for line in lines}
    records = []
    for case, session_id, _, ok in rows:
        if ok:
            continue
        line = by_session[session_id]
        steps = {step["step"]: step for step in line["trace"]}
        tool = steps.get("tool")
        records.append(
            {
                "question": case.question,
                "check status": steps["check"]["status"],
                "final status": line["result"]["status"],
                "why it failed": steps["check"].get("reason") or _why(case, line["result"]),
                "raw reply": steps["generate"]["raw_reply"],
                "tool observation": "" if tool is None else f"{tool['intent']}: {tool['count']} for {tool['team']}",
            }
        )
    columns = ["question", "check status", "final status", "why it failed", "raw reply", "tool observation"]
    return text_table(pd.DataFrame(records, columns=columns).set_index("question"))


def _why(case: Any, result: dict[str, Any]) -> str:
    if result["status"] != case.status:
        return f"status {result['status']}, expected {case.status}"
    if case.count is not None:
        return f"count {result.get('observation', {}).get('count')}, expected {case.count}"
    if case.cites is not None and case.cites not in result.get("citation_ids", []):
        return f"cites {result.get('citation_ids')}, expected {case.cites}"
    return f"text {result.get('text')!r} is not the exact text {case.text!r}"


def latency_table(lines: list[dict[str, Any]], run: Any) -> Any:
    """Return a pandas table of latency per step, one row per request, the model's taken from ``run``'s bindings.

    Only the model call is timed per step, and only its latency is part of a
    recorded run; the local steps (retrieve, check, tool) are marked as run, without a figure.
    """
    import pandas as pd

    rows = []
    for line in lines:
        row = {
            "question": line["question"],
            "retrieve": "did not run",
            "generate": "did not run",
            "check": "did not run",
            "tool": "did not run",
            "input_tokens": None,
            "output_tokens": None,
        }
        for step in line["trace"]:
            if step["step"] != "generate":
                row[step["step"]] = "ran locally"
                continue
            request = {"model": run.model.id, "messages": step["model_request"], **run.settings}
            binding = run.binding_for(request)
            if binding is None or binding.latency_s is None:
                row["generate"] = f"none recorded ({run.origin} run)"
            else:
                row.update(
                    generate=f"{round(1000 * binding.latency_s):,} ms",
                    input_tokens=binding.usage.prompt_tokens,
                    output_tokens=binding.usage.completion_tokens,
                )
        rows.append(row)
    return text_table(
        pd.DataFrame(rows).set_index("question").astype({"input_tokens": "Int64", "output_tokens": "Int64"})
    )
