"""The filings, their loader and the persistent FAISS index with its descriptor."""

from __future__ import annotations

import json
import shutil

import pytest
from pypdf import PdfReader

from labkit.errors import FixtureOverwriteRefused
from labkit.rag.filings import filings_dir, write_filings
from labkit.rag.index import (
    ALT_CHUNKING,
    FilingsError,
    IndexDescriptorMismatch,
    build_index,
    expected_settings,
    load_filings,
    load_index,
    load_manifest,
    open_index,
    save_index,
)

DOCS = {"ACME_2024_10K", "ACME_2025_10K"}


@pytest.fixture(scope="module")
def index():
    return build_index(DOCS)


def test_regenerated_filings_are_byte_identical_to_the_committed_ones(tmp_path):
    for path in write_filings(tmp_path):
        assert path.read_bytes() == (filings_dir() / path.name).read_bytes(), path.name


def test_loader_reads_only_the_named_documents_with_one_based_pages():
    pages = load_filings({"CORVID_2025_10K"})
    assert {p.metadata["doc_name"] for p in pages} == {"CORVID_2025_10K"}
    assert [p.metadata["source_page"] for p in pages] == list(range(1, 26))
    assert pages[9].metadata == {
        "doc_name": "CORVID_2025_10K",
        "company": "Corvid Freight Systems, Inc.",
        "period": 2025,
        "source_page": 10,
    }
    reader = PdfReader(filings_dir() / "CORVID_2025_10K.pdf")
    assert pages[9].page_content == reader.pages[9].extract_text()  # parser page 9 is source_page 10


def test_an_unknown_document_is_refused():
    with pytest.raises(FilingsError, match="no filing named"):
        load_filings({"NOPE_2024_10K"})


def test_a_manifest_naming_a_document_twice_is_refused(tmp_path):
    folder = tmp_path / "filings"
    shutil.copytree(filings_dir(), folder, ignore=shutil.ignore_patterns("embeddings.json"))
    data = json.loads((folder / "filings.json").read_text())
    data["documents"].append(dict(data["documents"][0], file="ACME_2025_10K.pdf"))
    (folder / "filings.json").write_text(json.dumps(data))
    with pytest.raises(FilingsError, match="distinct"):
        load_manifest(folder)


def test_a_changed_pdf_is_refused(tmp_path):
    folder = tmp_path / "filings"
    shutil.copytree(filings_dir(), folder, ignore=shutil.ignore_patterns("embeddings.json"))
    with (folder / "ACME_2024_10K.pdf").open("ab") as f:
        f.write(b"\n% edited\n")
    with pytest.raises(FilingsError, match="no longer matches"):
        load_manifest(folder)


def test_saved_index_loads_back_with_the_same_search_results(index, tmp_path):
    save_index(index, tmp_path / "idx")
    expected = index.descriptor.settings()
    loaded = load_index(tmp_path / "idx", expected=expected)
    assert loaded.descriptor == index.descriptor
    question = "How much did Acme spend on property and equipment in FY2024, in USD millions?"
    before = [(d.metadata, s) for d, s in index.store.similarity_search_with_score(question, k=12)]
    after = [(d.metadata, s) for d, s in loaded.store.similarity_search_with_score(question, k=12)]
    assert before == after


@pytest.mark.parametrize(
    "field, value",
    [
        ("chunk_size", ALT_CHUNKING[0]),
        ("chunk_overlap", 0),
        ("embedding_model", "another-model"),
    ],
)
def test_loading_with_other_settings_refuses_the_descriptor_mismatch(index, tmp_path, field, value):
    save_index(index, tmp_path / "idx")
    expected = index.descriptor.settings() | {field: value}
    with pytest.raises(IndexDescriptorMismatch, match=field):
        load_index(tmp_path / "idx", expected=expected)


def test_loading_for_other_documents_refuses(index, tmp_path):
    save_index(index, tmp_path / "idx")
    expected = expected_settings(
        DOCS | {"CORVID_2025_10K"}, chunk_size=800, chunk_overlap=100, embedding_model=index.descriptor.embedding_model
    )
    with pytest.raises(IndexDescriptorMismatch, match="documents"):
        load_index(tmp_path / "idx", expected=expected)


