"""Authored runs: replies the course writes to demonstrate a behaviour, stored in the recorded-run format.

An authored run says ``origin: authored`` and ``endpoint_kind: authored``; its
model id names no real model; it claims no usage, latency or recording time.
Each lesson builds its requests with its own code (so replay binds the exact
request the lesson makes) and supplies the reply text it wants to show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labkit.canonical import canonical_sha256, load_strict
from labkit.errors import RecordedRunError
from labkit.paths import recorded_runs_dir
from labkit.recording import (
    MAX_RUN_BYTES,
    RUN_FILE,
    SCHEMA_VERSION,
    Binding,
    ModelIdentity,
    RecordedRun,
    fixture_hashes,
    save_run,
)

#: The model id an authored run's requests carry: it names the author, not a model.
AUTHORED_MODEL = "authored-by-course"


def authored_response(content: str, *, number: int) -> dict[str, Any]:
    """Return a chat-completion body holding ``content``, with no usage and no time."""
    return {
        "id": f"authored-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": AUTHORED_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }


def authored_run(
    *,
    run_id: str,
    lesson: str,
    description: str,
    created_at: str,
    settings: dict[str, Any],
    fixtures: list[str | Path],
    exchanges: list[tuple[str | None, dict[str, Any], str]],
) -> RecordedRun:
    """Build an authored run from ``(question, request, reply text)`` exchanges."""
    bindings = [
        Binding(
            key=canonical_sha256(request),
            request=request,
            response=authored_response(text, number=n),
            question=question,
        )
        for n, (question, request, text) in enumerate(exchanges, start=1)
    ]
    return RecordedRun(
        schema_version=SCHEMA_VERSION,
        run_id=run_id,
        origin="authored",
        created_at=created_at,
        lesson=lesson,
        description=description,
        model=ModelIdentity(id=AUTHORED_MODEL, endpoint_kind="authored"),
        settings=settings,
        fixtures=fixture_hashes(list(fixtures)),
        bindings=bindings,
    )


def write_authored_run(run: RecordedRun, *, runs_dir: Path | None = None) -> Path:
    """Save an authored run, replacing an older authored run's ``run.json`` (nothing else) but never a captured one."""
    runs_dir = runs_dir or recorded_runs_dir()
    if run.origin != "authored":
        raise RecordedRunError(f"write_authored_run writes authored runs only; {run.run_id!r} says {run.origin!r}")
    folder = runs_dir / run.run_id
    if folder.exists():
        existing = folder / RUN_FILE
        data = load_strict(existing, max_bytes=MAX_RUN_BYTES)[0] if existing.is_file() else None
        origin = data.get("origin") if isinstance(data, dict) else None
        if origin != "authored":
            raise RecordedRunError(
                f"{folder} holds a run with origin {origin!r}; an authored run never replaces it. Choose another run id."
            )
    return save_run(run, runs_dir=runs_dir, replace=folder.exists())


class AuthoringAdapter:
    """Stands where the model would, answering each question with the reply the course wrote for it.

    Lesson code runs unchanged against it, so the authored run binds exactly
    the requests the lesson makes. A question with no authored reply is an
    error, never a guess.
    """

    mode = "authoring"

    def __init__(self, replies: dict[str, str], *, settings: dict[str, Any]) -> None:
        self.replies = dict(replies)
        self.settings = dict(settings)
        self.model = AUTHORED_MODEL
        self.exchanges: list[tuple[str | None, dict[str, Any], str]] = []

    def generate(self, question: str, messages: list[dict[str, Any]], **settings: Any) -> Any:
        """Return the authored reply for ``question`` as a ChatCompletion, and keep the exchange."""
        from openai.types.chat import ChatCompletion

        if question not in self.replies:
            raise RecordedRunError(f"no authored reply for {question!r}; add one to the lesson's authored replies")
        request = {"model": self.model, "messages": messages, **self.settings, **settings}
        self.exchanges.append((question, request, self.replies[question]))
        return ChatCompletion.model_validate(authored_response(self.replies[question], number=len(self.exchanges)))
