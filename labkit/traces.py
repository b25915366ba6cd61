"""Request traces: an ordered record of what one request did, event by event.

Each event gets the next sequence number when its operation finishes or a
branch is taken, a kind (``retrieval_completed``, ``model_skipped`` ...) and
its data. A trace can be written to and read from JSON Lines, and shown as an
expandable timeline with `labkit.widgets.TraceViewer`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.canonical import canonical_json, loads_strict
from labkit.errors import LabkitError


class TraceFormatError(LabkitError, ValueError):
    """A JSON Lines trace file is malformed or its sequence numbers are out of order."""


@dataclass(frozen=True)
class TraceEvent:
    """One step of a request."""

    sequence: int
    """1 for the first event of a request, then one more for each event."""
    kind: str
    """What happened, in the course's vocabulary (``request_accepted``, ``reply_rejected`` ...)."""
    data: dict[str, Any] = field(default_factory=dict)
    """What the step saw or produced (copied, so later changes by the caller do not leak in)."""

    def to_json(self) -> dict[str, Any]:
        """Return the event as one flat JSON object."""
        return {"sequence": self.sequence, "kind": self.kind, **copy.deepcopy(self.data)}


class Trace:
    """An ordered list of `TraceEvent`; `emit` appends the next one."""

    def __init__(self, events: list[TraceEvent] | None = None) -> None:
        self.events: list[TraceEvent] = list(events or [])

    def emit(self, kind: str, **data: Any) -> TraceEvent:
        """Record that an operation finished or a branch was taken; return the new event."""
        event = TraceEvent(len(self.events) + 1, kind, copy.deepcopy(data))
        self.events.append(event)
        return event

    def kinds(self) -> list[str]:
        """Return the event kinds in order."""
        return [e.kind for e in self.events]

    def first(self, kind: str) -> TraceEvent | None:
        """Return the first event of this kind, or None."""
        return next((e for e in self.events if e.kind == kind), None)

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"Trace({' -> '.join(self.kinds()) or 'empty'})"

    def to_jsonl(self) -> str:
        """Return the trace as JSON Lines: one canonical JSON object per event."""
        return "".join(canonical_json(e.to_json()) + "\n" for e in self.events)

    def write_jsonl(self, path: str | Path) -> Path:
        """Write the trace as JSON Lines to ``path`` (replacing that file) and return the path."""
        path = Path(path)
        path.write_text(self.to_jsonl(), encoding="utf-8")
        return path

    @classmethod
    def from_jsonl(cls, text: str, *, source: str = "trace") -> Trace:
        """Read a trace from JSON Lines, refusing malformed lines and out-of-order sequence numbers."""
        events: list[TraceEvent] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            item = loads_strict(line, source=f"{source} line {number}")
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("kind"), str)
                or type(item.get("sequence")) is not int
            ):
                raise TraceFormatError(
                    f"{source} line {number}: each line needs an integer 'sequence' and a text 'kind'"
                )
            if item["sequence"] != len(events) + 1:
                raise TraceFormatError(
                    f"{source} line {number}: sequence {item['sequence']} where {len(events) + 1} was expected; "
                    "a trace keeps every event, in order"
                )
            data = {k: v for k, v in item.items() if k not in ("sequence", "kind")}
            events.append(TraceEvent(item["sequence"], item["kind"], data))
        return cls(events)

    def summary(self) -> str:
        """Return one line per event, ``#n kind``, with the key facts of a few kinds; stable for notebooks."""
        lines = []
        for e in self.events:
            note = ""
            if isinstance(e.data.get("origin"), str):  # an explore answer says where it came from
                note = f" origin={e.data['origin']}"
            elif "status" in e.data:
                note = f" status={e.data['status']}"
            elif "reason" in e.data:
                note = f" reason={e.data['reason']}"
            elif e.kind == "retrieval_completed":
                note = f" candidates={len(e.data.get('candidates', []))}"
            lines.append(f"#{e.sequence} {e.kind}{note}")
        return "\n".join(lines)


def run_identity(adapter: Any) -> dict[str, Any]:
    """Return which recorded run answers ``adapter``'s model calls: its id and its file's SHA-256.

    A trace names them in its first event, so a trace says which run file
    answered it (as the saved run's SHA-256 sits in the lab's trace identity).
    Live and record modes, and authoring, replay no file: both are None there.
    """
    replaying = getattr(adapter, "mode", None) not in ("live", "record", "authoring", "migration")
    return {
        "run_id": getattr(adapter, "run_id", None) if replaying else None,
        "run_sha256": getattr(adapter, "run_sha256", None) if replaying else None,
    }


def expand_json_strings(value: Any) -> Any:
    """Return ``value`` with every string that holds a JSON object or array replaced by what it holds, at any depth.

    A model request or reply often carries JSON inside a string; shown as JSON,
    it reads as a nested object instead of a line of ``\\"`` escapes.
    """
    if isinstance(value, dict):
        return {key: expand_json_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_json_strings(item) for item in value]
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return expand_json_strings(parsed) if isinstance(parsed, dict | list) else value
    return value


def dumps_event_data(event: TraceEvent) -> str:
    """Return an event's data as indented JSON for display, JSON held in strings shown as JSON."""
    return json.dumps(expand_json_strings(event.data), indent=2, ensure_ascii=False, sort_keys=True, default=str)


def display_json(event: TraceEvent) -> str:
    """Return `dumps_event_data` with each ``\\n`` inside a string shown as a real line break (for reading, not parsing).

    A continuation line is indented two spaces past its key, so a prompt of
    several lines reads as it was written and the structure stays visible.
    """
    lines = []
    for line in dumps_event_data(event).splitlines():
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        lines.append(_ESCAPED_NEWLINE.sub(r"\g<1>\n" + indent, line))
    return "\n".join(lines)


