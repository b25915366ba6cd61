"""FAISS alone, FAISS then BM25 rerank, and hybrid fusion, measured per question kind from retrieval alone."""

from __future__ import annotations

import pandas as pd
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from labkit.rag.answer import CANDIDATES, FilingsRAG
from labkit.rag.index import DISTANCE, INDEX_FORMAT, build_index, index_pages
from labkit.rag.metrics import kind, rate_verdicts, wilson_interval
from labkit.rag.questions import Evidence, FilingQuestion, load_questions
from labkit.rag.retrievers import (
    RETRIEVERS,
    RetrieverBench,
    distinct_pages,
    head_to_head,
    question_rows,
    retrieval_by_kind,
    retrieve_all,
    wins_and_losses,
)


@pytest.fixture(scope="module")
def questions():
    return load_questions()


@pytest.fixture(scope="module")
def index(questions):
    return build_index({q.doc_name for q in questions})


def test_reciprocal_rank_fusion_by_hand(index):
    bench = RetrieverBench(index)
    # 1: 1/61 + 1/62, 3: 1/63 + 1/61, 2: 1/62, 4: 1/63
    assert bench.fuse([1, 2, 3], [3, 1, 4]) == [1, 3, 2, 4]
    assert bench.fuse([5], []) == [5]


def test_faiss_and_rerank_rank_the_pages_the_lesson_pipeline_selects(questions, index):
    bench = RetrieverBench(index)
    plain, rerank = FilingsRAG(index, model=None, rerank=False), FilingsRAG(index, model=None, rerank=True)
    for q in questions[:8]:
        found = bench.retrieve(q.question)
        candidates, _ = plain.retrieve(q.question, k=CANDIDATES)
        searched = distinct_pages(c["citation_id"] for c in candidates)
        assert found["faiss"].ranked[: len(searched)] == searched  # each page once, where its nearest chunk is
        assert found["faiss+bm25"].candidates == tuple(c["citation_id"] for c in candidates)
        reranked = distinct_pages(s["citation_id"] for s in rerank.retrieve(q.question, k=CANDIDATES)[1])
        assert found["faiss+bm25"].ranked[: len(reranked)] == reranked
        assert set(found["faiss+bm25"].ranked) == set(searched)  # a rerank keeps every candidate
        assert found["faiss"].candidates == found["hybrid"].candidates == ()  # no candidate stage


def test_single_document_scope_returns_only_the_questions_own_filing(questions, index):
    results = retrieve_all(questions, index, scope="single-document")
    for name in RETRIEVERS:
        for q in questions:
            ranked = results[name][q.financebench_id].ranked
            assert ranked and all(c.startswith(q.doc_name + "#p") for c in ranked)
            assert len(set(ranked)) == len(ranked)
    with pytest.raises(ValueError, match="scope must be"):
        retrieve_all(questions, index, scope="everything")


def test_candidate_recall_comes_from_each_retrievers_own_candidates(questions, index):
    results = retrieve_all(questions, index)
    table = retrieval_by_kind(questions, results, ks=(1, 5, 12), kind=kind)
    assert set(table.index.get_level_values("kind")) == {"one-page", "two-page", "all"}
    assert table.loc[("all", "faiss"), "questions"] == sum(q.answerable for q in questions)
    for group in ("one-page", "two-page", "all"):
        ceiling = table.loc[(group, "faiss+bm25"), "candidate_recall@12"]
        assert table.loc[(group, "faiss+bm25"), "page_hit@12"] == ceiling  # all 12 kept: their pages, reordered
        assert pd.isna(table.loc[(group, "faiss"), "candidate_recall@12"])  # no candidate stage: no ceiling
        assert pd.isna(table.loc[(group, "hybrid"), "candidate_recall@12"])
        for name in RETRIEVERS:
            rates = list(table.loc[(group, name), ["page_hit@1", "page_hit@5", "page_hit@12"]])
            assert rates == sorted(rates)


def test_every_page_hit_has_its_interval_and_a_tie_is_printed_as_one(questions, index):
    results = retrieve_all(questions, index, scope="single-document")
    table = retrieval_by_kind(questions, results, ks=(5,), kind=kind)
    for (group, name), row in table.iterrows():
        hits = round(row["page_hit@5"] * row["questions"])
        assert row["ci95@5"] == "[{:.2f}, {:.2f}]".format(*wilson_interval(hits, row["questions"]))
        part = table.loc[group]
        counts = {n: (round(r["page_hit@5"] * r["questions"]), r["questions"]) for n, r in part.iterrows()}
        assert row["vs_best@5"] == rate_verdicts(counts)[name]
    assert set(table["vs_best@5"]) <= {"best", "tie", "below"}


