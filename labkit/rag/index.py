"""The filings loader and the persistent FAISS index, with a descriptor that refuses a mismatched load.

`load_filings` reads only the documents the questions reference (``PyPDFLoader``,
one LangChain ``Document`` per page) and attaches ``doc_name``, ``company``,
``period`` and one-based ``source_page`` (the parser's zero-based page plus one)
before chunking. `build_index` splits the pages and indexes the chunks in
LangChain's ``FAISS`` over saved real vectors. `save_index` writes the FAISS
index, the chunks and a descriptor (embedding model, chunk size, overlap,
documents, a hash of the ordered chunk ids) under the scratch folder;
`load_index` refuses a descriptor that does not match what the caller asks for.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.canonical import canonical_sha256, file_sha256, load_strict, pretty_json
from labkit.embeddings import SavedEmbeddings, register_embedding_set
from labkit.errors import LabkitError
from labkit.paths import relative_to_root, scratch_dir

EMBEDDING_SET = "filings"
#: The baseline chunking, as in the book's minimal system; `ALT_CHUNKING` is the experiment's other size.
CHUNKING = (800, 100)
ALT_CHUNKING = (300, 50)
INDEX_FORMAT = "labkit-filings-index/1"
#: The files (under labkit/) whose code decides what a built index holds; a cached index is keyed by their hash.
_BUILDER_SOURCES = ("rag/index.py", "embeddings.py", "canonical.py")
_CACHE_KEY_FILE = "cache-key.txt"
#: FAISS's flat L2 index returns squared Euclidean distances: smaller is closer.
DISTANCE = "squared L2 (FAISS IndexFlatL2)"
#: How many chunks are embedded per call (and per step of a progress bar).
EMBED_BATCH = 64


class FilingsError(LabkitError, ValueError):
    """The filings manifest is malformed, names a document twice, or a PDF no longer matches it."""


class IndexDescriptorMismatch(LabkitError, ValueError):
    """A saved index was built with other settings or documents than the caller asked for."""


#: A document name as FinanceBench writes it: company (mixed case, underscores allowed), year, an optional
#: quarter, the kind of document, and for an 8-K its date: ``3M_2023Q2_10Q``, ``JOHNSON_JOHNSON_2022_10K``,
#: ``AMCOR_2022_8K_dated-2022-07-01``, ``AMCOR_2023Q4_EARNINGS``, ``AMD_2022_annualreport``.
DOC_NAME_PATTERN = (
    r"^(?P<company>[A-Za-z0-9][A-Za-z0-9&.\-]*(?:_[A-Za-z0-9&.\-]+)*?)_(?P<year>\d{4})(?:Q(?P<quarter>[1-4]))?"
    r"_(?P<kind>10K|10Q|8K|EARNINGS|annualreport)(?:_dated-(?P<dated>\d{4}-\d{2}-\d{2}))?$"
)


class ManifestEntry(BaseModel):
    """One filing in ``filings.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    doc_name: str = Field(pattern=DOC_NAME_PATTERN, description="FinanceBench-style name, e.g. ACME_2025_10K.")
    company: str = Field(min_length=1, description="The company's name.")
    period: int = Field(ge=1900, le=2100, description="The fiscal year the filing covers.")
    file: str = Field(pattern=r"^[A-Za-z0-9_.&\-]+\.pdf$", description="The PDF's file name in the same folder.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the PDF's bytes.")


def filings_folder() -> Path:
    """Return the folder of the committed filings."""
    from labkit.rag.filings import filings_dir

    return filings_dir()


def load_manifest(folder: Path | None = None) -> dict[str, ManifestEntry]:
    """Read ``filings.json``; refuse a malformed entry, a repeated document name or file, or a changed PDF."""
    folder = folder or filings_folder()
    data, _ = load_strict(folder / "filings.json")
    if not isinstance(data, dict) or set(data) != {"documents"} or not isinstance(data["documents"], list):
        raise FilingsError(f"{folder / 'filings.json'}: expected an object with one key 'documents' holding a list")
    entries: dict[str, ManifestEntry] = {}
    files: set[str] = set()
    for number, item in enumerate(data["documents"]):
        try:
            entry = ManifestEntry.model_validate(item)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            raise FilingsError(
                f"filings.json document {number}: {'.'.join(map(str, err['loc']))}: {err['msg']}"
            ) from None
        if entry.doc_name in entries or entry.file in files:
            raise FilingsError(
                f"filings.json names {entry.doc_name!r} or {entry.file!r} twice; document names must be distinct"
            )
        if file_sha256(folder / entry.file) != entry.sha256:
            raise FilingsError(
                f"{entry.file} no longer matches its hash in filings.json; regenerate the filings "
                "with `python -m labkit.rag.filings` or restore the file from git"
            )
        entries[entry.doc_name] = entry
        files.add(entry.file)
    return entries


