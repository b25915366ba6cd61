"""The refund policy: a real PDF written by a project script, read by page, split, indexed in FAISS.

``python -m labkit.system.policy`` writes ``fixtures/system/refund_policy.pdf``
with fpdf2, with fixed metadata and creation date, so writing it again gives
the same bytes. `load_policy_pages` reads it with LangChain's ``PyPDFLoader``
and gives each page the citation id ``refund_policy.pdf#p<one-based page>``;
`split_policy` cuts the pages with ``RecursiveCharacterTextSplitter(800, 100)``
(each chunk keeps its page's citation id); `load_policy_index` builds a FAISS
index from saved real vectors (`SavedEmbeddings`, embedding set ``system-policy``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labkit.embeddings import SavedEmbeddings, register_embedding_set
from labkit.errors import FixtureOverwriteRefused, LabkitError
from labkit.paths import fixtures_dir, relative_to_root

PDF_NAME = "refund_policy.pdf"
EMBEDDING_SET = "system-policy"
#: The splitter settings of the book's program.
CHUNK_SIZE = 800
CHUNK_OVERLAP = 100
#: How many chunks retrieval returns for each question.
K = 3
#: Fixed document metadata: the same bytes on every run of the fixture script.
_CREATED = datetime(2026, 11, 1, tzinfo=UTC)
_METADATA = {
    "title": "Refund policy",
    "author": "labkit course",
    "subject": "Toy refund policy for lesson 05",
    "creator": "labkit.system.policy",
}

#: The policy, page by page: a heading, then paragraphs. Written for the course; figures invented.
POLICY_PAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Refund policy",
        (
            "Version 2026-11. This policy applies to every order placed in the online shop.",
            "1. Refund window",
            "Customers can request a refund within 30 days.",
            "The 30 days are counted from the date the order was delivered, as shown in the tracking record. "
            "A request sent on the thirtieth day is still on time; a request sent later is declined, "
            "whatever the reason for the delay.",
            "2. How to request a refund",
            "Open the order in your account and choose Request a refund, or write to support with the order number. "
            "Say which items you want refunded and why. Support confirms the request by email and sends a return label "
            "when the item has to come back.",
            "3. How refunds are paid",
            "Refunds go back to the payment method used for the order. Card refunds appear within five to ten business "
            "days after the returned item is checked. Shipping fees are refunded only when the item arrived damaged "
            "or was not the item ordered.",
        ),
    ),
    (
        "Refund policy (continued)",
        (
            "4. Items that cannot be refunded",
            "Gift cards, downloaded software and personalised items cannot be refunded once delivered. Perishable goods "
            "can be refunded only when they arrived spoiled, and only if support hears about it within two days "
            "of delivery.",
            "5. Exchanges",
            "Instead of a refund, a customer may ask to exchange an item for another size or colour of the same product. "
            "Exchanges follow the same window as refunds and ship at no extra cost.",
            "6. Cancelling an order",
            "An order can be cancelled free of charge until it leaves the warehouse. After that, the customer receives "
            "it and asks for a refund under this policy.",
            "7. Contacting support",
            "Support answers through the help centre and by email on business days, usually within two business days. "
            "Support staff never ask for card numbers or passwords.",
        ),
    ),
)


class PolicyDocumentError(LabkitError, ValueError):
    """The policy PDF is missing, unreadable or has a page with no text."""


def policy_folder() -> Path:
    """Return the folder of this lesson's fixtures."""
    return fixtures_dir() / "system"


def policy_path() -> Path:
    """Return the committed ``refund_policy.pdf``."""
    return policy_folder() / PDF_NAME


def embeddings_path() -> Path:
    """Return the committed saved-vectors file of this lesson."""
    return policy_folder() / "embeddings.json"


def citation_id(page_index: int, *, name: str = PDF_NAME) -> str:
    """Return the citation id of the page at zero-based ``page_index``: ``name#p<index + 1>``."""
    if isinstance(page_index, bool) or not isinstance(page_index, int) or page_index < 0:
        raise PolicyDocumentError(f"a page index must be a whole number from 0, not {page_index!r}")
    return f"{name}#p{page_index + 1}"


