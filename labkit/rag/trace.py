"""Lesson 02a: a small docs RAG app whose every request leaves a trace.

The corpus is a set of short API summaries written for the course. It is split with LangChain's
``RecursiveCharacterTextSplitter``, indexed in an ``InMemoryVectorStore`` over saved real vectors
(`SavedEmbeddings`), and each request goes through `trace_request`, which records,
in order:
``request_accepted``, ``retrieval_completed``, ``context_selected``, ``model_request_ready``,
``model_reply_returned``, ``reply_checked``, ``source_links_resolved``, ``request_completed``; or a
branch: ``request_rejected``, ``retrieval_refused``, ``model_skipped``, ``replay_refused``,
``reply_rejected``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.canonical import canonical_sha256, file_sha256, load_strict
from labkit.embeddings import SavedEmbeddings, UnrecordedText, register_embedding_set
from labkit.errors import LabkitError, validation_problems
from labkit.paths import fixtures_dir, portable_text, relative_to_root
from labkit.traces import Trace, run_identity

#: The splitter settings; they are part of the logical index identity.
SPLITTER_NAME = "RecursiveCharacterTextSplitter"
CHUNK_SIZE, CHUNK_OVERLAP = 220, 40
SPLITTER: dict[str, str | int] = {"name": SPLITTER_NAME, "chunk_size": CHUNK_SIZE, "chunk_overlap": CHUNK_OVERLAP}
#: How many passages retrieval returns and the context keeps.
K = 3
#: The recorded questions: one the corpus answers, one it cannot.
QUESTIONS = {
    "answered": "How do I parse an ISO 8601 timestamp that ends in Z?",
    "not_in_docs": "How many days does this service keep backups?",
}
#: A question whose best-scored passages describe reading text, while its answer needs the one on writing
#: text: the lesson's ranking example. Its reply is in its own run (`labkit.rag.ranking`).
RANKING_QUESTION = "Which pathlib method writes a string to a file in UTF-8?"
EMBEDDING_SET = "rag-docs"
#: The ranking question's vector, saved apart so that the runs recorded before it keep their fixtures.
RANKING_SET = "rag-docs-ranking"
RUN_AUTHORED = "02-rag-authored"

SYSTEM_POLICY = (
    "You answer questions about Python APIs using only the passages you are given. "
    "Reply with a JSON object: status is 'answered' or 'not_in_docs'; answer is one or two sentences; "
    "source_ids lists the source_id of every passage the answer uses. "
    "If the passages do not answer the question, use status 'not_in_docs' and an empty source_ids list."
)


class CorpusError(LabkitError, ValueError):
    """The docs corpus file is malformed: a missing field, a blank text or a repeated id."""


class StaleIndex(LabkitError, ValueError):
    """The corpus or splitter changed since its vectors were recorded, so the old vectors cannot serve it."""


class ReplyRejected(LabkitError, ValueError):
    """A model reply broke the reply contract: invalid shape, or a source outside the selected context."""


class DocSummary(BaseModel):
    """One API summary in the corpus."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="The source id, naming the document.")
    title: str = Field(min_length=1, description="The API the summary describes.")
    url: str = Field(pattern=r"^https://", description="The link a resolved source points to.")
    text: str = Field(min_length=20, description="The summary, written for the course.")


class Reply(BaseModel):
    """What the model must return: a status, an answer, and the ids of the sources it used."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["answered", "not_in_docs"] = Field(description="Whether the passages answered the question.")
    answer: str = Field(description="The answer in one or two sentences.")
    source_ids: list[str] = Field(description="Source ids of the passages the answer uses.")


#: ``response_format`` as llama-cpp-python's server turns it into a grammar holding the local model to the schema's
#: shape; its strings may hold raw control characters, which JSON forbids, so ask_model can still reject a reply.
REPLY_FORMAT = {"type": "json_object", "schema": Reply.model_json_schema()}
#: Every generation setting; they are part of each request, and so of each replay binding.
SETTINGS = {"temperature": 0, "seed": 7, "max_tokens": 160, "response_format": REPLY_FORMAT}


def corpus_path() -> Path:
    """Return the committed corpus file."""
    return fixtures_dir() / "docs" / "api_summaries.json"


def embeddings_path() -> Path:
    """Return the committed saved-vectors file of this lesson's passages and recorded questions."""
    return fixtures_dir() / "docs" / "embeddings.json"