def load_filings(doc_names: list[str] | set[str], *, folder: Path | None = None) -> list[Any]:
    """Load the pages of the named filings, each with doc_name, company, period and one-based source_page."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.document_loaders import PyPDFLoader
    from langchain_core.documents import Document

    folder = folder or filings_folder()
    manifest = load_manifest(folder)
    unknown = sorted(set(doc_names) - set(manifest))
    if unknown:
        raise FilingsError(f"no filing named {unknown}; the manifest lists {sorted(manifest)}")
    pages = []
    for name in sorted(set(doc_names)):
        entry = manifest[name]
        for page in PyPDFLoader(str(folder / entry.file)).load():
            zero_based = page.metadata["page"]
            pages.append(
                Document(
                    page_content=page.page_content,
                    metadata={
                        "doc_name": name,
                        "company": entry.company,
                        "period": entry.period,
                        "source_page": zero_based + 1,  # one-based, as citations and evaluation labels are
                    },
                )
            )
    return pages


def citation_id(metadata: dict[str, Any]) -> str:
    """Return ``doc_name#p<source_page>`` for a chunk's metadata."""
    return f"{metadata['doc_name']}#p{metadata['source_page']}"


def split_pages(pages: list[Any], *, chunk_size: int, chunk_overlap: int) -> list[Any]:
    """Split pages into chunks that keep their page's metadata; chunks never cross a page."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap).split_documents(pages)


def chunk_id(doc: Any) -> str:
    """Return a chunk's id: its citation id and a hash of its text."""
    return f"{citation_id(doc.metadata)}:{canonical_sha256(doc.page_content)[:12]}"


def chunk_ids(chunks: list[Any]) -> list[str]:
    """Return each chunk's id in order; a text repeated on one page gets ``~2``, ``~3``... on its later copies.

    Real reports repeat text on a page (a column heading, a boilerplate sentence), and a small chunk size can cut
    two identical pieces from it: both stay in the index, told apart by their position on the page.
    """
    seen: dict[str, int] = {}
    ids = []
    for chunk in chunks:
        base = chunk_id(chunk)
        seen[base] = seen.get(base, 0) + 1
        ids.append(base if seen[base] == 1 else f"{base}~{seen[base]}")
    return ids


@register_embedding_set(EMBEDDING_SET)
def embedding_texts() -> tuple[list[str], Path]:
    """Return every text part B embeds (chunks at both chunk sizes, and the questions) and their file."""
    from labkit.rag.questions import load_questions

    questions = load_questions()
    pages = load_filings({q.doc_name for q in questions})
    chunks = [
        c.page_content
        for size, overlap in (CHUNKING, ALT_CHUNKING)
        for c in split_pages(pages, chunk_size=size, chunk_overlap=overlap)
    ]
    return sorted(set(chunks) | {q.question for q in questions}), embeddings_path()


def embeddings_path() -> Path:
    """Return the committed saved-vectors file of part B."""
    return filings_folder() / "embeddings.json"


def saved_vectors() -> SavedEmbeddings:
    """Load part B's saved vectors (without re-deriving the set's texts, which would parse every PDF)."""
    return SavedEmbeddings.load(embeddings_path(), set_name=EMBEDDING_SET)


