"""Record mode: capture every exchange a real endpoint answers, then save it as a new recorded run.

`RecordingTransport` wraps a real transport under the `openai` client. It is an
``httpx2`` transport, the HTTP library the pinned `openai` client is built on, so
its failures reach lesson code as the SDK's own exceptions. For each chat-completion request it keeps the request body, the response
body, the token usage, the measured latency, the time, and every failed
attempt before it (a timeout, a 429, a 5xx the client retried). It never
keeps headers, so an API key or auth header cannot reach a run file.

Under both live and record modes the wire is an `EndpointTransport`: httpx's
own transport, with a total deadline for each request (a read timeout alone
restarts with every byte, so an endpoint that trickles its reply would hold a
request forever) and a limit on the size of one reply. A chat-completion reply
that is not a JSON object, or is over the limit, is refused there as
`UnusableReply`, naming the endpoint; record mode keeps it as a failed attempt,
and a run never grows past `MAX_RUN_BYTES`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpcore2
import httpx2

from labkit.canonical import canonical_sha256, loads_strict
from labkit.endpoint import REQUEST_DEADLINE_S, EndpointUnreachable, redact_url
from labkit.errors import InvalidJSON, LabkitError
from labkit.recording import (
    MAX_RUN_BYTES,
    Binding,
    ModelIdentity,
    RecordedRun,
    TransportFailure,
    Usage,
    binding_key,
    fixture_hashes,
    request_body,
    seal_run,
)

#: Bytes one reply may have; a chat completion is a few kilobytes, so this is far past any real one.
MAX_REPLY_BYTES = 1_000_000
#: Bytes of a run kept for what is not a binding (its description, settings, fixture hashes).
RUN_HEADROOM_BYTES = 100_000


class RequestDeadlineExceeded(LabkitError, httpx2.ReadTimeout, TimeoutError):
    """One attempt of a live request took longer in all than ``LABKIT_REQUEST_DEADLINE`` (a timeout, retried)."""


class UnusableReply(EndpointUnreachable):
    """A live endpoint's chat-completion reply is not a JSON object, or is over a size limit; none of it is kept."""


@dataclass
class _Budget:
    """The deadline of the request under way in this thread, and whether the last wait was cut short by it."""

    deadline: float
    cut: bool = False

    def remaining(self, timeout: float | None, expired: type[Exception]) -> float:
        """Return the wait allowed now: ``timeout``, or less when the deadline is nearer; raise ``expired`` past it."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.cut = True
            raise expired("the request's deadline has passed")
        self.cut = timeout is None or left < timeout
        return left if self.cut else timeout  # type: ignore[return-value]  # not None when not cut


_BUDGET: ContextVar[_Budget | None] = ContextVar("labkit_request_budget", default=None)


def _remaining(timeout: float | None, expired: type[Exception] = httpcore2.ReadTimeout) -> float | None:
    budget = _BUDGET.get()
    return timeout if budget is None else budget.remaining(timeout, expired)


class _DeadlineStream(httpcore2.NetworkStream):
    """A socket stream whose every wait ends by the deadline of the request using it."""

    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _remaining(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _remaining(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        tls = self._stream.start_tls(ssl_context, server_hostname, _remaining(timeout, httpcore2.ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    """httpcore's network backend, with every connection's waits bounded by the current request's deadline."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        wait = _remaining(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, wait, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        wait = _remaining(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, wait, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_http_transport() -> httpx2.HTTPTransport:
    """Return httpx's HTTP transport with its connection pool's network backend bounded by each request's deadline.

    httpx has no total timeout; httpcore, under it, takes a network backend. The pool
    keeps it as ``_network_backend``: checked here, so a future httpcore that renames
    it fails loudly rather than silently dropping the deadline.
    """
    transport = httpx2.HTTPTransport()
    pool = transport._pool
    backend = getattr(pool, "_network_backend", None)
    if not isinstance(backend, httpcore2.NetworkBackend):  # pragma: no cover - guards an httpcore upgrade
        raise RuntimeError("httpcore's connection pool has no _network_backend; update labkit.capture for it")
    pool._network_backend = _DeadlineBackend(backend)
    return transport


