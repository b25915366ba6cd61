"""Bring your own filings: measure the three retrievers on a folder laid out as FinanceBench's repository.

FinanceBench (Islam et al. 2023, ``patronus-ai/financebench``) publishes its questions and document list as
JSON Lines under ``data/`` and the filings as ``pdfs/<doc_name>.pdf``. This module reads that layout with no
hand-written manifest: every FinanceBench document name (10-K, 10-Q, 8-K with its date, earnings release,
annual report; mixed case; underscores inside a company) is parsed, encrypted PDFs open (pypdf with
``cryptography``), parsed pages are cached per PDF hash, and the index is cached per (documents, chunking,
embedding model) with its descriptor. Text no saved vectors hold needs live embeddings (the ``embed``
extra); a test may inject any LangChain ``Embeddings`` with ``model`` and ``dimension``.

    python -m labkit.rag.financebench DIR --k 1 3 5 12

prints page-hit@k per retriever and per question kind for the questions whose PDFs are present, with one
store per document (``single-document``) and one store over all of them (``shared``).
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from labkit.canonical import canonical_sha256, file_sha256, load_strict, loads_strict, pretty_json, read_strict_bytes
from labkit.errors import LabkitError
from labkit.rag.index import (
    CHUNKING,
    DISTANCE,
    DOC_NAME_PATTERN,
    INDEX_FORMAT,
    FilingsIndex,
    index_pages,
    load_index,
    save_index,
)
from labkit.rag.questions import FilingQuestion, load_questions

QUESTIONS_FILE = Path("data") / "financebench_open_source.jsonl"
DOCUMENTS_FILE = Path("data") / "financebench_document_information.jsonl"
PDF_FOLDER = Path("pdfs")
KINDS = ("10K", "10Q", "8K", "EARNINGS", "annualreport")


class FinanceBenchError(LabkitError, ValueError):
    """A folder is not laid out as FinanceBench's repository, or a document name is not one of its forms."""


@dataclass(frozen=True)
class DocName:
    """The parts of a FinanceBench document name."""

    name: str
    """The name as written, such as ``AMCOR_2022_8K_dated-2022-07-01``."""
    company: str
    """The company part, underscores kept (``JOHNSON_JOHNSON``)."""
    year: int
    """The year in the name."""
    quarter: int | None
    """The quarter of a 10-Q or an earnings release (``2023Q2``), if the name has one."""
    kind: str
    """One of `KINDS`."""
    dated: str | None
    """An 8-K's date (``2022-07-01``), if the name has one."""


def parse_doc_name(name: str) -> DocName:
    """Parse a FinanceBench document name; raise `FinanceBenchError` naming the accepted forms otherwise."""
    match = re.fullmatch(DOC_NAME_PATTERN, name)
    if not match:
        raise FinanceBenchError(
            f"{name!r} is not a FinanceBench document name; expected COMPANY_YEAR[Qn]_KIND[_dated-YYYY-MM-DD] with "
            f"KIND one of {', '.join(KINDS)}, e.g. 3M_2018_10K, Pfizer_2023Q2_10Q, AMCOR_2022_8K_dated-2022-07-01"
        )
    quarter = match["quarter"]
    return DocName(
        name=name,
        company=match["company"],
        year=int(match["year"]),
        quarter=int(quarter) if quarter else None,
        kind=match["kind"],
        dated=match["dated"],
    )


@dataclass
class FinanceBenchFolder:
    """A FinanceBench-style folder: its questions, its document list and the PDFs present."""

    root: Path
    questions: list[FilingQuestion]
    """Every question in the questions file, in file order."""
    documents: dict[str, dict[str, Any]]
    """doc_name -> its line of the document-information file (empty when the file is absent)."""
    pdfs: dict[str, Path] = field(default_factory=dict)
    """doc_name -> PDF path, for every PDF present."""

    def present(self) -> list[FilingQuestion]:
        """The questions whose own document's PDF is present."""
        return [q for q in self.questions if q.doc_name in self.pdfs]

    def absent(self) -> list[str]:
        """The documents questions ask about whose PDFs are missing, sorted."""
        return sorted({q.doc_name for q in self.questions} - set(self.pdfs))

    def metadata(self, doc_name: str) -> dict[str, Any]:
        """Return company and period of a document: from the document list, else from its name."""
        parsed = parse_doc_name(doc_name)
        info = self.documents.get(doc_name, {})
        company = info.get("company") or parsed.company.replace("_", " ")
        period = info.get("doc_period") or parsed.year
        return {"doc_name": doc_name, "company": company, "period": period, "doc_type": parsed.kind}


