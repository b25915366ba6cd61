"""Exact-request replay: the recorded reply comes back only for the exact request that produced it.

One store of bindings has two faces. `ReplayTransport` sits under the real
`openai.OpenAI` client, so lesson code calls the client as usual and gets real
`openai` types back. `BoundReplay` is the face a learner meets in lesson 03:
``generate(question, messages)``. Both key a binding by the SHA-256 of the
canonical request (model, messages and every generation setting), never by
call order. A request with no binding raises `ReplayRequestMismatch`, whose
``.diff`` lists, field by field, how it differs from the nearest recorded one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx2

from labkit.canonical import canonical_json, canonical_sha256
from labkit.errors import LabkitError, RecordedRunError
from labkit.recording import Binding, RecordedRun
from labkit.tables import text_table

#: The base URL a replay client is given; nothing resolves or connects to it.
REPLAY_BASE_URL = "http://replay.labkit.invalid/v1"


@dataclass(frozen=True)
class FieldDiff:
    """One field in which a request differs from the nearest recorded request."""

    path: str
    """Where, such as ``messages[1].content.passages[0].text``."""
    recorded: Any
    """The recorded value (``None`` when the field was absent)."""
    actual: Any
    """The value in the new request (``None`` when absent)."""


class ReplayRequestMismatch(LabkitError, ValueError):
    """No reply is recorded for this exact request; ``.diff`` shows what differs from the nearest one."""

    def __init__(self, message: str, *, diff: list[FieldDiff], nearest_key: str | None, run_id: str | None) -> None:
        super().__init__(message)
        self.diff = diff
        self.nearest_key = nearest_key
        self.run_id = run_id


class ReplayUnsupported(LabkitError, NotImplementedError):
    """Replay answers chat completions only; another endpoint was called."""


def _expand(value: Any) -> Any:
    """Parse a string that holds a JSON object or list, so a diff can point inside it."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def request_diff(recorded: Any, actual: Any, path: str = "") -> list[FieldDiff]:
    """Return the fields in which ``actual`` differs from ``recorded``, deepest first-class paths."""
    recorded, actual = _expand(recorded), _expand(actual)
    if isinstance(recorded, dict) and isinstance(actual, dict):
        diffs: list[FieldDiff] = []
        for key in sorted(set(recorded) | set(actual)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in recorded:
                diffs.append(FieldDiff(sub, None, actual[key]))
            elif key not in actual:
                diffs.append(FieldDiff(sub, recorded[key], None))
            else:
                diffs.extend(request_diff(recorded[key], actual[key], sub))
        return diffs
    if isinstance(recorded, list) and isinstance(actual, list):
        if len(recorded) != len(actual):
            return [FieldDiff(f"{path} (length)", len(recorded), len(actual))] + [
                d
                for i, (r, a) in enumerate(zip(recorded, actual, strict=False))
                for d in request_diff(r, a, f"{path}[{i}]")
            ]
        return [
            d
            for i, (r, a) in enumerate(zip(recorded, actual, strict=False))
            for d in request_diff(r, a, f"{path}[{i}]")
        ]
    if canonical_json(recorded) != canonical_json(actual):
        return [FieldDiff(path or "request", recorded, actual)]
    return []


def _window(text: str, start: int, width: int) -> str:
    begin = max(0, start - width // 3)
    return ("…" if begin else "") + text[begin : begin + width] + ("…" if begin + width < len(text) else "")


def excerpt_pair(recorded: Any, actual: Any, *, width: int = 60) -> tuple[str, str]:
    """Return both values as short text; two texts are cut to the same window around their first difference."""
    texts = ["(absent)" if v is None else v if isinstance(v, str) else canonical_json(v) for v in (recorded, actual)]
    if isinstance(recorded, str) and isinstance(actual, str):
        start = next(
            (i for i, (r, a) in enumerate(zip(recorded, actual, strict=False)) if r != a),
            min(len(recorded), len(actual)),
        )
        return _window(recorded, start, width), _window(actual, start, width)
    return tuple(t if len(t) <= width else t[: width - 1] + "…" for t in texts)  # type: ignore[return-value]


def describe_diff(diff: list[FieldDiff], *, limit: int = 6) -> str:
    """Return the diff as indented lines ``path: recorded -> actual``, showing where long texts differ."""
    lines = []
    for d in diff[:limit]:
        recorded, actual = excerpt_pair(d.recorded, d.actual)
        lines.append(f"  {d.path}: {recorded!r} -> {actual!r}")
    if len(diff) > limit:
        lines.append(f"  ... and {len(diff) - limit} more (see .diff)")
    return "\n".join(lines)


def diff_table(diff: list[FieldDiff] | list[dict[str, Any]], *, width: int = 60) -> Any:
    """Return a refusal's diff as a pandas table: the field, its recorded value, its value in this request.

    Two texts are cut to the same ``width``-character window around their first
    difference, so a changed word deep inside a long prompt is visible. ``diff``
    holds `FieldDiff` objects or the dicts of a ``replay_refused`` trace event.
    """
    import pandas as pd

    rows = []
    for item in diff:
        d = FieldDiff(**item) if isinstance(item, dict) else item
        recorded, actual = excerpt_pair(d.recorded, d.actual, width=width)
        rows.append({"field": d.path, "recorded": recorded, "this request": actual})
    return text_table(pd.DataFrame(rows, columns=["field", "recorded", "this request"]))


def replay_refusal(adapter: Any, question: str, messages: list[dict[str, Any]]) -> ReplayRequestMismatch | None:
    """Ask ``adapter`` for the reply to these messages; return the refusal it raises, or None if it replied."""
    try:
        adapter.generate(question, messages)
    except ReplayRequestMismatch as exc:
        return exc
    return None


class BindingStore:
    """The bindings of one recorded run, looked up by the SHA-256 of the canonical request."""

    def __init__(self, bindings: Iterable[Binding], *, run_id: str | None = None, lesson: str | None = None) -> None:
        self.run_id = run_id
        self.lesson = lesson
        self._by_key: dict[str, Binding] = {}
        for binding in bindings:
            if binding.key in self._by_key:
                raise RecordedRunError(
                    f"run {run_id!r} binds one request twice ({binding.key[:12]}…); each exact request may be bound once"
                )
            self._by_key[binding.key] = binding

    @classmethod
    def from_run(cls, run: RecordedRun) -> BindingStore:
        """Build the store of a loaded recorded run."""
        return cls(run.bindings, run_id=run.run_id, lesson=run.lesson)

    def __len__(self) -> int:
        return len(self._by_key)

    def lookup(self, request: dict[str, Any]) -> Binding:
        """Return the binding of this exact request, or raise `ReplayRequestMismatch` with a diff."""
        found = self._by_key.get(canonical_sha256(request))
        if found is not None:
            return found
        nearest, diff = None, []
        for binding in self._by_key.values():
            candidate = request_diff(binding.request, request)
            if nearest is None or len(candidate) < len(diff):
                nearest, diff = binding, candidate
        where = f"run {self.run_id!r}" if self.run_id else "this store"
        if nearest is None:
            detail = f"{where} has no recorded requests."
        else:
            detail = f"nearest recorded request ({nearest.key[:12]}…) differs in {len(diff)} field(s):\n{describe_diff(diff)}"
        lesson = self.lesson or "LESSON"
        raise ReplayRequestMismatch(
            f"no reply is recorded for this exact request in {where}; {detail}\n"
            f"Restore the original request, or record a new run for it with `labkit record {lesson}` "
            "(or LABKIT_MODE=record). An old reply is never returned for a request that was not made.",
            diff=diff,
            nearest_key=nearest.key if nearest else None,
            run_id=self.run_id,
        )


class ReplayTransport(httpx2.BaseTransport):
    """An httpx2 transport that answers chat-completion requests from a `BindingStore`, opening no socket."""

    def __init__(self, store: BindingStore) -> None:
        self.store = store

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            raise ReplayUnsupported(
                f"replay answers POST /chat/completions only, not {request.method} {request.url.path}"
            )
        body = json.loads(request.read())
        binding = self.store.lookup(body)
        if binding.response is None:
            last = binding.transport_errors[-1].error if binding.transport_errors else "no response"
            raise httpx2.ConnectError(f"recorded transport failure, replayed: {last}", request=request)
        return httpx2.Response(binding.status_code, json=copy.deepcopy(binding.response), request=request)


def replay_client(store: BindingStore) -> Any:
    """Return a real `openai.OpenAI` client whose requests are answered by ``store``; it needs no key."""
    import openai

    return openai.OpenAI(
        api_key="replay-needs-no-key",
        base_url=REPLAY_BASE_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=ReplayTransport(store)),
    )


def question_of(request: dict[str, Any]) -> str | None:
    """Return the question a request asks: its last user message, or that message's JSON ``question`` field."""
    users = [m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    if not users or not isinstance(users[-1].get("content"), str):
        return None
    content = users[-1]["content"]
    parsed = _expand(content)
    if isinstance(parsed, dict) and isinstance(parsed.get("question"), str):
        return parsed["question"]
    return content


class BoundReplay:
    """Return a saved reply only for its exact saved request, whatever the order of the questions.

    Built from three equal-length lists (questions, requests, replies), or from
    a recorded run with `from_run`. ``generate`` calls the real `openai` client
    over a `ReplayTransport`, so each reply is a fresh object: mutating it
    cannot change the store.
    """

    mode = "exact-request replay"

    def __init__(
        self,
        questions: list[str],
        requests: list[dict[str, Any]],
        replies: list[dict[str, Any]],
        *,
        run_id: str | None = None,
        lesson: str | None = None,
    ) -> None:
        if not len(questions) == len(requests) == len(replies):
            raise RecordedRunError(
                f"a replay needs one question and one reply per request; got {len(questions)} questions, "
                f"{len(requests)} requests and {len(replies)} replies"
            )
        bindings = []
        for question, request, reply in zip(questions, requests, replies, strict=True):
            if question_of(request) != question:
                raise RecordedRunError(
                    f"saved question {question!r} does not match its saved request, which asks "
                    f"{question_of(request)!r}; the recording is inconsistent: record it again"
                )
            bindings.append(
                Binding(key=canonical_sha256(request), request=copy.deepcopy(request), response=copy.deepcopy(reply))
            )
        self.store = BindingStore(bindings, run_id=run_id, lesson=lesson)
        self._requests = {b.key: b.request for b in bindings}
        models = {r.get("model") for r in requests}
        self.model = models.pop() if len(models) == 1 else None
        self.settings = self._shared_settings(requests)
        self._client = replay_client(self.store)

    @staticmethod
    def _shared_settings(requests: list[dict[str, Any]]) -> dict[str, Any]:
        settings = [{k: v for k, v in r.items() if k not in ("model", "messages")} for r in requests]
        return copy.deepcopy(settings[0]) if settings and all(s == settings[0] for s in settings) else {}

    @classmethod
    def from_run(cls, run: RecordedRun) -> BoundReplay:
        """Bind every request of a recorded run; each binding must carry the question it asked."""
        missing = [b.key[:12] for b in run.bindings if b.question is None]
        if missing:
            raise RecordedRunError(
                f"run {run.run_id!r}: bindings {missing} record no question; BoundReplay needs one per request"
            )
        return cls(
            [b.question for b in run.bindings],  # type: ignore[misc]
            [b.request for b in run.bindings],
            [b.response for b in run.bindings],  # type: ignore[misc]
            run_id=run.run_id,
            lesson=run.lesson,
        )

    def request_for(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Return the full request these messages make with the recorded model and settings."""
        if self.model is None:
            raise RecordedRunError(
                "the recorded requests name different models; call the client with an explicit request"
            )
        return {"model": self.model, "messages": copy.deepcopy(messages), **copy.deepcopy(self.settings)}

    def generate(self, question: str, messages: list[dict[str, Any]]) -> Any:
        """Return the recorded reply (an `openai` ChatCompletion) for this exact question and messages."""
        request = self.request_for(messages)
        if question_of(request) != question:
            raise ReplayRequestMismatch(
                f"the question {question!r} is not the one these messages ask ({question_of(request)!r}); "
                "build the messages from the question you pass",
                diff=[FieldDiff("question", question_of(request), question)],
                nearest_key=None,
                run_id=self.store.run_id,
            )
        return self._client.chat.completions.create(**request)


class OrderedReplay:
    """The shortcut that lesson 03 replaces: hand back saved replies in recording order, whatever is asked.

    It is here to be shown failing: ask the recorded questions in another
    order and each gets the other's reply, with nothing to warn you.
    """

    mode = "order-based replay"

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self._replies = copy.deepcopy(replies)
        self._next = 0

    def generate(self, question: str, messages: list[dict[str, Any]]) -> Any:
        """Return the next saved reply, ignoring the question and messages."""
        from openai.types.chat import ChatCompletion

        if self._next >= len(self._replies):
            raise RecordedRunError(f"order-based replay ran out after {len(self._replies)} saved replies")
        reply = self._replies[self._next]
        self._next += 1
        return ChatCompletion.model_validate(copy.deepcopy(reply))