#: Response headers that describe the bytes on the wire, not the decoded body handed on.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class EndpointTransport(httpx2.BaseTransport):
    """The wire under live and record modes: a deadline for each whole request and a size limit for each reply.

    Each attempt (the `openai` client retries a timeout) may take ``deadline_s`` in all,
    connecting, sending and reading included; past it the attempt ends as
    `RequestDeadlineExceeded`, a timeout. A reply is read to its end here, at most
    ``max_reply_bytes`` of it, and a chat-completion reply must be a JSON object: else
    `UnusableReply`, naming the endpoint as ``name`` (its password hidden).
    """

    def __init__(
        self,
        inner: httpx2.BaseTransport | None = None,
        *,
        deadline_s: float = REQUEST_DEADLINE_S,
        max_reply_bytes: int | None = None,
        name: str | None = None,
    ) -> None:
        self.inner = inner or deadline_http_transport()
        self.deadline_s = deadline_s
        self.max_reply_bytes = max_reply_bytes
        self.name = name

    def _refuse(self, request: httpx2.Request, problem: str, fix: str) -> UnusableReply:
        where = self.name or redact_url(str(request.url.copy_with(path="", query=None)))
        return UnusableReply(f"model endpoint {where}: {problem}; {fix}")

    def _read(self, request: httpx2.Request, response: httpx2.Response) -> bytes:
        limit = MAX_REPLY_BYTES if self.max_reply_bytes is None else self.max_reply_bytes
        over = self._refuse(
            request,
            f"its reply to {request.method} {request.url.path} is over the {limit:,}-byte limit of one reply",
            "nothing of it was kept; ask for a shorter reply (max_tokens) or check what the endpoint sends",
        )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise over
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise over
            chunks.append(chunk)
        return b"".join(chunks)

    def _check_json(self, request: httpx2.Request, body: bytes) -> None:
        try:
            payload = loads_strict(body, source="the reply")
        except InvalidJSON as exc:
            problem = str(exc).removeprefix("the reply: ")
        else:
            if isinstance(payload, dict):
                return
            problem = f"a JSON {type(payload).__name__}, not an object"
        raise self._refuse(
            request,
            f"its HTTP 200 reply to {request.method} {request.url.path} is not a chat completion ({problem})",
            "check that LABKIT_BASE_URL points at an OpenAI-compatible endpoint, and its log",
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        budget = _Budget(time.monotonic() + self.deadline_s)
        token = _BUDGET.set(budget)
        try:
            response = self.inner.handle_request(request)
            try:
                body = self._read(request, response)
            finally:
                response.close()
        except httpx2.TimeoutException as exc:
            if budget.cut or time.monotonic() >= budget.deadline:
                where = self.name or redact_url(str(request.url))
                raise RequestDeadlineExceeded(
                    f"no complete reply from {where} within the {self.deadline_s:g} s deadline of one request "
                    "(LABKIT_REQUEST_DEADLINE)",
                    request=request,
                ) from exc
            raise
        finally:
            _BUDGET.reset(token)
        if response.status_code == 200 and request.url.path.endswith("/chat/completions"):
            self._check_json(request, body)
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _WIRE_HEADERS]
        extensions = {k: v for k, v in response.extensions.items() if k in ("http_version", "reason_phrase")}
        return httpx2.Response(
            response.status_code, headers=headers, content=body, request=request, extensions=extensions
        )

    def close(self) -> None:
        self.inner.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RecordingTransport(httpx2.BaseTransport):
    """An httpx2 transport that forwards to a real one and keeps each chat-completion exchange."""

    def __init__(self, inner: httpx2.BaseTransport | None = None) -> None:
        self.inner = inner or EndpointTransport()
        self.bindings: list[Binding] = []
        self.recorded_bytes = 0
        """Bytes the bindings kept so far take in the run file (indented as saved); never past the run's limit."""
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
        failures.append(TransportFailure(attempt=len(failures) + 1, error=redact_url(error), at=_now()))
        self._pending[key] = (body, failures, status, payload)

    def _endpoint(self, request: httpx2.Request) -> str:
        return getattr(self.inner, "name", None) or redact_url(str(request.url.copy_with(path="", query=None)))

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/chat/completions"):
            return self.inner.handle_request(request)
        body = request_body(request.read(), url=redact_url(str(request.url)))
        path, query = request.url.path, list(request.url.params.multi_items())
        key = binding_key(body, path=path, query=query)
        self._endpoints[key] = (path, query)
        started = time.perf_counter()
        try:
            response = self.inner.handle_request(request)
            response.read()
        except (httpx2.HTTPError, UnusableReply) as exc:
            self._fail(key, body, f"{type(exc).__name__}: {exc}", 0, None)
            raise
        latency = time.perf_counter() - started
        if response.status_code != 200:
            try:
                payload = json.loads(redact_url(response.text))
            except ValueError:
                payload = {"error": {"message": redact_url(response.text[:500])}}
            self._fail(key, body, f"HTTP {response.status_code}: {response.text[:200]}", response.status_code, payload)
            return response
        try:
            payload = loads_strict(response.content, source="the reply")
        except InvalidJSON as exc:  # EndpointTransport refuses it first; another inner transport may not
            refusal = UnusableReply(f"model endpoint {self._endpoint(request)}: its HTTP 200 reply is {exc}")
            self._fail(key, body, f"{type(refusal).__name__}: {refusal}", 0, None)
            raise refusal from None
        usage = payload.get("usage") if isinstance(payload, dict) else None
        _, failures, _, _ = self._pending.pop(key, (body, [], 0, None))
        self._keep(
            request,
            key,
            body,
            failures,
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
            ),
        )
        return response

    def _keep(
        self,
        request: httpx2.Request,
        key: str,
        body: dict[str, Any],
        failures: list[TransportFailure],
        binding: Binding,
    ) -> None:
        """Keep an answered binding, unless the run would then grow past `MAX_RUN_BYTES`: then it is a failure."""
        text = json.dumps(binding.model_dump(mode="json"), indent=2, ensure_ascii=False)
        size = len(text.encode("utf-8")) + 4 * text.count("\n")  # each line indented twice more inside the run
        budget = MAX_RUN_BYTES - RUN_HEADROOM_BYTES
        if self.recorded_bytes + size > budget:
            self._pending[key] = (body, failures, 0, None)
            refusal = UnusableReply(
                f"model endpoint {self._endpoint(request)}: its replies would make the run larger than the "
                f"{MAX_RUN_BYTES:,}-byte limit of a run ({self.recorded_bytes + size:,} bytes with this one); "
                "this reply was not kept: ask for shorter replies (max_tokens) or check what the endpoint sends"
            )
            self._fail(key, body, f"{type(refusal).__name__}: {refusal}", 0, None)
            raise refusal
        self.recorded_bytes += size
        self.bindings.append(binding)

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
        self.inner = inner or EndpointTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/chat/completions"):
            request_body(request.read(), url=redact_url(str(request.url)))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()
