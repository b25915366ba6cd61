"""Measure part B's retrievers on a FinanceBench folder: parse, chunk, embed (all cached), retrieve, grade.

`measure` reads the folder (`labkit.rag.financebench.folder`), keeps the questions whose PDF is present and
whose evidence is labelled, parses their documents' pages and embeds their chunks and the questions once
(`labkit.rag.financebench.cache`), indexes the chunks in FAISS as lesson 02 does
(`labkit.rag.index.index_pages`), runs every retriever of `labkit.rag.retrievers` with one store per
document (``single-document``) and with one store over all of them (``shared``), and returns the
`labkit.rag.financebench.results.FinanceBenchResults` the command writes and prints.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from labkit.canonical import canonical_sha256, file_sha256
from labkit.paths import project_root
from labkit.rag.financebench.cache import CachedEmbeddings, Extraction, ModelEmbeddings, cache_folder, page_texts
from labkit.rag.financebench.context import Context, with_context
from labkit.rag.financebench.folder import PDF_FOLDER, FinanceBenchError, FinanceBenchFolder, open_folder
from labkit.rag.financebench.results import FORMAT, SCOPES, FinanceBenchResults, QuestionResult
from labkit.rag.index import (
    CHUNKING,
    DISTANCE,
    INDEX_FORMAT,
    FilingsIndex,
    IndexDescriptor,
    chunk_ids,
    split_pages,
)
from labkit.rag.questions import FilingQuestion

Progress = Callable[..., Any]


class LiveEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 computed now (the ``embed`` extra): for text no cached vectors hold."""

    def __init__(self) -> None:
        from labkit.embeddings import DIMENSION, MODEL_NAME, require_embed_extra

        require_embed_extra()  # MissingExtra naming the embed extra, before any work starts
        self.model = MODEL_NAME
        self.dimension = DIMENSION

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return each text's normalized vector."""
        from labkit.embeddings import compute_embeddings

        return compute_embeddings(texts)

    def embed_query(self, text: str) -> list[float]:
        """Return the query's normalized vector."""
        return self.embed_documents([text])[0]


def live_embeddings() -> LiveEmbeddings:
    """Return live all-MiniLM-L6-v2 embeddings, or raise `MissingExtra` naming the ``embed`` extra."""
    from labkit.errors import MissingExtra

    try:
        return LiveEmbeddings()
    except MissingExtra as exc:
        raise MissingExtra("embed", "Embedding new text (your filings' chunks and questions)") from exc


def labkit_commit() -> str | None:
    """Return the commit of the labkit checkout running this, with ``-dirty`` if its files differ (None outside git)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(project_root()), "describe", "--always", "--dirty", "--abbrev=40"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def no_bar(items: Any, **_: Any) -> Any:
    """A progress wrapper that shows nothing."""
    return items


def terminal_bar(items: Any, **options: Any) -> Any:
    """Wrap ``items`` in a tqdm bar that shows only on a terminal (``disable=None``), so a log stays clean."""
    from tqdm.auto import tqdm

    return tqdm(items, disable=None, leave=False, **options)


def index_chunks(chunks: Sequence[Any], *, settings: dict[str, Any], embeddings: Embeddings) -> FilingsIndex:
    """Index ready-made chunks in LangChain's FAISS (``IndexFlatL2``, as lesson 02's index), with their descriptor."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.vectorstores import FAISS

    texts = [c.page_content for c in chunks]
    ids = chunk_ids(list(chunks))
    store = FAISS.from_embeddings(
        zip(texts, embeddings.embed_documents(texts), strict=True),
        embedding=embeddings,
        metadatas=[c.metadata for c in chunks],
        ids=ids,
    )
    descriptor = IndexDescriptor(**settings, chunk_count=len(ids), chunk_ids_sha256=canonical_sha256(ids))
    return FilingsIndex(store, list(chunks), descriptor)


def _load_documents(
    folder: FinanceBenchFolder, names: Sequence[str], *, cache: Path, extraction: Extraction, progress: Progress
) -> dict[str, list[Any]]:
    from langchain_core.documents import Document

    found = {}
    for name in names:
        meta = folder.metadata(name)
        texts = page_texts(folder.pdfs[name], cache=cache, extraction=extraction, progress=progress)
        found[name] = [
            Document(page_content=text, metadata={**meta, "source_page": n}) for n, text in enumerate(texts, 1)
        ]
    return found


