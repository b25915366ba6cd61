"""Search the same 384-dimensional vectors with FAISS and with LangChain's InMemoryVectorStore; print a table.

    .venv/bin/python benchmarks/retrieval.py [--sizes 1000 10000 100000] [--queries 20]

The vectors are random unit vectors from a seeded generator, not embeddings of
text: search cost depends on how many vectors there are and their dimension,
not on what they mean, and 100,000 real chunk embeddings would take far longer
to compute than the benchmark measures. Both stores receive identical vectors
(through an ``Embeddings`` that looks each text's vector up) and answer
identical query vectors for k=12, the candidate count of ``answer_with_rag``.
FAISS is LangChain's ``FAISS`` over ``IndexFlatL2`` (exact search);
InMemoryVectorStore scores every stored vector with cosine similarity in NumPy.
Latency is the median per query, single-threaded on both sides (FAISS and
NumPy's BLAS are held to one thread, so a busy machine does not distort one
side with thread contention). Memory is the vector payload each store keeps:
FAISS's float32 matrix (exact for a flat index), and the Python lists of floats
that InMemoryVectorStore stores per entry (``sys.getsizeof`` of each list and
its float objects, as an embedding model returns fresh ones). Texts and ids,
identical for both, are left out.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import warnings
from typing import Any

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before NumPy loads its BLAS

import faiss  # noqa: E402 -- after the thread settings above, which BLAS reads when it loads
import numpy as np  # noqa: E402 -- as above
from langchain_core.embeddings import Embeddings  # noqa: E402 -- as above

DIMENSION = 384
K = 12


class LookupEmbeddings(Embeddings):
    """Returns the pre-drawn vector of each text; used so both stores index exactly the same vectors."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in self.vectors[t]] for t in texts]  # fresh floats, as a model returns

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def payload_mb(kind: str, store: Any) -> float:
    """The vector payload a store keeps, in MB (see the module docstring)."""
    if kind == "faiss":
        return store.index.ntotal * store.index.d * 4 / 1e6
    total = 0
    for entry in store.store.values():
        vector = entry["vector"]
        total += sys.getsizeof(vector) + sum(sys.getsizeof(x) for x in vector)
    return total / 1e6


def unit_vectors(n: int, *, seed: int) -> np.ndarray:
    """Return ``n`` random unit vectors of `DIMENSION` floats (float32)."""
    matrix = np.random.default_rng(seed).standard_normal((n, DIMENSION)).astype("float32")
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


with warnings.catch_warnings():  # imported before any timing, so no row pays for an import
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.vectorstores import FAISS
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402 -- as above, before any timing


def build(kind: str, texts: list[str], embeddings: LookupEmbeddings) -> tuple[Any, float, float]:
    """Build one store; return it, its build seconds and its vector payload in MB."""
    gc.collect()
    start = time.perf_counter()
    store: Any
    if kind == "faiss":
        store = FAISS.from_embeddings(list(zip(texts, embeddings.embed_documents(texts), strict=True)), embeddings)
    else:
        store = InMemoryVectorStore(embeddings)
        store.add_texts(texts)
    return store, time.perf_counter() - start, payload_mb(kind, store)


def median_query_ms(store: Any, queries: np.ndarray) -> tuple[float, list[list[str]]]:
    """Median milliseconds of a k=12 search by vector, and the texts each query found."""
    times, found = [], []
    for q in queries:
        start = time.perf_counter()
        docs = store.similarity_search_by_vector(q.tolist(), k=K)
        times.append(time.perf_counter() - start)
        found.append([d.page_content for d in docs])
    return 1000 * statistics.median(times), found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    warm = LookupEmbeddings({f"w{i}": v.tolist() for i, v in enumerate(unit_vectors(16, seed=0))})
    for kind in ("faiss", "memory"):  # first use allocates thread pools and caches; keep that out of the rows
        median_query_ms(build(kind, list(warm.vectors), warm)[0], unit_vectors(2, seed=1))
    print(
        "| chunks | FAISS query (ms) | InMemory query (ms) | InMemory / FAISS | FAISS build (s) | InMemory build (s) "
        "| FAISS memory (MB) | InMemory memory (MB) | same top-12 |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in args.sizes:
        matrix = unit_vectors(n, seed=n)
        texts = [f"chunk-{i:06d}" for i in range(n)]
        embeddings = LookupEmbeddings({t: v.tolist() for t, v in zip(texts, matrix, strict=True)})
        queries = unit_vectors(args.queries, seed=n + 1)
        row = {}
        for kind in ("faiss", "memory"):
            store, build_s, memory_mb = build(kind, texts, embeddings)
            latency_ms, found = median_query_ms(store, queries)
            row[kind] = (latency_ms, build_s, memory_mb, found)
            del store
        same = all(set(a) == set(b) for a, b in zip(row["faiss"][3], row["memory"][3], strict=True))
        print(
            f"| {n:,} | {row['faiss'][0]:.3f} | {row['memory'][0]:.3f} | {row['memory'][0] / row['faiss'][0]:.1f}x "
            f"| {row['faiss'][1]:.2f} | {row['memory'][1]:.2f} | {row['faiss'][2]:.1f} | {row['memory'][2]:.1f} "
            f"| {'yes' if same else 'no'} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
