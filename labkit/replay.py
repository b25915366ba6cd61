"""Exact-request replay: the recorded reply comes back only for the exact request that produced it.

One store of bindings has two faces. `ReplayTransport` sits under the real
`openai.OpenAI` client, so lesson code calls the client as usual and gets real
`openai` types back. `BoundReplay` is the face a learner meets in lesson 03:
``generate(question, messages)``. Both key a binding by the SHA-256 of the
request as the model receives it (endpoint path, query parameters, and the
body with its keys in the order sent: model, messages and every generation
setting), never by call order. A request with no binding raises
`ReplayRequestMismatch`, whose ``.diff`` lists, field by field, how it differs
from the nearest recorded one; when the values are equal it shows where the
text differs (key order, whitespace inside a JSON string, Unicode form).
"""

from __future__ import annotations

import copy
import functools
import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx2

from labkit.canonical import canonical_json, json_inside, loads_strict
from labkit.errors import LabkitError, RecordedRunError
from labkit.recording import CHAT_PATH, Binding, RecordedRun, StreamingNotRecorded, binding_key, request_body
from labkit.refusal import refusal_hints
from labkit.tables import text_table

#: What a refusal says when the nearest request holds the same values written as other text.
SAME_JSON = "same JSON, different text: key order / whitespace"
NULL_ADDED = "absent from the recorded request; null in this one"
NULL_DROPPED = "null in the recorded request; absent from this one"

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
    note: str = ""
    """Why two values that look alike differ (key order, whitespace, Unicode form); empty otherwise."""


class ReplayRequestMismatch(LabkitError, ValueError):
    """No reply is recorded for this exact request; ``.diff`` shows what differs from the nearest one."""

    def __init__(self, message: str, *, diff: list[FieldDiff], nearest_key: str | None, run_id: str | None) -> None:
        super().__init__(message)
        self.diff = diff
        self.nearest_key = nearest_key
        self.run_id = run_id


class ReplayUnsupported(LabkitError, NotImplementedError):
    """Replay answers chat completions only; another endpoint was called."""


