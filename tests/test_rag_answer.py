"""answer_with_rag's contract: k, candidates in search order, selection, empty context, citations."""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document

from labkit.authored import AuthoringAdapter
from labkit.rag.answer import SETTINGS, FilingsRAG, InvalidCitation, InvalidReply, bm25_rerank, naive_answer, naive_key
from labkit.rag.index import build_index
from labkit.rag.questions import load_questions

REVENUE = "What was Acme Industrial Tools, Inc.'s total revenue in fiscal 2024, in USD millions?"
HOCKEY = "How many goals did the hockey club score last season?"


@pytest.fixture(scope="module")
def index():
    return build_index({q.doc_name for q in load_questions()})


class NoModel:
    """A model that must not be called."""

    mode = "test"

    def generate(self, key, messages):
        raise AssertionError(f"the model was called for {key!r}")


def replying(question: str, **reply) -> AuthoringAdapter:
    body = {"status": "answered", "answer": "Revenue was $2,374.4 million.", "cited_pages": []} | reply
    return AuthoringAdapter({question: json.dumps(body)}, settings=SETTINGS)


@pytest.mark.parametrize("k", [0, 13, -1, True, False, 5.0, "5", None])
def test_k_outside_the_contract_is_refused_before_search(index, k):
    with pytest.raises(ValueError, match="k must be an integer from 1 to 12"):
        FilingsRAG(index, NoModel()).answer_with_rag(REVENUE, k=k)


@pytest.mark.parametrize("k", [1, 12])
def test_k_at_both_ends_of_the_range_is_accepted(index, k):
    candidates, selected = FilingsRAG(index, NoModel()).retrieve(REVENUE, k=k)
    assert len(candidates) == 12
    assert 1 <= len(selected) <= k


def test_candidates_keep_faiss_search_order_and_distances(index):
    direct = index.store.similarity_search_with_score(REVENUE, k=12)
    for rerank in (True, False):
        candidates, _ = FilingsRAG(index, NoModel(), rerank=rerank).retrieve(REVENUE, k=5)
        assert [c["citation_id"] for c in candidates] == [
            f"{d.metadata['doc_name']}#p{d.metadata['source_page']}" for d, _ in direct
        ]
        distances = [c["faiss_distance"] for c in candidates]
        assert distances == sorted(distances)


