"""The model boundary: one place decides whether a model call is replayed, live or recorded.

Lesson code asks `connect` for a `ModelBoundary` and calls its real
`openai.OpenAI` client (or its `chat` shortcut); it never knows the mode.

``LABKIT_MODE`` chooses:
- ``replay`` (default): answers come from a recorded run, bound to exact requests; no key, no socket.
- ``live``: a real OpenAI-compatible endpoint (``LABKIT_BASE_URL``, ``LABKIT_API_KEY``, ``LABKIT_MODEL``),
  with a connect timeout of 5 s, a read timeout of 60 s and a deadline of 120 s for the whole
  request (``LABKIT_CONNECT_TIMEOUT``, ``LABKIT_READ_TIMEOUT``, ``LABKIT_REQUEST_DEADLINE``), per
  attempt, three attempts in all. A password in the base URL is sent as HTTP basic auth and shown
  as ``***`` in every message (`redact_url`).
- ``record``: live, and every exchange is kept; `ModelBoundary.save` writes a new captured run.
- ``explore``: replay what the run records; a changed request goes to a live model and is saved under
  ``scratch/explore/`` (see `labkit.explore`).

The bundled local model (`labkit serve`) is an OpenAI-compatible endpoint on
127.0.0.1: point ``LABKIT_BASE_URL`` at the URL it prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

# The endpoint's settings and errors live below the boundary (capture and explore use them too, and the
# boundary uses those): lesson code, tests and the docs keep naming them from here.
from labkit.endpoint import (
    CONNECT_TIMEOUT_S,
    MAX_RETRIES,
    READ_TIMEOUT_S,
    REQUEST_DEADLINE_S,
    BoundaryConfigError,
    Endpoint,
    EndpointUnreachable,
    endpoint_from_env,
    redact_url,
    timeout_from_env,
)

Mode = Literal["replay", "live", "record", "explore"]
MODES: tuple[Mode, ...] = ("replay", "live", "record", "explore")


def unreachable(base_url: str, exc: Exception) -> EndpointUnreachable:
    """Return the error for ``base_url`` (its password hidden) from the openai client's connection or timeout error."""
    import openai

    from labkit.capture import RequestDeadlineExceeded

    attempts = f"{MAX_RETRIES + 1} attempts"
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, RequestDeadlineExceeded):
        what = (
            f"no complete reply within the {timeout_from_env('LABKIT_REQUEST_DEADLINE', REQUEST_DEADLINE_S):g} s "
            f"deadline of each request ({attempts}): it answers too slowly, a little at a time, or not at all"
        )
        fix = "check that it is serving, or raise LABKIT_REQUEST_DEADLINE for a slow model"
    elif isinstance(exc, openai.APITimeoutError):
        what = (
            f"no reply within the timeouts (connect {timeout_from_env('LABKIT_CONNECT_TIMEOUT', CONNECT_TIMEOUT_S):g} s, "
            f"read {timeout_from_env('LABKIT_READ_TIMEOUT', READ_TIMEOUT_S):g} s, {attempts})"
        )
        fix = "check that it is serving, or raise LABKIT_READ_TIMEOUT for a slow model"
    else:
        what = f"cannot connect ({cause or exc})"
        fix = "start it (`labkit serve` for the bundled model) or fix LABKIT_BASE_URL"
    return EndpointUnreachable(redact_url(f"model endpoint {base_url}: {what}; {fix}"))


def current_mode() -> Mode:
    """Return the mode chosen by ``LABKIT_MODE`` (default ``replay``)."""
    mode = os.environ.get("LABKIT_MODE", "replay").strip().lower() or "replay"
    if mode not in MODES:
        raise BoundaryConfigError(f"LABKIT_MODE={mode!r} is not a mode; use one of {', '.join(MODES)} (default replay)")
    return mode


