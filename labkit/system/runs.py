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

from labkit.errors import LabkitError
from labkit.system.contract import SETTINGS
from labkit.system.golden import EMPTY_COUNT_QUESTION, GOLDEN, unmet
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

_TOOL_CALL: dict[str, Any] = {
    "kind": "tool_call",
    "text": "",
    "citation_ids": [],
    "tool_args": None,
}
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


def make_requests(
    adapter: Any, *, trace_path: str | Path | None = None, system_prompt: str | None = None
) -> list[tuple[str, str, dict[str, Any]]]:
    """Ask the golden set, each case on a fresh thread, then the empty count for team-b.

    Returns ``(question, team, result)`` for each request, in the order asked.
    ``system_prompt`` replaces the lesson's `SYSTEM` (`labkit.system.prompt_fix` sends its own).
    """
    from labkit.system.golden import run_golden
    from labkit.system.workflow import SYSTEM, MinimalSystem

    system = MinimalSystem(adapter, trace_path=trace_path, system=system_prompt or SYSTEM)
    asked = [(case.question, case.team, result) for case, _, result, _ in run_golden(system)]
    empty = system.ask(EMPTY_COUNT_QUESTION, "team-b", system.new_session("empty-count"))
    return [*asked, (EMPTY_COUNT_QUESTION, "team-b", empty)]


# --- what notebook 05 shows ----------------------------------------------------------------


def lesson_folder() -> Path:
    """Return notebook 05's scratch folder, created, with the trace files of earlier runs removed.

    Every trace file the lesson writes starts empty, so each run of the notebook reads
    only its own trace lines. Other files in the folder are left alone.
    """
    from labkit.paths import scratch_dir

    folder = scratch_dir() / "05_minimal_system"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    return folder


def server_of(run: Any) -> str:
    """Return which local server a run's replies came from, read from the replies' shape.

    A run's endpoint kind says only ``local-llama-cpp``, whichever runtime served it.
    The llama.cpp server that xllamacpp runs adds ``timings`` to every reply;
    llama-cpp-python's replies carry none (the client timed each call). An authored
    run had no server.
    """
    if run.origin != "captured":
        return "none (authored)"
    shapes = {"timings" in (binding.response or {}) for binding in run.bindings}
    if shapes == {True}:
        return "xllamacpp"
    if shapes == {False}:
        return "llama-cpp-python"
    return "mixed: some replies carry timings"


def run_table(run_ids: list[str]) -> Any:
    """Return one row per recorded run, read from its own header and replies.

    Columns: origin, model, the server the replies' shape shows (`server_of`; the
    endpoint kind, ``local-llama-cpp`` for both servers, cannot tell them apart),
    the date recorded and the number of requests.
    """
    import pandas as pd

    from labkit.recording import load_run

    rows = []
    for run_id in run_ids:
        run = load_run(run_id)
        rows.append(
            {
                "run": run.run_id,
                "origin": run.origin,
                "model": run.model.id,
                "server": server_of(run),
                "recorded": run.created_at[:10],
                "requests": len(run.bindings),
            }
        )
    return pd.DataFrame(rows).set_index("run")


def reply_table(lines: list[dict[str, Any]], *, costs: bool = False) -> Any:
    """Return one row per trace line: the question, the team, the model's raw reply, the status.

    The raw reply is the ``generate`` step's text exactly as the model sent it; ``check's
    reason`` is why `check` refused it (empty when it did not). With ``costs``, also the
    prompt and reply tokens the endpoint reported and the model call's latency in seconds,
    as the ``generate`` step kept them (in replay: recorded at capture, not timed now).
    """
    import pandas as pd

    rows = []
    for line in lines:
        steps = {step["step"]: step for step in line["trace"]}
        generate = steps["generate"]
        row = {
            "question": line["question"],
            "team": line["team"],
            "raw reply": generate["raw_reply"],
            "status": line["result"]["status"],
            "check's reason": steps["check"].get("reason", ""),
        }
        if costs:
            if generate["input_tokens"] is None or generate["latency_ms"] is None:
                raise ValueError(f"no tokens or latency were kept for {line['question']!r}")
            row["prompt tokens"] = generate["input_tokens"]
            row["reply tokens"] = generate["output_tokens"]
            row[f"model call, {generate['latency_source']} (s)"] = round(
                generate["latency_ms"] / 1000
            )
        rows.append(row)
    return text_table(pd.DataFrame(rows).set_index("question"))


def chunk_table(docs: list[Any], *, distances: list[float] | None = None) -> Any:
    """Return one row per page or chunk: the loader's page, its citation id, its length, how it starts.

    With ``distances`` (a search's squared L2 distances, in rank order) the rows are ranked.
    """
    import pandas as pd

    if distances is not None and len(distances) != len(docs):
        raise ValueError(
            f"{len(docs)} documents but {len(distances)} distances: pass one per document"
        )
    rows = [
        {
            "loader page": doc.metadata["page"],
            "citation_id": doc.metadata["citation_id"],
            "characters": len(doc.page_content),
            **({} if distances is None else {"squared L2 distance": round(float(distances[n]), 3)}),
            "starts": doc.page_content[:60].replace("\n", " ") + "…",
        }
        for n, doc in enumerate(docs)
    ]
    table = pd.DataFrame(rows)
    if distances is not None:
        table.index = pd.RangeIndex(1, len(rows) + 1, name="rank")
    return text_table(table)


