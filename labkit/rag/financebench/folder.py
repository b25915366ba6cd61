"""A folder laid out as FinanceBench's repository: its two data files and the PDFs present.

FinanceBench (Islam et al. 2023, ``patronus-ai/financebench``) publishes its questions and its document list as
JSON Lines under ``data/`` and the filings as ``pdfs/<doc_name>.pdf``; a clone may hold only some PDFs. This
module reads that layout with no hand-written manifest and refuses nothing for one name: a name outside
FinanceBench's rule (`labkit.rag.financebench.names`) is listed by `FinanceBenchFolder.unknown_names`, a document
listed twice by `FinanceBenchFolder.repeated_documents`, a PDF whose name spells its document another way
(``AMCOR_2022_8K_2022-04-26.pdf`` for ``AMCOR_2022_8K_dated-2022-04-26``) is used and listed by
`FinanceBenchFolder.renamed`, and the questions whose PDF is missing are counted per document by
`FinanceBenchFolder.absent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.canonical import loads_strict, read_strict_bytes
from labkit.errors import LabkitError
from labkit.rag.financebench.names import DocName, try_parse
from labkit.rag.questions import FilingQuestion, load_questions

QUESTIONS_FILE = Path("data") / "financebench_open_source.jsonl"
DOCUMENTS_FILE = Path("data") / "financebench_document_information.jsonl"
PDF_FOLDER = Path("pdfs")


class FinanceBenchError(LabkitError, ValueError):
    """A folder is not laid out as FinanceBench's repository, or none of its questions has its PDF."""


@dataclass
class FinanceBenchFolder:
    """A FinanceBench-style folder: its questions, its document list and the PDFs present."""

    root: Path
    """The folder holding ``data/`` and ``pdfs/``."""
    questions: list[FilingQuestion]
    """Every question in the questions file, in file order."""
    documents: dict[str, list[dict[str, Any]]]
    """doc_name -> its lines of the document-information file (two where the file lists a name twice)."""
    pdf_names: list[str] = field(default_factory=list)
    """The name (without ``.pdf``) of every PDF under ``pdfs/``, sorted."""
    pdfs: dict[str, Path] = field(default_factory=dict)
    """doc_name -> its PDF, for every document named by a question or a record whose PDF is present."""
    renamed: dict[str, str] = field(default_factory=dict)
    """doc_name -> the PDF name used for it, where the PDF spells the name another way."""

    def present(self) -> list[FilingQuestion]:
        """The questions whose own document's PDF is present, in file order."""
        return [q for q in self.questions if q.doc_name in self.pdfs]

    def absent(self) -> dict[str, int]:
        """Each document questions ask about whose PDF is missing, with how many questions it skips, by name."""
        counts: dict[str, int] = {}
        for q in self.questions:
            if q.doc_name not in self.pdfs:
                counts[q.doc_name] = counts.get(q.doc_name, 0) + 1
        return dict(sorted(counts.items()))

    def unused_pdfs(self) -> list[str]:
        """The PDFs no question and no line of the document list names (not even spelled another way)."""
        used = {path.stem for path in self.pdfs.values()}
        return [name for name in self.pdf_names if name not in used]

    def unknown_names(self) -> dict[str, list[str]]:
        """The names outside FinanceBench's naming rule, per place they occur (questions, documents, pdfs)."""
        places = {
            "questions": sorted({q.doc_name for q in self.questions}),
            "documents": sorted(self.documents),
            "pdfs": self.pdf_names,
        }
        return {place: [n for n in names if try_parse(n) is None] for place, names in places.items()}

    def repeated_documents(self) -> dict[str, list[Any]]:
        """Names the document list gives more than one line, each with the ``doc_period`` of its lines."""
        return {
            name: [line.get("doc_period") for line in lines] for name, lines in self.documents.items() if len(lines) > 1
        }

    def metadata(self, doc_name: str) -> dict[str, Any]:
        """Return a document's company, period and kind: from its one line of the document list, else from its name.

        A name listed twice with different periods gets the name's own year; a name outside the rule keeps
        what its line says, or the company of the question that asks about it.
        """
        parsed = try_parse(doc_name)
        lines = self.documents.get(doc_name, [])
        info = lines[0] if len({str(line) for line in lines}) == 1 else {}
        asked = next((q.company for q in self.questions if q.doc_name == doc_name), None)
        company = info.get("company") or (parsed.company.replace("_", " ") if parsed else asked) or doc_name
        period = info.get("doc_period") or (parsed.period if parsed else None)
        kind = parsed.kind if parsed else info.get("doc_type")
        return {"doc_name": doc_name, "company": company, "period": period, "doc_type": kind}


def _read_jsonl(path: Path) -> list[Any]:
    lines = read_strict_bytes(path, max_bytes=200_000_000).decode("utf-8").splitlines()
    return [loads_strict(line, source=f"{path}:{n}") for n, line in enumerate(lines, 1) if line.strip()]


def _match_pdfs(wanted: set[str], pdf_names: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Return (doc_name -> PDF name) for the wanted documents, and the renamed subset.

    A document's PDF is ``<doc_name>.pdf``; failing that, the one PDF whose name parses to the same parts
    (company, year, quarter, kind, date), unless that PDF is some other wanted document's own.
    """
    exact = {name: name for name in wanted if name in pdf_names}
    spare: dict[tuple[Any, ...], list[str]] = {}
    for name in pdf_names:
        parsed = try_parse(name)
        if parsed is not None and name not in wanted:
            spare.setdefault(parsed.identity, []).append(name)
    renamed = {}
    for name in sorted(wanted - set(exact)):
        wanted_name: DocName | None = try_parse(name)
        candidates = spare.get(wanted_name.identity, []) if wanted_name else []
        if len(candidates) == 1:
            renamed[name] = candidates[0]
    return {**exact, **renamed}, renamed


def open_folder(root: str | Path) -> FinanceBenchFolder:
    """Read a FinanceBench-style folder (``data/*.jsonl`` and ``pdfs/*.pdf``); refuse another layout clearly."""
    root = Path(root)
    questions_path = root / QUESTIONS_FILE
    if not questions_path.is_file():
        raise FinanceBenchError(
            f"{root} has no {QUESTIONS_FILE.as_posix()}; point at a clone of patronus-ai/financebench "
            "(the folder holding data/ and pdfs/)"
        )
    questions = load_questions(questions_path, distinct_text=False)
    documents: dict[str, list[dict[str, Any]]] = {}
    if (root / DOCUMENTS_FILE).is_file():
        for number, line in enumerate(_read_jsonl(root / DOCUMENTS_FILE), 1):
            if not isinstance(line, dict) or not isinstance(line.get("doc_name"), str):
                raise FinanceBenchError(
                    f"{root / DOCUMENTS_FILE}:{number}: every line must be an object with a doc_name; "
                    "restore the file from FinanceBench's repository"
                )
            documents.setdefault(line["doc_name"], []).append(line)
    folder = root / PDF_FOLDER
    pdf_names = sorted(path.stem for path in folder.glob("*.pdf")) if folder.is_dir() else []
    wanted = {q.doc_name for q in questions} | set(documents)
    chosen, renamed = _match_pdfs(wanted, pdf_names)
    pdfs = {name: folder / f"{pdf}.pdf" for name, pdf in sorted(chosen.items())}
    return FinanceBenchFolder(root, questions, documents, pdf_names, pdfs, renamed)
