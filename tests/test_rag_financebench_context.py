"""Chunks carry their context: the filing's company, kind and period, and the section heading in force."""

from __future__ import annotations

from langchain_core.documents import Document

from labkit.rag.financebench.context import describe, headings, with_context

CONTENTS = "\n".join(f"Item {n}. Section number {n} {n * 3}" for n in range(1, 9))


def page(text, n, **meta):
    base = {"doc_name": "BOEING_2022_10K", "company": "Boeing", "period": 2022, "doc_type": "10K"}
    return Document(page_content=text, metadata={**base, **meta, "source_page": n})


def test_a_heading_holds_until_the_next_and_a_contents_page_sets_none():
    texts = [
        CONTENTS,  # eight headings: a table of contents
        "Item 7. Management's Discussion and Analysis 41\nRevenue rose in every segment.",
        "Commercial Airplanes deliveries rose to 480 airplanes.",
        "NOTE 4\nINCOME TAXES\nThe effective tax rate was 0.5%.\nSee Note 13 for additional information.",
        "Consolidated Statements of Cash Flows\nNet cash provided 3,512",
    ]
    found = headings(texts)
    assert found[0] == ("", [])
    assert found[1] == ("", [(0, "Item 7. Management's Discussion and Analysis")])  # page number dropped
    assert found[2] == ("Item 7. Management's Discussion and Analysis", [])
    assert [h for _, h in found[3][1]] == ["NOTE 4 INCOME TAXES"]  # two lines; a reference in a sentence is none
    assert found[4][0] == "NOTE 4 INCOME TAXES" and found[4][1][0][1] == "Consolidated Statements of Cash Flows"


def test_the_document_line_names_company_kind_and_period():
    assert describe(page("", 1).metadata) == "Boeing annual report (10-K), fiscal 2022"
    quarter = {"doc_name": "BESTBUY_2024Q2_10Q", "company": "Best Buy", "period": 2024, "doc_type": "10Q"}
    assert describe(quarter) == "Best Buy quarterly report (10-Q), Q2 fiscal 2024"
    dated = {"doc_name": "AMCOR_2022_8K_dated-2022-07-01", "company": "Amcor", "period": 2022, "doc_type": "8K"}
    assert describe(dated) == "Amcor current report (8-K), fiscal 2022, dated 2022-07-01"
    unknown = {"doc_name": "minutes", "company": "Amcor", "period": None, "doc_type": None}
    assert describe(unknown) == "Amcor filing"


def test_every_chunk_starts_with_its_context_and_keeps_its_page():
    pages = [
        page("Deliveries rose.", 1),
        page("Item 8. Financial Statements\n" + "Total revenues 66,608 62,286. " * 40, 2),
    ]
    chunks = with_context(pages, chunk_size=300, chunk_overlap=0)
    assert chunks[0].page_content == "Boeing annual report (10-K), fiscal 2022.\nDeliveries rose."
    later = [c for c in chunks if c.metadata["source_page"] == 2]
    assert len(later) > 2
    assert all(
        c.page_content.startswith("Boeing annual report (10-K), fiscal 2022. Item 8. Financial Statements.\n")
        for c in later
    )
    assert all("start_index" not in c.metadata for c in chunks)
    assert all(len(c.page_content.split("\n", 1)[1]) <= 300 for c in chunks)  # the chunk itself keeps its size


def test_the_document_context_leaves_the_section_out_and_none_leaves_the_chunks_alone():
    from labkit.rag.index import split_pages

    pages = [page("Item 8. Financial Statements\nTotal revenues 66,608 62,286.", 1)]
    (document,) = with_context(pages, chunk_size=300, chunk_overlap=0, context="document")
    assert document.page_content == "Boeing annual report (10-K), fiscal 2022.\n" + pages[0].page_content
    plain = with_context(pages, chunk_size=300, chunk_overlap=0, context="none")
    assert [c.page_content for c in plain] == [
        c.page_content for c in split_pages(pages, chunk_size=300, chunk_overlap=0)
    ]
