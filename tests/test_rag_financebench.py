"""Bring your own filings: a small folder laid out exactly as FinanceBench's repository, measured end to end."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math

import pytest
from langchain_core.embeddings import Embeddings

from labkit.errors import LabkitError, MissingExtra
from labkit.rag import financebench as fb
from labkit.rag.answer import tokens
from labkit.rag.index import ManifestEntry


class HashingEmbeddings(Embeddings):
    """A deterministic stand-in for a real model: a normalized bag of hashed words (tests only)."""

    model = "test-hashing-bag-of-words"
    dimension = 64

    def embed_documents(self, texts):
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text):
        vector = [0.0] * self.dimension
        for token in tokens(text):
            vector[int(hashlib.sha256(token.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]


FILLER = (
    "This page discusses general business conditions, competition, seasonality and the markets the company "
    "serves. Management reviews these matters each quarter with the board and its committees. "
)
#: doc_name -> pages (the fact each page states); ADOBE_2022_10K is written AES-encrypted with an empty password.
DOCUMENTS = {
    "3M_2018_10K": [
        "Item 1. Business. 3M operates four segments including safety and industrial products.",
        "Capital expenditures were 1,577 million dollars for purchases of property, plant and equipment.",
        "Risk factors: raw material prices and foreign currency exchange rates may change.",
    ],
    "Pfizer_2023Q2_10Q": [
        "Quarterly report. Pfizer vaccine revenues declined as pandemic demand fell.",
        "Cash and cash equivalents at quarter end were 2,234 million dollars on the condensed balance sheet.",
    ],
    "AMCOR_2022_8K_dated-2022-07-01": [
        "Current report. Amcor announced that its board approved a share repurchase program.",
        "The buyback authorizes repurchases of up to 400 million dollars of ordinary shares.",
    ],
    "AMCOR_2023Q4_EARNINGS": [
        "Earnings release. Amcor adjusted earnings per share for the fourth quarter were 0.20 dollars.",
        "Outlook: Amcor expects fiscal 2024 adjusted EPS growth between flat and slightly lower.",
    ],
    "JOHNSON_JOHNSON_2022_10K": [
        "Johnson and Johnson research and development expense was 14,603 million dollars in fiscal 2022.",
        "Litigation: talc related claims are described in the legal proceedings note.",
    ],
    "ADOBE_2022_10K": [
        "Adobe digital media annualized recurring revenue grew to 13.99 billion dollars.",
        "Adobe repurchased shares under its stock repurchase authority during the year.",
    ],
}
ENCRYPTED = "ADOBE_2022_10K"
ABSENT = "AMD_2022_annualreport"
#: (id, doc_name, question_type, question, zero-based evidence page)
QUESTIONS = [
    ("financebench_id_00001", "3M_2018_10K", "metrics-generated",
     "What were 3M's capital expenditures for purchases of property, plant and equipment in FY2018?", 1),
    ("financebench_id_00002", "Pfizer_2023Q2_10Q", "metrics-generated",
     "How much cash and cash equivalents did Pfizer hold at the end of the quarter?", 1),
    ("financebench_id_00003", "AMCOR_2022_8K_dated-2022-07-01", "novel-generated",
     "How large is the buyback that Amcor's board authorized for ordinary shares?", 1),
    ("financebench_id_00004", "AMCOR_2023Q4_EARNINGS", "domain-relevant",
     "What adjusted earnings per share did Amcor report for the fourth quarter?", 0),
    ("financebench_id_00005", "JOHNSON_JOHNSON_2022_10K", "domain-relevant",
     "What did Johnson and Johnson spend on research and development expense in fiscal 2022?", 0),
    ("financebench_id_00006", "ADOBE_2022_10K", "novel-generated",
     "What annualized recurring revenue did Adobe's digital media business reach?", 0),
    ("financebench_id_00007", ABSENT, "metrics-generated", "What was AMD's revenue in 2022?", 3),
]  # fmt: skip


def write_pdf(path, pages, *, encrypted=False):
    from fpdf import FPDF
    from fpdf.enums import EncryptionMethod

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 5, FILLER + text + " " + FILLER)
    if encrypted:
        pdf.set_encryption(owner_password="owner", user_password="", encryption_method=EncryptionMethod.AES_128)
    pdf.output(str(path))


def write_financebench_folder(root):
    (root / "data").mkdir(parents=True)
    (root / "pdfs").mkdir()
    for name, pages in DOCUMENTS.items():
        write_pdf(root / "pdfs" / f"{name}.pdf", pages, encrypted=name == ENCRYPTED)
    lines = []
    for fid, doc, kind, question, page in QUESTIONS:
        evidence_page = DOCUMENTS.get(doc, [""] * 4)[page]
        lines.append(
            {
                "financebench_id": fid,
                "company": doc.split("_20")[0].replace("_", " ").title(),
                "doc_name": doc,
                "question_type": kind,
                "question_reasoning": "Information extraction" if kind == "metrics-generated" else None,
                "domain_question_num": "dg01" if kind == "domain-relevant" else None,
                "question": question,
                "answer": "See the evidence.",
                "justification": None,
                "dataset_subset_label": "OPEN_SOURCE",
                "evidence": [
                    {
                        "evidence_text": evidence_page or "revenue",
                        "doc_name": doc,
                        "evidence_page_num": page,
                        "evidence_text_full_page": FILLER + evidence_page + " " + FILLER,
                    }
                ],
            }
        )
    (root / "data" / "financebench_open_source.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    info = [
        {
            "doc_name": name,
            "company": name.split("_20")[0].replace("_", " ").title(),
            "gics_sector": "Industrials",
            "doc_type": fb.parse_doc_name(name).kind.lower(),
            "doc_period": fb.parse_doc_name(name).year,
            "doc_link": f"https://example.com/{name}.pdf",
        }
        for name in [*DOCUMENTS, ABSENT]
        if name != "Pfizer_2023Q2_10Q"  # the list need not hold every document: the name is parsed instead
    ]
    (root / "data" / "financebench_document_information.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in info), encoding="utf-8"
    )
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_financebench_folder(tmp_path_factory.mktemp("financebench"))


@pytest.mark.parametrize(
    "name, parts",
    [
        ("3M_2018_10K", ("3M", 2018, None, "10K", None)),
        ("3M_2023Q2_10Q", ("3M", 2023, 2, "10Q", None)),
        ("AMCOR_2022_8K_dated-2022-07-01", ("AMCOR", 2022, None, "8K", "2022-07-01")),
        ("AMCOR_2023Q4_EARNINGS", ("AMCOR", 2023, 4, "EARNINGS", None)),
        ("AMD_2022_annualreport", ("AMD", 2022, None, "annualreport", None)),
        ("JOHNSON_JOHNSON_2022_10K", ("JOHNSON_JOHNSON", 2022, None, "10K", None)),
        ("Pfizer_2023Q2_10Q", ("Pfizer", 2023, 2, "10Q", None)),
    ],
)
def test_every_financebench_name_form_is_parsed(name, parts):
    parsed = fb.parse_doc_name(name)
    assert (parsed.company, parsed.year, parsed.quarter, parsed.kind, parsed.dated) == parts
    ManifestEntry(doc_name=name, company="x", period=2022, file=f"{name}.pdf", sha256="0" * 64)


@pytest.mark.parametrize(
    "name", ["ACME-2024-10K", "ACME_24_10K", "ACME_2024_10-K", "ACME_2024_8K_dated-2022", "_2024_10K"]
)
def test_a_name_in_no_financebench_form_is_refused_with_the_forms(name):
    with pytest.raises(fb.FinanceBenchError, match="COMPANY_YEAR") as caught:
        fb.parse_doc_name(name)
    assert isinstance(caught.value, LabkitError) and isinstance(caught.value, ValueError)


def test_folder_lists_present_and_absent_filings_and_reads_metadata_without_a_manifest(folder):
    found = fb.open_folder(folder)
    assert len(found.questions) == len(QUESTIONS)
    assert [q.doc_name for q in found.present()] == [q[1] for q in QUESTIONS[:-1]]
    assert found.absent() == [ABSENT]
    assert found.metadata("JOHNSON_JOHNSON_2022_10K")["company"] == "Johnson Johnson"  # from the document list
    assert found.metadata("Pfizer_2023Q2_10Q") == {  # not in the list: from the name
        "doc_name": "Pfizer_2023Q2_10Q",
        "company": "Pfizer",
        "period": 2023,
        "doc_type": "10Q",
    }


def test_a_folder_without_the_questions_file_is_refused(tmp_path):
    with pytest.raises(fb.FinanceBenchError, match=r"financebench_open_source\.jsonl"):
        fb.open_folder(tmp_path)


def test_an_encrypted_pdf_opens_and_parsed_pages_are_cached(folder, tmp_path, monkeypatch):
    from pypdf import PdfReader

    pdf = folder / "pdfs" / f"{ENCRYPTED}.pdf"
    assert PdfReader(pdf).is_encrypted
    meta = fb.open_folder(folder).metadata(ENCRYPTED)
    pages = fb.load_pages(pdf, meta, cache=tmp_path, progress=False)
    assert [p.metadata["source_page"] for p in pages] == [1, 2]
    assert "13.99 billion" in pages[0].page_content and pages[0].metadata["doc_name"] == ENCRYPTED

    import langchain_community.document_loaders as loaders

    def no_parsing(*args, **kwargs):
        raise AssertionError("parsed again although the pages are cached")

    monkeypatch.setattr(loaders, "PyPDFLoader", no_parsing)
    assert [p.page_content for p in fb.load_pages(pdf, meta, cache=tmp_path, progress=False)] == [
        p.page_content for p in pages
    ]


def test_the_index_is_cached_per_documents_chunking_and_model(folder, tmp_path, monkeypatch):
    found = fb.open_folder(folder)
    docs = {q.doc_name for q in found.present()}
    first = fb.open_folder_index(found, docs, embeddings=HashingEmbeddings(), cache=tmp_path, progress=False)
    assert first.descriptor.embedding_model == "test-hashing-bag-of-words"
    assert sorted(first.descriptor.documents) == sorted(DOCUMENTS)

    def no_building(*args, **kwargs):
        raise AssertionError("built again although the index is cached")

    monkeypatch.setattr(fb, "index_pages", no_building)
    again = fb.open_folder_index(found, docs, embeddings=HashingEmbeddings(), cache=tmp_path, progress=False)
    assert again.descriptor == first.descriptor
    with pytest.raises(AssertionError, match="built again"):  # another chunking is another index
        fb.open_folder_index(found, docs, chunk_size=300, embeddings=HashingEmbeddings(), cache=tmp_path)
    assert len(list(tmp_path.glob("index-*/descriptor.json"))) == 1


def test_measure_reports_page_hit_per_retriever_kind_and_scope(folder, tmp_path):
    result = fb.measure(folder, ks=(1, 3, 12), embeddings=HashingEmbeddings(), cache=tmp_path, progress=False)
    assert (result["questions"], result["measured"], result["absent"]) == (7, 6, [ABSENT])
    for scope in ("single-document", "shared"):
        table = result[scope]
        assert set(table.index.get_level_values("kind")) == {
            "metrics-generated",
            "domain-relevant",
            "novel-generated",
            "all",
        }
        assert set(table.index.get_level_values("retriever")) == {"faiss", "faiss+bm25", "hybrid"}
        assert table.loc[("all", "faiss"), "questions"] == 6
    # one store per document holds two or three pages, so its 12 candidates always include the evidence page
    assert result["single-document"].loc[("all", "faiss"), "page_hit@12"] == 1.0
    # every fact is stated on one page only and the questions reuse its words: the first BM25-fused hit is it,
    # which needs the zero-based evidence_page_num read as page number + 1
    assert result["shared"].loc[("all", "hybrid"), "page_hit@1"] == 1.0


def test_the_command_prints_both_scopes(folder, tmp_path, capsys):
    code = fb.main(
        [str(folder), "--k", "1", "3", "5", "12", "--cache", str(tmp_path), "--quiet"], embeddings=HashingEmbeddings()
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "6 of 7 questions measured" in out and "1 documents asked about have no PDF" in out
    assert "single-document store" in out and "shared store" in out
    assert "page_hit@12" in out and "candidate_recall@12" in out and "novel-generated" in out


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None, reason="the embed extra is installed"
)
def test_new_text_without_the_embed_extra_is_refused_naming_it(folder, tmp_path, capsys):
    with pytest.raises(MissingExtra, match=r"Embedding new text.*optional extra 'embed'"):
        fb.open_folder_index(fb.open_folder(folder), ["3M_2018_10K"], cache=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())  # refused before any parsing
    assert fb.main([str(folder), "--cache", str(tmp_path), "--quiet"]) == 1
    assert "optional extra 'embed'" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None, reason="needs the embed extra")
def test_the_real_model_measures_the_folder(folder, tmp_path):
    result = fb.measure(folder, ks=(1, 12), cache=tmp_path, progress=False)
    assert result["index"].embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert result["single-document"].loc[("all", "faiss"), "page_hit@12"] == 1.0
