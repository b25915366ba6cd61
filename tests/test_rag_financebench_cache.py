"""Parsed pages and vectors are cached: a PDF is parsed once, a list of texts embedded once per model."""

from __future__ import annotations

import pytest

from labkit.errors import LabkitError
from labkit.rag.financebench import cache as fbcache
from labkit.rag.financebench.cache import CACHE_SETTING, CachedEmbeddings, cache_folder, page_texts
from tests.financebench_folders import DOCUMENTS, ENCRYPTED, HashingEmbeddings, write_pdf


def test_an_encrypted_pdf_opens_and_its_pages_are_parsed_once(tmp_path, monkeypatch):
    from pypdf import PdfReader

    pdf = tmp_path / f"{ENCRYPTED}.pdf"
    write_pdf(pdf, DOCUMENTS[ENCRYPTED], encrypted=True)
    assert PdfReader(pdf).is_encrypted
    texts = page_texts(pdf, cache=tmp_path / "cache")
    assert len(texts) == 2 and "13.99 billion" in texts[0]

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again although the pages are cached")

    monkeypatch.setattr(fbcache, "_parse", no_parsing)
    assert page_texts(pdf, cache=tmp_path / "cache") == texts
    with pytest.raises(AssertionError, match="parsed again"):  # the other extraction mode is another entry
        page_texts(pdf, cache=tmp_path / "cache", extraction="layout")


def test_a_changed_pdf_is_parsed_again(tmp_path):
    pdf = tmp_path / "3M_2018_10K.pdf"
    write_pdf(pdf, ["Revenue was 32.8 billion."])
    assert "32.8 billion" in page_texts(pdf, cache=tmp_path / "cache")[0]
    write_pdf(pdf, ["Revenue was 40.1 billion."])
    assert "40.1 billion" in page_texts(pdf, cache=tmp_path / "cache")[0]


def test_a_list_of_texts_is_embedded_once_and_served_from_the_cache(tmp_path):
    live = HashingEmbeddings()
    first = CachedEmbeddings(live, tmp_path)
    first.prefetch(["capital expenditures", "cash and equivalents"])
    assert (live.calls, first.computed) == (1, 2)
    again = CachedEmbeddings(live, tmp_path)
    again.prefetch(["capital expenditures", "cash and equivalents"])
    assert (live.calls, again.computed) == (1, 0)  # a warm run never asks the model
    assert again.embed_query("capital expenditures") == pytest.approx(live.embed_query("capital expenditures"))
    assert again.embed_documents(["a new text"]) and again.computed == 1  # unknown text: computed, not invented
    assert list((tmp_path / "vectors" / "test-hashing-bag-of-words").glob("*.npy"))


def test_a_cached_file_of_the_wrong_shape_is_refused(tmp_path):
    import numpy as np

    store = CachedEmbeddings(HashingEmbeddings(), tmp_path)
    store.prefetch(["one", "two"])
    (path,) = (tmp_path / "vectors" / "test-hashing-bag-of-words").glob("*.npy")
    np.save(path, np.zeros((3, 64), dtype="float32"))
    with pytest.raises(LabkitError, match="delete it"):
        CachedEmbeddings(HashingEmbeddings(), tmp_path).prefetch(["one", "two"])


def test_the_cache_folder_is_the_setting_else_the_scratch_folder(tmp_path, monkeypatch, scratch_in_tmp):
    monkeypatch.delenv(CACHE_SETTING, raising=False)
    assert cache_folder() == scratch_in_tmp / "financebench"
    monkeypatch.setenv(CACHE_SETTING, str(tmp_path / "kept"))
    assert cache_folder() == tmp_path / "kept"
    assert cache_folder(tmp_path / "given") == tmp_path / "given"