@dataclass
class ModelBoundary:
    """What lesson code talks to: a real `openai` client, the model id to send, and the mode behind them."""

    mode: Mode
    client: Any
    model: str
    run_id: str
    lesson: str
    origin: str | None = None
    """For replay: the origin of the run being replayed (``captured`` or ``authored``)."""
    run_sha256: str | None = None
    """For replay: the SHA-256 of the run file being replayed (traces name it)."""
    recorder: Any = None
    endpoint: Endpoint | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    observer: Callable[[float], None] | None = None
    """Called with the seconds each answered request took (``labkit evaluate`` shows progress with it)."""
    explorer: Any = None
    """For explore: the `labkit.explore.ExploreTransport` that says where each answer came from."""

    @property
    def endpoint_kind(self) -> str:
        """Where replies come from: the endpoint's kind when live or recording, ``replay`` otherwise."""
        return self.endpoint.kind if self.endpoint is not None else "replay"

    def chat(self, messages: list[dict[str, Any]], *, question: str | None = None, **settings: Any) -> Any:
        """Send one chat-completion request with this boundary's model and settings; return the ChatCompletion.

        In live and record modes an endpoint that refuses the connection or stays silent
        past the timeouts raises `EndpointUnreachable`, naming the base URL.
        """
        import openai

        request = {"model": self.model, "messages": messages, **self.settings, **settings}
        if self.recorder is not None and question is not None:
            self.recorder.note_question(request, question)
        try:
            if self.observer is None:
                return self.client.chat.completions.create(**request)
            started = time.perf_counter()
            completion = self.client.chat.completions.create(**request)
            self.observer(time.perf_counter() - started)
            return completion
        except openai.APIConnectionError as exc:
            if self.endpoint is None:
                raise
            raise unreachable(self.endpoint.base_url, exc) from None

    def generate(self, question: str, messages: list[dict[str, Any]], **settings: Any) -> Any:
        """Send the messages built for ``question`` (plus any per-call settings); record mode keeps the question."""
        return self.chat(messages, question=question, **settings)

    def save(
        self,
        *,
        description: str,
        fixtures: Sequence[str | Path],
        run_id: str | None = None,
        runs_dir: Path | None = None,
    ) -> Path:
        """Write what record mode captured as a new run with ``origin: captured``; returns its file."""
        from labkit.capture import build_run
        from labkit.recording import save_run

        if self.mode != "record" or self.recorder is None or self.endpoint is None:
            raise BoundaryConfigError("only a boundary in record mode has a run to save; set LABKIT_MODE=record")
        stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S")
        run = build_run(
            self.recorder,
            run_id=run_id or f"{self.run_id}-captured-{stamp}",
            lesson=self.lesson,
            description=description,
            model_id=self.model,
            endpoint_kind=self.endpoint.kind,
            settings=self.settings,
            fixtures=fixtures,
        )
        return save_run(run, runs_dir=runs_dir)


def connect(
    run_id: str, *, lesson: str, settings: dict[str, Any] | None = None, mode: Mode | None = None
) -> ModelBoundary:
    """Return the model boundary for a lesson: replaying ``run_id``, or live, or recording, as the mode says."""
    import httpx2
    import openai

    mode = mode or current_mode()
    settings = dict(settings or {})
    if mode == "explore":
        from labkit.explore import explore_client

        client, run, explorer = explore_client(run_id, settings=settings)
        return ModelBoundary(
            "explore",
            client,
            run.model.id,
            run_id,
            lesson,
            origin=run.origin,
            run_sha256=run.file_sha256,
            endpoint=explorer.live.endpoint,
            settings=settings,
            explorer=explorer,
        )
    if mode == "replay":
        from labkit.recording import load_run
        from labkit.replay import BindingStore, replay_client

        run = load_run(run_id)
        return ModelBoundary(
            "replay",
            replay_client(BindingStore.from_run(run)),
            run.model.id,
            run_id,
            lesson,
            origin=run.origin,
            run_sha256=run.file_sha256,
            settings=settings,
        )
    endpoint = endpoint_from_env()
    from labkit.capture import EndpointTransport, LiveTransport, RecordingTransport

    timeout = httpx2.Timeout(
        timeout_from_env("LABKIT_READ_TIMEOUT", READ_TIMEOUT_S),
        connect=timeout_from_env("LABKIT_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S),
    )
    wire = EndpointTransport(
        deadline_s=timeout_from_env("LABKIT_REQUEST_DEADLINE", REQUEST_DEADLINE_S), name=endpoint.shown_url
    )
    # The user name and password leave the URL for a basic-auth header (what httpx would send for them), so no
    # request URL, log line or error message further down holds them.
    url = httpx2.URL(endpoint.base_url)
    auth = httpx2.BasicAuth(url.username, url.password) if url.userinfo else None
    recorder = None
    if mode == "record":
        recorder = RecordingTransport(wire)
        http_client = httpx2.Client(transport=recorder, timeout=timeout, auth=auth)
    else:
        http_client = httpx2.Client(transport=LiveTransport(wire), timeout=timeout, auth=auth)
    client = openai.OpenAI(
        base_url=str(url.copy_with(userinfo=b"")) if url.userinfo else endpoint.base_url,
        api_key=endpoint.api_key,
        http_client=http_client,
        max_retries=MAX_RETRIES,
    )
    return ModelBoundary(
        mode, client, endpoint.model, run_id, lesson, recorder=recorder, endpoint=endpoint, settings=settings
    )