def test_edited_saved_chunks_are_refused(index, tmp_path):
    folder = save_index(index, tmp_path / "idx")
    chunks = json.loads((folder / "chunks.json").read_text())
    chunks.reverse()
    (folder / "chunks.json").write_text(json.dumps(chunks))
    with pytest.raises(IndexDescriptorMismatch, match="chunk-id hash"):
        load_index(folder, expected=index.descriptor.settings())


def test_open_index_saves_under_scratch_then_loads(scratch_in_tmp):
    first = open_index(DOCS)
    assert (scratch_in_tmp / "filings-index-800-100" / "descriptor.json").is_file()
    again = open_index(DOCS)
    assert again.descriptor == first.descriptor


def test_the_generator_refuses_a_folder_a_captured_run_depends_on():
    from labkit.rag.filings import guard_captured
    from labkit.recording import verify_runs

    captured = [
        run
        for _, run, _ in verify_runs()
        if run is not None and run.origin == "captured" and any(f.startswith("fixtures/filings/") for f in run.fixtures)
    ]
    if not captured:
        pytest.skip("no captured run depends on fixtures/filings yet")
    with pytest.raises(FixtureOverwriteRefused):
        guard_captured(filings_dir())  # what write_filings checks before writing anything


def test_every_chunk_at_both_sizes_and_every_question_has_a_saved_vector():
    from labkit.rag.index import embedding_texts, saved_vectors

    texts, path = embedding_texts()
    saved = saved_vectors()
    assert path.name == "embeddings.json"
    assert [t for t in texts if t not in saved] == []
    assert len(saved) == len(texts)  # and nothing stale is kept


def test_open_index_keys_its_cache_by_settings_documents_and_code(scratch_in_tmp):
    from labkit.rag.index import cache_key, cached_index_is_current, index_folder

    first = open_index(DOCS)
    folder = index_folder(800, 100)
    expected = first.descriptor.settings()
    assert cached_index_is_current(folder, expected)
    assert (folder / "cache-key.txt").read_text().strip() == cache_key(expected)
    assert not cached_index_is_current(folder, expected | {"chunk_overlap": 99})


def test_a_cached_index_built_by_other_code_is_built_again(scratch_in_tmp, monkeypatch):
    from labkit.rag import index as index_module

    open_index(DOCS)
    folder = index_module.index_folder(800, 100)
    chunks = json.loads((folder / "chunks.json").read_text())
    for chunk in chunks:  # what a zero-based page bug would have cached
        chunk["metadata"]["source_page"] -= 1
    (folder / "chunks.json").write_text(json.dumps(chunks))
    monkeypatch.setattr(index_module, "builder_sha256", lambda: "0" * 64)  # the code has changed since
    rebuilt = open_index(DOCS)
    assert rebuilt.chunks[0].metadata["source_page"] == 1
    assert json.loads((folder / "chunks.json").read_text())[0]["metadata"]["source_page"] == 1


def test_a_cache_without_a_key_is_not_trusted(scratch_in_tmp):
    from labkit.rag.index import cached_index_is_current, index_folder

    index = open_index(DOCS)
    (index_folder(800, 100) / "cache-key.txt").unlink()
    assert not cached_index_is_current(index_folder(800, 100), index.descriptor.settings())


def test_the_builder_hash_follows_the_source_of_the_index_code(tmp_path, monkeypatch):
    from labkit.paths import project_root
    from labkit.rag import index as index_module

    shutil.copytree(project_root() / "labkit", tmp_path / "labkit", ignore=shutil.ignore_patterns("__pycache__"))
    copy = tmp_path / "labkit" / "rag" / "index.py"
    monkeypatch.setattr(index_module, "__file__", str(copy))
    before = index_module.builder_sha256()
    copy.write_text(copy.read_text().replace('"source_page": zero_based + 1', '"source_page": zero_based'))
    assert index_module.builder_sha256() != before


def test_a_text_repeated_on_one_page_keeps_both_chunks_with_distinct_ids(tmp_path):
    from langchain_core.documents import Document

    from labkit.rag.index import chunk_ids

    meta = {"doc_name": "ACME_2025_10K", "source_page": 3}
    same = [Document(page_content="Amounts are in millions.", metadata=meta) for _ in range(3)]
    other = Document(page_content="Amounts are in millions.", metadata=meta | {"source_page": 4})
    ids = chunk_ids([*same, other])
    assert len(set(ids)) == 4
    assert ids[1] == ids[0] + "~2" and ids[2] == ids[0] + "~3"
    assert "~" not in ids[3]  # the same text on another page is another citation, so another id already
