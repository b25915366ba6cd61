"""Three retrievers over one index, measured side by side: FAISS alone, FAISS then BM25 rerank, and hybrid fusion.

- **faiss**: the 12 nearest chunks by squared L2 distance, in search order (what ``rerank=False`` gives).
- **faiss+bm25**: those 12 candidates reordered by BM25 (`labkit.rag.answer.bm25_rerank`, as
  ``answer_with_rag`` does). A rerank only reorders its candidates, so the share of questions whose evidence
  page is among the 12 (candidate recall@12) is the ceiling of any rerank.
- **hybrid**: dense and BM25 rankings over *every* chunk in scope, fused by reciprocal rank fusion
  (Cormack et al. 2009: score = sum of 1 / (60 + rank) over both rankings). BM25 can bring in a page
  that dense search ranked far below 12, which no rerank of 12 dense candidates can.

The scope is ``shared`` (one store over every document, as FinanceBench's shared vector store) or
``single-document`` (only the question's own filing, as its per-document store). Each retriever gives a
`labkit.rag.metrics.Retrieval` per question; `retrieval_by_kind` and `head_to_head` turn them into tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from labkit.rag.answer import CANDIDATES, bm25_rerank, tokens
from labkit.rag.index import FilingsIndex, citation_id
from labkit.rag.metrics import Retrieval, page_hit, reciprocal_rank
from labkit.rag.questions import FilingQuestion

RETRIEVERS = ("faiss", "faiss+bm25", "hybrid")
#: The constant of reciprocal rank fusion (the value its authors recommend).
RRF_K = 60
Scope = Literal["shared", "single-document"]


class RetrieverBench:
    """The three retrievers over one index; BM25 statistics are built once per scope and kept."""

    def __init__(self, index: FilingsIndex, *, depth: int = CANDIDATES, rrf_k: int = RRF_K) -> None:
        self.index = index
        self.depth = depth
        self.rrf_k = rrf_k
        self._bm25: dict[str | None, tuple[Any, list[int]]] = {}

    def _positions(self, doc_name: str | None) -> list[int]:
        chunks = self.index.chunks
        return [i for i, c in enumerate(chunks) if doc_name is None or c.metadata["doc_name"] == doc_name]

    def dense(self, question: str, *, doc_name: str | None = None) -> list[int]:
        """Return chunk positions in scope, nearest first (FAISS flat search over every vector, then the scope)."""
        import numpy as np

        vectors = self.index.store.index
        if not vectors.ntotal:
            return []
        query = np.asarray([self.index.store.embedding_function.embed_query(question)], dtype="float32")
        _, found = vectors.search(query, vectors.ntotal)
        scope = set(self._positions(doc_name)) if doc_name is not None else None
        return [int(i) for i in found[0] if i >= 0 and (scope is None or int(i) in scope)]

    def lexical(self, question: str, *, doc_name: str | None = None) -> list[int]:
        """Return the chunk positions in scope that share a word with the question, best BM25 score first."""
        from rank_bm25 import BM25Okapi

        if doc_name not in self._bm25:
            positions = self._positions(doc_name)
            texts = [tokens(self.index.chunks[i].page_content) or [""] for i in positions]
            self._bm25[doc_name] = (BM25Okapi(texts) if texts else None, positions)
        bm25, positions = self._bm25[doc_name]
        if bm25 is None:
            return []
        scores = bm25.get_scores(tokens(question))
        order = sorted(range(len(positions)), key=lambda i: -scores[i])  # stable: ties keep index order
        return [positions[i] for i in order if scores[i] > 0]

    def fuse(self, *rankings: list[int]) -> list[int]:
        """Reciprocal rank fusion of chunk rankings: highest summed 1/(rrf_k + rank) first."""
        score: dict[int, float] = {}
        for ranking in rankings:
            for rank, position in enumerate(ranking, start=1):
                score[position] = score.get(position, 0.0) + 1 / (self.rrf_k + rank)
        return sorted(score, key=lambda p: -score[p])

    def retrieve(self, question: str, *, doc_name: str | None = None, k: int = 5) -> dict[str, Retrieval]:
        """Return each retriever's `Retrieval` for one question (``doc_name`` limits the scope to that filing)."""
        chunks = self.index.chunks
        dense = self.dense(question, doc_name=doc_name)
        candidates = dense[: self.depth]
        reranked = bm25_rerank(question, [chunks[i] for i in candidates])
        hybrid = self.fuse(dense, self.lexical(question, doc_name=doc_name))[: self.depth]
        cands = tuple(citation_id(chunks[i].metadata) for i in candidates)

        def ids(positions: Iterable[int]) -> tuple[str, ...]:
            return tuple(citation_id(chunks[i].metadata) for i in positions)

        return {
            "faiss": Retrieval(ranked=cands, k=k, candidates=cands),
            "faiss+bm25": Retrieval(ranked=tuple(citation_id(d.metadata) for d, _ in reranked), k=k, candidates=cands),
            "hybrid": Retrieval(ranked=ids(hybrid), k=k, candidates=cands),
        }