# --- writing the fixture -----------------------------------------------------------------------


def policy_pdf_bytes() -> bytes:
    """Return the policy PDF: a page per entry of `POLICY_PAGES`, fixed metadata and date."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(_CREATED)
    pdf.set_title(_METADATA["title"])
    pdf.set_author(_METADATA["author"])
    pdf.set_subject(_METADATA["subject"])
    pdf.set_creator(_METADATA["creator"])
    pdf.set_auto_page_break(auto=False)
    pdf.set_margins(20, 20, 20)
    for heading, paragraphs in POLICY_PAGES:
        pdf.add_page()
        pdf.set_font("Helvetica", style="B", size=16)
        pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        for paragraph in paragraphs:
            numbered = paragraph[:1].isdigit() and ". " in paragraph[:4]
            pdf.set_font("Helvetica", style="B" if numbered else "", size=12 if numbered else 11)
            pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        if pdf.get_y() > pdf.h - 20:
            raise PolicyDocumentError(
                f"the page {heading!r} overflows; shorten its text in POLICY_PAGES"
            )
    return bytes(pdf.output())


def write_policy_pdf(folder: str | Path | None = None) -> Path:
    """Write ``refund_policy.pdf`` into ``folder`` (``fixtures/system``); the same bytes each time.

    Refuses (`FixtureOverwriteRefused`) without writing when the folder holds a captured run.
    """
    from labkit.fixtures import prepare_fixture_folder

    folder = prepare_fixture_folder(folder if folder is not None else policy_folder())
    path = folder / PDF_NAME
    path.write_bytes(policy_pdf_bytes())
    return path


# --- reading, splitting, indexing ----------------------------------------------------------------


def _community(module: str, name: str) -> Any:
    """Import ``name`` from ``langchain_community.<module>`` (the book's PDF loader, FAISS)."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        # The package announces its sunset on import; the course pins a version whose parts work.
        warnings.filterwarnings(
            "ignore", message=".*langchain-community.*", category=DeprecationWarning
        )
        return getattr(importlib.import_module(f"langchain_community.{module}"), name)


def load_policy_pages(path: str | Path | None = None) -> list[Any]:
    """Read the policy PDF: one ``Document`` per page, each with its one-based citation id.

    ``PyPDFLoader`` numbers pages from 0 (``metadata["page"]``); the citation id counts
    from 1, as people do: ``refund_policy.pdf#p1`` is the first page.
    """
    path = Path(path) if path is not None else policy_path()
    pages = read_pdf_pages(path)
    for page in pages:
        page.metadata["citation_id"] = citation_id(page.metadata["page"], name=path.name)
        page.metadata["source"] = relative_to_root(path)  # no machine's folder names in a notebook
    return pages


def read_pdf_pages(path: Path) -> list[Any]:
    """Read a PDF with ``PyPDFLoader``: one ``Document`` per page, its pages numbered from 0."""
    PyPDFLoader = _community("document_loaders", "PyPDFLoader")
    with pdf_refusals(path):  # a missing, damaged or textless PDF gets a clear error
        pages = PyPDFLoader(str(path)).load()
        refuse_textless_pages(pages, path)
    return pages


_AGAIN = "write it again with `python -m labkit.system.policy`"


@contextmanager
def pdf_refusals(path: Path) -> Iterator[None]:
    """Refuse a missing PDF before reading it, and an unreadable one as `PolicyDocumentError`."""
    if not path.is_file():
        raise PolicyDocumentError(f"no policy PDF at {relative_to_root(path)}; {_AGAIN}")
    try:
        yield
    except PolicyDocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds for a damaged file
        raise PolicyDocumentError(
            f"{relative_to_root(path)} is not a readable PDF ({type(exc).__name__}: {exc}); "
            f"restore it from git or {_AGAIN}"
        ) from None


def refuse_textless_pages(pages: list[Any], path: Path) -> None:
    """Refuse a PDF with no pages, or a page with no text: a citation to it could not be checked."""
    if not pages:
        raise PolicyDocumentError(f"{relative_to_root(path)} has no pages; {_AGAIN}")
    for page in pages:
        if not page.page_content.strip():
            raise PolicyDocumentError(
                f"page {page.metadata.get('page')} of {relative_to_root(path)} has no extractable "
                f"text, so a citation to it could never be checked; {_AGAIN}"
            )


def split_policy(
    pages: list[Any], *, chunk_size: int = CHUNK_SIZE, chunk_overlap: int = CHUNK_OVERLAP
) -> list[Any]:
    """Split the pages into chunks; each keeps its page's metadata, and so its citation id."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    return splitter.split_documents(pages)


@register_embedding_set(EMBEDDING_SET)
def embedding_texts() -> tuple[list[str], Path]:
    """Return every text lesson 05 embeds (policy chunks, the questions) and their file."""
    from labkit.system.golden import QUESTIONS

    chunks = [c.page_content for c in split_policy(load_policy_pages())]
    return sorted(set(chunks) | set(QUESTIONS)), embeddings_path()


@dataclass
class PolicyIndex:
    """The FAISS index of the policy chunks, with the chunks it holds."""

    store: Any
    chunks: list[Any]

    @property
    def citation_ids(self) -> list[str]:
        """The citation ids of the indexed chunks, in document order, without repeats."""
        return list(dict.fromkeys(c.metadata["citation_id"] for c in self.chunks))


def search_refusal(index: PolicyIndex, text: str, *, k: int = K) -> str:
    """Search the index for ``text`` and return the refusal it meets when no vector was saved for it.

    The file is named relative to the repository, so no machine's folders are printed.
    Raises `PolicyDocumentError` if the search is not refused: ``text`` has a saved vector.
    """
    from labkit.embeddings import UnrecordedText

    try:
        index.store.similarity_search(text, k=k)
    except UnrecordedText as error:
        message = str(error).replace(str(embeddings_path()), relative_to_root(embeddings_path()))
        return f"{type(error).__name__}: {message}"
    raise PolicyDocumentError(f"{text!r} has a saved vector, so searching for it is not refused")


def load_policy_index(
    *, path: str | Path | None = None, embeddings: SavedEmbeddings | None = None
) -> PolicyIndex:
    """Load, split and index the policy PDF in FAISS with saved real vectors.

    A chunk without a saved vector means the PDF or splitter changed since the
    vectors were recorded; that is refused with the command that recomputes them.
    """
    FAISS = _community("vectorstores", "FAISS")
    embeddings = embeddings if embeddings is not None else SavedEmbeddings.from_set(EMBEDDING_SET)
    chunks = split_policy(load_policy_pages(path))
    missing = [c.metadata["citation_id"] for c in chunks if c.page_content not in embeddings]
    if missing:
        raise PolicyDocumentError(
            f"{len(missing)} chunk(s) of the policy ({', '.join(missing)}) have no saved vector: "
            "the PDF or the splitter changed since the vectors were recorded. Restore the PDF, "
            f"or recompute them with `labkit embed {EMBEDDING_SET}` (needs the [embed] extra)."
        )
    return PolicyIndex(FAISS.from_documents(chunks, embeddings), chunks)


def main(argv: list[str] | None = None) -> int:
    """Write the policy PDF into ``argv[0]`` (default ``fixtures/system``) and print its SHA-256."""
    from labkit.canonical import file_sha256

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 or any(arg.startswith("-") for arg in argv):
        print(
            "usage: python -m labkit.system.policy [FOLDER]   (default: fixtures/system)",
            file=sys.stderr,
        )
        return 1
    try:
        path = write_policy_pdf(argv[0] if argv else None)
    except FixtureOverwriteRefused as exc:
        print(f"labkit.system.policy: {exc}", file=sys.stderr)
        return 1
    print(f"{file_sha256(path)}  {relative_to_root(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