def measure(
    root: str | Path,
    *,
    ks: Sequence[int] = (1, 3, 5, 12),
    chunk_size: int = CHUNKING[0],
    chunk_overlap: int = CHUNKING[1],
    extraction: Extraction = "plain",
    context: Context = "document",
    embeddings: ModelEmbeddings | None = None,
    cache: str | Path | None = None,
    progress: Progress = no_bar,
) -> FinanceBenchResults:
    """Measure every retriever, in both stores, on the questions of ``root`` whose PDF is present.

    ``context`` prefixes every chunk with its filing's company, kind and period (``"document"``), and its
    section heading too (``"section"``), before it is embedded and indexed (`labkit.rag.financebench.context`);
    ``"none"`` indexes the lesson's chunks as they are. ``embeddings`` defaults to live
    all-MiniLM-L6-v2 (the ``embed`` extra); any LangChain ``Embeddings`` with ``model`` and ``dimension``
    will do. Only texts the cache (`cache_folder`) does not hold are embedded.
    """
    from labkit.rag.retrievers import RETRIEVERS, RRF_K, question_rows, question_type, retrieve_all

    started = time.perf_counter()
    ks = sorted(set(ks))
    folder = open_folder(root)
    measured = [q for q in folder.present() if q.answerable]
    if not measured:
        raise FinanceBenchError(
            f"none of the {len(folder.questions)} questions has its PDF under {folder.root / PDF_FOLDER}; "
            "put the filings there as <doc_name>.pdf"
        )
    live: ModelEmbeddings = embeddings if embeddings is not None else live_embeddings()
    cache = cache_folder(cache)
    names = sorted({q.doc_name for q in measured})
    digests = {name: file_sha256(folder.pdfs[name]) for name in names}
    documents = _load_documents(folder, names, cache=cache, extraction=extraction, progress=progress)
    parsed = time.perf_counter()

    store = CachedEmbeddings(live, cache)
    chunks = {}
    for name in names:
        if context == "none":
            chunks[name] = split_pages(documents[name], chunk_size=chunk_size, chunk_overlap=chunk_overlap)
        else:
            chunks[name] = with_context(
                documents[name], chunk_size=chunk_size, chunk_overlap=chunk_overlap, context=context
            )
        store.prefetch([c.page_content for c in chunks[name]], progress=progress, desc=f"embed {name}")
    store.prefetch([q.question for q in measured], progress=progress, desc="embed questions")
    every = [chunk for name in names for chunk in chunks[name]]
    settings = {
        "format": INDEX_FORMAT,
        "embedding_model": store.model,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "documents": digests,
        "distance": DISTANCE,
    }
    index = index_chunks(every, settings=settings, embeddings=store)
    embedded = time.perf_counter()

    graded: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for scope in SCOPES:
        found = retrieve_all(measured, index, scope=scope)
        for row in question_rows(measured, found, ks=ks, kind=question_type):
            graded.setdefault(row["id"], {}).setdefault(scope, []).append(row)
    retrieved = time.perf_counter()

    return FinanceBenchResults(
        format=FORMAT,
        labkit_commit=labkit_commit(),
        settings={
            "chunk_size": chunk_size,
            "chunk_overlap": chunk_overlap,
            "extraction": extraction,
            "context": context,
            "embedding_model": store.model,
            "ks": ks,
            "retrievers": list(RETRIEVERS),
            "candidates": 12,
            "rrf_k": RRF_K,
            "top_k": "distinct pages",
            "scopes": list(SCOPES),
        },
        counts={
            "questions": len(folder.questions),
            "measured": len(measured),
            "skipped_no_pdf": sum(folder.absent().values()),
            "skipped_no_evidence": len([q for q in folder.present() if not q.answerable]),
            "documents_measured": len(names),
        },
        documents={
            name: {
                "pdf": folder.pdfs[name].name,
                "sha256": digests[name],
                "doc_type": folder.metadata(name)["doc_type"],
                "pages": len(documents[name]),
                "chunks": len(chunks[name]),
            }
            for name in names
        },
        absent=folder.absent(),
        names={
            "unknown": folder.unknown_names(),
            "renamed": folder.renamed,
            "repeated_documents": folder.repeated_documents(),
            "unused_pdfs": folder.unused_pdfs(),
        },
        questions=[_question_result(folder, q, graded[q.financebench_id], ks) for q in measured],
        timings={
            "parse_s": round(parsed - started, 2),
            "embed_s": round(embedded - parsed, 2),
            "retrieve_s": round(retrieved - embedded, 2),
            "texts_embedded_now": store.computed,
        },
    )


def _question_result(
    folder: FinanceBenchFolder, q: FilingQuestion, graded: dict[str, list[dict[str, Any]]], ks: Sequence[int]
) -> QuestionResult:
    own = [e.source_page for e in q.evidence if e.doc_name == q.doc_name]
    return QuestionResult(
        financebench_id=q.financebench_id,
        question_type=q.question_type,
        doc_name=q.doc_name,
        doc_type=folder.metadata(q.doc_name)["doc_type"],
        evidence_pages=sorted(set(own)),
        page_hit={
            scope: {row["retriever"]: {str(k): row[f"page_hit@{k}"] for k in ks} for row in rows}
            for scope, rows in graded.items()
        },
        reciprocal_rank={
            scope: {row["retriever"]: round(row["reciprocal_rank"], 4) for row in rows}
            for scope, rows in graded.items()
        },
        candidate_hit={
            scope: {row["retriever"]: row["candidate_hit"] for row in rows if row["candidate_hit"] is not None}
            for scope, rows in graded.items()
        },
    )