def request_diff(recorded: Any, actual: Any, path: str = "") -> list[FieldDiff]:
    """Return the fields in which ``actual`` differs from ``recorded``, deepest first-class paths."""
    recorded, actual = json_inside(recorded), json_inside(actual)
    if isinstance(recorded, dict) and isinstance(actual, dict):
        diffs: list[FieldDiff] = []
        for key in sorted(set(recorded) | set(actual)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in recorded:  # None stands for absence, so a field sent as null says so in a note
                diffs.append(FieldDiff(sub, None, actual[key], NULL_ADDED if actual[key] is None else ""))
            elif key not in actual:
                diffs.append(FieldDiff(sub, recorded[key], None, NULL_DROPPED if recorded[key] is None else ""))
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


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def code_points(text: str) -> str:
    """Return ``text`` as its Unicode code points, such as ``U+0065 U+0301``."""
    return " ".join(f"U+{ord(c):04X}" for c in text)


@dataclass(frozen=True)
class UnicodeFormDifference:
    """Where two strings that differ only in Unicode normalisation first differ, and in which forms they are."""

    recorded_form: str
    """``NFC``, ``NFD`` or ``mixed``: the form of the first (recorded, expected) string."""
    actual_form: str
    """The form of the second string."""
    at: int
    """The index of the first character that differs, moved back to its base letter."""
    recorded: str
    """The differing sequence in the first string (a base letter and its combining marks)."""
    actual: str
    """The differing sequence in the second string."""


def unicode_form_difference(recorded: Any, actual: Any) -> UnicodeFormDifference | None:
    """Return how two strings that differ only in Unicode normalisation (NFC vs NFD) differ; None otherwise."""
    if not (isinstance(recorded, str) and isinstance(actual, str)) or recorded == actual:
        return None
    if unicodedata.normalize("NFC", recorded) != unicodedata.normalize("NFC", actual):
        return None
    start = _first_difference(recorded, actual)
    while start > 0 and unicodedata.combining(recorded[start] if start < len(recorded) else actual[start]):
        start -= 1  # back to the base letter of a combining sequence
    end_r, end_a = start + 1, start + 1
    while end_r < len(recorded) and unicodedata.combining(recorded[end_r]):
        end_r += 1
    while end_a < len(actual) and unicodedata.combining(actual[end_a]):
        end_a += 1

    def label(text: str) -> str:
        return (
            "NFC"
            if unicodedata.is_normalized("NFC", text)
            else "NFD"
            if unicodedata.is_normalized("NFD", text)
            else "mixed"
        )

    return UnicodeFormDifference(label(recorded), label(actual), start, recorded[start:end_r], actual[start:end_a])


def unicode_note(recorded: Any, actual: Any) -> str:
    """Return the code points where two strings differ only in Unicode normalisation (NFC vs NFD), else ""."""
    d = unicode_form_difference(recorded, actual)
    if d is None:
        return ""
    return (
        f"same text in another Unicode form ({d.recorded_form} recorded, {d.actual_form} here): "
        f"at character {d.at}, recorded {d.recorded!r} is {code_points(d.recorded)}, "
        f"this request has {d.actual!r} = {code_points(d.actual)}"
    )


def text_diff(recorded: Any, actual: Any, path: str = "") -> list[FieldDiff]:
    """Return where two equal JSON values are written differently: key order, or the text of a JSON string."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        if list(recorded) != list(actual):
            return [
                FieldDiff(f"{path} (key order)" if path else "(key order)", list(recorded), list(actual), SAME_JSON)
            ]
        return [d for key in recorded for d in text_diff(recorded[key], actual[key], f"{path}.{key}" if path else key)]
    if isinstance(recorded, list) and isinstance(actual, list):
        return [
            d for i, (r, a) in enumerate(zip(recorded, actual, strict=False)) for d in text_diff(r, a, f"{path}[{i}]")
        ]
    if isinstance(recorded, str) and isinstance(actual, str) and recorded != actual:
        inner_r, inner_a = json_inside(recorded), json_inside(actual)
        if inner_r is not recorded and inner_a is not actual:
            inner = text_diff(inner_r, inner_a, path)
            if inner:
                return inner
            return [FieldDiff(f"{path} (JSON text)", recorded, actual, SAME_JSON)]
    return []


def endpoint_diff(binding: Binding, path: str, query: list[tuple[str, str]]) -> list[FieldDiff]:
    """Return how a request's endpoint path and query parameters differ from a binding's."""
    diffs = []
    if binding.path != path:
        diffs.append(FieldDiff("(endpoint path)", binding.path, path))
    recorded, actual = [list(p) for p in binding.query], [list(p) for p in query]
    if recorded != actual:
        names = list(dict.fromkeys([k for k, _ in recorded] + [k for k, _ in actual]))
        for name in names:
            r = [v for k, v in recorded if k == name]
            a = [v for k, v in actual if k == name]
            if r != a:
                diffs.append(
                    FieldDiff(f"(query) {name}", r[0] if len(r) == 1 else r or None, a[0] if len(a) == 1 else a or None)
                )
        if not diffs:
            diffs.append(FieldDiff("(query order)", recorded, actual, "same parameters, in another order"))
    return diffs


def _window(text: str, start: int, width: int) -> str:
    begin = max(0, start - width // 3)
    return ("…" if begin else "") + text[begin : begin + width] + ("…" if begin + width < len(text) else "")


def excerpt_pair(recorded: Any, actual: Any, *, width: int = 60) -> tuple[str, str]:
    """Return both values as short text; two texts are cut to the same window around their first difference."""
    texts = ["(absent)" if v is None else v if isinstance(v, str) else canonical_json(v) for v in (recorded, actual)]
    if isinstance(recorded, str) and isinstance(actual, str):
        start = _first_difference(recorded, actual)
        return _window(recorded, start, width), _window(actual, start, width)
    return tuple(t if len(t) <= width else t[: width - 1] + "…" for t in texts)  # type: ignore[return-value]


def _shown_pair(d: FieldDiff, width: int) -> tuple[str, str]:
    """Return `excerpt_pair` of one field, writing a value sent as JSON null as ``null``, not as absent."""
    recorded, actual = excerpt_pair(d.recorded, d.actual, width=width)
    if d.note == NULL_ADDED:
        actual = "null"
    elif d.note == NULL_DROPPED:
        recorded = "null"
    return recorded, actual


def describe_diff(diff: list[FieldDiff], *, limit: int = 6) -> str:
    """Return the diff as indented lines ``path: recorded -> actual``, showing where long texts differ."""
    lines = []
    for d in diff[:limit]:
        recorded, actual = _shown_pair(d, 60)
        lines.append(f"  {d.path}: {recorded!r} -> {actual!r}" + (f"  [{d.note}]" if d.note else ""))
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
        recorded, actual = _shown_pair(d, width)
        rows.append({"field": d.path, "recorded": recorded, "this request": actual, "note": d.note})
    columns = ["field", "recorded", "this request"] + (["note"] if any(r["note"] for r in rows) else [])
    return text_table(pd.DataFrame(rows, columns=columns))


def replay_refusal(adapter: Any, question: str, messages: list[dict[str, Any]]) -> ReplayRequestMismatch | None:
    """Ask ``adapter`` for the reply to these messages; return the refusal it raises, or None if it replied."""
    try:
        adapter.generate(question, messages)
    except ReplayRequestMismatch as exc:
        return exc
    return None


def _with_notes(diff: list[FieldDiff]) -> list[FieldDiff]:
    """Add the Unicode-form note to each field whose two strings differ only in normalisation."""
    return [FieldDiff(d.path, d.recorded, d.actual, d.note or unicode_note(d.recorded, d.actual)) for d in diff]


def explain_difference(
    binding: Binding, request: dict[str, Any], *, path: str = CHAT_PATH, query: list[tuple[str, str]] | None = None
) -> list[FieldDiff]:
    """Return every way ``request`` differs from ``binding``'s; never empty for a request with another key."""
    query = query or []
    diff = endpoint_diff(binding, path, query) + request_diff(binding.request, request)
    if not diff:
        diff = text_diff(binding.request, request)
    if not diff:  # equal values and equal text, yet another key: say so rather than "0 fields"
        diff = [
            FieldDiff(
                "request", binding.key, binding_key(request, path=path, query=query), "same values; the key differs"
            )
        ]
    return _with_notes(diff)


class BindingStore:
    """The bindings of one recorded run, looked up by the SHA-256 of the request as the model receives it."""

    def __init__(
        self,
        bindings: Iterable[Binding],
        *,
        run_id: str | None = None,
        lesson: str | None = None,
        run_sha256: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.lesson = lesson
        self.run_sha256 = run_sha256
        self._by_key: dict[str, Binding] = {}
        self._bodies: dict[str, bytes] = {}
        for binding in bindings:
            self.add(binding)

    def add(self, binding: Binding) -> None:
        """Bind one more request; refuse a request bound already, since it would have two replies."""
        if binding.key in self._by_key:
            raise RecordedRunError(
                f"run {self.run_id!r} binds one request twice ({binding.key[:12]}…); "
                "each exact request may be bound once"
            )
        self._by_key[binding.key] = binding

    @classmethod
    def from_run(cls, run: RecordedRun) -> BindingStore:
        """Build the store of a loaded recorded run."""
        return cls(run.bindings, run_id=run.run_id, lesson=run.lesson, run_sha256=run.file_sha256)

    def __len__(self) -> int:
        return len(self._by_key)

    def response_bytes(self, binding: Binding) -> bytes:
        """Return a binding's response as JSON bytes (made once; bytes cannot be mutated by a caller)."""
        body = self._bodies.get(binding.key)
        if body is None:
            body = self._bodies[binding.key] = json.dumps(binding.response, ensure_ascii=False).encode("utf-8")
        return body

    def lookup(
        self, request: dict[str, Any], *, path: str = CHAT_PATH, query: list[tuple[str, str]] | None = None
    ) -> Binding:
        """Return the binding of this exact request (body, path, query), or raise `ReplayRequestMismatch`."""
        found = self._by_key.get(binding_key(request, path=path, query=query))
        if found is None:
            raise self.refusal(request, path=path, query=query)
        return found

    def nearest(
        self, request: dict[str, Any], *, path: str = CHAT_PATH, query: list[tuple[str, str]] | None = None
    ) -> Binding | None:
        """Return the recorded request that differs from ``request`` in the fewest fields (None if none)."""
        return min(
            self._by_key.values(),
            key=lambda b: len(endpoint_diff(b, path, query or []) + request_diff(b.request, request)),
            default=None,
        )

    def refusal(
        self, request: dict[str, Any], *, path: str = CHAT_PATH, query: list[tuple[str, str]] | None = None
    ) -> ReplayRequestMismatch:
        """Return the refusal of a request no binding holds: how it differs from the nearest recorded one."""
        nearest = self.nearest(request, path=path, query=query)
        diff = [] if nearest is None else explain_difference(nearest, request, path=path, query=query)
        return ReplayRequestMismatch(
            self.refusal_message(request, nearest, diff, binding_key(request, path=path, query=query)),
            diff=diff,
            nearest_key=nearest.key if nearest else None,
            run_id=self.run_id,
        )

    def refusal_message(self, request: dict[str, Any], nearest: Binding | None, diff: list[FieldDiff], key: str) -> str:
        """Return a refusal's message: what is missing, the nearest request's diff, what to do next."""
        where = f"run {self.run_id!r}" if self.run_id else "this store"
        if nearest is None:
            detail = f"{where} has no recorded requests."
        else:
            same = f" ({SAME_JSON})" if all(d.note == SAME_JSON for d in diff) else ""
            detail = (
                f"the nearest recorded request (binding key {nearest.key[:12]}…) differs in {len(diff)} field(s)"
                f"{same}:\n{describe_diff(diff)}"
            )
        lesson = self.lesson or "LESSON"
        fix = (
            "Call without stream=True: streaming is never recorded, so no binding can answer it."
            if any(d.path == "stream" for d in diff)
            else "Restore the original request, or send it to a model with LABKIT_MODE=record, which saves the reply "
            f"in a new run of lesson {lesson}."
        )
        return (
            f"no reply is recorded for this exact request in {where}: no binding key is the SHA-256 of its request "
            f"({key[:12]}…); {detail}\n{fix} An old reply is never returned for a request that was not made."
            + refusal_hints(nearest.request if nearest else None, request)
        )


def replayed_body(request: httpx2.Request) -> dict[str, Any]:
    """Parse a chat-completion request body for replay, keeping ``stream``: a streamed request is refused by lookup.

    Record and live modes refuse ``stream=True`` before sending (`StreamingNotRecorded`). In
    replay it is one more setting no binding was recorded with, so it gets the same refusal
    as any other changed setting: `ReplayRequestMismatch`, whose diff names ``stream``.
    """
    raw = request.read()
    try:
        return request_body(raw, url=str(request.url))
    except StreamingNotRecorded:
        body: dict[str, Any] = loads_strict(raw, source=f"request body to {request.url}")  # an object: checked above
        return body


class ReplayTransport(httpx2.BaseTransport):
    """An httpx2 transport that answers chat-completion requests from a `BindingStore`, opening no socket."""

    def __init__(self, store: BindingStore) -> None:
        self.store = store

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Answer the HTTP request the client wrote, in place of the network.

        The body's bytes are parsed (`replayed_body`, strict JSON); `BindingStore.lookup`
        writes them again as `request_json` text with the path and query, and looks up
        that text's SHA-256. The reply saved under it comes back as an HTTP response
        (`replayed_response`); a request with no binding is refused.
        """
        body = replayed_body(chat_completion_request(request))
        binding = self.store.lookup(body, path=request.url.path, query=list(request.url.params.multi_items()))
        return replayed_response(self.store, binding, request)


def chat_completion_request(request: httpx2.Request) -> httpx2.Request:
    """Return ``request`` if it is a chat completion (POST .../chat/completions), else raise `ReplayUnsupported`."""
    if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
        raise ReplayUnsupported(f"replay answers POST /chat/completions only, not {request.method} {request.url.path}")
    return request


def replayed_response(store: BindingStore, binding: Binding, request: httpx2.Request) -> httpx2.Response:
    """Return the HTTP response saved in ``store`` for ``binding``; a recorded network failure is raised again."""
    if binding.response is None:
        last = binding.transport_errors[-1].error if binding.transport_errors else "no response"
        raise httpx2.ConnectError(f"recorded transport failure, replayed: {last}", request=request)
    return httpx2.Response(
        binding.status_code,
        content=store.response_bytes(binding),
        headers={"content-type": "application/json"},
        request=request,
    )


def replay_client(store: BindingStore) -> Any:
    """Return a real `openai.OpenAI` client whose requests are answered by ``store``; it needs no key."""
    import openai

    return openai.OpenAI(
        api_key="replay-needs-no-key",
        base_url=REPLAY_BASE_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=ReplayTransport(store)),
    )


class _Captured(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body


def _capture(request: httpx2.Request) -> httpx2.Response:
    raise _Captured(request_body(request.read(), url=str(request.url)))


@functools.cache
def _capturing_client() -> Any:
    import openai

    return openai.OpenAI(
        api_key="capture-needs-no-key",
        base_url=REPLAY_BASE_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(_capture)),
    )


def as_sent(request: dict[str, Any]) -> dict[str, Any]:
    """Return the body the `openai` client sends for ``chat.completions.create(**request)``, in its key order.

    The client orders the top-level keys itself (``model``, ``messages``, then
    the settings), so a request kept as a Python dict is bound exactly as a
    model would receive it.
    """
    try:
        _capturing_client().chat.completions.create(**create_arguments(copy.deepcopy(request)))
    except _Captured as sent:
        return sent.body
    raise RecordedRunError("the openai client sent no request body")  # pragma: no cover


def question_of(request: dict[str, Any]) -> str | None:
    """Return the question a request asks: its last user message, or that message's JSON ``question`` field."""
    users = [m for m in request.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    if not users or not isinstance(users[-1].get("content"), str):
        return None
    content = users[-1]["content"]
    parsed = json_inside(content)
    if isinstance(parsed, dict) and isinstance(parsed.get("question"), str):
        return parsed["question"]
    return content


def saved_binding(question: str, request: dict[str, Any], reply: dict[str, Any]) -> Binding:
    """Return the binding of one saved request and its reply; refuse it if it does not ask its saved question."""
    asked = question_of(request)
    if asked != question:
        raise RecordedRunError(
            f"saved question {question!r} does not match its saved request, which asks {asked!r}; "
            "the recording is inconsistent: record it again"
        )
    sent = as_sent(request)  # what the client sends for these arguments: the same values, its key order
    return Binding.make(sent, copy.deepcopy(reply))


def another_question(question: str, request: dict[str, Any], *, run_id: str | None) -> ReplayRequestMismatch:
    """Return the refusal of a call whose messages ask another question than the one it names."""
    asked = question_of(request)
    return ReplayRequestMismatch(
        f"the question {question!r} is not the one these messages ask ({asked!r}); "
        "build the messages from the question you pass",
        diff=[FieldDiff("question", asked, question)],
        nearest_key=None,
        run_id=run_id,
    )


class BoundReplay:
    """Return a saved reply only for its exact saved request, whatever the order of the questions.

    Built from three equal-length lists (questions, requests, replies), or from
    a recorded run with `from_run`. ``generate`` calls the real `openai` client
    over a `ReplayTransport`, so each reply is a fresh object: mutating it
    cannot change the store. Each saved request is bound as the client sends it
    (top-level keys in the client's order, the order inside every value kept),
    and each call uses the settings saved with its own question.
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
        run_sha256: str | None = None,
    ) -> None:
        """Bind each saved request to its reply; refuse lists that do not pair up one question to one reply."""
        if not len(questions) == len(requests) == len(replies):
            raise RecordedRunError(
                f"a replay needs one question and one reply per request; got {len(questions)} questions, "
                f"{len(requests)} requests and {len(replies)} replies"
            )
        pairs = zip(questions, requests, replies, strict=True)
        bindings = [saved_binding(question, request, reply) for question, request, reply in pairs]
        self.store = BindingStore(bindings, run_id=run_id, lesson=lesson, run_sha256=run_sha256)
        self._saved = [(q, b.request) for q, b in zip(questions, bindings, strict=True)]
        models = {r.get("model") for r in requests}
        self.model = models.pop() if len(models) == 1 else None
        self.settings = self._shared_settings(requests)
        self._client = replay_client(self.store)

    @property
    def run_id(self) -> str | None:
        """The recorded run these bindings come from, if any."""
        return self.store.run_id

    @property
    def run_sha256(self) -> str | None:
        """The SHA-256 of that run's file, if the bindings were loaded from one."""
        return self.store.run_sha256

    @staticmethod
    def _shared_settings(requests: list[dict[str, Any]]) -> dict[str, Any]:
        """Return the settings every saved request shares (empty when they differ: see `request_for`)."""
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
            run_sha256=run.file_sha256,
        )

    def _saved_request(self, messages: list[dict[str, Any]], question: str | None) -> dict[str, Any]:
        """Return the saved request whose settings a new call uses: same question (and messages) first."""
        if not self._saved:
            raise RecordedRunError("this BoundReplay holds no saved requests; bind at least one")
        asked = [r for q, r in self._saved if q == question]
        exact = [r for r in asked if r.get("messages") == messages]
        return (exact or asked or [r for _, r in self._saved])[0]

    def request_for(self, messages: list[dict[str, Any]], *, question: str | None = None) -> dict[str, Any]:
        """Return the full request these messages make with the model and settings saved for ``question``.

        Saved requests may differ in their settings (one question asked with a
        larger ``max_tokens``, say): each call takes the settings of the saved
        request for its own question, so nothing is dropped or shared wrongly.
        An unknown question takes the first saved request's, and replay then
        refuses it with a diff.
        """
        saved = self._saved_request(messages, question)
        settings = {k: v for k, v in saved.items() if k not in ("model", "messages")}
        return {"model": saved.get("model"), "messages": copy.deepcopy(messages), **copy.deepcopy(settings)}

    def generate(self, question: str, messages: list[dict[str, Any]]) -> Any:
        """Return the recorded reply (an `openai` ChatCompletion) for this exact question and messages."""
        request = self.request_for(messages, question=question)
        if question_of(request) != question:
            raise another_question(question, request, run_id=self.run_id)
        return self._client.chat.completions.create(**create_arguments(request))


@functools.cache
def _create_parameters() -> frozenset[str]:
    import inspect

    from openai.resources.chat.completions import Completions

    return frozenset(inspect.signature(Completions.create).parameters) - {"self", "extra_body", "extra_query"}


def create_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """Return ``request`` as arguments of ``chat.completions.create``: keys it does not know go in ``extra_body``."""
    known = _create_parameters()
    arguments = {k: v for k, v in request.items() if k in known}
    extra = {k: v for k, v in request.items() if k not in known}
    return {**arguments, "extra_body": extra} if extra else arguments


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
