"""The lesson's questions in FinanceBench's schema, and the adapter that reads them (or the real benchmark).

FinanceBench (Islam et al. 2023) publishes one JSON object per line with
``financebench_id``, ``company``, ``doc_name``, ``question_type``, ``question``,
``answer``, ``justification`` and ``evidence`` (each item with
``evidence_text`` and ``evidence_page_num``). In the published open-source file
``evidence_page_num`` is the **zero-based** PDF page index (checked against the
filings' page text with pypdf). Our file keeps that convention, so one adapter
reads both; `load_questions` converts it once, at load, to the one-based
``source_page`` the loader and evaluation use. A question with no evidence is
one the filings cannot answer: the right reply is a refusal.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.canonical import loads_strict, read_strict_bytes
from labkit.errors import LabkitError

QUESTIONS_FILE = "questions.jsonl"
#: Fields of FinanceBench's file that the pipeline does not use; accepted so the real file loads, then set aside.
FINANCEBENCH_EXTRA_FIELDS = frozenset(
    {
        "question_reasoning",
        "domain_question_num",
        "dataset_subset_label",
        "gics_sector",
        "doc_type",
        "doc_period",
        "doc_link",
    }
)
FINANCEBENCH_EXTRA_EVIDENCE_FIELDS = frozenset({"doc_name", "evidence_text_full_page"})


class QuestionSetError(LabkitError, ValueError):
    """The question file is malformed: a missing field, a bad page number, a repeated id or question."""


class Evidence(BaseModel):
    """One labelled evidence passage, with its page already converted to one-based."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc_name: str = Field(description="The document the passage is in.")
    evidence_text: str = Field(min_length=1, description="The passage, as printed on the page.")
    source_page: int = Field(ge=1, description="One-based page: FinanceBench's zero-based evidence_page_num plus one.")

    @property
    def citation_id(self) -> str:
        """The page's citation id, ``doc_name#p<source_page>``."""
        return f"{self.doc_name}#p{self.source_page}"