def test_reranking_reorders_the_selection_but_not_the_candidates(index):
    plain = FilingsRAG(index, NoModel(), rerank=False).retrieve(REVENUE, k=5)
    reranked = FilingsRAG(index, NoModel(), rerank=True).retrieve(REVENUE, k=5)
    assert plain[0] == reranked[0]
    assert [s["citation_id"] for s in plain[1]] == [c["citation_id"] for c in plain[0][:5]]
    assert [s["citation_id"] for s in reranked[1]] != [s["citation_id"] for s in plain[1]]
    scores = [s["reranker_score"] for s in reranked[1]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


def test_selected_entries_carry_one_based_pages_and_citation_ids(index):
    _, selected = FilingsRAG(index, NoModel()).retrieve(REVENUE, k=5)
    for item in selected:
        assert set(item) == {"chunk_text", "doc_name", "source_page", "citation_id", "reranker_score"}
        assert 1 <= item["source_page"] <= 17
        assert item["citation_id"] == f"{item['doc_name']}#p{item['source_page']}"
        assert f"page {item['source_page']}" in item["chunk_text"]  # the printed footer is one-based too


def test_empty_selection_is_insufficient_evidence_without_a_model_call(index):
    record = FilingsRAG(index, NoModel()).answer_with_rag(HOCKEY, k=5)
    assert record["status"] == "insufficient_evidence"
    assert record["answer"] is None and record["model_request"] is None
    assert record["retrieved"] == [] and record["cited_pages"] == []
    assert len(record["candidates"]) == 12  # the original candidates stay in the record


def test_bm25_selects_nothing_that_shares_no_word_with_the_question(index):
    docs = [d for d, _ in index.store.similarity_search_with_score(HOCKEY, k=12)]
    assert bm25_rerank(HOCKEY, docs) == []


def test_an_answer_citing_a_page_outside_the_context_raises(index):
    adapter = replying(REVENUE, cited_pages=["ACME_2024_10K#p99"])
    with pytest.raises(ValueError, match="outside the supplied context") as info:
        FilingsRAG(index, adapter).answer_with_rag(REVENUE, k=5)
    assert isinstance(info.value, InvalidCitation)


def test_an_answer_citing_the_selected_context_is_kept_with_its_request(index):
    _, selected = FilingsRAG(index, NoModel()).retrieve(REVENUE, k=5)
    cited = selected[-1]["citation_id"]
    record = FilingsRAG(index, replying(REVENUE, cited_pages=[cited])).answer_with_rag(REVENUE, k=5)
    assert record["status"] == "answered" and record["cited_pages"] == [cited]
    assert set(record) == {
        "question",
        "answer",
        "cited_pages",
        "candidates",
        "retrieved",
        "model_request",
        "k",
        "status",
    }
    assert record["k"] == 5 and record["question"] == REVENUE
    sent = json.loads(record["model_request"][-1]["content"])
    assert [p["citation_id"] for p in sent["passages"]] == [s["citation_id"] for s in record["retrieved"]]


def test_a_reply_of_the_wrong_shape_raises_invalid_reply(index):
    adapter = AuthoringAdapter({REVENUE: '{"answer": "2,374.4"}'}, settings=SETTINGS)
    with pytest.raises(InvalidReply):
        FilingsRAG(index, adapter).answer_with_rag(REVENUE, k=5)


def test_the_naive_baseline_sends_no_passages_and_may_cite_nothing():
    adapter = AuthoringAdapter(
        {
            naive_key(REVENUE): json.dumps(
                {"status": "answered", "answer": "About $3 billion.", "cited_pages": ["ACME_2024_10K#p10"]}
            )
        },
        settings=SETTINGS,
    )
    with pytest.raises(InvalidCitation):
        naive_answer(REVENUE, adapter)
    request = adapter.exchanges[0][1]
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert request["messages"][1]["content"] == REVENUE


class SmallStore:
    """A single-document store of a few pages, built here; search returns them in the order given."""

    def __init__(self, *texts: str):
        self.chunks = [
            Document(page_content=text, metadata={"doc_name": "TINY_2024_10K", "source_page": page})
            for page, text in enumerate(texts, start=1)
        ]
        self.store = self

    def similarity_search_with_score(self, question, k):
        return [(chunk, 0.25 * rank) for rank, chunk in enumerate(self.chunks[:k])]


TOTAL_REVENUE = "What was total revenue?"


def test_a_two_page_store_keeps_the_page_holding_the_answer_although_bm25_gives_it_no_weight():
    store = SmallStore("Total revenue was $2,374.4 million.", "Operating income rose.")
    assert bm25_rerank(TOTAL_REVENUE, [c for c, _ in store.similarity_search_with_score(TOTAL_REVENUE, 12)]) == [
        (store.chunks[0], 0.0)  # "total" and "revenue" are in half the candidates: BM25 weighs them 0
    ]
    adapter = replying(TOTAL_REVENUE, cited_pages=["TINY_2024_10K#p1"])
    record = FilingsRAG(store, adapter).answer_with_rag(TOTAL_REVENUE, k=5)
    assert record["status"] == "answered" and [r["citation_id"] for r in record["retrieved"]] == ["TINY_2024_10K#p1"]


def test_the_rerank_reorders_by_bm25_and_drops_only_candidates_sharing_no_word_with_the_question():
    store = SmallStore(
        "The board met four times.",
        "Revenue by segment: tools and services.",
        "Total revenue was $2,374.4 million in fiscal 2024, up from fiscal 2023.",
        "Employees numbered 9,100.",
    )
    question = "What was total revenue in fiscal 2024?"
    _, selected = FilingsRAG(store, NoModel()).retrieve(question, k=12)
    assert [s["source_page"] for s in selected] == [3, 2]
    assert selected[0]["reranker_score"] > selected[1]["reranker_score"]


def test_candidates_bm25_cannot_tell_apart_keep_their_search_order():
    pages = ("Revenue rose.", "Income rose.", "Staff grew.", "Debt fell.")
    for order in (pages, (pages[1], pages[0], *pages[2:])):
        store = SmallStore(*order)
        _, selected = FilingsRAG(store, NoModel()).retrieve("What was revenue or income?", k=12)
        assert [s["chunk_text"] for s in selected] == list(order[:2])
        assert selected[0]["reranker_score"] == selected[1]["reranker_score"] > 0
