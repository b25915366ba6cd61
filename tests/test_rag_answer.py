"""answer_with_rag's contract: k, candidates in search order, selection, empty context, citations."""

from __future__ import annotations

import json

import pytest

from labkit.authored import AuthoringAdapter
from labkit.rag.answer import SETTINGS, FilingsRAG, InvalidCitation, InvalidReply, bm25_rerank, naive_answer, naive_key
from labkit.rag.index import build_index
from labkit.rag.questions import load_questions

REVENUE = "What did Corvid earn after tax in FY2024?"  # a question of the fixture set (its vector is saved)
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
    from labkit.rag.index import load_filings

    _, selected = FilingsRAG(index, NoModel()).retrieve(REVENUE, k=5)
    printed = {
        (p.metadata["doc_name"], p.metadata["source_page"]): p.page_content
        for p in load_filings({"CORVID_2024_10K", "CORVID_2025_10K"})
    }
    for item in selected:
        assert set(item) == {"chunk_text", "doc_name", "source_page", "citation_id", "reranker_score"}
        assert 1 <= item["source_page"] <= 25
        assert item["citation_id"] == f"{item['doc_name']}#p{item['source_page']}"
        page = printed[(item["doc_name"], item["source_page"])]
        assert item["chunk_text"] in page and f"page {item['source_page']}" in page  # the footer is one-based too


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
