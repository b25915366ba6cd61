"""The refund-policy PDF: written byte for byte, read with one-based citation ids, split and indexed over saved vectors."""

import json

import pytest

from labkit.embeddings import SavedEmbeddings, UnrecordedText
from labkit.errors import FixtureOverwriteRefused
from labkit.system import policy
from labkit.system.golden import GOLDEN
from labkit.system.policy import (
    CHUNK_OVERLAP,
    CHUNK_SIZE,
    PolicyDocumentError,
    citation_id,
    embeddings_path,
    load_policy_index,
    load_policy_pages,
    policy_path,
    search_refusal,
    split_policy,
    write_policy_pdf,
)


def test_pdf_loader_yields_one_based_citation_ids():
    pages = load_policy_pages()
    assert [p.metadata["page"] for p in pages] == [0, 1]
    assert [p.metadata["citation_id"] for p in pages] == ["refund_policy.pdf#p1", "refund_policy.pdf#p2"]
    assert "Customers can request a refund within 30 days." in pages[0].page_content


def test_citation_id_counts_pages_from_one_and_refuses_a_negative_index():
    assert citation_id(0) == "refund_policy.pdf#p1" and citation_id(11, name="x.pdf") == "x.pdf#p12"
    with pytest.raises(PolicyDocumentError):
        citation_id(-1)


def test_loaded_pages_name_their_source_relative_to_the_project():
    assert {p.metadata["source"] for p in load_policy_pages()} == {"fixtures/system/refund_policy.pdf"}


def test_fixture_script_rewrites_the_committed_pdf_byte_for_byte(tmp_path):
    written = write_policy_pdf(tmp_path / "a")
    again = write_policy_pdf(tmp_path / "b")
    assert written.read_bytes() == again.read_bytes() == policy_path().read_bytes()


def test_fixture_script_refuses_a_folder_holding_a_captured_run(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"origin": "captured"}), encoding="utf-8")
    with pytest.raises(FixtureOverwriteRefused, match="captured run"):
        write_policy_pdf(tmp_path)
    assert not (tmp_path / "refund_policy.pdf").exists()


def test_fixture_script_command_prints_the_hash_and_path(tmp_path, capsys):
    assert policy.main([str(tmp_path)]) == 0
    assert "refund_policy.pdf" in capsys.readouterr().out
    assert policy.main(["--force"]) == 1


def test_a_file_that_is_not_a_pdf_is_refused(tmp_path):
    fake = tmp_path / "refund_policy.pdf"
    fake.write_text("not a PDF at all", encoding="utf-8")
    with pytest.raises(PolicyDocumentError, match="not a readable PDF"):
        load_policy_pages(fake)


def test_a_missing_pdf_is_refused_with_the_command_that_writes_it(tmp_path):
    with pytest.raises(PolicyDocumentError, match=r"python -m labkit\.system\.policy"):
        load_policy_pages(tmp_path / "refund_policy.pdf")


def test_chunks_keep_their_page_citation_id_within_the_splitter_size():
    chunks = split_policy(load_policy_pages())
    assert (CHUNK_SIZE, CHUNK_OVERLAP) == (800, 100)
    assert len(chunks) > 2 and all(len(c.page_content) <= CHUNK_SIZE for c in chunks)
    assert {c.metadata["citation_id"] for c in chunks} == {"refund_policy.pdf#p1", "refund_policy.pdf#p2"}


def test_index_is_faiss_over_the_saved_vectors():
    index = load_policy_index()
    assert type(index.store).__name__ == "FAISS"
    assert index.store.index.ntotal == len(index.chunks)
    best, _ = index.store.similarity_search_with_score("How many days do customers have to request a refund?", k=1)[0]
    assert "within 30 days" in best.page_content and best.metadata["citation_id"] == "refund_policy.pdf#p1"


def test_index_refuses_chunks_that_have_no_saved_vector():
    with pytest.raises(PolicyDocumentError, match="labkit embed system-policy"):
        load_policy_index(embeddings=SavedEmbeddings({}))


def test_a_question_without_a_saved_vector_is_refused_not_guessed():
    index = load_policy_index()
    with pytest.raises(UnrecordedText):
        index.store.similarity_search("Can I get my money back after two months?", k=3)


@pytest.fixture(scope="module")
def index():
    return load_policy_index()


def test_a_search_for_an_unembedded_text_is_refused_naming_the_file_from_the_repository(index):
    refusal = search_refusal(index, "A question nobody embedded")
    assert refusal.startswith("UnrecordedText: no recorded embedding for the text 'A question nobody embedded'")
    assert "fixtures/system/embeddings.json" in refusal and str(embeddings_path()) not in refusal


def test_search_refusal_refuses_to_report_a_text_that_has_a_saved_vector(index):
    with pytest.raises(PolicyDocumentError, match="has a saved vector"):
        search_refusal(index, GOLDEN[0].question)