def test_head_to_head_counts_wins_and_losses_per_question(questions, index):
    results = retrieve_all(questions, index)
    table = head_to_head(questions, results, k=5, kind=kind)
    assert len(table) == sum(q.answerable for q in questions)
    counts = wins_and_losses(table, better="faiss+bm25", than="faiss")
    assert counts["wins"] + counts["losses"] + counts["ties"] == len(table)
    assert counts["wins"] - counts["losses"] == int(table["faiss+bm25"].sum() - table["faiss"].sum())
    missing = table[table["faiss_rank_in_12"].isna()]
    assert not missing["faiss+bm25"].any()  # evidence outside the 12 candidates: no rerank can find it


class TwoDirections(Embeddings):
    """Test embeddings: texts naming the zephyr gearbox point one way, everything else (the question too) another."""

    model = "test-two-directions"
    dimension = 4

    def embed_documents(self, texts):
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text):
        if "zephyr gearbox" in text and "?" not in text:
            return [0.0, 1.0, 0.0, 0.0]
        return [1.0, 0.0, 0.01 * (len(text) % 7), 0.0]


def test_hybrid_finds_an_evidence_page_that_no_rerank_of_the_dense_candidates_can():
    distractors = [f"Page {n} reviews general market conditions and seasonal demand." for n in range(1, 15)]
    pages = [*distractors, "Warranty reserves for the zephyr gearbox recall were 41.2 million."]
    documents = [
        Document(page_content=text, metadata={"doc_name": "TEST_2024_10K", "source_page": n})
        for n, text in enumerate(pages, 1)
    ]
    index = index_pages(documents, settings=settings(TwoDirections.model), embeddings=TwoDirections())
    found = RetrieverBench(index).retrieve("What warranty reserve did the zephyr gearbox recall need?")
    evidence = "TEST_2024_10K#p15"
    assert evidence not in found["faiss+bm25"].candidates  # dense search ranks it 15th of 15
    assert evidence not in found["faiss+bm25"].ranked  # a rerank only reorders those 12
    assert found["hybrid"].ranked[0] == evidence  # BM25's first, fused with dense's 15th, beats dense's first alone


def settings(model, chunk_size=800, chunk_overlap=100):
    return {
        "format": INDEX_FORMAT,
        "embedding_model": model,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "documents": {"TEST_2024_10K": "0" * 64},
        "distance": DISTANCE,
    }


class ByLength(Embeddings):
    """Test embeddings: a text's direction follows its length, so nearness is decided by length alone."""

    model = "test-by-length"
    dimension = 2

    def embed_documents(self, texts):
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text):
        return [1.0, len(text) / 1000]


def test_the_rerank_keeps_candidates_sharing_no_word_after_the_rest_in_search_order():
    texts = ["Inventory turns rose sharply.", "Lease cost was 3.1 million here.", "Nothing relevant at all."]
    pages = [
        Document(page_content=t, metadata={"doc_name": "TEST_2024_10K", "source_page": n})
        for n, t in enumerate(texts, 1)
    ]
    index = index_pages(pages, settings=settings(ByLength.model), embeddings=ByLength())
    found = RetrieverBench(index).retrieve("What was the lease cost?")
    searched = found["faiss+bm25"].candidates
    assert len(searched) == 3
    assert found["faiss+bm25"].ranked[0] == "TEST_2024_10K#p2"  # the one candidate sharing a word comes first
    rest = [c for c in searched if c != "TEST_2024_10K#p2"]
    assert list(found["faiss+bm25"].ranked[1:]) == rest  # the others are kept, in search order


def test_top_k_counts_distinct_pages():
    # page 1 holds two chunks nearer than anything else: they fill one place of the top 2, not two
    pages = [
        Document(page_content="a" * 30 + "\n\n" + "b" * 30, metadata={"doc_name": "TEST_2024_10K", "source_page": 1}),
        Document(page_content="c" * 35, metadata={"doc_name": "TEST_2024_10K", "source_page": 2}),
        Document(page_content="d" * 39, metadata={"doc_name": "TEST_2024_10K", "source_page": 3}),
    ]
    index = index_pages(pages, settings=settings(ByLength.model, 40, 0), embeddings=ByLength())
    assert len(index.chunks) == 4
    found = RetrieverBench(index).retrieve("x" * 30)
    assert found["faiss"].ranked == ("TEST_2024_10K#p1", "TEST_2024_10K#p2", "TEST_2024_10K#p3")
    question = FilingQuestion(
        financebench_id="t1",
        company="Test",
        doc_name="TEST_2024_10K",
        question_type="novel-generated",
        question="x" * 30,
        answer="",
        justification="",
        evidence=(Evidence(doc_name="TEST_2024_10K", evidence_text="c", source_page=2),),
    )
    rows = question_rows([question], {"faiss": {"t1": found["faiss"]}}, ks=(2,))
    assert rows[0]["page_hit@2"] is True