def evidence_sentences(docs: list[Any], *phrases: str) -> list[str]:
    """Return each sentence of ``docs`` that holds one of ``phrases``, prefixed by its citation id.

    Line breaks inside a sentence become spaces. A sentence ends at a full stop after a
    lower-case letter, so a section number such as ``5. Exchanges`` stays with its heading.
    """
    import re

    if not phrases:
        raise ValueError("name at least one phrase to look for")
    found = []
    for doc in docs:
        text = " ".join(doc.page_content.split())
        for sentence in re.split(r"(?<=[a-z]\.)\s+", text):
            if any(phrase in sentence for phrase in phrases):
                found.append(f"{doc.metadata['citation_id']}: {sentence}")
    return found


def golden_table(rows: list[tuple[Any, str, dict[str, Any], bool]]) -> Any:
    """Return a table of a golden run: per case the expected status, the result and the verdict.

    ``why not passed`` names every rule of the case the result broke (`golden.unmet`).
    """
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
                "why not passed": "; ".join(unmet(result, case)),
            }
            for case, _, result, ok in rows
        ]
    )
    return text_table(table.set_index("question").astype({"count": "Int64"}))


class NoTraceLine(LabkitError, LookupError):
    """The trace file holds no request on that thread."""


def session_lines(trace_path: str | Path, session_id: str) -> list[dict[str, Any]]:
    """Return the trace lines of thread ``session_id``, in order; raise `NoTraceLine` when there is none."""
    from labkit.system.workflow import read_trace_lines

    lines = [line for line in read_trace_lines(trace_path) if line["session_id"] == session_id]
    if not lines:
        raise NoTraceLine(
            f"no trace line for session {session_id!r} in {trace_path}; ask on that thread first"
        )
    return lines


def request_viewer(trace_path: str | Path, session_id: str, *, origin: str) -> tuple[str, Any]:
    """Return the last request on thread ``session_id`` as text and as a `TraceViewer`.

    No verdict: a request outside the golden set has no expected result to judge it by.
    """
    from labkit.system.workflow import request_trace
    from labkit.widgets import TraceViewer

    last = session_lines(trace_path, session_id)[-1]
    trace = request_trace(last)
    viewer = TraceViewer(trace, title=last["question"], origin=origin)
    return viewer_text(trace), viewer


def viewer_text(trace: Any, *, passed: bool | None = None, reason: str | None = None) -> str:
    """Return in text what `TraceViewer` shows: each event's status and summary, then the verdict.

    The last line is the viewer's heading: the events tallied by status, and the lesson's
    verdict (``passed``) with its ``reason``, where the lesson judged the request.
    """
    from labkit.traces import event_summary
    from labkit.widgets import STATUS_COLOURS, event_statuses

    statuses = event_statuses(trace, passed=passed)
    lines = [
        f"#{e.sequence} {e.kind:<8} {s:<5} {event_summary(e)}"
        for e, s in zip(trace, statuses, strict=True)
    ]
    tally = ", ".join(f"{statuses.count(s)} {s}" for s in STATUS_COLOURS if statuses.count(s))
    verdict = "" if passed is None else f"; judged {'right' if passed else 'wrong'}"
    lines.append(f"{len(trace)} events ({tally}){verdict}" + (f": {reason}" if reason else ""))
    return "\n".join(lines)


def evidence_share(messages: list[dict[str, Any]]) -> float:
    """Return the share of a request's characters that are retrieved evidence text (0 to 1)."""
    import json

    sent = sum(len(m["content"]) for m in messages)
    users = [json.loads(m["content"]) for m in messages if m["role"] == "user"]
    evidence = [json.dumps(e["text"], ensure_ascii=False) for u in users for e in u["evidence"]]
    return sum(map(len, evidence)) / sent


def model_request(line: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the messages one trace line's ``generate`` step sent to the model."""
    return next(step["model_request"] for step in line["trace"] if step["step"] == "generate")


def same_model_request(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Return whether two trace lines' ``generate`` steps sent the model the same messages."""
    return model_request(first) == model_request(second)


class GraphDiagram:
    """A compiled graph's Mermaid text: drawn where Markdown renders Mermaid, shown as text elsewhere."""

    def __init__(self, graph: Any) -> None:
        self.mermaid = graph.get_graph().draw_mermaid()

    def _repr_markdown_(self) -> str:
        return f"```mermaid\n{self.mermaid}\n```"

    def __repr__(self) -> str:
        return self.mermaid