def ranking_embeddings_path() -> Path:
    """Return the committed saved-vectors file of the ranking question."""
    return fixtures_dir() / "docs" / "ranking_embeddings.json"


def load_corpus(path: Path | None = None) -> list[Any]:
    """Load the API summaries as LangChain ``Document`` objects, refusing a malformed corpus."""
    from langchain_core.documents import Document

    path = path or corpus_path()
    data, _ = load_strict(path)
    if not isinstance(data, list) or not data:
        raise CorpusError(f"{path}: the corpus must be a non-empty JSON list of summaries")
    docs, seen = [], set()
    for number, item in enumerate(data):
        try:
            summary = DocSummary.model_validate(item)
        except ValidationError as exc:
            problems = validation_problems(exc)
            raise CorpusError(f"{path}: summary {number}: {problems}") from None
        if summary.id in seen:
            raise CorpusError(f"{path}: source id {summary.id!r} appears twice; each document needs its own id")
        seen.add(summary.id)
        docs.append(
            Document(page_content=summary.text, metadata={"id": summary.id, "title": summary.title, "url": summary.url})
        )
    return docs


def split_corpus(docs: list[Any], *, chunk_size: int = CHUNK_SIZE, chunk_overlap: int = CHUNK_OVERLAP) -> list[Any]:
    """Split the documents into passages; each keeps its document's id, title and link."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    return splitter.split_documents(docs)


def chunk_id(doc: Any) -> str:
    """Return a passage's id: its source id and a hash of its text and link."""
    return doc.metadata["id"] + ":" + canonical_sha256({"text": doc.page_content, "url": doc.metadata["url"]})[:16]


@register_embedding_set(EMBEDDING_SET)
def embedding_texts() -> tuple[list[str], Path]:
    """Return every text lesson 02 embeds (passages and recorded questions) and the file they are saved in."""
    passages = [doc.page_content for doc in split_corpus(load_corpus())]
    probes = [QUESTIONS["answered"].replace("parse", "read")]  # an edited question for lesson 03's exercise
    return sorted(set(passages) | set(QUESTIONS.values()) | set(probes)), embeddings_path()


@register_embedding_set(RANKING_SET)
def ranking_embedding_texts() -> tuple[list[str], Path]:
    """Return the ranking question, the one text of its set, and the file its vector is saved in."""
    return [RANKING_QUESTION], ranking_embeddings_path()


def docs_vectors() -> SavedEmbeddings:
    """Return the saved vectors of every text the docs app embeds: both of its sets, as one `SavedEmbeddings`.

    The sets must come from the same model with the same dimension; a text that
    neither holds raises `UnrecordedText` naming the main set.
    """
    main, ranking = SavedEmbeddings.from_set(EMBEDDING_SET), SavedEmbeddings.from_set(RANKING_SET)
    if (ranking.model, ranking.dimension, ranking.normalized) != (main.model, main.dimension, main.normalized):
        raise StaleIndex(
            f"{relative_to_root(ranking_embeddings_path())} was computed with {ranking.model} "
            f"({ranking.dimension} numbers), the passages with {main.model} ({main.dimension}); recompute it "
            f"with `labkit embed {RANKING_SET}` (needs the [embed] extra)"
        )
    vectors = {text: main.vector(text) for text in main.texts} | {text: ranking.vector(text) for text in ranking.texts}
    return SavedEmbeddings(
        vectors,
        model=main.model,
        dimension=main.dimension,
        normalized=main.normalized,
        source=main.source,
        set_name=main.set_name,
    )


@dataclass
class DocsIndex:
    """A vector store with the passages it holds and its logical identity."""

    store: Any
    chunks: list[Any]
    identity: dict[str, Any]


def index_identity(
    corpus_file: Path, chunks: list[Any], embeddings: SavedEmbeddings, splitter: dict[str, Any]
) -> dict[str, Any]:
    """Return the logical index identity: a hash of corpus, saved vectors, splitter and ordered chunk ids."""
    descriptor = {
        "corpus_sha256": file_sha256(corpus_file),
        "embedding_model": embeddings.model,
        "saved_vectors_sha256": canonical_sha256({c.page_content: embeddings.vector(c.page_content) for c in chunks}),
        "splitter": splitter,
        "chunk_ids": [chunk_id(c) for c in chunks],
    }
    return {"logical_index_id": canonical_sha256(descriptor), "index_descriptor": descriptor}


