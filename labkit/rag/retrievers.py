"""Three retrievers over one index, measured side by side: FAISS alone, FAISS then BM25 rerank, and hybrid fusion.

Each ranks *pages*: a page is placed where its best chunk is, and appears once, so that page-hit@5 means five
distinct pages (a page reached by two chunks does not fill two of the five places).

- **faiss**: every chunk in scope by squared L2 distance, nearest first. It has no candidate stage: its
  ranking is the search itself.
- **faiss+bm25**: FAISS's 12 nearest chunks (its candidates) reordered by BM25 (`labkit.rag.answer.bm25_rerank`,
  as ``answer_with_rag`` does); a candidate sharing no word with the question is kept, after the others, in
  search order. A rerank only reorders its candidates, so the share of questions whose evidence page is among
  them (candidate recall@12, computed from these candidates) is the ceiling of its page-hit at any k.
- **hybrid**: dense and BM25 rankings over *every* chunk in scope, fused by reciprocal rank fusion
  (Cormack et al. 2009: score = sum of 1 / (60 + rank) over both rankings). BM25 can bring in a page
  that dense search ranked far below 12, which no rerank of 12 dense candidates can. It has no
  candidate stage either: it fuses whole rankings.

The scope is ``shared`` (one store over every document, as FinanceBench's shared vector store) or
``single-document`` (only the question's own filing, as its per-document store). Each retriever gives a
`labkit.rag.metrics.Retrieval` per question; `question_rows` grades them one question at a time, and
`rates_table`, `retrieval_by_kind` and `head_to_head` turn those rows into tables: page-hit@k with its 95%
Wilson interval, and a verdict against the best retriever that prints a difference inside that interval as
a tie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from labkit.rag.answer import CANDIDATES, bm25_rerank, tokens
from labkit.rag.index import FilingsIndex, citation_id
from labkit.rag.metrics import Retrieval, page_hit, rate_verdicts, reciprocal_rank, wilson_interval
from labkit.rag.questions import FilingQuestion

RETRIEVERS = ("faiss", "faiss+bm25", "hybrid")
#: The constant of reciprocal rank fusion (the value its authors recommend).
RRF_K = 60
Scope = Literal["shared", "single-document"]


def distinct_pages(citations: Iterable[str]) -> tuple[str, ...]:
    """Return the citation ids in order, each page once (where it first appears)."""
    return tuple(dict.fromkeys(citations))


def rerank_keeping_all(question: str, docs: Sequence[Any]) -> list[Any]:
    """Return every document: BM25's order for those sharing a word with the question, then the rest as given."""
    reranked = [doc for doc, _ in bm25_rerank(question, list(docs))]
    chosen = {id(doc) for doc in reranked}
    return reranked + [doc for doc in docs if id(doc) not in chosen]


