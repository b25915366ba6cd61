"""Explore mode: the course's recorded runs replay as published, and a changed request asks a real model.

``LABKIT_MODE=explore`` gives lesson code a `ModelBoundary` whose real `openai`
client sits on an `ExploreTransport`. A request that the lesson's recorded run
binds is answered by that run, exactly as in replay mode (the same
`ReplayTransport`, no socket opened). A request it does not bind (the
learner's own change) is answered by a live model:

- the endpoint in ``LABKIT_BASE_URL`` / ``LABKIT_MODEL`` / ``LABKIT_API_KEY``, if set;
- else the bundled SmolLM2-135M-Instruct, started on 127.0.0.1 at the first such
  request (`labkit.serve.start_local_server`) and stopped when the process exits,
  if the ``local`` extra is installed;
- else `ExploreUnavailable`, which says how to get either.

Each live exchange is saved as a captured run under ``scratch/explore/`` (never
``recorded_runs/``), in the ordinary run format, with ``missed.json`` beside it:
the run it would have replayed, the nearest recorded request's key and the diff
against it. The same changed request asked again, in this process or a new
one, is answered from that saved run without a second live call. An answer that
did not come from the course's runs carries its label in the response's
``labkit_origin`` field (``openai`` keeps unknown fields), which `answer_origin`
reads: "captured now from SmolLM2-135M-Instruct, your change: not part of the
course's recorded runs".
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

import httpx2

from labkit.errors import LabkitError, RecordedRunError

if TYPE_CHECKING:
    from labkit.endpoint import Endpoint
    from labkit.recording import Binding, RecordedRun
    from labkit.replay import BindingStore, ReplayRequestMismatch
    from labkit.serve import LocalServer

#: The folder under the scratch folder where explore mode keeps what live models answered.
EXPLORE_FOLDER = "explore"
#: The file beside each saved run that names the recorded request it would have replayed.
MISSED_FILE = "missed.json"
#: The response field that carries an explore answer's label to lesson code.
ORIGIN_FIELD = "labkit_origin"
#: How an answer that is not in the course's recorded runs is labelled, wherever a notebook shows origins.
LABEL = "captured now from {model}, your change: not part of the course's recorded runs"
#: Seconds to wait for the bundled model's reply (``LABKIT_READ_TIMEOUT`` overrides): a CPU, not a service.
LOCAL_READ_TIMEOUT_S = 300.0

Source = Literal["recorded", "saved", "live"]


class ExploreUnavailable(LabkitError, RuntimeError):
    """Explore mode met a request no run binds, and has no live model to send it to."""


def explore_dir() -> Path:
    """Return the folder of explore mode's saved runs: ``scratch/explore/`` (created if missing)."""
    from labkit.paths import scratch_dir

    path = scratch_dir() / EXPLORE_FOLDER
    path.mkdir(parents=True, exist_ok=True)
    return path


def explore_label(model: str) -> str:
    """Return the label of an answer that ``model`` gave to a request the course did not record."""
    return LABEL.format(model=model)


def answer_origin(completion: Any, default: str | None = None) -> str | None:
    """Return the explore label a completion carries, else ``default`` (the replayed run's origin, say)."""
    extra = getattr(completion, "model_extra", None) or {}
    label = extra.get(ORIGIN_FIELD) if isinstance(extra, dict) else None
    return label if isinstance(label, str) else default


def is_explore_answer(completion: Any) -> bool:
    """Return whether a completion came from a live model in explore mode (now, or saved under scratch/explore/)."""
    return answer_origin(completion) is not None


def local_extra_installed() -> bool:
    """Return whether the ``local`` extra (the bundled model's weights and a server for it) is installed."""
    from labkit.errors import MissingExtra
    from labkit.serve import find_gguf, require_server_modules

    try:
        find_gguf()
        require_server_modules()
    except MissingExtra:
        return False
    return True


_LOCAL_LOCK = threading.Lock()
_LOCAL: dict[str, LocalServer] = {}


def shared_local_server() -> LocalServer:
    """Return this process's bundled-model server, starting it on 127.0.0.1 the first time.

    `labkit.serve` stops it when the process exits (an ``atexit`` hook, and on
    Linux the child's own parent-death signal), so a kernel shut down or killed
    leaves no server behind.
    """
    from labkit.serve import start_local_server

    with _LOCAL_LOCK:
        server = _LOCAL.get("server")
        if server is None or server.process.poll() is not None:
            server = _LOCAL["server"] = start_local_server(threads=local_threads())
        return server


