"""``answer_with_rag(question, *, k=5)``: retrieval, reranking, a grounded request and a checked reply.

The contract follows the book (section 12.3): ``k`` is an int from 1 to 12;
twelve candidates are kept in search order with their ``citation_id`` and
``faiss_distance``; a reranker selects at most ``k`` of them; an empty selection
returns ``insufficient_evidence`` without calling the model; a reply citing a
page outside the selected context raises ``ValueError``. The book's reranker is
a BGE cross-encoder; here BM25 (``rank-bm25``) over the twelve candidates
stands in for it: a real, lexical reranker that needs no model download.
`naive_answer` asks the same model the same question with no retrieval at all.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.errors import LabkitError
from labkit.rag.index import FilingsIndex, citation_id
from labkit.serve import local_response_format

#: How many candidates search returns before reranking (the book's 12).
CANDIDATES = 12
RERANKER_NAME = "BM25 (rank-bm25) over the 12 candidates: a lexical stand-in for the book's BGE cross-encoder"
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "per",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "what",
        "which",
        "who",
        "with",
    ]
)

GROUNDED_POLICY = (
    "You answer questions about companies' annual reports using only the passages you are given. "
    "Reply with a JSON object: status is 'answered' or 'cannot_answer'; answer is one sentence that states the "
    "figure with its unit as printed; cited_pages lists the citation_id of every passage the answer uses. "
    "If the passages do not contain the answer, use status 'cannot_answer' and an empty cited_pages list."
)
NAIVE_POLICY = (
    "You answer questions about companies' annual reports. No documents are provided. "
    "Reply with a JSON object: status is 'answered' or 'cannot_answer'; answer is one sentence; "
    "cited_pages must be an empty list, because there is nothing to cite."
)


class InvalidK(LabkitError, ValueError):
    """``k`` is not an int from 1 to 12 (a bool or a float is refused too)."""


class InvalidReply(LabkitError, ValueError):
    """The model's reply is not a JSON object of the reply schema."""


class InvalidCitation(LabkitError, ValueError):
    """The reply cites a page outside the context supplied with the request."""


class Reply(BaseModel):
    """What the model must return, for the RAG path and the naive baseline alike."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["answered", "cannot_answer"] = Field(description="Whether the model answered.")
    answer: str = Field(description="One sentence, with the figure and its unit.")
    cited_pages: list[str] = Field(description="Citation ids (doc_name#p<page>) of the passages used.")


#: Every generation setting; part of every request and so of every replay binding.
SETTINGS = {
    "temperature": 0,
    "seed": 7,
    "max_tokens": 120,
    "response_format": local_response_format(Reply.model_json_schema()),
}


def tokens(text: str) -> list[str]:
    """Lower-case words and figures (``2,374.4`` stays one token), without common function words."""
    return [t for t in re.findall(r"[a-z0-9]+(?:[.,][0-9]+)*", text.lower()) if t not in _STOPWORDS]


def bm25_rerank(question: str, docs: list[Any]) -> list[tuple[Any, float]]:
    """Return the documents sharing a word with the question, best BM25 score first (ties keep search order).

    A shared word keeps a document even at a score of 0: BM25 weighs a word by how rare it is among the
    candidates, so over a few of them rank-bm25's BM25Okapi gives a word found in exactly half no weight, and a
    word found in more than half only a small floor weight. The page holding the answer must not be dropped for that.
    """
    from rank_bm25 import BM25Okapi

    if not docs:
        return []
    texts = [tokens(d.page_content) for d in docs]
    asked = tokens(question)
    scores = BM25Okapi([text or [""] for text in texts]).get_scores(asked)
    ranked = sorted(range(len(docs)), key=lambda i: -scores[i])  # sorted() is stable: ties stay in search order
    return [(docs[i], round(float(scores[i]), 4)) for i in ranked if not set(asked).isdisjoint(texts[i])]


def render_grounded_prompt(*, question: str, evidence: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Return the messages for a question and its selected passages, each passage with its citation id."""
    passages = [{"citation_id": e["citation_id"], "text": e["chunk_text"]} for e in evidence]
    return [
        {"role": "system", "content": GROUNDED_POLICY},
        {"role": "user", "content": json.dumps({"question": question, "passages": passages}, ensure_ascii=False)},
    ]