def retrieve_all(
    questions: Iterable[FilingQuestion], index: FilingsIndex, *, scope: Scope = "shared", k: int = 5
) -> dict[str, dict[str, Retrieval]]:
    """Return retriever -> financebench_id -> `Retrieval` for every question (no model call)."""
    if scope not in ("shared", "single-document"):
        raise ValueError(f"scope must be 'shared' or 'single-document', got {scope!r}")
    bench = RetrieverBench(index)
    results: dict[str, dict[str, Retrieval]] = {name: {} for name in RETRIEVERS}
    for q in questions:
        found = bench.retrieve(q.question, doc_name=q.doc_name if scope == "single-document" else None, k=k)
        for name in RETRIEVERS:
            results[name][q.financebench_id] = found[name]
    return results


def question_type(question: FilingQuestion) -> str:
    """FinanceBench's question kind (``metrics-generated``, ``domain-relevant``, ``novel-generated``)."""
    return question.question_type


def retrieval_by_kind(
    questions: Iterable[FilingQuestion],
    results: Mapping[str, Mapping[str, Retrieval]],
    *,
    ks: Iterable[int] = (1, 3, 5, 12),
    kind: Callable[[FilingQuestion], str] = question_type,
) -> Any:
    """Return page-hit@k and MRR per question kind and retriever, with candidate recall@12 (a rerank's ceiling).

    Only questions with labelled evidence count; the ``all`` rows pool every kind.
    """
    import pandas as pd

    ks = tuple(ks)
    labelled = [q for q in questions if q.answerable]
    groups: dict[str, list[FilingQuestion]] = {}
    for q in labelled:
        groups.setdefault(kind(q), []).append(q)
    groups["all"] = labelled
    rows = []
    for group, members in groups.items():
        for name, per_question in results.items():
            found = [(q, per_question[q.financebench_id]) for q in members if q.financebench_id in per_question]
            if not found:
                continue
            row: dict[str, Any] = {"kind": group, "retriever": name, "questions": len(found)}
            for k in ks:
                row[f"page_hit@{k}"] = round(
                    sum(bool(page_hit(q, list(r.ranked), k)) for q, r in found) / len(found), 3
                )
            row["mrr"] = round(sum(reciprocal_rank(q, r.ranked) or 0.0 for q, r in found) / len(found), 3)
            ceiling = sum(bool(page_hit(q, list(r.candidates), CANDIDATES)) for q, r in found)
            row[f"candidate_recall@{CANDIDATES}"] = round(ceiling / len(found), 3)
            rows.append(row)
    return pd.DataFrame(rows).set_index(["kind", "retriever"])


def head_to_head(
    questions: Iterable[FilingQuestion],
    results: Mapping[str, Mapping[str, Retrieval]],
    *,
    k: int = 5,
    kind: Callable[[FilingQuestion], str] = question_type,
) -> Any:
    """Return one row per labelled question: page-hit@k for each retriever and the evidence page's FAISS rank."""
    import pandas as pd

    rows = []
    for q in questions:
        if not q.answerable:
            continue
        row: dict[str, Any] = {"id": q.financebench_id, "kind": kind(q), "doc_name": q.doc_name}
        for name, per_question in results.items():
            if q.financebench_id in per_question:
                row[name] = bool(page_hit(q, list(per_question[q.financebench_id].ranked), k))
        first = next(iter(results.values())).get(q.financebench_id)
        in_candidates = [n for n, c in enumerate(first.candidates if first else (), 1) if c in q.evidence_pages]
        row[f"faiss_rank_in_{CANDIDATES}"] = in_candidates[0] if in_candidates else None
        rows.append(row)
    return pd.DataFrame(rows).set_index("id").astype({f"faiss_rank_in_{CANDIDATES}": "Int64"})


def wins_and_losses(table: Any, *, better: str, than: str) -> dict[str, int]:
    """Count the questions where ``better`` hits and ``than`` misses, and the reverse, in a `head_to_head` table."""
    return {
        "wins": int((table[better] & ~table[than]).sum()),
        "losses": int((~table[better] & table[than]).sum()),
        "ties": int((table[better] == table[than]).sum()),
    }