def local_threads() -> int:
    """Return how many threads the bundled model gets: one core is left to the kernel and the browser.

    More threads than free cores makes llama.cpp's threads wait on each other: on a
    busy two-core machine one reply of lesson 03 took 61 s with two threads and 8 s
    with one (xllamacpp; llama-cpp-python with one thread, 12 s).
    """
    return max(1, (os.cpu_count() or 1) - 1)


def stop_local_server() -> int | None:
    """Stop the bundled-model server explore mode started in this process, if any; return its exit code."""
    with _LOCAL_LOCK:
        server = _LOCAL.pop("server", None)
    return server.stop() if server is not None else None


@dataclass
class LiveModel:
    """Where explore mode sends what no run binds: an endpoint from the environment, or the bundled model."""

    endpoint: Endpoint | None
    """The endpoint in ``LABKIT_BASE_URL`` / ``LABKIT_MODEL``, or None for the bundled model."""
    local: bool
    """Whether the bundled model can be started (the ``local`` extra is installed)."""

    @classmethod
    def from_env(cls) -> LiveModel:
        """Choose from the environment: the endpoint if one is set, else the bundled model if installed."""
        from labkit.endpoint import endpoint_from_env

        if os.environ.get("LABKIT_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or os.environ.get("LABKIT_MODEL"):
            return cls(endpoint_from_env(), local=False)
        return cls(None, local=local_extra_installed())

    @property
    def model_id(self) -> str:
        """The model id sent to the live model (and named in every label and saved run)."""
        from labkit.serve import MODEL_ID

        return self.endpoint.model if self.endpoint is not None else MODEL_ID

    @property
    def kind(self) -> str:
        """The kind of endpoint, as a run records it."""
        return self.endpoint.kind if self.endpoint is not None else "local-llama-cpp"

    @property
    def path(self) -> str:
        """The chat-completions path under the live base URL (known before the bundled model starts)."""
        base = urlparse(self.endpoint.base_url).path if self.endpoint is not None else "/v1"
        return base.rstrip("/") + "/chat/completions"

    def base_url(self) -> str:
        """Return the base URL to send to, starting the bundled model if that is what answers."""
        if self.endpoint is not None:
            return self.endpoint.base_url
        if not self.local:
            raise ExploreUnavailable(
                "explore mode has no live model to ask about this changed request: the course's runs do not "
                "record it, no endpoint is set and the bundled local model is not installed. Either install it: "
                'pip install -c constraints.txt -e ".[local]" (or run `python3 course.py lab --explore`, which '
                "installs it and opens JupyterLab in explore mode), or point LABKIT_BASE_URL and LABKIT_MODEL "
                "(and LABKIT_API_KEY) at an OpenAI-compatible endpoint. Replay mode shows the refusal and its diff."
            )
        return shared_local_server().base_url

    def api_key(self) -> str:
        """The key to send (the bundled model needs none)."""
        return self.endpoint.api_key if self.endpoint is not None else "not-needed-for-local"


@dataclass(frozen=True)
class ExploreAnswer:
    """Where one answer in explore mode came from."""

    source: Source
    """``recorded`` (the course's run), ``saved`` (an earlier explore answer) or ``live`` (asked just now)."""
    origin: str
    """What a notebook shows as its origin: the run's origin, or the explore label."""
    run_path: Path | None = None
    """The saved explore run, for ``saved`` and ``live`` answers."""
    nearest_key: str | None = None
    """The key of the nearest recorded request (the binding this request missed)."""
    diff: list[Any] = field(default_factory=list)
    """How this request differs from that recorded one (`labkit.replay.FieldDiff` items)."""


def with_model(body: dict[str, Any], model: str) -> dict[str, Any]:
    """Return ``body`` with its ``model`` set to ``model``, every key in its place."""
    return {key: (model if key == "model" else value) for key, value in body.items()}


def saved_runs(model: str, folder: Path | None = None) -> dict[str, tuple[Binding, Path]]:
    """Return explore mode's saved bindings for ``model``, by binding key, with each run's file.

    A saved run that no longer loads (edited, or recorded against fixtures that
    have changed since) is passed over: its request then goes to the live model
    again and is saved anew; nothing is deleted.
    """
    from labkit.recording import RUN_FILE, load_run

    folder = folder or explore_dir()
    found: dict[str, tuple[Binding, Path]] = {}
    for path in sorted(folder.glob(f"*/{RUN_FILE}")):
        try:
            run = load_run(path)
        except RecordedRunError:
            continue
        if run.model.id != model:
            continue
        for binding in run.bindings:
            if binding.response is not None:
                found.setdefault(binding.key, (binding, path))
    return found


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json_response(payload: dict[str, Any], request: httpx2.Request, status: int = 200) -> httpx2.Response:
    return httpx2.Response(
        status,
        content=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
        headers={"content-type": "application/json"},
        request=request,
    )


def _live_wire(live: LiveModel) -> httpx2.BaseTransport:
    """Return the wire to the live model: a deadline for each whole request, a size limit for each reply.

    The bundled model on a busy machine may take minutes for one reply, so its deadline
    is its read timeout's; an endpoint's is the boundary's (``LABKIT_REQUEST_DEADLINE`` sets both).
    """
    from labkit.capture import EndpointTransport
    from labkit.endpoint import REQUEST_DEADLINE_S, timeout_from_env

    default = LOCAL_READ_TIMEOUT_S if live.endpoint is None else REQUEST_DEADLINE_S
    return EndpointTransport(deadline_s=timeout_from_env("LABKIT_REQUEST_DEADLINE", default))


class ExploreTransport(httpx2.BaseTransport):
    """An httpx2 transport: the recorded run answers what it binds; a live model answers, and is saved, the rest."""

    def __init__(
        self,
        store: BindingStore,
        live: LiveModel,
        *,
        run: RecordedRun,
        settings: dict[str, Any] | None = None,
        inner: httpx2.BaseTransport | None = None,
        folder: Path | None = None,
    ) -> None:
        from labkit.replay import ReplayTransport

        self.store = store
        self.live = live
        self.run = run
        self.settings = dict(settings or {})
        self.inner = inner or _live_wire(live)
        self.folder = folder
        self.replay = ReplayTransport(store)
        self.live_calls = 0
        """How many requests this transport sent to the live model."""
        self.answers: list[ExploreAnswer] = []
        """Where each answer came from, in order."""
        self._saved: dict[str, tuple[Binding, Path]] | None = None

    def _saved_bindings(self) -> dict[str, tuple[Binding, Path]]:
        if self._saved is None:
            self._saved = saved_runs(self.live.model_id, self.folder)
        return self._saved

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        from labkit.replay import ReplayRequestMismatch

        try:
            response = self.replay.handle_request(request)
        except ReplayRequestMismatch as missed:
            return self._explore(request, missed)
        self.answers.append(ExploreAnswer("recorded", self.run.origin))
        return response

    def _explore(self, request: httpx2.Request, missed: ReplayRequestMismatch) -> httpx2.Response:
        from labkit.recording import binding_key, request_body

        body = request_body(request.read(), url=str(request.url))
        query = list(request.url.params.multi_items())
        sent = with_model(body, self.live.model_id)
        key = binding_key(sent, path=self.live.path, query=query)
        label = explore_label(self.live.model_id)
        saved = self._saved_bindings().get(key)
        if saved is not None:
            binding, path = saved
            self.answers.append(ExploreAnswer("saved", label, path, missed.nearest_key, list(missed.diff)))
            return _json_response({**(binding.response or {}), ORIGIN_FIELD: label}, request)
        live_request = httpx2.Request(
            "POST",
            self.live.base_url().rstrip("/") + "/chat/completions",
            params=tuple(query),
            headers={"content-type": "application/json", "authorization": f"Bearer {self.live.api_key()}"},
            content=json.dumps(sent, ensure_ascii=False).encode("utf-8"),
            extensions=request.extensions,
        )
        started = time.perf_counter()
        self.live_calls += 1
        response = self.inner.handle_request(live_request)
        response.read()
        latency = time.perf_counter() - started
        if response.status_code != 200:  # the openai client retries or raises its own error, as in live mode
            return httpx2.Response(
                response.status_code, content=response.content, headers=response.headers, request=request
            )
        payload = response.json()
        binding, path = self._save(
            sent, payload, path=live_request.url.path, query=query, latency=latency, missed=missed
        )
        self._saved_bindings()[key] = (binding, path)
        self.answers.append(ExploreAnswer("live", label, path, missed.nearest_key, list(missed.diff)))
        return _json_response({**payload, ORIGIN_FIELD: label}, request)

    def _save(
        self,
        sent: dict[str, Any],
        payload: dict[str, Any],
        *,
        path: str,
        query: list[tuple[str, str]],
        latency: float,
        missed: ReplayRequestMismatch,
    ) -> tuple[Binding, Path]:
        """Save one live exchange as a captured run under scratch/explore/, with the binding it missed beside it."""
        from labkit.canonical import pretty_json
        from labkit.paths import atomic_write
        from labkit.recording import Binding, ModelIdentity, Usage, save_run, seal_run
        from labkit.replay import question_of

        usage = payload.get("usage") if isinstance(payload, dict) else None
        binding = Binding.make(
            sent,
            payload,
            path=path,
            query=query,
            status_code=200,
            question=question_of(sent),
            usage=Usage(**{k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")})
            if isinstance(usage, dict)
            else None,
            latency_s=round(latency, 4),
            recorded_at=_now(),
        )
        stamp = datetime.now(UTC).strftime("%Y%m%dt%H%M%S%f")
        run = seal_run(
            run_id=f"explore-{self.run.lesson}-{binding.key[:12]}-{stamp}",
            origin="captured",
            created_at=_now(),
            lesson=self.run.lesson,
            description=(
                f"Explore mode: a request that run {self.run.run_id!r} does not bind (the learner's own change), "
                f"answered live by {self.live.model_id}. Kept in the scratch folder; not part of the course's "
                "recorded runs."
            ),
            model=ModelIdentity(id=self.live.model_id, endpoint_kind=self.live.kind),  # type: ignore[arg-type]
            settings=self.settings,
            fixtures=dict(self.run.fixtures),
            bindings=[binding],
        )
        folder = self.folder or explore_dir()
        run_file = save_run(run, runs_dir=folder)
        missed_record = {
            "label": explore_label(self.live.model_id),
            "would_have_replayed": self.run.run_id,
            "nearest_recorded_key": missed.nearest_key,
            "diff": [asdict(d) for d in missed.diff],
        }
        atomic_write(run_file.parent / MISSED_FILE, pretty_json(missed_record))
        return binding, run_file

    def close(self) -> None:
        self.inner.close()


def explore_client(run_id: str, *, settings: dict[str, Any] | None = None) -> tuple[Any, RecordedRun, ExploreTransport]:
    """Return explore mode's `openai` client for ``run_id``, the run, and the transport that says where answers came from.

    The run answers what it records; a live model (an endpoint, or the bundled model) the rest.
    `labkit.boundary.connect` wraps them in the lesson's `ModelBoundary`.
    """
    import openai

    from labkit.endpoint import CONNECT_TIMEOUT_S, MAX_RETRIES, READ_TIMEOUT_S, timeout_from_env
    from labkit.recording import load_run
    from labkit.replay import REPLAY_BASE_URL, BindingStore

    run = load_run(run_id)
    live = LiveModel.from_env()
    transport = ExploreTransport(BindingStore.from_run(run), live, run=run, settings=dict(settings or {}))
    local = live.endpoint is None  # a retry of a slow local reply would only queue behind it
    timeout = httpx2.Timeout(
        timeout_from_env("LABKIT_READ_TIMEOUT", LOCAL_READ_TIMEOUT_S if local else READ_TIMEOUT_S),
        connect=timeout_from_env("LABKIT_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S),
    )
    client = openai.OpenAI(
        api_key="explore-sends-its-own-key",
        base_url=REPLAY_BASE_URL,
        max_retries=0 if local else MAX_RETRIES,
        http_client=httpx2.Client(transport=transport, timeout=timeout),
    )
    return client, run, transport


def last_answer(boundary: Any) -> ExploreAnswer | None:
    """Return where a boundary's last answer came from in explore mode, or None for any other mode."""
    explorer = getattr(boundary, "explorer", None)
    return explorer.answers[-1] if explorer is not None and explorer.answers else None


def changed_fields(boundary: Any) -> list[dict[str, Any]]:
    """Return how the request behind a boundary's last explore answer differs from the nearest recorded one.

    Each item is ``{"path", "recorded", "actual"}`` (and ``"note"``), as a
    ``replay_refused`` trace event holds its diff; empty when the last answer
    was the course's own.
    """
    answer = last_answer(boundary)
    if answer is None:
        return []
    return [
        {"path": d.path, "recorded": d.recorded, "actual": d.actual, **({"note": d.note} if d.note else {})}
        for d in answer.diff
    ]
