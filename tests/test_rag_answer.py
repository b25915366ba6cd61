"""answer_with_rag's contract: k, candidates in search order, selection, empty context, citations."""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document
from openai.types.chat import ChatCompletion

from labkit.authored import AuthoringAdapter
from labkit.rag.answer import (
    GROUNDED_POLICY,
    NAIVE_POLICY,
    SETTINGS,
    FilingsRAG,
    InvalidCitation,
    InvalidReply,
    Reply,
    bm25_rerank,
    check_citations,
    naive_answer,
    naive_key,
    parse_reply,
    render_grounded_prompt,
    tokens,
)
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


def test_reranker_scores_are_bm25_okapi_scores_to_four_decimals():
    from rank_bm25 import BM25Okapi

    store = SmallStore(*(f"Revenue in segment {n} was reported." for n in "abc"), "Total revenue was $2,374.4 million.")
    question = "What was total revenue in segment a?"
    _, selected = FilingsRAG(store, NoModel()).retrieve(question, k=12)
    raw = BM25Okapi([tokens(c.page_content) for c in store.chunks]).get_scores(tokens(question))
    by_text = {c.page_content: round(float(s), 4) for c, s in zip(store.chunks, raw, strict=True)}
    assert [s["reranker_score"] for s in selected] == [by_text[s["chunk_text"]] for s in selected]
    assert any(s["reranker_score"] != round(s["reranker_score"], 3) for s in selected)  # four places, not fewer


def test_candidates_record_faiss_distances_to_six_decimals():
    store = SmallStore("Revenue rose.", "Income rose.", "Staff grew.")
    store.similarity_search_with_score = lambda question, k: [(c, n / 3) for n, c in enumerate(store.chunks, 1)]
    candidates, _ = FilingsRAG(store, NoModel()).retrieve("What was revenue?", k=1)
    assert [c["faiss_distance"] for c in candidates] == [0.333333, 0.666667, 1.0]
    assert [c["citation_id"] for c in candidates] == [f"TINY_2024_10K#p{n}" for n in (1, 2, 3)]


def test_k_defaults_to_five_in_the_selection_and_the_record():
    store = SmallStore(*(f"Revenue of region {n} rose." for n in range(1, 9)))
    _, selected = FilingsRAG(store, NoModel()).retrieve(TOTAL_REVENUE)
    assert len(selected) == 5
    adapter = replying(TOTAL_REVENUE, cited_pages=["TINY_2024_10K#p1"])
    record = FilingsRAG(store, adapter).answer_with_rag(TOTAL_REVENUE)
    assert record["k"] == 5 and len(record["retrieved"]) == 5


def test_an_index_without_chunks_is_not_searched_and_is_insufficient_evidence():
    store = SmallStore()

    def refuse(question, k):
        raise AssertionError("an empty index must not be searched")

    store.similarity_search_with_score = refuse
    record = FilingsRAG(store, NoModel()).answer_with_rag(TOTAL_REVENUE, k=3)
    assert record == {
        "question": TOTAL_REVENUE,
        "answer": None,
        "cited_pages": [],
        "candidates": [],
        "retrieved": [],
        "model_request": None,
        "k": 3,
        "status": "insufficient_evidence",
    }


def test_the_model_receives_exactly_the_policy_and_the_question_with_its_passages_unescaped():
    store = SmallStore("Net revenue was €2,374.4 million.", "Operating income rose.")
    question = "What was net revenue, in €?"
    adapter = replying(question, cited_pages=["TINY_2024_10K#p1"])
    record = FilingsRAG(store, adapter).answer_with_rag(question, k=5)
    passages = [{"citation_id": "TINY_2024_10K#p1", "text": "Net revenue was €2,374.4 million."}]
    expected = [
        {"role": "system", "content": GROUNDED_POLICY},
        {"role": "user", "content": json.dumps({"question": question, "passages": passages}, ensure_ascii=False)},
    ]
    assert "€" in expected[1]["content"]  # sent as written, not as \u20ac
    assert record["model_request"] == expected
    [(_, sent, _)] = adapter.exchanges
    assert sent["messages"] == expected
    assert render_grounded_prompt(question=question, evidence=record["retrieved"]) == expected


def test_a_reply_that_cannot_answer_from_the_passages_is_recorded_as_refused():
    store = SmallStore("Total revenue was $2,374.4 million.", "Operating income rose.")
    adapter = replying(TOTAL_REVENUE, status="cannot_answer", answer="The passages do not say.")
    record = FilingsRAG(store, adapter).answer_with_rag(TOTAL_REVENUE, k=5)
    assert record["status"] == "refused" and record["answer"] == "The passages do not say."


def completion(content: str | None) -> ChatCompletion:
    message = {"role": "assistant", "content": content}
    return ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


def test_an_invalid_reply_names_its_first_problem_and_quotes_at_most_120_characters():
    with pytest.raises(InvalidReply, match=r"^the reply is not a valid answer object \(Invalid JSON.*\): ''$"):
        parse_reply(completion(None))
    long = "x" * 200
    with pytest.raises(InvalidReply) as info:
        parse_reply(completion(long))
    assert str(info.value).endswith(": " + repr("x" * 120))
    one_problem = json.dumps({"status": "maybe", "answer": "?", "cited_pages": []})
    with pytest.raises(InvalidReply, match=r"\(Input should be 'answered' or 'cannot_answer'\)"):
        parse_reply(completion(one_problem))


def test_an_outside_citation_names_the_supplied_context_or_says_it_was_empty():
    reply = Reply(status="answered", answer="About $3 billion.", cited_pages=["ACME_2024_10K#p10"])
    with pytest.raises(InvalidCitation, match=r"the supplied context was empty$"):
        check_citations(reply, set())
    with pytest.raises(InvalidCitation, match=r"the supplied context was \['ACME_2024_10K#p2'\]$"):
        check_citations(reply, {"ACME_2024_10K#p2"})


@pytest.mark.parametrize(("status", "recorded"), [("answered", "answered"), ("cannot_answer", "refused")])
def test_the_naive_baseline_records_the_reply_with_nothing_retrieved(status, recorded):
    adapter = AuthoringAdapter(
        {naive_key(REVENUE): json.dumps({"status": status, "answer": "About $3 billion.", "cited_pages": []})},
        settings=SETTINGS,
    )
    messages = [{"role": "system", "content": NAIVE_POLICY}, {"role": "user", "content": REVENUE}]
    assert naive_answer(REVENUE, adapter) == {
        "question": REVENUE,
        "answer": "About $3 billion.",
        "cited_pages": [],
        "candidates": [],
        "retrieved": [],
        "model_request": messages,
        "k": 0,
        "status": recorded,
    }
    assert adapter.exchanges[0][1]["messages"] == messages