def load_docs_index(
    *,
    corpus_file: Path | None = None,
    embeddings: SavedEmbeddings | None = None,
    empty: bool = False,
    chunk_size: int = CHUNK_SIZE,
    chunk_overlap: int = CHUNK_OVERLAP,
) -> DocsIndex:
    """Build the ``InMemoryVectorStore`` from saved vectors; refuse a corpus the vectors were not recorded for."""
    from langchain_core.vectorstores import InMemoryVectorStore

    corpus_file = corpus_file or corpus_path()
    embeddings = embeddings or docs_vectors()
    chunks = [] if empty else split_corpus(load_corpus(corpus_file), chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    missing = [chunk_id(c) for c in chunks if c.page_content not in embeddings]
    if missing:
        raise StaleIndex(
            f"{len(missing)} passage(s) of {relative_to_root(corpus_file)} have no saved vector ({', '.join(missing[:3])}): "
            f"the corpus or splitter changed since the vectors were recorded. Restore the corpus, or recompute "
            f"the vectors with `labkit embed {EMBEDDING_SET}` (needs the [embed] extra)."
        )
    splitter = {**SPLITTER, "chunk_size": chunk_size, "chunk_overlap": chunk_overlap}
    store = InMemoryVectorStore(embeddings)
    if chunks:
        store.add_documents(chunks, ids=[chunk_id(c) for c in chunks])
    return DocsIndex(store, chunks, index_identity(corpus_file, chunks, embeddings, splitter))


def prompt(question: str, selected: list[Any]) -> list[dict[str, str]]:
    """Return the messages for a question and its selected passages: the policy, then the question as JSON."""
    passages = [{"source_id": d.metadata["id"], "text": d.page_content} for d in selected]
    return [
        {"role": "system", "content": SYSTEM_POLICY},
        {"role": "user", "content": json.dumps({"question": question, "passages": passages}, ensure_ascii=False)},
    ]


def check_reply(reply: Reply, selected: list[Any]) -> None:
    """Check a reply's sources against this request's selected passages (not the whole corpus)."""
    allowed = {d.metadata["id"] for d in selected}
    if reply.status == "answered" and not reply.source_ids:
        raise ReplyRejected("an answered reply must cite at least one selected source")
    if reply.status == "not_in_docs" and reply.source_ids:
        raise ReplyRejected(f"a not_in_docs reply may not attach sources, but cites {reply.source_ids}")
    outside = [s for s in reply.source_ids if s not in allowed]
    if outside:
        raise ReplyRejected(f"reply cites {outside}, outside this request's selected context {sorted(allowed)}")


def request_key(question: str, identity: dict[str, Any]) -> str:
    """Return the hash of the question and the logical index id: equal for a repeated request."""
    return canonical_sha256({"question": question, "index": identity["logical_index_id"]})


Outcome = Literal["completed", "request_rejected", "retrieval_refused", "replay_refused", "reply_rejected"]
#: A context selection: from the ranked (passage, score) pairs, return the passages to send, in rank order.
Select = Callable[[list[tuple[Any, float]]], list[Any]]
#: A change to the assembled messages, made after `prompt` and before the request is sent.
MessageEdit = Callable[[list[dict[str, str]]], list[dict[str, str]]]
#: A further reply check, run after `check_reply` passed: raise `ReplyRejected` to refuse the reply.
ReplyCheck = Callable[[Reply, list[Any]], None]


class ContextSelectionError(LabkitError, ValueError):
    """A context selection returned something that is not one of the request's retrieval candidates."""


class MessageEditError(LabkitError, ValueError):
    """An edit of the assembled messages would change nothing: the words it replaces are not there."""


@dataclass
class TracedRequest:
    """What one traced request produced: its key, its result (if it completed), its trace and its outcome."""

    question: str
    request_key: str | None
    outcome: Outcome
    trace: Trace
    result: dict[str, Any] | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A request that explore mode answered live keeps, as a refused one does, how it differs from the
        # nearest recorded request: ``diff_table(traced.extra["diff"])`` shows it in both cases.
        reply = self.trace.first("model_reply_returned")
        if reply is not None and reply.data.get("your_change"):
            self.extra.setdefault("diff", reply.data["your_change"])

    @property
    def status(self) -> str:
        """The reply status for a completed request, else the outcome."""
        return self.result["status"] if self.result else self.outcome


def reply_text(completion: Any) -> str:
    """Return the text of a chat completion's first choice ("" when the model returned no content)."""
    return completion.choices[0].message.content or ""


def trace_request(
    question: str,
    index: DocsIndex,
    adapter: Any,
    *,
    k: int = K,
    select: Select | None = None,
    reply_override: str | None = None,
    edit: MessageEdit | None = None,
    extra_check: ReplyCheck | None = None,
) -> TracedRequest:
    """Answer one question through retrieval, context, model and checks, recording each step as an event.

    ``select`` picks the context (default `keep_all`); ``reply_override``, ``edit``, ``extra_check`` serve later steps."""
    trace = Trace()
    if not isinstance(question, str) or not question.strip():
        trace.emit("request_rejected", reason="blank_question", **run_identity(adapter))
        return TracedRequest(str(question), None, "request_rejected", trace, error="Ask a question that is not blank.")
    key = request_key(question, index.identity)
    trace.emit(
        "request_accepted",
        question=question,
        request_key=key,
        logical_index_id=index.identity["logical_index_id"],
        **run_identity(adapter),
    )
    try:
        selected = retrieve_context(question, index, trace, k=k, select=select)
    except UnrecordedText as exc:
        error = portable_text(str(exc))  # a file it names, relative to the repository
        trace.emit("retrieval_refused", reason="unrecorded_query_embedding", error=error)
        return TracedRequest(question, key, "retrieval_refused", trace, error=error)
    if not selected:
        trace.emit("model_skipped", reason="empty_context")
        reply = Reply(status="not_in_docs", answer="No documentation was found for this question.", source_ids=[])
        return check_and_link(question, key, reply, selected, trace, parsed=False, extra_check=extra_check)
    asked = ask_model(question, key, selected, adapter, trace, reply_override=reply_override, edit=edit)
    if isinstance(asked, TracedRequest):  # the model step stopped the request
        return asked
    return check_and_link(question, key, asked, selected, trace, parsed=True, extra_check=extra_check)


MODEL_STEPS = ("model_skipped", "replay_refused", "model_reply_returned")
"""The events the model step can leave: the app answered itself, replay refused the request, or a reply came back."""


def model_step(traced: TracedRequest) -> str | None:
    """Return the event the model step of this request left, one of `MODEL_STEPS`, or None if it never got there.

    ``model_skipped``: the context was empty and the app answered itself, no request was built.
    ``replay_refused``: a request was built, but no model saw it, since replay holds no reply for it.
    ``model_reply_returned``: a reply came back (from a run, a live model, or a probe).
    None: the request stopped before the model step (a blank question, a refused retrieval).
    """
    return next((kind for kind in traced.trace.kinds() if kind in MODEL_STEPS), None)


#: Where a context selection can send a request: the app answers itself, or a model gets the same or a new request.
CONTEXT_BRANCHES = ("app answers", "same request", "new request")


def context_branch(traced: TracedRequest, baseline: TracedRequest) -> str | None:
    """Say where this request's context sent it, one of `CONTEXT_BRANCHES`, against ``baseline``.

    ``baseline`` is the same question traced with the app's own context. ``app answers``: no passage was
    kept, so the app said not_in_docs itself and built no request. ``same request``: the messages equal the
    baseline's. ``new request``: the messages differ, so a reply recorded for the baseline does not answer
    them. None: the request stopped before its context was chosen.
    """
    selected = traced.trace.first("context_selected")
    if selected is None:
        return None
    if not selected.data["chunk_ids"]:
        return "app answers"
    sent, base = traced.trace.first("model_request_ready"), baseline.trace.first("model_request_ready")
    if sent is None or base is None:
        raise ValueError("the baseline built no request: trace the same question with the app's own context")
    return "same request" if sent.data["messages"] == base.data["messages"] else "new request"


def keep_all(ranked: list[tuple[Any, float]]) -> list[Any]:
    """The app's context selection: every ranked candidate, in rank order (no reranker, no score threshold)."""
    return [doc for doc, _score in ranked]


def only_candidates(selected: list[Any], ranked: list[tuple[Any, float]], select: Select) -> list[Any]:
    """Return ``selected`` if every item is one of the ranked passages; else raise `ContextSelectionError`."""
    foreign = [repr(d)[:60] for d in selected if not any(d is doc for doc, _ in ranked)]
    if foreign:
        name = getattr(select, "__name__", repr(select))
        raise ContextSelectionError(
            f"{name} returned {len(foreign)} item(s) that are not this request's candidates "
            f"({', '.join(foreign)}): return passages from the ranked (passage, score) pairs it was given."
        )
    return selected


def retrieve_context(
    question: str, index: DocsIndex, trace: Trace, *, k: int = K, select: Select | None = None
) -> list[Any]:
    """Search the index, record the ranked candidates, and record the passages ``select`` keeps as context."""
    ranked = index.store.similarity_search_with_score(question, k=k)  # an empty store returns []
    candidates = [
        {
            "rank": rank,
            "chunk_id": chunk_id(doc),
            "source_id": doc.metadata["id"],
            "score": round(float(score), 6),
            "text": doc.page_content,
            "url": doc.metadata["url"],
        }
        for rank, (doc, score) in enumerate(ranked, start=1)
    ]
    trace.emit("retrieval_completed", candidates=candidates, score_kind="cosine similarity (InMemoryVectorStore)")
    select = select or keep_all
    selected = only_candidates(list(select(ranked)), ranked, select)
    trace.emit(
        "context_selected", chunk_ids=[chunk_id(d) for d in selected], source_ids=[d.metadata["id"] for d in selected]
    )
    return selected


def ask_model(
    question: str,
    key: str,
    selected: list[Any],
    adapter: Any,
    trace: Trace,
    *,
    reply_override: str | None = None,
    edit: MessageEdit | None = None,
) -> Reply | TracedRequest:
    """Send the exact messages, record them and the reply; return the parsed reply, or the request stopped."""
    from labkit.replay import ReplayRequestMismatch

    messages = prompt(question, selected) if edit is None else edit(prompt(question, selected))
    trace.emit("model_request_ready", messages=messages, mode=adapter.mode)
    try:
        completion = adapter.generate(question, messages)
    except ReplayRequestMismatch as exc:
        trace.emit("replay_refused", **refusal_data(exc))
        return TracedRequest(question, key, "replay_refused", trace, error=str(exc), extra={"diff": exc.diff})
    text = reply_text(completion) if reply_override is None else reply_override
    trace.emit("model_reply_returned", **reply_data(completion, text, adapter, probe=reply_override is not None))
    try:
        return Reply.model_validate_json(text)
    except ValidationError as exc:
        message = f"invalid shape: {exc.errors(include_url=False)[0]['msg']}"
        trace.emit("reply_rejected", reason="invalid_shape", error=message)
        return TracedRequest(question, key, "reply_rejected", trace, error=message)


def refusal_data(exc: Any) -> dict[str, Any]:
    """Return what a ``replay_refused`` event keeps: the refusal's first line, each differing field, the hints."""
    from labkit.refusal import hints_in

    diff = [
        {"path": d.path, "recorded": d.recorded, "actual": d.actual, **({"note": d.note} if d.note else {})}
        for d in exc.diff
    ]
    return {"error": str(exc).splitlines()[0], "diff": diff, "hints": hints_in(str(exc))}


def reply_data(completion: Any, text: str, adapter: Any, *, probe: bool) -> dict[str, Any]:
    """Return what a ``model_reply_returned`` event keeps: the text, the model, who supplied it, and its origin.

    A probe's text was supplied by the driver, not by the model; an answer that explore
    mode fetched live carries its origin label and the learner's change.
    """
    from labkit.explore import answer_origin, changed_fields

    explored = answer_origin(completion)
    return {
        "reply": text,
        "model": completion.model,
        "supplied_by": "driver (controlled probe)" if probe else adapter.mode,
        **({"origin": explored, "your_change": changed_fields(adapter)} if explored else {}),
    }


def check_and_link(
    question: str,
    key: str,
    reply: Reply,
    selected: list[Any],
    trace: Trace,
    *,
    parsed: bool,
    extra_check: ReplyCheck | None = None,
) -> TracedRequest:
    """Check the reply's sources against this request's context, then resolve them to links.

    ``parsed`` says whether the reply was parsed from a model's text (its shape checked) or written by the app;
    `reply_checked` lists only the checks that ran, ``extra_check`` by its name."""
    checks = ["reply_shape"] if parsed else []  # ask_model parsed the reply; the app's own reply was not parsed
    try:
        check_reply(reply, selected)
        checks += ["source_membership", "status_source_consistency"]
        if extra_check is not None:
            extra_check(reply, selected)
            checks.append(getattr(extra_check, "__name__", "extra_check"))
    except ReplyRejected as exc:
        reason = "extra_check" if "status_source_consistency" in checks else "source_contract"  # which one refused
        trace.emit("reply_rejected", reason=reason, error=str(exc))
        return TracedRequest(question, key, "reply_rejected", trace, error=str(exc))
    trace.emit("reply_checked", status=reply.status, source_ids=reply.source_ids, checks=checks)
    links = {d.metadata["id"]: d.metadata["url"] for d in selected}
    result = {
        "question": question,
        "context_ids": [d.metadata["id"] for d in selected],
        **reply.model_dump(),
        "source_links": [links[s] for s in reply.source_ids],
    }
    trace.emit("source_links_resolved", source_links=copy.deepcopy(result["source_links"]))
    trace.emit("request_completed", status=reply.status)
    return TracedRequest(question, key, "completed", trace, result=result)


# --- the lesson's recorded runs ------------------------------------------------------------------

RUN_CAPTURED = "02-rag-smollm2"
AUTHORED_DESCRIPTION = (
    "Replies written by the course to show the intended behaviour of the docs RAG app: "
    "one answered question with its source, one question the docs cannot answer. No model produced them."
)
CAPTURED_DESCRIPTION = "Replies captured from a real model for lesson 02's two questions, schema-constrained JSON."
AUTHORED_REPLIES = {
    QUESTIONS["answered"]: json.dumps(
        {
            "status": "answered",
            "answer": "Pass the string to datetime.fromisoformat(); since Python 3.11 it accepts a trailing Z and "
            "returns a timezone-aware datetime in UTC.",
            "source_ids": ["datetime-fromisoformat"],
        }
    ),
    QUESTIONS["not_in_docs"]: json.dumps(
        {
            "status": "not_in_docs",
            "answer": "The passages describe Python APIs; they say nothing about how long backups are kept.",
            "source_ids": [],
        }
    ),
}


def run_fixtures() -> list[Path]:
    """Return the files this lesson's requests depend on (their hashes go into every run)."""
    return [corpus_path(), embeddings_path()]


def make_requests(adapter: Any) -> list[TracedRequest]:
    """Ask each recorded question through `trace_request`: what the runs of this lesson hold."""
    index = load_docs_index()
    return [trace_request(question, index, adapter) for question in QUESTIONS.values()]


# --- what the lesson notebooks (02 and 03) show ---------------------------------------------------


def corpus_text(data: list[dict[str, Any]]) -> str:
    """Return the corpus file's text for these summaries, in its own layout (indent 2, keys in file order)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_edited_corpus(path: str | Path, *, source_id: str, old: str, new: str, field: str = "text") -> Path:
    """Write a copy of the committed corpus to ``path`` in which one summary's ``field`` has ``old`` replaced by ``new``.

    Everything else is written back byte for byte, so with ``old == new`` the copy is the
    committed file itself, and any change of the index id or of a fixture hash comes from the edit.
    """
    raw = corpus_path().read_text(encoding="utf-8")
    data, _ = load_strict(corpus_path())
    if corpus_text(data) != raw:
        raise CorpusError(f"{corpus_path()} is not in the corpus file's layout (JSON, indent 2); restore it from git")
    summary = next((item for item in data if item.get("id") == source_id), None)
    if summary is None:
        raise CorpusError(
            f"the corpus has no summary {source_id!r}; its ids are {', '.join(sorted(d['id'] for d in data))}"
        )
    if field not in summary:
        raise CorpusError(f"summary {source_id!r} has no field {field!r}; its fields are {', '.join(summary)}")
    if old not in summary[field]:
        raise CorpusError(f"summary {source_id!r} does not contain {old!r} in its {field}; copy the words from it")
    summary[field] = summary[field].replace(old, new, 1)
    path = Path(path)
    path.write_text(corpus_text(data), encoding="utf-8")
    return path


def policy_line_added(line: str) -> MessageEdit:
    """Return an edit that appends ``line`` to the system policy of the assembled messages."""

    def add_line(messages: list[dict[str, str]]) -> list[dict[str, str]]:
        edited = copy.deepcopy(messages)
        edited[0]["content"] = f"{edited[0]['content']} {line}"
        return edited

    return add_line


def passage_edited(old: str, new: str) -> MessageEdit:
    """Return an edit that changes the first ``old`` in the passages sent to ``new``, after assembly.

    It is the lab's test that a passage changed between retrieval and the request is caught.
    An ``old`` that is not in the user message raises `MessageEditError`, so the edit never silently does nothing.
    """

    def edit_passage(messages: list[dict[str, str]]) -> list[dict[str, str]]:
        if old not in messages[1]["content"]:
            raise MessageEditError(f"{old!r} is not in the passages sent: pick words from the context.")
        edited = copy.deepcopy(messages)
        edited[1]["content"] = edited[1]["content"].replace(old, new, 1)
        return edited

    return edit_passage


class ProbeStandIn:
    """The model side for a probe: no model and no run; it answers any request with an empty reply.

    `probe` replaces that empty reply with the text it wrote, so a probe works for any context,
    including one no recorded run holds. The trace marks the reply as supplied by the driver.
    """

    mode = "probe stand-in (no model)"
    run_id = None
    run_sha256 = None

    def generate(self, question: str, messages: list[dict[str, Any]]) -> Any:
        """Return an empty completion, whatever is asked."""
        from openai.types.chat import ChatCompletion

        return ChatCompletion.model_validate(
            {
                "id": "probe",
                "object": "chat.completion",
                "created": 0,
                "model": "no model (probe)",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ""}}],
            }
        )


def probe(
    question: str,
    index: DocsIndex,
    source_ids: list[str] | tuple[str, ...] = (),
    *,
    status: str = "answered",
    answer: str = "A probe.",
    select: Select | None = None,
    extra_check: ReplyCheck | None = None,
) -> TracedRequest:
    """Trace ``question`` with a reply written here, not by a model: this status, answer and source ids.

    Retrieval, context selection and every check (with ``extra_check``, if given) run for real; only the
    reply is the probe's. No model is asked (`ProbeStandIn`), so a probe works for any ``select``.
    """
    reply = json.dumps({"status": status, "answer": answer, "source_ids": list(source_ids)})
    return trace_request(question, index, ProbeStandIn(), select=select, reply_override=reply, extra_check=extra_check)


def candidates_table(traced: TracedRequest) -> Any:
    """Return the request's retrieval candidates as a table: rank, ids, score, whether the reply cites its source, text.

    The ``cited source`` column is source-level: it is true for every passage of a cited source id."""
    import pandas as pd

    from labkit.tables import text_table

    retrieved = traced.trace.first("retrieval_completed")
    if retrieved is None:
        raise ValueError(f"this request ended {traced.outcome} before search: it has no candidates to show.")
    frame = pd.DataFrame(retrieved.data["candidates"])
    cited = set(traced.result["source_ids"]) if traced.result else set()
    frame["cited source"] = frame["source_id"].isin(cited)
    frame["score"] = frame["score"].round(3)
    return text_table(frame[["rank", "chunk_id", "score", "cited source", "text"]].set_index("rank"))


def passages_table(chunks: list[Any], source_id: str) -> Any:
    """Return one summary's passages as a table: chunk id, length in characters, text."""
    import pandas as pd

    from labkit.tables import text_table

    rows = [
        {"chunk_id": chunk_id(c), "chars": len(c.page_content), "text": c.page_content}
        for c in chunks
        if c.metadata["id"] == source_id
    ]
    if not rows:
        raise CorpusError(f"no passage has the source id {source_id!r}: use one of the corpus's ids.")
    return text_table(pd.DataFrame(rows))


def reply_from(traced: TracedRequest) -> str:
    """Say who supplied the request's reply: a run and its origin, a probe, the app itself, or nobody."""
    from labkit.recording import load_run

    step = model_step(traced)
    if step == "model_skipped":
        return "the app (no model asked)"
    if step != "model_reply_returned":
        return "none (no model saw the request)"
    returned = next(e.data for e in traced.trace.events if e.kind == "model_reply_returned")
    if returned["supplied_by"].startswith("driver"):
        return "a probe (no model)"
    run_id = next(e.data for e in traced.trace.events if e.kind == "request_accepted").get("run_id")
    if run_id is None:
        return f"{returned['model']} ({returned.get('origin', 'live')})"
    return f"run {run_id} ({load_run(run_id).origin})"


def branch_table(cases: dict[str, TracedRequest]) -> Any:
    """Return one row per named request: passages kept, the model step's event, how it ended, who replied.

    ``ended as`` is the reply's status for a completed request, else its outcome (the branch that stopped it)."""
    import pandas as pd

    rows = []
    for name, traced in cases.items():
        selected = traced.trace.first("context_selected")
        rows.append(
            {
                "case": name,
                "passages kept": len(selected.data["chunk_ids"]) if selected else 0,
                "model step": model_step(traced),
                "ended as": traced.status,
                "reply from": reply_from(traced),
            }
        )
    return pd.DataFrame(rows).set_index("case")


def sent_holding(traced: TracedRequest, words: str) -> list[tuple[int, str]]:
    """Return (rank, source id) of every passage this request sent as context whose text holds ``words``."""
    sent = set(_event(traced, "context_selected").data["chunk_ids"])
    candidates = _event(traced, "retrieval_completed").data["candidates"]
    return [(c["rank"], c["source_id"]) for c in candidates if c["chunk_id"] in sent and words in c["text"]]


def _event(traced: TracedRequest, kind: str) -> Any:
    event = traced.trace.first(kind)
    if event is None:
        raise ValueError(f"this request ended {traced.outcome} before {kind}: it sent no context to search.")
    return event


def passage_rank(question: str, index: DocsIndex, words: str) -> tuple[int, float, str]:
    """Return the rank, score and text of the best-ranked passage holding ``words``, over the whole index.

    The app sends only the top `K`; this ranks every passage, so it shows how far below the cut a passage fell.
    """
    ranked = index.store.similarity_search_with_score(question, k=len(index.chunks))
    for rank, (doc, score) in enumerate(ranked, start=1):
        if words in doc.page_content:
            return rank, round(float(score), 3), doc.page_content
    raise CorpusError(f"no passage holds {words!r}: copy the words from a passage of the corpus.")


def schema_fields(schema: dict[str, Any]) -> str:
    """Return a JSON schema's fields in one line: each name and type, an enum's values, which are required."""

    def kind(spec: dict[str, Any]) -> str:
        if "enum" in spec:
            return " or ".join(repr(v) for v in spec["enum"])
        if spec.get("type") == "array":
            return f"array of {kind(spec.get('items', {}))}"
        return str(spec.get("type", "any"))

    fields = ", ".join(f"{name} ({kind(spec)})" for name, spec in schema["properties"].items())
    required = set(schema.get("required", []))
    extra = "no other fields" if schema.get("additionalProperties") is False else "other fields allowed"
    needed = "all required" if required == set(schema["properties"]) else f"required: {sorted(required)}"
    return f"{fields}; {needed}, {extra}"


def request_settings(adapter: Any) -> str:
    """Return the model and settings a request sends besides its messages; the reply schema as its fields."""
    settings = {k: v for k, v in SETTINGS.items() if k != "response_format"}
    sent: dict[str, Any] = dict(REPLY_FORMAT)  # what SETTINGS sends as response_format
    schema = f"{sent['schema'].get('title', 'schema')}: {schema_fields(sent['schema'])}"
    return f"model: {adapter.model}\nsettings: {settings}\nresponse_format: type {sent['type']}, schema {schema}"


def run_header(run_id: str) -> str:
    """Return a recorded run's model, server kind and creation date, as one line."""
    from labkit.recording import load_run

    run = load_run(run_id)
    return f"run {run_id} ({run.origin}): model {run.model.id}, server kind {run.model.endpoint_kind}, created {run.created_at[:10]}"


def calls_table(run_id: str) -> Any:
    """Return a recorded run's calls as a table: question, finish reason, tokens and seconds (`bindings_table`)."""
    from labkit.recording import bindings_table, load_run

    return bindings_table(load_run(run_id))


def finish_line(run_id: str, question: str) -> str:
    """Say how the recorded reply to ``question`` ended: its finish reason and reply tokens against ``max_tokens``."""
    from labkit.recording import load_run

    run = load_run(run_id)
    binding = next((b for b in run.bindings if b.question == question), None)
    if binding is None or binding.response is None:
        raise CorpusError(f"run {run_id} holds no reply to {question!r}: use one of the questions it recorded.")
    finish = binding.response["choices"][0]["finish_reason"]
    tokens = binding.usage.completion_tokens if binding.usage else None
    return f"finish_reason {finish}, {tokens} reply tokens of max_tokens {run.settings['max_tokens']}"


def event_fields(event: Any) -> str:
    """Return an event's number, kind and every field, one a line, with each 64-character hash cut to 16."""
    lines = [f"event #{event.sequence} {event.kind}, every field (hashes cut to 16 characters):"]
    for name, value in event.data.items():
        shown = value[:16] + "…" if isinstance(value, str) and len(value) == 64 else value
        lines.append(f"   {name}: {shown}")
    return "\n".join(lines)


def best_scores(cases: dict[str, TracedRequest]) -> dict[str, float]:
    """Return each named request's best retrieval score (its rank-1 candidate's), rounded to 3 places."""
    return {
        name: round(_event(t, "retrieval_completed").data["candidates"][0]["score"], 3) for name, t in cases.items()
    }
