"""The fictional filings have a real annual report's density, read back from the committed PDFs."""

from __future__ import annotations

import re
from statistics import mean

import pytest
from pypdf import PdfReader

from labkit.rag.filings import PAGE_PLAN, filings_dir, page_numbers, pages
from labkit.rag.index import CHUNKING, load_filings, load_manifest, split_pages


@pytest.fixture(scope="module")
def page_texts() -> dict[str, list[str]]:
    return {
        name: [page.extract_text() for page in PdfReader(filings_dir() / entry.file).pages]
        for name, entry in load_manifest().items()
    }


def test_every_filing_has_twenty_to_forty_pages(page_texts):
    assert len(page_texts) == 6
    for name, texts in page_texts.items():
        assert 20 <= len(texts) <= 40, name
        assert len(texts) == len(PAGE_PLAN), name


def test_every_page_holds_2500_to_4000_characters(page_texts):
    lengths = {(name, n): len(text) for name, texts in page_texts.items() for n, text in enumerate(texts, 1)}
    outside = {where: size for where, size in lengths.items() if not 2500 <= size <= 4000}
    assert outside == {}


def test_pages_split_into_at_least_three_800_character_chunks_on_average():
    pages_ = load_filings(set(load_manifest()))
    chunks = split_pages(pages_, chunk_size=CHUNKING[0], chunk_overlap=CHUNKING[1])
    per_page: dict[str, int] = {}
    for chunk in chunks:
        key = f"{chunk.metadata['doc_name']}#p{chunk.metadata['source_page']}"
        per_page[key] = per_page.get(key, 0) + 1
    assert len(per_page) == len(pages_)  # every page gives at least one chunk
    assert mean(per_page.values()) >= 3
    assert min(per_page.values()) >= 2


def test_statements_print_three_years_and_the_balance_sheet_two(page_texts):
    numbers = page_numbers()
    text = page_texts["ACME_2025_10K"]
    for key in ("income", "cash_flows", "selected", "mdna_segments", "note_tax"):
        assert "2025 2024 2023" in text[numbers[key] - 1], key
    assert "2025 2024" in text[numbers["balance"] - 1] and "2023" not in text[numbers["balance"] - 1].split("\n")[1]


def test_risk_factors_use_line_item_words_without_their_figures(page_texts):
    numbers = page_numbers()
    for name, texts in page_texts.items():
        risks = " ".join(texts[numbers[k] - 1] for k in ("risk_markets", "risk_finance")).lower()
        words = [
            w for w in ("revenue", "net income", "capital expenditures", "long-term debt", "dividends") if w in risks
        ]
        assert len(words) >= 4, name
        body = risks.rsplit("|", 1)[0]
        assert re.findall(r"\d[\d,]*\.\d", body) == [], name  # no printed figure among the distractors


def test_a_segment_note_prints_every_segment_for_three_years(page_texts):
    text = page_texts["CORVID_2024_10K"][page_numbers()["note_segments"] - 1]
    for segment in ("Truckload", "Intermodal", "Brokerage"):
        row = next(line for line in text.splitlines() if line.startswith(segment))
        assert len(re.findall(r"\(?[\d,]+\.\d\)?", row)) == 3, row


def test_the_same_seed_gives_the_same_pages_and_another_year_other_text():
    from labkit.rag.companies import COMPANIES, company_years

    acme = COMPANIES[0]
    years = company_years(acme)
    assert pages(acme, 2025, years) == pages(acme, 2025, years)
    assert pages(acme, 2025, years)[5] != pages(acme, 2024, years)[5]
