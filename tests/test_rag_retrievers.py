"""FAISS alone, FAISS then BM25 rerank, and hybrid fusion, measured per question kind from retrieval alone."""

from __future__ import annotations

import pytest

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