def _read_jsonl(path: Path) -> list[Any]:
    lines = read_strict_bytes(path, max_bytes=200_000_000).decode("utf-8").splitlines()
    return [loads_strict(line, source=f"{path}:{n}") for n, line in enumerate(lines, 1) if line.strip()]


def open_folder(root: str | Path) -> FinanceBenchFolder:
    """Read a FinanceBench-style folder: ``data/*.jsonl`` and ``pdfs/*.pdf``; refuse another layout clearly."""
    root = Path(root)
    questions_path = root / QUESTIONS_FILE
    if not questions_path.is_file():
        raise FinanceBenchError(
            f"{root} has no {QUESTIONS_FILE.as_posix()}; point at a clone of patronus-ai/financebench "
            "(the folder holding data/ and pdfs/)"
        )
    questions = load_questions(questions_path, distinct_text=False)
    documents: dict[str, dict[str, Any]] = {}
    if (root / DOCUMENTS_FILE).is_file():
        for line in _read_jsonl(root / DOCUMENTS_FILE):
            if not isinstance(line, dict) or not isinstance(line.get("doc_name"), str):
                raise FinanceBenchError(f"{root / DOCUMENTS_FILE}: every line must be an object with a doc_name")
            documents[line["doc_name"]] = line
    for q in questions:
        parse_doc_name(q.doc_name)
    pdfs = {}
    for path in sorted((root / PDF_FOLDER).glob("*.pdf")) if (root / PDF_FOLDER).is_dir() else []:
        parse_doc_name(path.stem)
        pdfs[path.stem] = path
    return FinanceBenchFolder(root, questions, documents, pdfs)


# --- parsing, cached per PDF ----------------------------------------------------------------------------


def _progress(items: Any, *, desc: str, unit: str, total: int | None = None, enabled: bool = True) -> Any:
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit=unit, total=total, disable=not enabled, leave=False)


def load_pages(pdf: Path, metadata: dict[str, Any], *, cache: Path, progress: bool = True) -> list[Any]:
    """Return a PDF's pages as LangChain documents with one-based ``source_page``; parse once, then use the cache.

    Encrypted PDFs with an empty password open (pypdf needs ``cryptography`` for AES). The cache file is
    named by the PDF's SHA-256, so a changed PDF is parsed again.
    """
    from langchain_core.documents import Document

    digest = file_sha256(pdf)
    cached = cache / "pages" / f"{digest}.json"
    if cached.is_file():
        texts, _ = load_strict(cached, max_bytes=200_000_000)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from langchain_community.document_loaders import PyPDFLoader
        from pypdf import PdfReader

        try:
            total = len(PdfReader(pdf).pages)
            loaded = _progress(
                PyPDFLoader(str(pdf)).lazy_load(), desc=f"parse {pdf.stem}", unit="page", total=total, enabled=progress
            )
            texts = [page.page_content for page in loaded]
        except Exception as exc:
            if type(exc).__name__ == "DependencyError" or "cryptography" in str(exc):
                raise FinanceBenchError(
                    f"{pdf.name} is encrypted and pypdf needs the 'cryptography' package to open it; "
                    "reinstall labkit's dependencies (pip install -c constraints.txt -e .)"
                ) from exc
            raise
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(pretty_json(texts), encoding="utf-8")
    return [Document(page_content=text, metadata={**metadata, "source_page": n}) for n, text in enumerate(texts, 1)]


# --- embeddings and the cached index --------------------------------------------------------------------


class LiveEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 computed now (the ``embed`` extra): for text no saved vectors hold."""

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


def index_settings(
    folder: FinanceBenchFolder, doc_names: Iterable[str], *, chunk_size: int, chunk_overlap: int, embedding_model: str
) -> dict[str, Any]:
    """Return the descriptor fields of an index over these documents: what its cache is keyed by."""
    return {
        "format": INDEX_FORMAT,
        "embedding_model": embedding_model,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "documents": {name: file_sha256(folder.pdfs[name]) for name in sorted(set(doc_names))},
        "distance": DISTANCE,
    }


def default_cache() -> Path:
    """Return the scratch folder where parsed pages and indexes are cached."""
    from labkit.paths import scratch_dir

    return scratch_dir() / "financebench"


def open_folder_index(
    folder: FinanceBenchFolder,
    doc_names: Iterable[str],
    *,
    chunk_size: int = CHUNKING[0],
    chunk_overlap: int = CHUNKING[1],
    embeddings: Any = None,
    cache: Path | None = None,
    progress: bool = True,
) -> FilingsIndex:
    """Load the cached index for these documents, chunking and embedding model, or build and cache it.

    The cache folder is named by a hash of the descriptor's settings, so another chunking, model or set
    of PDF bytes gets its own index; a loaded index must match its descriptor exactly.
    """
    doc_names = sorted(set(doc_names))
    missing = [name for name in doc_names if name not in folder.pdfs]
    if missing:
        raise FinanceBenchError(f"no PDF for {missing} under {folder.root / PDF_FOLDER}")
    embeddings = embeddings if embeddings is not None else live_embeddings()
    cache = cache or default_cache()
    settings = index_settings(
        folder, doc_names, chunk_size=chunk_size, chunk_overlap=chunk_overlap, embedding_model=embeddings.model
    )
    target = cache / f"index-{canonical_sha256(settings)[:16]}"
    if (target / "descriptor.json").is_file():
        return load_index(target, expected=settings, embeddings=embeddings)
    pages = [
        page
        for name in _progress(doc_names, desc="documents", unit="doc", enabled=progress and len(doc_names) > 1)
        for page in load_pages(folder.pdfs[name], folder.metadata(name), cache=cache, progress=progress)
    ]

    def bar(batches: Any) -> Any:
        return _progress(batches, desc="embed chunks", unit="batch", enabled=progress)

    index = index_pages(pages, settings=settings, embeddings=embeddings, progress=bar)
    save_index(index, target)
    return index


# --- the measurement --------------------------------------------------------------------------------------


def measure(
    root: str | Path,
    *,
    ks: Sequence[int] = (1, 3, 5, 12),
    chunk_size: int = CHUNKING[0],
    chunk_overlap: int = CHUNKING[1],
    embeddings: Any = None,
    cache: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Return page-hit@k tables per retriever and question kind, for each scope, over the questions with PDFs.

    The result holds ``questions`` (in the file), ``measured`` (own PDF present and evidence labelled),
    ``absent`` (documents without a PDF) and one table per scope: ``single-document`` and ``shared``.
    """
    from labkit.rag.retrievers import retrieval_by_kind, retrieve_all

    folder = open_folder(root)
    present = [q for q in folder.present() if q.answerable]
    if not present:
        raise FinanceBenchError(
            f"none of the {len(folder.questions)} questions has its PDF under {folder.root / PDF_FOLDER}; "
            "put the filings there as <doc_name>.pdf"
        )
    index = open_folder_index(
        folder,
        {q.doc_name for q in present},
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        embeddings=embeddings,
        cache=cache,
        progress=progress,
    )
    tables = {
        scope: retrieval_by_kind(present, retrieve_all(present, index, scope=scope), ks=ks)
        for scope in ("single-document", "shared")
    }
    return {
        "questions": len(folder.questions),
        "measured": len(present),
        "absent": folder.absent(),
        "index": index.descriptor,
        **tables,
    }


def report(result: dict[str, Any]) -> str:
    """Return the measurement as plain text: counts, then one table per scope."""
    descriptor = result["index"]
    lines = [
        f"{result['measured']} of {result['questions']} questions measured (own PDF present, evidence labelled); "
        f"{len(result['absent'])} documents asked about have no PDF.",
        f"index: {len(descriptor.documents)} documents, {descriptor.chunk_count} chunks of {descriptor.chunk_size} "
        f"characters (overlap {descriptor.chunk_overlap}), {descriptor.embedding_model}",
    ]
    for scope in ("single-document", "shared"):
        lines += ["", f"{scope} store: page-hit@k per retriever and question kind", result[scope].to_string()]
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, embeddings: Any = None) -> int:
    """Command line: measure the retrievers on a FinanceBench-style folder and print the tables."""
    parser = argparse.ArgumentParser(prog="python -m labkit.rag.financebench", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a clone of patronus-ai/financebench (holding data/ and pdfs/)")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 12], help="the k values of page-hit@k")
    parser.add_argument("--chunk-size", type=int, default=CHUNKING[0])
    parser.add_argument("--chunk-overlap", type=int, default=CHUNKING[1])
    parser.add_argument("--cache", type=Path, default=None, help="where parsed pages and indexes are cached")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    try:
        result = measure(
            args.folder,
            ks=args.k,
            chunk_size=args.chunk_size,
            chunk_overlap=args.chunk_overlap,
            embeddings=embeddings,
            cache=args.cache,
            progress=not args.quiet,
        )
    except LabkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