def parse_reply(completion: Any) -> Reply:
    """Validate the reply text against `Reply`; raise `InvalidReply` (a ValueError) otherwise."""
    text = completion.choices[0].message.content or ""
    try:
        return Reply.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise InvalidReply(f"the reply is not a valid answer object ({err['msg']}): {text[:120]!r}") from None


def check_citations(reply: Reply, allowed: set[str]) -> None:
    """Raise `InvalidCitation` if the reply cites anything outside ``allowed``."""
    outside = sorted(set(reply.cited_pages) - allowed)
    if outside:
        raise InvalidCitation(
            f"Answer cited evidence outside the supplied context: {outside}; "
            f"the supplied context was {sorted(allowed) or 'empty'}"
        )


def _check_k(k: Any) -> int:
    if type(k) is not int or not 1 <= k <= CANDIDATES:
        raise InvalidK(f"k must be an integer from 1 to {CANDIDATES}, got {k!r}")
    return k


@dataclass
class FilingsRAG:
    """The application around `answer_with_rag`: the index, the model boundary and the reranking switch."""

    index: FilingsIndex
    model: Any
    """Anything with ``generate(key, messages)`` returning a ChatCompletion (a `ModelBoundary`, an authoring adapter)."""
    rerank: bool = True

    def retrieve(
        self, question: str, *, k: int = 5, doc_name: str | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Return ``(candidates, selected)``: 12 candidates in search order, and at most ``k`` selected passages.

        ``doc_name`` searches that filing only (FinanceBench's single-store setting): a LangChain metadata
        filter, which FAISS applies after its nearest-neighbour search, so it is then asked for every vector.
        """
        _check_k(k)
        found = []
        if self.index.chunks:
            store = self.index.store
            only = {"filter": {"doc_name": doc_name}, "fetch_k": store.index.ntotal} if doc_name else {}
            found = store.similarity_search_with_score(question, k=CANDIDATES, **only)
        candidates = [
            {"citation_id": citation_id(doc.metadata), "faiss_distance": round(float(distance), 6)}
            for doc, distance in found
        ]
        docs = [doc for doc, _ in found]
        chosen = bm25_rerank(question, docs)[:k] if self.rerank else [(doc, None) for doc in docs[:k]]
        selected = [
            {
                "chunk_text": doc.page_content,
                "doc_name": doc.metadata["doc_name"],
                "source_page": doc.metadata["source_page"],
                "citation_id": citation_id(doc.metadata),
                "reranker_score": score,
            }
            for doc, score in chosen
        ]
        return candidates, selected

    def answer_with_rag(self, question: str, *, k: int = 5) -> dict[str, Any]:
        """Answer from the filings, keeping the candidates, the selected context and the exact request."""
        candidates, context = self.retrieve(question, k=k)
        if not context:
            return {
                "question": question,
                "answer": None,
                "cited_pages": [],
                "candidates": candidates,
                "retrieved": [],
                "model_request": None,
                "k": k,
                "status": "insufficient_evidence",
            }
        model_request = render_grounded_prompt(question=question, evidence=context)
        reply = parse_reply(self.model.generate(question, model_request))
        check_citations(reply, {item["citation_id"] for item in context})
        return {
            "question": question,
            "answer": reply.answer,
            "cited_pages": list(reply.cited_pages),
            "candidates": candidates,
            "retrieved": context,
            "model_request": model_request,
            "k": k,
            "status": "answered" if reply.status == "answered" else "refused",
        }


def naive_key(question: str) -> str:
    """Return the request key of the no-retrieval baseline for a question."""
    return f"naive: {question}"


def naive_answer(question: str, model: Any) -> dict[str, Any]:
    """Ask the model the question with no retrieval: the baseline the RAG path is compared with."""
    messages = [{"role": "system", "content": NAIVE_POLICY}, {"role": "user", "content": question}]
    reply = parse_reply(model.generate(naive_key(question), messages))
    check_citations(reply, set())
    return {
        "question": question,
        "answer": reply.answer,
        "cited_pages": [],
        "candidates": [],
        "retrieved": [],
        "model_request": messages,
        "k": 0,
        "status": "answered" if reply.status == "answered" else "refused",
    }