class FilingQuestion(BaseModel):
    """One question as the pipeline uses it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    financebench_id: str = Field(min_length=1, description="The question's id.")
    company: str = Field(min_length=1, description="The company the question is about.")
    doc_name: str = Field(min_length=1, description="The filing that should answer it, such as ACME_2025_10K.")
    question_type: str = Field(min_length=1, description="FinanceBench's question type.")
    question: str = Field(min_length=1, description="The question text, sent unchanged to retrieval and model.")
    answer: str = Field(description="The reference answer.")
    justification: str = Field(description="Why the reference answer is right (or why none exists).")
    evidence: tuple[Evidence, ...] = Field(description="Labelled evidence pages; empty when the filings cannot answer.")

    @property
    def answerable(self) -> bool:
        """True when the question has labelled evidence."""
        return bool(self.evidence)

    @property
    def evidence_pages(self) -> frozenset[str]:
        """Citation ids of the labelled evidence pages."""
        return frozenset(e.citation_id for e in self.evidence)


class _RawEvidence(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    evidence_text: str
    evidence_page_num: int = Field(ge=0)
    doc_name: str | None = None
    evidence_text_full_page: str | None = None


class _RawQuestion(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    financebench_id: str
    company: str
    doc_name: str
    question_type: str
    question: str
    answer: str
    justification: str | None
    evidence: list[_RawEvidence]


def adapt(record: Any, *, source: str = "question") -> FilingQuestion:
    """Convert one FinanceBench-schema record: zero-based ``evidence_page_num`` becomes one-based ``source_page``."""
    try:
        raw = _RawQuestion.model_validate(record)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(record)"
        raise QuestionSetError(f"{source}: {where}: {err['msg']}; fix the record to FinanceBench's schema") from None
    unknown = sorted(set(raw.model_extra or {}) - FINANCEBENCH_EXTRA_FIELDS)
    if unknown:
        raise QuestionSetError(f"{source}: unknown field(s) {unknown}; FinanceBench's schema has no such field")
    # FinanceBench labels each evidence item with its document, usually the question's own; an item in another
    # document keeps that document in its citation id (a single-document store can never retrieve it).
    evidence = [
        Evidence(
            doc_name=item.doc_name or raw.doc_name,
            evidence_text=item.evidence_text,
            source_page=item.evidence_page_num + 1,
        )
        for item in raw.evidence
    ]
    return FilingQuestion(
        financebench_id=raw.financebench_id,
        company=raw.company,
        doc_name=raw.doc_name,
        question_type=raw.question_type,
        question=raw.question,
        answer=raw.answer,
        justification=raw.justification or "",
        evidence=tuple(evidence),
    )


def questions_path() -> Path:
    """Return the committed question file."""
    from labkit.rag.filings import filings_dir

    return filings_dir() / QUESTIONS_FILE


def load_questions(path: Path | None = None, *, distinct_text: bool = True) -> list[FilingQuestion]:
    """Read a FinanceBench-schema JSON Lines file, refusing malformed lines and repeated ids or questions.

    ``distinct_text=False`` accepts one question text asked of several documents (for retrieval-only use;
    the lesson's replies and saved vectors are keyed by question text, so the lesson keeps the default).
    """
    path = path or questions_path()
    lines = read_strict_bytes(path, max_bytes=20_000_000).decode("utf-8").splitlines()
    questions, ids, texts = [], set(), set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise QuestionSetError(f"{path}:{number}: blank line; JSON Lines holds one record per line")
        question = adapt(loads_strict(line, source=f"{path}:{number}"), source=f"{path}:{number}")
        if question.financebench_id in ids:
            raise QuestionSetError(f"{path}:{number}: financebench_id {question.financebench_id!r} appears twice")
        if distinct_text and question.question in texts:
            raise QuestionSetError(
                f"{path}:{number}: the question {question.question!r} appears twice; "
                "replies and saved vectors are keyed by question text"
            )
        ids.add(question.financebench_id)
        texts.add(question.question)
        questions.append(question)
    if not questions:
        raise QuestionSetError(f"{path}: no questions; the file must hold at least one record")
    return questions


# --- writing the lesson's question file --------------------------------------------------------------


def _templates(
    co: Any, y: Any, seg: str, seg_value: float, year: int
) -> dict[str, tuple[str, str, list[tuple[int, str]]]]:
    from labkit.rag.filings import money

    name = co.name
    return {
        "revenue": (
            f"What was {name}'s total revenue in fiscal {year}, in USD millions?",
            f"${money(y.revenue)} million",
            [(10, f"Revenue {money(y.revenue)}"), (7, f"Revenue in fiscal {year} was")],
        ),
        "net_income": (
            f"What was {name}'s net income for fiscal {year}?",
            f"${money(y.net_income)} million",
            [(10, f"Net income {money(y.net_income)}")],
        ),
        "total_assets": (
            f"What were {name}'s total assets at December 31, {year}?",
            f"${money(y.total_assets)} million",
            [(11, f"Total assets {money(y.total_assets)}")],
        ),
        "cfo": (
            f"How much net cash did {name} provide from operating activities in FY{year}?",
            f"${money(y.operating_cash_flow)} million",
            [
                (12, f"operating activities {money(y.operating_cash_flow)}"),
                (9, "Cash provided by operating activities was"),
            ],
        ),
        "capex": (
            f"How much did {name} spend on capital expenditures in FY{year}?",
            f"${money(-y.capex)} million",
            [(12, f"Capital expenditures {money(y.capex)}"), (9, "Capital expenditures were")],
        ),
        "ltd": (
            f"What long-term debt did {name} report on its balance sheet at the end of fiscal {year}?",
            f"${money(y.long_term_debt)} million",
            [(11, f"Long-term debt {money(y.long_term_debt)}")],
        ),
        "eps": (
            f"What were {name}'s diluted earnings per share in fiscal {year}?",
            f"${y.diluted_eps:.2f}",
            [(10, f"Diluted earnings per share ($) {y.diluted_eps:.2f}")],
        ),
        "employees": (
            f"How many people did {name} employ at the end of {year}?",
            f"{y.employees:,} employees",
            [(4, f"we employed {y.employees:,} people")],
        ),
        "tax_rate": (
            f"What was {name}'s effective tax rate in fiscal {year}?",
            f"{y.effective_tax_rate:.1f}%",
            [(15, f"effective tax rate of {y.effective_tax_rate:.1f}%")],
        ),
        "segment": (
            f"What revenue did {name}'s {seg} segment report in FY{year}?",
            f"${money(seg_value)} million",
            [(8, f"{seg} {money(seg_value)}")],
        ),
        "q4": (
            f"What was {name}'s fourth-quarter revenue in fiscal {year}?",
            f"${money(y.quarterly_revenue[3])} million",
            [(17, f"{year} " + " ".join(money(q) for q in y.quarterly_revenue))],
        ),
        "revenue_and_staff": (
            f"What were {name}'s revenue in fiscal {year} and its headcount at year end?",
            f"${money(y.revenue)} million of revenue and {y.employees:,} employees",
            [(10, f"Revenue {money(y.revenue)}"), (4, f"we employed {y.employees:,} people")],
        ),
        "cash_and_dividend": (
            f"What cash did {name} hold at the end of fiscal {year}, and what quarterly dividend "
            "did its board declare after the year ended?",
            f"${money(y.cash)} million of cash and a dividend of ${y.next_dividend:.2f} per share",
            [(11, f"Cash and cash equivalents {money(y.cash)}"), (16, f"quarterly dividend of ${y.next_dividend:.2f}")],
        ),
        "guidance": (f"What revenue does {name} expect for fiscal {year + 2}?", "", []),
        "ceo_pay": (f"What was the total compensation of {name}'s chief executive officer in fiscal {year}?", "", []),
        "offtopic": ("How many goals did the hockey club score last season?", "", []),
        "older": (f"What was {name}'s revenue in fiscal {year - 3}?", "", []),
    }


#: Which questions each document gets: four single-page figures, one two-page figure, one the filing cannot answer.
PLAN = {
    ("ACME", 2024): ("revenue", "net_income", "employees", "capex", "revenue_and_staff", "guidance"),
    ("ACME", 2025): ("total_assets", "eps", "tax_rate", "segment", "cash_and_dividend", "ceo_pay"),
    ("BRIGHTWAVE", 2024): ("cfo", "ltd", "q4", "employees", "cash_and_dividend", "offtopic"),
    ("BRIGHTWAVE", 2025): ("revenue", "capex", "segment", "tax_rate", "revenue_and_staff", "ceo_pay"),
    ("CORVID", 2024): ("net_income", "total_assets", "eps", "q4", "revenue_and_staff", "guidance"),
    ("CORVID", 2025): ("cfo", "ltd", "employees", "revenue", "cash_and_dividend", "older"),
}
#: Pages of running text, whose evidence is the whole sentence; on table pages it is the row's figures.
_NARRATIVE_PAGES = frozenset({4, 7, 9, 15, 16})
_UNANSWERABLE = {
    "guidance": "The filing gives no revenue outlook for the next fiscal year.",
    "ceo_pay": "Executive compensation is incorporated by reference from the proxy statement; the filing states no figure.",
    "offtopic": "The question is not about the company or its filing.",
    "older": "The filing prints only the current and prior fiscal years.",
}


def build_question_records(folder: Path) -> list[dict[str, Any]]:
    """Return the lesson's question records, with each evidence text copied from the PDF's extracted page text."""
    from pypdf import PdfReader

    from labkit.rag.companies import COMPANIES, company_years
    from labkit.rag.filings import doc_name

    records: list[dict[str, Any]] = []
    for co in COMPANIES:
        years = company_years(co)
        for year in (2024, 2025):
            name = doc_name(co, year)
            reader = PdfReader(folder / f"{name}.pdf")
            y = years[year]
            seg_index = max(range(3), key=lambda i: y.segment_revenue[i]) if year == 2025 else 1
            table = _templates(co, y, co.segments[seg_index], y.segment_revenue[seg_index], year)
            for key in PLAN[(co.ticker, year)]:
                question, answer, needles = table[key]
                evidence = []
                for page, needle in needles:
                    text = " ".join(reader.pages[page - 1].extract_text().split())
                    start = text.find(needle)
                    if start < 0:
                        raise QuestionSetError(f"{name} page {page} does not contain {needle!r}; fix the question plan")
                    end = text.find(". ", start + len(needle)) if page in _NARRATIVE_PAGES else -1
                    excerpt = text[start : end + 1] if 0 <= end - start < 220 else needle
                    evidence.append(
                        {"evidence_text": excerpt, "evidence_page_num": page - 1}
                    )  # FinanceBench: zero-based
                records.append(
                    {
                        "financebench_id": f"labkit_filings_{len(records) + 1:03d}",
                        "company": co.name,
                        "doc_name": name,
                        "question_type": "novel-generated" if not needles else "metrics-generated",
                        "question": question,
                        "answer": answer or "The filing does not contain this information.",
                        "justification": _UNANSWERABLE.get(key) or "Read from the labelled page(s) of the filing.",
                        "evidence": evidence,
                    }
                )
    return records


def write_questions(folder: Path | None = None) -> Path:
    """Write ``questions.jsonl`` beside the filings (run `labkit.rag.filings` first)."""
    from labkit.rag.filings import filings_dir, guard_captured

    folder = folder or filings_dir()
    guard_captured(folder)
    path = folder / QUESTIONS_FILE
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in build_question_records(folder)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line: write the question file next to the filings."""
    parser = argparse.ArgumentParser(prog="python -m labkit.rag.questions", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder holding the filings (default fixtures/filings)")
    args = parser.parse_args(argv)
    print(write_questions(args.out).name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
