"""Record mode: capture every exchange a real endpoint answers, then save it as a new recorded run.

`RecordingTransport` wraps a real transport under the `openai` client. It is an
``httpx2`` transport, the HTTP library the pinned `openai` client is built on, so
its failures reach lesson code as the SDK's own exceptions. For each chat-completion request it keeps the request body, the response
body, the token usage, the measured latency, the time, and every failed
attempt before it (a timeout, a 429, a 5xx the client retried). It never
keeps headers, so an API key or auth header cannot reach a run file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2

from labkit.canonical import canonical_sha256
from labkit.recording import (
    Binding,
    ModelIdentity,
    RecordedRun,
    TransportFailure,
    Usage,
    fixture_hashes,
    request_body,
    request_key,
    seal_run,
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RecordingTransport(httpx2.BaseTransport):
    """An httpx2 transport that forwards to a real one and keeps each chat-completion exchange."""

    def __init__(self, inner: httpx2.BaseTransport | None = None) -> None:
        self.inner = inner or httpx2.HTTPTransport()
        self.bindings: list[Binding] = []
        self._pending: dict[str, tuple[dict[str, Any], list[TransportFailure], int, Any]] = {}
        self._endpoints: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        self._questions: dict[str, str] = {}

    def note_question(self, request: dict[str, Any], question: str) -> None:
        """Remember which learner question a request was built from (for `BoundReplay`).

        Matched by value (sorted canonical JSON): the `openai` client may send the
        keys of ``request`` in another order.
        """
        self._questions[canonical_sha256(request)] = question

    def _fail(self, key: str, body: dict[str, Any], error: str, status: int, payload: Any) -> None:
        _, failures, _, _ = self._pending.get(key, (body, [], 0, None))
        failures.append(TransportFailure(attempt=len(failures) + 1, error=error, at=_now()))
        self._pending[key] = (body, failures, status, payload)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/chat/completions"):
            return self.inner.handle_request(request)
        body = request_body(request.read(), url=str(request.url))
        path, query = request.url.path, list(request.url.params.multi_items())
        key = request_key(body, path=path, query=query)
        self._endpoints[key] = (path, query)
        started = time.perf_counter()
        try:
            response = self.inner.handle_request(request)
            response.read()
        except httpx2.HTTPError as exc:
            self._fail(key, body, f"{type(exc).__name__}: {exc}", 0, None)
            raise
        latency = time.perf_counter() - started
        if response.status_code != 200:
            try:
                payload = response.json()
            except ValueError:
                payload = {"error": {"message": response.text[:500]}}
            self._fail(key, body, f"HTTP {response.status_code}: {response.text[:200]}", response.status_code, payload)
            return response
        payload = response.json()
        usage = payload.get("usage") if isinstance(payload, dict) else None
        _, failures, _, _ = self._pending.pop(key, (body, [], 0, None))
        self.bindings.append(
            Binding.make(
                body,
                payload,
                path=path,
                query=query,
                status_code=200,
                question=self._questions.get(canonical_sha256(body)),
                usage=Usage(**{k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")})
                if usage
                else None,
                latency_s=round(latency, 4),
                recorded_at=_now(),
                retries=len(failures),
                transport_errors=failures,
            )
        )
        return response

    def failed(self) -> list[Binding]:
        """Return a binding for each request whose every attempt failed, keeping the last error it got."""
        return [
            Binding.make(
                body,
                payload,
                path=self._endpoints[key][0],
                query=self._endpoints[key][1],
                status_code=status,
                question=self._questions.get(canonical_sha256(body)),
                retries=len(failures) - 1,
                transport_errors=failures,
            )
            for key, (body, failures, status, payload) in self._pending.items()
        ]

    def close(self) -> None:
        self.inner.close()


def build_run(
    transport: RecordingTransport,
    *,
    run_id: str,
    lesson: str,
    description: str,
    model_id: str,
    endpoint_kind: str,
    settings: dict[str, Any],
    fixtures: Sequence[str | Path],
) -> RecordedRun:
    """Turn what a recording transport captured into a `RecordedRun` with ``origin: captured``."""
    seen: set[str] = set()
    bindings = []
    for binding in [*transport.bindings, *transport.failed()]:
        if binding.key not in seen:  # a repeated identical request is bound once, to its first reply
            seen.add(binding.key)
            bindings.append(binding)
    return seal_run(
        run_id=run_id,
        origin="captured",
        created_at=_now(),
        lesson=lesson,
        description=description,
        model=ModelIdentity(id=model_id, endpoint_kind=endpoint_kind),  # type: ignore[arg-type]
        settings=settings,
        fixtures=fixture_hashes(list(fixtures)),
        bindings=bindings,
    )


class LiveTransport(httpx2.BaseTransport):
    """The live mode's transport: forwards every request to a real one, refusing a streamed chat completion."""

    def __init__(self, inner: httpx2.BaseTransport | None = None) -> None:
        self.inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/chat/completions"):
            request_body(request.read(), url=str(request.url))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()