class IndexDescriptor(BaseModel):
    """What a saved index was built from; loading compares it with what the caller asks for."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str = Field(description="The saved-index format and its version.")
    embedding_model: str = Field(description="The model the vectors come from.")
    chunk_size: int = Field(gt=0, description="RecursiveCharacterTextSplitter chunk size, in characters.")
    chunk_overlap: int = Field(ge=0, description="Its overlap, in characters.")
    documents: dict[str, str] = Field(description="doc_name -> SHA-256 of the PDF indexed.")
    distance: str = Field(description="What faiss_distance measures.")
    chunk_count: int = Field(ge=0, description="How many chunks the index holds.")
    chunk_ids_sha256: str = Field(description="SHA-256 of the ordered chunk ids.")

    def settings(self) -> dict[str, Any]:
        """The fields a caller chooses (everything but the chunk count and hash)."""
        return self.model_dump(exclude={"chunk_count", "chunk_ids_sha256"})


@dataclass
class FilingsIndex:
    """A LangChain FAISS store, the chunks in index order, and the descriptor."""

    store: Any
    chunks: list[Any]
    descriptor: IndexDescriptor


def expected_settings(
    doc_names: list[str] | set[str],
    *,
    chunk_size: int,
    chunk_overlap: int,
    embedding_model: str,
    folder: Path | None = None,
) -> dict[str, Any]:
    """Return the descriptor fields an index must have for these documents and settings."""
    manifest = load_manifest(folder)
    return {
        "format": INDEX_FORMAT,
        "embedding_model": embedding_model,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "documents": {n: manifest[n].sha256 for n in sorted(set(doc_names))},
        "distance": DISTANCE,
    }


def _faiss_store(embeddings: Any, vectors: Any, chunks: list[Any], ids: list[str]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.docstore.in_memory import InMemoryDocstore
        from langchain_community.vectorstores import FAISS

    return FAISS(
        embedding_function=embeddings,
        index=vectors,
        docstore=InMemoryDocstore(dict(zip(ids, chunks, strict=True))),
        index_to_docstore_id=dict(enumerate(ids)),
    )


def build_index(
    doc_names: list[str] | set[str],
    *,
    chunk_size: int = CHUNKING[0],
    chunk_overlap: int = CHUNKING[1],
    embeddings: SavedEmbeddings | None = None,
    folder: Path | None = None,
    pages: list[Any] | None = None,
) -> FilingsIndex:
    """Load, split and index the named filings over saved vectors (FAISS ``IndexFlatL2``).

    ``pages`` (from `load_filings` for the same documents) saves parsing the PDFs again.
    """

    embeddings = embeddings or saved_vectors()
    pages = pages if pages is not None else load_filings(doc_names, folder=folder)
    settings = expected_settings(
        doc_names, chunk_size=chunk_size, chunk_overlap=chunk_overlap, embedding_model=embeddings.model, folder=folder
    )
    return index_pages(pages, settings=settings, embeddings=embeddings)


def index_pages(
    pages: list[Any], *, settings: dict[str, Any], embeddings: Any, progress: Callable[[Any], Any] | None = None
) -> FilingsIndex:
    """Split pages and index the chunks in FAISS ``IndexFlatL2``; ``settings`` are the descriptor's chosen fields.

    ``embeddings`` is any LangChain ``Embeddings`` with a ``dimension``; ``progress`` (such as ``tqdm``)
    wraps the batches of chunks as they are embedded.
    """
    import faiss
    import numpy as np

    chunks = split_pages(pages, chunk_size=settings["chunk_size"], chunk_overlap=settings["chunk_overlap"])
    ids = chunk_ids(chunks)
    texts = [c.page_content for c in chunks]
    batches = [texts[i : i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
    vectors = faiss.IndexFlatL2(embeddings.dimension)
    for batch in progress(batches) if progress else batches:
        vectors.add(np.asarray(embeddings.embed_documents(batch), dtype="float32"))
    descriptor = IndexDescriptor(**settings, chunk_count=len(ids), chunk_ids_sha256=canonical_sha256(ids))
    return FilingsIndex(_faiss_store(embeddings, vectors, chunks, ids), chunks, descriptor)


def index_folder(chunk_size: int, chunk_overlap: int) -> Path:
    """Return the scratch folder of the saved index for these chunk settings."""
    return scratch_dir() / f"filings-index-{chunk_size}-{chunk_overlap}"


def save_index(index: FilingsIndex, folder: Path) -> Path:
    """Write the FAISS index, the chunks (JSON, no pickle) and the descriptor to ``folder``."""
    import faiss

    folder.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index.store.index, str(folder / "index.faiss"))
    ids = chunk_ids(index.chunks)
    chunks = [{"id": i, "text": c.page_content, "metadata": c.metadata} for i, c in zip(ids, index.chunks, strict=True)]
    (folder / "chunks.json").write_text(pretty_json(chunks), encoding="utf-8")
    (folder / "descriptor.json").write_text(pretty_json(index.descriptor.model_dump()), encoding="utf-8")
    return folder


def load_index(folder: Path, *, expected: dict[str, Any], embeddings: SavedEmbeddings | None = None) -> FilingsIndex:
    """Load a saved index, refusing it unless its descriptor has exactly the ``expected`` settings."""
    import faiss
    from langchain_core.documents import Document

    data, _ = load_strict(folder / "descriptor.json")
    descriptor = IndexDescriptor.model_validate(data)
    differing = sorted(
        k for k in set(expected) | set(descriptor.settings()) if expected.get(k) != descriptor.settings().get(k)
    )
    if differing:
        detail = "; ".join(f"{k}: saved {descriptor.settings().get(k)!r}, asked {expected.get(k)!r}" for k in differing)
        raise IndexDescriptorMismatch(
            f"the index saved in {relative_to_root(folder)} was built with other settings ({detail}). "
            "Build a new index with these settings, or ask for the saved ones."
        )
    chunks_data, _ = load_strict(folder / "chunks.json", max_bytes=50_000_000)
    ids = [c["id"] for c in chunks_data]
    if canonical_sha256(ids) != descriptor.chunk_ids_sha256 or len(ids) != descriptor.chunk_count:
        raise IndexDescriptorMismatch(
            f"{relative_to_root(folder)}: the saved chunks do not match the descriptor's "
            "chunk-id hash; delete the folder and build the index again"
        )
    vectors = faiss.read_index(str(folder / "index.faiss"))
    if vectors.ntotal != len(ids):
        raise IndexDescriptorMismatch(
            f"{relative_to_root(folder)}: the FAISS index holds {vectors.ntotal} vectors "
            f"for {len(ids)} chunks; delete the folder and build the index again"
        )
    chunks = [Document(page_content=c["text"], metadata=c["metadata"]) for c in chunks_data]
    embeddings = embeddings or saved_vectors()
    return FilingsIndex(_faiss_store(embeddings, vectors, chunks, ids), chunks, descriptor)


def builder_sha256() -> str:
    """Return a SHA-256 of the source of the code that builds an index, so a code change invalidates a cached one."""
    return canonical_sha256({name: file_sha256(Path(__file__).parent.parent / name) for name in _BUILDER_SOURCES})


def cache_key(expected: dict[str, Any]) -> str:
    """Return the key a cached index is stored under: its settings and documents, and the code that built it."""
    return canonical_sha256({"settings": expected, "builder_sha256": builder_sha256()})


def cached_index_is_current(folder: Path, expected: dict[str, Any]) -> bool:
    """Tell whether ``folder`` holds an index saved by `open_index` for exactly these settings and this code."""
    key_file = folder / _CACHE_KEY_FILE
    if not (folder / "descriptor.json").is_file() or not key_file.is_file():
        return False
    return key_file.read_text(encoding="utf-8").strip() == cache_key(expected)


def open_index(
    doc_names: list[str] | set[str],
    *,
    chunk_size: int = CHUNKING[0],
    chunk_overlap: int = CHUNKING[1],
    embeddings: SavedEmbeddings | None = None,
    pages: list[Any] | None = None,
) -> FilingsIndex:
    """Load the cached index for these settings from the scratch folder, building and saving it when there is none.

    The cache is keyed by the settings, the documents' hashes and a hash of the code that builds an
    index (`cache_key`): an index saved by other code or for other settings is a stale cache, built again.
    """
    embeddings = embeddings or saved_vectors()
    folder = index_folder(chunk_size, chunk_overlap)
    expected = expected_settings(
        doc_names, chunk_size=chunk_size, chunk_overlap=chunk_overlap, embedding_model=embeddings.model
    )
    if cached_index_is_current(folder, expected):
        return load_index(folder, expected=expected, embeddings=embeddings)
    index = build_index(
        doc_names, chunk_size=chunk_size, chunk_overlap=chunk_overlap, embeddings=embeddings, pages=pages
    )
    if folder.exists():
        shutil.rmtree(folder)
    save_index(index, folder)
    (folder / _CACHE_KEY_FILE).write_text(cache_key(expected) + "\n", encoding="utf-8")
    return index
