"""Authored runs: replies the course writes to demonstrate a behaviour, stored in the recorded-run format.

An authored run says ``origin: authored`` and ``endpoint_kind: authored``; its
model id names no real model; it claims no usage, latency or recording time,
and its response ids say ``authored-N``. Each lesson builds its requests with
its own code, sent through the real `openai` client (so replay binds the exact
request the lesson makes, key order included) and supplies the reply text it
wants to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2

from labkit.canonical import load_strict
from labkit.errors import RecordedRunError
from labkit.paths import recorded_runs_dir
from labkit.recording import (
    AUTHORED_ID_PREFIX,
    AUTHORED_MODEL,
    CHAT_PATH,
    MAX_RUN_BYTES,
    RUN_FILE,
    Binding,
    ModelIdentity,
    RecordedRun,
    fixture_hashes,
    request_body,
    save_run,
    seal_run,
)

__all__ = ["AUTHORED_MODEL", "AuthoringAdapter", "authored_response", "authored_run", "write_authored_run"]

#: One authored exchange: the question, the request as the client sent it, the reply text.
Exchange = tuple[str | None, dict[str, Any], str]


def authored_response(content: str, *, number: int) -> dict[str, Any]:
    """Return a chat-completion body holding ``content``, with no usage and no time."""
    return {
        "id": f"{AUTHORED_ID_PREFIX}{number}",
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
    fixtures: Sequence[str | Path],
    exchanges: list[Exchange],
) -> RecordedRun:
    """Build an authored run from ``(question, request, reply text)`` exchanges, posted to `CHAT_PATH`."""
    bindings = [
        Binding.make(request, authored_response(text, number=n), path=CHAT_PATH, question=question)
        for n, (question, request, text) in enumerate(exchanges, start=1)
    ]
    return seal_run(
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


class _AuthoringTransport(httpx2.BaseTransport):
    """Answers the `openai` client with the reply the course wrote, keeping the request exactly as sent."""

    def __init__(self, adapter: AuthoringAdapter) -> None:
        self.adapter = adapter

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        question, text = self.adapter._pending
        body = request_body(request.read(), url=str(request.url))
        if request.url.path != CHAT_PATH or request.url.params:
            raise RecordedRunError(
                f"an authored run binds POST {CHAT_PATH} with no query parameters, not {request.url.path}"
                f"?{request.url.query.decode()}; record a captured run for another endpoint"
            )
        self.adapter.exchanges.append((question, body, text))
        reply = authored_response(text, number=len(self.adapter.exchanges))
        return httpx2.Response(200, json=reply, request=request)


class AuthoringAdapter:
    """Stands where the model would, answering each question with the reply the course wrote for it.

    Lesson code runs unchanged against it, and each request goes through the
    real `openai` client, so the authored run binds exactly the requests the
    lesson makes, as the client sends them. A question with no authored reply
    is an error, never a guess.
    """

    mode = "authoring"

    def __init__(self, replies: dict[str, str], *, settings: dict[str, Any]) -> None:
        import openai

        self.replies = dict(replies)
        self.settings = dict(settings)
        self.model = AUTHORED_MODEL
        self.exchanges: list[Exchange] = []
        self._pending: tuple[str | None, str] = (None, "")
        self._client = openai.OpenAI(
            api_key="authoring-needs-no-key",
            base_url="http://authoring.labkit.invalid/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=_AuthoringTransport(self)),
        )

    def generate(self, question: str, messages: list[dict[str, Any]], **settings: Any) -> Any:
        """Return the authored reply for ``question`` as a ChatCompletion, and keep the exchange."""
        if question not in self.replies:
            raise RecordedRunError(f"no authored reply for {question!r}; add one to the lesson's authored replies")
        self._pending = (question, self.replies[question])
        request = {"model": self.model, "messages": messages, **self.settings, **settings}
        return self._client.chat.completions.create(**request)
