"""Chunks that carry their context: the filing's company, kind and period, and the section heading in force.

A chunk cut from page 87 of a 10-K often names neither the company nor the statement it belongs to
("Total 4,317 3,921"), so neither dense search nor BM25 can tell it from a hundred others. Prefixing each
chunk with a line of context before it is embedded and indexed is what the field does (Anthropic's
"contextual retrieval", 2024, writes that line with a model; here it is read from the document's name and
pages, with no model):

    American Express annual report (10-K), fiscal 2022. ITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS ...

The section heading is the last line above the chunk that reads as a 10-K heading: ``Item 7.``,
``Note 4 - Income Taxes``, ``Consolidated Statements of Cash Flows``. A page listing many of them is a
table of contents and sets no section; a trailing page number is dropped. Filings without such headings
(many 8-Ks and earnings releases) get the document line only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

#: What a chunk's context line holds: nothing (the lesson's chunks), the document line, or that and the section.
Context = Literal["none", "document", "section"]
CONTEXTS: tuple[Context, ...] = ("none", "document", "section")

#: A line that reads as a section heading of a US filing (item, note, or primary statement).
HEADING = re.compile(
    r"^[ \t]*("
    r"(?i:item)[ \t]+\d{1,2}[A-Ca-c]?\.?[ \t]*[A-Z\[][^\n]{2,110}"
    r"|(?i:note)[ \t]+\d{1,2}\b[ \t]*[.:\-\u2013\u2014]?[ \t]*\n?[ \t]*[A-Z][^\n]{2,110}"
    r"|C(?i:onsolidated[ \t]+(?:statements?[ \t]+of|balance[ \t]+sheets?))[^\n]{0,80}"
    r")[ \t]*$",
    re.MULTILINE,
)
#: A page naming this many headings is a table of contents, not the start of a section.
CONTENTS_PAGE = 6
KIND_WORDS = {
    "10K": "annual report (10-K)",
    "10Q": "quarterly report (10-Q)",
    "8K": "current report (8-K)",
    "EARNINGS": "earnings release",
    "annualreport": "annual report",
}


def _clean(heading: str) -> str:
    text = " ".join(heading.split())
    return re.sub(r"[\s.]+\d{1,3}$", "", text).rstrip(" .")


def headings(texts: Sequence[str]) -> list[tuple[str, list[tuple[int, str]]]]:
    """Return, per page, the heading in force where it starts and the headings found on it (offset, heading)."""
    current = ""
    found = []
    for text in texts:
        marks = [(m.start(), _clean(m.group(1))) for m in HEADING.finditer(text)]
        if len(marks) >= CONTENTS_PAGE:
            marks = []
        found.append((current, marks))
        if marks:
            current = marks[-1][1]
    return found


def describe(metadata: dict[str, Any]) -> str:
    """Return the document line of a chunk's context: company, kind of filing and period."""
    from labkit.rag.financebench.names import try_parse

    parsed = try_parse(str(metadata["doc_name"]))
    kind = KIND_WORDS.get(str(metadata.get("doc_type")), "filing")
    parts = [f"{metadata['company']} {kind}"]
    period = metadata.get("period")
    when = f"fiscal {period}" if period else ""
    if parsed and parsed.quarter:
        when = f"Q{parsed.quarter} {when}".strip()
    if parsed and parsed.dated:
        when = f"{when}, dated {parsed.dated}".strip(", ")
    return ", ".join([*parts, when]) if when else parts[0]


def with_context(
    pages: Sequence[Any], *, chunk_size: int, chunk_overlap: int, context: Context = "section"
) -> list[Any]:
    """Split one document's pages into chunks, each prefixed with its document line (and section heading).

    ``context="document"`` writes the document line only; ``"section"`` adds the section heading in force;
    ``"none"`` leaves the chunks as the lesson cuts them.

    ``pages`` are LangChain documents of one filing in page order (metadata: doc_name, company, period,
    doc_type, source_page). Chunks never cross a page and keep their page's metadata; the splitter is
    lesson 02's (``RecursiveCharacterTextSplitter``) at the same size, applied to the page text alone.
    """
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True)
    marks = headings([page.page_content for page in pages])
    chunks = []
    for page, (start, found) in zip(pages, marks, strict=True):
        line = describe(page.metadata)
        for piece in splitter.split_documents([page]):
            offset = piece.metadata.pop("start_index")
            section = start
            for at, heading in found:
                if at <= offset + len(piece.page_content) // 2:  # a heading in the chunk's first half heads it
                    section = heading
            if context == "none":
                chunks.append(piece)
                continue
            prefix = f"{line}. {section}." if section and context == "section" else f"{line}."
            chunks.append(Document(page_content=f"{prefix}\n{piece.page_content}", metadata=piece.metadata))
    return chunks
