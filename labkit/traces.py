"""Request traces: an ordered record of what one request did, event by event.

Each event gets the next sequence number when its operation finishes or a
branch is taken, a kind (``retrieval_completed``, ``model_skipped`` ...) and
its data. A trace can be written to and read from JSON Lines, and shown as an
expandable timeline with `labkit.widgets.TraceViewer`.
"""

from __future__ import annotations

import copy
import json
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
