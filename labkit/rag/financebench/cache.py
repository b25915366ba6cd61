"""What the FinanceBench command keeps on disk because it is costly to make again: parsed pages and vectors.

A 10-K takes about a CPU-minute to parse and two to embed on a laptop, so both are cached, under
``$LABKIT_FINANCEBENCH_CACHE`` when that is set (CI points it at a folder that outlives the clone), else
under ``scratch/financebench/``:

- ``pages/<pdf sha256>-<extraction>.json``: a PDF's page texts, keyed by its bytes and the extraction mode;
- ``vectors/<model>/<texts sha256>.npy``: the vectors of one ordered list of texts (a document's chunks at
  one chunking, or the questions), keyed by the exact texts, so nothing stale can be served.

Nothing else is cached: FAISS and BM25 over a few thousand vectors are rebuilt in well under a second.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from langchain_core.embeddings import Embeddings

from labkit.canonical import canonical_sha256, file_sha256, load_strict, pretty_json
from labkit.errors import LabkitError
from labkit.paths import atomic_write

CACHE_SETTING = "LABKIT_FINANCEBENCH_CACHE"
#: pypdf's two text extraction modes: ``plain`` (reading order) and ``layout`` (columns kept by position).
Extraction = Literal["plain", "layout"]
#: How many texts are embedded per call (and per step of a progress bar).
EMBED_BATCH = 64


class ModelEmbeddings(Protocol):
    """A LangChain ``Embeddings`` that names its model and the length of its vectors (what a cache is keyed by)."""

    model: str
    dimension: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class EncryptedPdfError(LabkitError, ValueError):
    """An encrypted PDF cannot be opened because pypdf lacks the ``cryptography`` package."""


def cache_folder(folder: str | Path | None = None) -> Path:
    """Return the cache folder: ``folder`` if given, else ``$LABKIT_FINANCEBENCH_CACHE``, else ``scratch/financebench``."""
    from labkit.paths import scratch_dir

    chosen = folder or os.environ.get(CACHE_SETTING)
    return Path(chosen) if chosen else scratch_dir() / "financebench"


def _parse(pdf: Path, extraction: Extraction, progress: Callable[..., Any]) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.document_loaders import PyPDFLoader
    from pypdf import PdfReader

    try:
        total = len(PdfReader(pdf).pages)
        loaded = PyPDFLoader(str(pdf), extraction_mode=extraction).lazy_load()
        return [page.page_content for page in progress(loaded, desc=f"parse {pdf.stem}", unit="page", total=total)]
    except Exception as exc:
        if type(exc).__name__ == "DependencyError" or "cryptography" in str(exc):
            raise EncryptedPdfError(
                f"{pdf.name} is encrypted and pypdf needs the 'cryptography' package to open it; "
                "reinstall labkit's dependencies (pip install -c constraints.txt -e .)"
            ) from exc
        raise


def page_texts(
    pdf: Path, *, cache: Path, extraction: Extraction = "plain", progress: Callable[..., Any] | None = None
) -> list[str]:
    """Return a PDF's page texts in page order: parsed once (pypdf, encrypted PDFs too), then read from the cache."""
    cached = cache / "pages" / f"{file_sha256(pdf)}-{extraction}.json"
    if cached.is_file():
        texts, _ = load_strict(cached, max_bytes=200_000_000)
        return list(texts)
    texts = _parse(pdf, extraction, progress or _no_bar)
    cached.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(cached, pretty_json(texts))
    return texts


def _no_bar(items: Any, **_: Any) -> Any:
    return items


class CachedEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` that serves vectors loaded with `prefetch`, computing only what was never cached.

    ``live`` is the real model (any ``Embeddings`` with ``model`` and ``dimension``); it is asked only for
    texts the cache does not hold, so a warm run never loads it.
    """

    def __init__(self, live: ModelEmbeddings, cache: Path) -> None:
        self.live = live
        self.model = live.model
        self.dimension = live.dimension
        self.folder = cache / "vectors" / self.model.replace("/", "--")
        self.computed = 0
        """How many texts this instance had the live model embed (0 on a warm run)."""
        self._known: dict[str, list[float]] = {}

    def prefetch(
        self, texts: Sequence[str], *, progress: Callable[..., Any] | None = None, desc: str = "embed"
    ) -> None:
        """Load the vectors of this exact list of texts from the cache, or embed it once and save it there."""
        import numpy as np

        texts = list(texts)
        path = self.folder / f"{canonical_sha256(texts)}.npy"
        if path.is_file():
            vectors = np.load(path, allow_pickle=False)
            if vectors.shape != (len(texts), self.dimension):
                raise LabkitError(f"{path} holds vectors of shape {vectors.shape}; delete it to embed the texts again")
        else:
            batches = [texts[i : i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]
            bar = (progress or _no_bar)(batches, desc=desc, unit="batch")
            rows = [vector for batch in bar for vector in self.live.embed_documents(batch)]
            self.computed += len(texts)
            vectors = np.asarray(rows, dtype="float32").reshape(len(texts), self.dimension)
            buffer = io.BytesIO()
            np.save(buffer, vectors, allow_pickle=False)
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(path, buffer.getvalue())
        self._known.update(zip(texts, vectors.tolist(), strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return each text's vector: from the prefetched ones, else from the live model."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        if missing:
            self.computed += len(missing)
            self._known.update(zip(missing, self.live.embed_documents(missing), strict=True))
        return [self._known[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Return the query's vector (prefetch the questions to serve them from the cache)."""
        return self.embed_documents([text])[0]