class RetrieverBench:
    """The three retrievers over one index; BM25 statistics are built once per scope and kept."""

    def __init__(self, index: FilingsIndex, *, depth: int = CANDIDATES, rrf_k: int = RRF_K) -> None:
        self.index = index
        self.depth = depth
        self.rrf_k = rrf_k
        self._bm25: dict[str | None, tuple[Any, list[int]]] = {}
        self._scopes: dict[str | None, list[int]] = {}

    def _positions(self, doc_name: str | None) -> list[int]:
        if doc_name not in self._scopes:
            chunks = self.index.chunks
            self._scopes[doc_name] = [
                i for i, c in enumerate(chunks) if doc_name is None or c.metadata["doc_name"] == doc_name
            ]
        return self._scopes[doc_name]

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

    def pages(self, positions: Iterable[int]) -> tuple[str, ...]:
        """Return the distinct pages of chunk positions, in order."""
        chunks = self.index.chunks
        return distinct_pages(citation_id(chunks[i].metadata) for i in positions)

    def retrieve(self, question: str, *, doc_name: str | None = None, k: int = 5) -> dict[str, Retrieval]:
        """Return each retriever's `Retrieval` for one question (``doc_name`` limits the scope to that filing)."""
        chunks = self.index.chunks
        dense = self.dense(question, doc_name=doc_name)
        candidates = dense[: self.depth]
        reranked = rerank_keeping_all(question, [chunks[i] for i in candidates])
        hybrid = self.fuse(dense, self.lexical(question, doc_name=doc_name))
        return {
            "faiss": Retrieval(ranked=self.pages(dense), k=k),
            "faiss+bm25": Retrieval(
                ranked=distinct_pages(citation_id(d.metadata) for d in reranked),
                k=k,
                candidates=tuple(citation_id(chunks[i].metadata) for i in candidates),
            ),
            "hybrid": Retrieval(ranked=self.pages(hybrid), k=k),
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


def question_rows(
    questions: Iterable[FilingQuestion],
    results: Mapping[str, Mapping[str, Retrieval]],
    *,
    ks: Iterable[int] = (1, 3, 5, 12),
    kind: Callable[[FilingQuestion], str] = question_type,
) -> list[dict[str, Any]]:
    """Return one row per labelled question and retriever: its kind, page-hit at each k, reciprocal rank, candidate hit.

    ``candidate_hit`` is whether an evidence page is among that retriever's own candidates, and None for a
    retriever with no candidate stage. These rows are what `rates_table` aggregates, and what the
    FinanceBench results file stores per question.
    """
    ks = tuple(ks)
    rows = []
    for q in questions:
        if not q.answerable:
            continue
        for name, per_question in results.items():
            found = per_question.get(q.financebench_id)
            if found is None:
                continue
            rows.append(
                {
                    "id": q.financebench_id,
                    "kind": kind(q),
                    "retriever": name,
                    **{f"page_hit@{k}": bool(page_hit(q, list(found.ranked), k)) for k in ks},
                    "reciprocal_rank": reciprocal_rank(q, found.ranked) or 0.0,
                    "candidate_hit": (
                        bool(page_hit(q, list(found.candidates), len(found.candidates))) if found.candidates else None
                    ),
                }
            )
    return rows


def rates_table(rows: Sequence[Mapping[str, Any]], *, ks: Iterable[int], by: str = "kind") -> Any:
    """Aggregate `question_rows` per ``by`` group and retriever: page-hit@k, its 95% interval and its verdict, MRR.

    For each k, ``ci95@k`` is the Wilson interval of page-hit@k and ``vs_best@k`` says ``best``, ``tie``
    (inside the best retriever's interval in that group: the data cannot separate them) or ``below``.
    ``candidate_recall@12`` is computed from each retriever's own candidates, and left empty for a retriever
    that has none. The ``all`` rows pool every group.
    """
    import pandas as pd

    ks = tuple(ks)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row[by]), []).append(row)
    groups["all"] = list(rows)
    table = []
    for group, members in groups.items():
        per: dict[str, list[Mapping[str, Any]]] = {}
        for row in members:
            per.setdefault(row["retriever"], []).append(row)
        verdicts = {
            k: rate_verdicts({name: (sum(r[f"page_hit@{k}"] for r in part), len(part)) for name, part in per.items()})
            for k in ks
        }
        for name, part in per.items():
            n = len(part)
            line: dict[str, Any] = {by: group, "retriever": name, "questions": n}
            for k in ks:
                hits = sum(bool(r[f"page_hit@{k}"]) for r in part)
                low, high = wilson_interval(hits, n)
                line[f"page_hit@{k}"] = round(hits / n, 3)
                line[f"ci95@{k}"] = f"[{low:.2f}, {high:.2f}]"
                line[f"vs_best@{k}"] = verdicts[k][name]
            line["mrr"] = round(sum(r["reciprocal_rank"] for r in part) / n, 3)
            staged = [r["candidate_hit"] for r in part if r["candidate_hit"] is not None]
            line[f"candidate_recall@{CANDIDATES}"] = round(sum(staged) / len(staged), 3) if staged else None
            table.append(line)
    frame = pd.DataFrame(table).set_index([by, "retriever"])
    return frame.astype({f"candidate_recall@{CANDIDATES}": "Float64"})


def retrieval_by_kind(
    questions: Iterable[FilingQuestion],
    results: Mapping[str, Mapping[str, Retrieval]],
    *,
    ks: Iterable[int] = (1, 3, 5, 12),
    kind: Callable[[FilingQuestion], str] = question_type,
) -> Any:
    """Return page-hit@k (with its interval and verdict) and MRR per question kind and retriever (`rates_table`).

    Only questions with labelled evidence count; the ``all`` rows pool every kind. ``candidate_recall@12``
    is a rerank's ceiling, from its own candidates; FAISS alone and the hybrid have no candidate stage.
    """
    ks = tuple(ks)
    return rates_table(question_rows(questions, results, ks=ks, kind=kind), ks=ks)


def head_to_head(
    questions: Iterable[FilingQuestion],
    results: Mapping[str, Mapping[str, Retrieval]],
    *,
    k: int = 5,
    kind: Callable[[FilingQuestion], str] = question_type,
) -> Any:
    """Return one row per labelled question: page-hit@k for each retriever and the evidence page's FAISS rank.

    ``faiss_rank_in_12`` is the rank of the first evidence chunk among FAISS's 12 candidates (the rerank's),
    empty when no candidate is on an evidence page: there no rerank can find it.
    """
    import pandas as pd

    staged = next((per for per in results.values() if any(r.candidates for r in per.values())), {})
    rows = []
    for q in questions:
        if not q.answerable:
            continue
        row: dict[str, Any] = {"id": q.financebench_id, "kind": kind(q), "doc_name": q.doc_name}
        for name, per_question in results.items():
            if q.financebench_id in per_question:
                row[name] = bool(page_hit(q, list(per_question[q.financebench_id].ranked), k))
        first = staged.get(q.financebench_id)
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