#: ``\n`` in JSON text that is not the end of an escaped backslash (``\\n`` stays as it is).
_ESCAPED_NEWLINE = re.compile(r"(?<!\\)((?:\\\\)*)\\n")

#: Longest one-line summary of an event, in characters; the whole data is one click away.
SUMMARY_LIMIT = 120


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _call(tool: Any, arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return f"{tool}({_short(arguments, 40) if arguments is not None else ''})"
    shown = ", ".join(f"{key}={_short(value, 40)}" for key, value in arguments.items())
    return f"{tool}({shown})"


def _proposal(raw: Any) -> str:
    try:
        decision = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return f"unparsed: {_short(raw)}"
    if isinstance(decision, dict) and "decision" in decision:
        return _call(decision["decision"], decision.get("arguments"))
    return _short(raw)


def _observation(observation: Any) -> str:
    if not isinstance(observation, dict):
        return _short(observation)
    if "error" in observation:
        return f"error: {_short(observation['error'], 90)}"
    if "count" in observation:
        return f"count {observation['count']}"
    parts = []
    if "row_ref" in observation:
        parts.append(f"row_ref {observation['row_ref']}")
    for key, value in observation.items():
        if isinstance(value, list):
            parts.append(f"{len(value)} {key}")
    return ", ".join(parts) or _short(observation)


def _top(ids: list[Any], scores: list[Any], score_name: str) -> str:
    if not ids:
        return "k=0: nothing retrieved"
    score = f" ({score_name} {scores[0]:g})" if scores and isinstance(scores[0], int | float) else ""
    return f"k={len(ids)}, top {ids[0]}{score}"


def _reply(text: Any) -> str:
    try:
        reply = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return _short(text, 90)
    if isinstance(reply, dict) and ("status" in reply or "kind" in reply):
        head = str(reply.get("status") or reply.get("kind"))
        if reply.get("tool_args"):
            head = _call(head, reply["tool_args"])
        said = reply.get("answer") or reply.get("text")
        return f"{head}: {_short(said, 80)}" if said else head
    return _short(text, 90)


def _why(data: dict[str, Any]) -> str:
    reason, error = data.get("reason") or data.get("problem"), data.get("error")
    return ": ".join(_short(part, 80) for part in (reason, error) if part)


def event_summary(event: TraceEvent) -> str:
    """Return one line that says what an event did: the tool and arguments of a proposal, a result's count, a verdict.

    Each event kind the lessons emit has its line (a request's question, a
    retrieval's k and top chunk, the check's status and reason ...); any other kind
    shows its status, reason or first fields. At most `SUMMARY_LIMIT` characters.
    """
    d, kind = event.data, event.kind
    if kind in ("request_accepted", "request"):
        line = f"“{_short(d.get('question', ''), 70)}”"
        who = d.get("team") or d.get("user_id")
        line += f" from {who}" if who else ""
    elif kind == "retrieval_completed":
        candidates = d.get("candidates") or []
        line = _top([c.get("chunk_id") for c in candidates], [c.get("score") for c in candidates], "score")
    elif kind == "retrieve":
        line = _top(d.get("ids") or [], d.get("distances") or [], "distance")
    elif kind == "context_selected":
        sources = list(dict.fromkeys(d.get("source_ids") or []))
        line = f"{len(d.get('chunk_ids') or [])} chunks from {', '.join(sources) or 'no source'}"
    elif kind == "model_request_ready":
        digest = f"sha256 {str(d['request_sha256'])[:12]}…, " if d.get("request_sha256") else ""
        line = f"{len(d.get('messages') or [])} messages, {digest}{d.get('mode')}"
    elif kind == "model_reply_returned":
        line = f"{d.get('model')}: {_reply(d.get('reply'))}"
    elif kind == "generate":
        line = f"{d.get('model')}: {_reply(d.get('raw_reply'))}"
    elif kind == "reply_checked":
        cited = ", ".join(d.get("source_ids") or []) or "no sources"
        line = f"{d.get('status')}, {cited}; {len(d.get('checks') or [])} checks passed"
    elif kind == "source_links_resolved":
        links = d.get("source_links") or []
        line = f"{len(links)} link{'s' if len(links) != 1 else ''}" + (f": {_short(links[0], 70)}" if links else "")
    elif kind == "route_chosen":
        line = f"route {d.get('route')}"
    elif kind in ("tool_proposed", "answer_proposed"):
        line = _proposal(d.get("raw"))
    elif kind in ("tool_returned", "tool_refused", "arguments_invalid"):
        line = f"{_call(d.get('tool'), d.get('arguments'))} → {_observation(d.get('observation'))}"
    elif kind == "tool":
        scope = ", ".join(str(d[k]) for k in ("intent", "team") if k in d)
        line = f"count {d['count']} ({scope})" if "count" in d else _observation(d)
    elif kind in ("answer_verified", "answer_rejected"):
        line = f"“{_short(d.get('answer', ''), 60)}”" + (f" (count {d['count']})" if "count" in d else "")
        line += f": {_why(d)}" if _why(d) else ""
    elif kind == "result":
        said = d.get("text")
        line = str(d.get("status")) + (f": “{_short(said, 70)}”" if said else "") + (f": {_why(d)}" if _why(d) else "")
    elif kind == "replay_refused":
        line = f"{len(d.get('diff') or [])} fields differ from the nearest recorded request"
    elif _why(d) or "status" in d:
        line = ", ".join(part for part in (str(d["status"]) if "status" in d else "", _why(d)) if part)
    else:
        line = ", ".join(f"{key}={_short(value, 30)}" for key, value in list(d.items())[:3])
    return _short(line, SUMMARY_LIMIT)
