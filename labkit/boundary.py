"""The model boundary: one place decides whether a model call is replayed, live or recorded.

Lesson code asks `connect` for a `ModelBoundary` and calls its real
`openai.OpenAI` client (or its `chat` shortcut); it never knows the mode.

``LABKIT_MODE`` chooses:
- ``replay`` (default): answers come from a recorded run, bound to exact requests; no key, no socket.
- ``live``: a real OpenAI-compatible endpoint (``LABKIT_BASE_URL``, ``LABKIT_API_KEY``, ``LABKIT_MODEL``),
  with a connect timeout of 5 s and a read timeout of 60 s (``LABKIT_CONNECT_TIMEOUT``,
  ``LABKIT_READ_TIMEOUT``), three attempts in all.
- ``record``: live, and every exchange is kept; `ModelBoundary.save` writes a new captured run.
- ``explore``: replay what the run records; a changed request goes to a live model and is saved under
  ``scratch/explore/`` (see `labkit.explore`).

The bundled local model (`labkit serve`) is an OpenAI-compatible endpoint on
127.0.0.1: point ``LABKIT_BASE_URL`` at the URL it prints.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from labkit.errors import LabkitError

Mode = Literal["replay", "live", "record", "explore"]
MODES: tuple[Mode, ...] = ("replay", "live", "record", "explore")


class BoundaryConfigError(LabkitError, ValueError):
    """The mode or endpoint settings in the environment are missing or invalid."""


#: Seconds to wait for a live endpoint to accept a connection (``LABKIT_CONNECT_TIMEOUT``).
CONNECT_TIMEOUT_S = 5.0
#: Seconds to wait for a live endpoint's reply (``LABKIT_READ_TIMEOUT``).
READ_TIMEOUT_S = 60.0
#: Attempts after the first when a live call times out or is refused (the openai client's retries).
MAX_RETRIES = 2


class EndpointUnreachable(LabkitError, ConnectionError):
    """A live endpoint refused the connection or did not answer within the timeouts."""

    @classmethod
    def for_endpoint(cls, base_url: str, exc: Exception) -> EndpointUnreachable:
        """Return the error for ``base_url`` from the openai client's connection or timeout error."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            what = (
                f"no reply within the timeouts (connect {timeout_from_env('LABKIT_CONNECT_TIMEOUT', CONNECT_TIMEOUT_S):g} s, "
                f"read {timeout_from_env('LABKIT_READ_TIMEOUT', READ_TIMEOUT_S):g} s, {MAX_RETRIES + 1} attempts)"
            )
            fix = "check that it is serving, or raise LABKIT_READ_TIMEOUT for a slow model"
        else:
            cause = exc.__cause__ or exc.__context__
            what = f"cannot connect ({cause or exc})"
            fix = "start it (`labkit serve` for the bundled model) or fix LABKIT_BASE_URL"
        return cls(f"model endpoint {base_url}: {what}; {fix}")


def timeout_from_env(name: str, default: float) -> float:
    """Return a timeout in seconds from the environment variable ``name`` (a positive number), else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise BoundaryConfigError(
            f"{name}={text!r} is not a number of seconds; use a positive number such as {default:g}"
        )
    return value


def current_mode() -> Mode:
    """Return the mode chosen by ``LABKIT_MODE`` (default ``replay``)."""
    mode = os.environ.get("LABKIT_MODE", "replay").strip().lower() or "replay"
    if mode not in MODES:
        raise BoundaryConfigError(f"LABKIT_MODE={mode!r} is not a mode; use one of {', '.join(MODES)} (default replay)")
    return mode


@dataclass(frozen=True)
class Endpoint:
    """A live OpenAI-compatible endpoint, read from the environment."""

    base_url: str
    api_key: str
    model: str

    @property
    def kind(self) -> str:
        """``local-llama-cpp`` for the bundled server on loopback, else ``openai-compatible``."""
        override = os.environ.get("LABKIT_ENDPOINT_KIND")
        if override:
            return override
        host = urlparse(self.base_url).hostname or ""
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        return "local-llama-cpp" if loopback else "openai-compatible"


def endpoint_from_env() -> Endpoint:
    """Read the live endpoint from ``LABKIT_BASE_URL``, ``LABKIT_API_KEY`` and ``LABKIT_MODEL``."""
    base_url = os.environ.get("LABKIT_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    model = os.environ.get("LABKIT_MODEL")
    if not base_url or not model:
        raise BoundaryConfigError(
            "live and record modes need LABKIT_BASE_URL and LABKIT_MODEL (and LABKIT_API_KEY for a hosted endpoint). "
            "For the bundled local model: run `labkit serve`, then set LABKIT_BASE_URL to the URL it prints and "
            "LABKIT_MODEL=SmolLM2-135M-Instruct."
        )
    key = os.environ.get("LABKIT_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed-for-local"
    return Endpoint(base_url=base_url, api_key=key, model=model)


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
            raise EndpointUnreachable.for_endpoint(self.endpoint.base_url, exc) from None

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
        from labkit.explore import connect_explore

        return connect_explore(run_id, lesson=lesson, settings=settings)
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
    from labkit.capture import LiveTransport, RecordingTransport

    timeout = httpx2.Timeout(
        timeout_from_env("LABKIT_READ_TIMEOUT", READ_TIMEOUT_S),
        connect=timeout_from_env("LABKIT_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S),
    )
    recorder = None
    if mode == "record":
        recorder = RecordingTransport()
        http_client = httpx2.Client(transport=recorder, timeout=timeout)
    else:
        http_client = httpx2.Client(transport=LiveTransport(), timeout=timeout)
    client = openai.OpenAI(
        base_url=endpoint.base_url, api_key=endpoint.api_key, http_client=http_client, max_retries=MAX_RETRIES
    )
    return ModelBoundary(
        mode, client, endpoint.model, run_id, lesson, recorder=recorder, endpoint=endpoint, settings=settings
    )
