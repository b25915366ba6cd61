"""FAISS alone, FAISS then BM25 rerank, and hybrid fusion, measured per question kind from retrieval alone."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings

from labkit.rag.answer import CANDIDATES, FilingsRAG
from labkit.rag.index import build_index
from labkit.rag.metrics import kind
from labkit.rag.questions import load_questions
from labkit.rag.retrievers import (
    RETRIEVERS,
    RetrieverBench,
    head_to_head,
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


def test_faiss_and_rerank_are_what_the_lesson_pipeline_selects(questions, index):
    bench = RetrieverBench(index)
    plain, rerank = FilingsRAG(index, model=None, rerank=False), FilingsRAG(index, model=None, rerank=True)
    for q in questions[:8]:
        found = bench.retrieve(q.question)
        candidates, selected = plain.retrieve(q.question, k=CANDIDATES)
        assert list(found["faiss"].ranked) == [c["citation_id"] for c in candidates]
        assert [s["citation_id"] for s in selected] == list(found["faiss"].ranked)
        assert list(found["faiss+bm25"].ranked) == [s["citation_id"] for s in rerank.retrieve(q.question, k=12)[1]]
        assert found["hybrid"].candidates == found["faiss"].ranked


def test_single_document_scope_returns_only_the_questions_own_filing(questions, index):
    results = retrieve_all(questions, index, scope="single-document")
    for name in RETRIEVERS:
        for q in questions:
            ranked = results[name][q.financebench_id].ranked
            assert all(c.startswith(q.doc_name + "#p") for c in ranked)
            assert ranked or name == "faiss+bm25"  # a rerank keeps only candidates sharing a word
    with pytest.raises(ValueError, match="scope must be"):
        retrieve_all(questions, index, scope="everything")


def test_candidate_recall_is_the_ceiling_of_the_rerank_in_every_kind(questions, index):
    results = retrieve_all(questions, index)
    table = retrieval_by_kind(questions, results, ks=(1, 5, 12), kind=kind)
    assert set(table.index.get_level_values("kind")) == {"one-page", "two-page", "all"}
    assert table.loc[("all", "faiss"), "questions"] == sum(q.answerable for q in questions)
    for group in ("one-page", "two-page", "all"):
        ceiling = table.loc[(group, "faiss"), "candidate_recall@12"]
        assert table.loc[(group, "faiss"), "page_hit@12"] == ceiling  # the 12 candidates themselves
        assert table.loc[(group, "faiss+bm25"), "page_hit@12"] <= ceiling  # a rerank only reorders them
        assert table.loc[(group, "hybrid"), "candidate_recall@12"] == ceiling
        assert list(table.loc[(group, "hybrid"), ["page_hit@1", "page_hit@5", "page_hit@12"]]) == sorted(
            table.loc[(group, "hybrid"), ["page_hit@1", "page_hit@5", "page_hit@12"]]
        )


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
    from langchain_core.documents import Document

    from labkit.rag.index import DISTANCE, INDEX_FORMAT, index_pages

    distractors = [f"Page {n} reviews general market conditions and seasonal demand." for n in range(1, 15)]
    pages = [*distractors, "Warranty reserves for the zephyr gearbox recall were 41.2 million."]
    documents = [
        Document(page_content=text, metadata={"doc_name": "TEST_2024_10K", "source_page": n})
        for n, text in enumerate(pages, 1)
    ]
    settings = {
        "format": INDEX_FORMAT,
        "embedding_model": TwoDirections.model,
        "chunk_size": 800,
        "chunk_overlap": 100,
        "documents": {"TEST_2024_10K": "0" * 64},
        "distance": DISTANCE,
    }
    index = index_pages(documents, settings=settings, embeddings=TwoDirections())
    found = RetrieverBench(index).retrieve("What warranty reserve did the zephyr gearbox recall need?")
    evidence = "TEST_2024_10K#p15"
    assert evidence not in found["faiss"].candidates  # dense search ranks it 15th of 15
    assert evidence not in found["faiss+bm25"].ranked  # a rerank only reorders those 12
    assert found["hybrid"].ranked[0] == evidence  # BM25's first, fused with dense's 15th, beats dense's first alone
