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
    from labkit.rag.reports import filings_dir

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

#: FinanceBench's three question kinds and how many of the lesson's questions are of each (a third each, as in
#: FinanceBench's open sample: 50 of each of its 150).
QUESTION_MIX = {"metrics-generated": 10, "domain-relevant": 10, "novel-generated": 10}

#: One question: its kind, text, reference answer, justification, and evidence as (page key, printed text) pairs.
Spec = tuple[str, str, str, str, list[tuple[str, str]]]


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%"


def _specs(co: Any, years: dict[int, Any], year: int) -> dict[str, Spec]:
    """Return every question the lesson can ask of one filing, keyed by a short name (see `PLAN`)."""
    from labkit.rag.companies import r1
    from labkit.rag.reports import money

    y, p = years[year], years[year - 1]
    short, fy = co.name.split()[0], f"FY{year}"
    seg = co.segments
    top = max(range(3), key=lambda i: y.segment_revenue[i])
    seg_growth = [100 * (y.segment_revenue[i] / p.segment_revenue[i] - 1) for i in range(3)]
    fastest = max(range(3), key=lambda i: seg_growth[i])
    m, d, n = "metrics-generated", "domain-relevant", "novel-generated"
    return {
        "capex": (
            m,
            f"How much did {short} spend on property and equipment in {fy}, in USD millions?",
            f"${money(-y.capex)} million",
            "Capital expenditures in the cash flow statement (an outflow, printed in parentheses).",
            [
                ("cash_flows", f"Capital expenditures {money(y.capex)}"),
                ("liquidity", f"Capital expenditures were ${money(-y.capex)} million"),
            ],
        ),
        "gross_margin": (
            m,
            f"What was {short}'s gross margin in {fy}?",
            f"{_pct(y.gross_profit, y.revenue)}",
            f"Gross profit {money(y.gross_profit)} over revenue {money(y.revenue)} (income statement).",
            [
                ("income", f"Gross profit {money(y.gross_profit)}"),
                ("mdna_results", f"Gross margin {_pct(y.gross_profit, y.revenue)}"),
            ],
        ),
        "payout": (
            m,
            f"What share of its {fy} earnings did {short} pay out as dividends?",
            f"{_pct(-y.dividends, y.net_income)}",
            f"Dividends paid {money(-y.dividends)} over net income {money(y.net_income)} (cash flow statement).",
            [("cash_flows", f"Dividends paid {money(y.dividends)}")],
        ),
        "fcf": (
            m,
            f"What was {short}'s free cash flow in {fy} (operating cash flow less capital expenditures)?",
            f"${money(y.operating_cash_flow + y.capex)} million",
            f"Operating cash flow {money(y.operating_cash_flow)} less capital expenditures {money(-y.capex)}.",
            [
                ("cash_flows", f"Net cash provided by operating activities {money(y.operating_cash_flow)}"),
                ("liquidity", f"Cash provided by operating activities was ${money(y.operating_cash_flow)} million"),
            ],
        ),
        "total_debt": (
            m,
            f"How much debt in total, short- and long-term, did {short} carry at the end of {fy}?",
            f"${money(y.total_debt)} million",
            "Total debt in the debt note and the liquidity discussion.",
            [
                ("note_debt", f"Total debt {money(y.total_debt)}"),
                ("liquidity", f"total debt of ${money(y.total_debt)}"),
            ],
        ),
        "growth": (
            m,
            f"By how much did {short}'s top line grow in {fy}, year over year?",
            f"{100 * (y.revenue / p.revenue - 1):.1f}%",
            f"Revenue {money(y.revenue)} against {money(p.revenue)} the year before (income statement).",
            [("income", f"Revenue {money(y.revenue)} {money(p.revenue)}")],
        ),
        "bottom_line": (
            m,
            f"What did {short} earn after tax in {fy}?",
            f"${money(y.net_income)} million",
            "Net income in the income statement (also in the cash flow statement and selected data).",
            [
                ("income", f"Net income {money(y.net_income)}"),
                ("mdna_overview", f"Net income was ${money(y.net_income)}"),
            ],
        ),
        "eps": (
            m,
            f"What did {short} earn per diluted share in {fy}?",
            f"${y.diluted_eps:.2f}",
            "Diluted earnings per share in the income statement.",
            [("income", f"Diluted earnings per share ($) {y.diluted_eps:.2f}")],
        ),
        "current_ratio": (
            m,
            f"What was {short}'s current ratio at the end of {fy}?",
            f"{y.total_current_assets / y.total_current_liabilities:.2f}",
            f"Current assets {money(y.total_current_assets)} over current liabilities "
            f"{money(y.total_current_liabilities)} (balance sheet).",
            [("balance", f"Total current assets {money(y.total_current_assets)}")],
        ),
        "capex_share": (
            m,
            f"How much of its {fy} sales did {short} reinvest in capital projects, as a percentage?",
            f"{_pct(-y.capex, y.revenue)}",
            f"Capital expenditures {money(-y.capex)} over revenue {money(y.revenue)}.",
            [("cash_flows", f"Capital expenditures {money(y.capex)}"), ("income", f"Revenue {money(y.revenue)}")],
        ),
        "top_segment": (
            d,
            f"Which of {short}'s businesses brought in the most sales in {fy}, and how much?",
            f"{seg[top]}, ${money(y.segment_revenue[top])} million",
            "The largest line of the segment revenue table.",
            [("mdna_segments", f"{seg[top]} {money(y.segment_revenue[top])}")],
        ),
        "liquidity": (
            d,
            f"Is {short}'s liquidity comfortable going into {year + 1}? How much cash did it hold at the end of "
            f"{fy} and how much did its operations generate that year?",
            f"${money(y.cash)} million of cash and ${money(y.operating_cash_flow)} million from operations",
            "Cash from the balance sheet, operating cash flow from the cash flow statement.",
            [
                ("balance", f"Cash and cash equivalents {money(y.cash)}"),
                ("cash_flows", f"Net cash provided by operating activities {money(y.operating_cash_flow)}"),
                ("liquidity", f"cash and cash equivalents of ${money(y.cash)} million"),
            ],
        ),
        "us_share": (
            d,
            f"How dependent is {short} on its home market: what share of {fy} sales was domestic?",
            f"{_pct(y.us_revenue, y.revenue)}",
            f"United States revenue {money(y.us_revenue)} over total revenue {money(y.revenue)} (revenue note).",
            [("note_revenue", f"United States {money(y.us_revenue)}")],
        ),
        "op_margin": (
            d,
            f"Did {short}'s operating margin improve in {fy}?",
            f"{'Yes' if y.operating_income / y.revenue > p.operating_income / p.revenue else 'No'}: "
            f"{_pct(y.operating_income, y.revenue)} against {_pct(p.operating_income, p.revenue)} a year earlier",
            "Operating income over revenue for both years (income statement).",
            [("income", f"Operating income {money(y.operating_income)} {money(p.operating_income)}")],
        ),
        "returned": (
            d,
            f"How much cash did {short} hand back to shareholders in {fy}?",
            f"${money(-y.dividends - y.buybacks)} million",
            "Dividends plus repurchases; the letter to shareholders states the sum.",
            [("letter", f"we returned ${money(-y.dividends - y.buybacks)} million")],
        ),
        "capital_intensity": (
            d,
            f"Is {short} a capital-intensive business? What were its {fy} capital expenditures and depreciation?",
            f"${money(-y.capex)} million of capital expenditures and ${money(y.depreciation)} million of "
            "depreciation and amortization",
            "Both lines of the cash flow statement.",
            [("cash_flows", f"Depreciation and amortization {money(y.depreciation)}")],
        ),
        "tax": (
            d,
            f"What tax rate did {short} effectively pay in {fy}, and why does it differ from the statutory rate?",
            f"{y.effective_tax_rate:.1f}%, mainly because of state taxes",
            "The income tax note.",
            [("note_tax", f"effective tax rate of {y.effective_tax_rate:.1f}%")],
        ),
        "leverage": (
            d,
            f"How leveraged is {short}: how large was its debt due after one year against shareholders' equity at "
            f"the end of {fy}?",
            f"{y.long_term_debt / y.equity:.2f}",
            f"Long-term debt {money(y.long_term_debt)} over equity {money(y.equity)} (balance sheet).",
            [("balance", f"Long-term debt {money(y.long_term_debt)}")],
        ),
        "fastest_segment": (
            d,
            f"Which of {short}'s segments grew fastest in {fy}, and by how much?",
            f"{seg[fastest]}, {seg_growth[fastest]:.1f}%",
            "Segment revenue for both years (segment results).",
            [("mdna_segments", f"{seg[fastest]} {money(y.segment_revenue[fastest])}")],
        ),
        "headcount": (
            d,
            f"How did {short}'s workforce change over {fy}?",
            f"{y.employees:,} employees at year end, against {p.employees:,} a year earlier",
            "The human capital section.",
            [("people", f"we employed {y.employees:,} people")],
        ),
        "next_dividend": (
            n,
            f"What quarterly dividend did {short}'s board declare after {fy} closed?",
            f"${y.next_dividend:.2f} per share",
            "The subsequent-events note.",
            [("note_equity", f"quarterly dividend of ${y.next_dividend:.2f}")],
        ),
        "buyback": (
            n,
            f"How many of its own shares did {short} buy back in {fy}, and at what cost?",
            f"{y.shares_repurchased:.1f} million shares for ${money(-y.buybacks)} million",
            "The equity note.",
            [("note_equity", f"we repurchased {y.shares_repurchased:.1f} million shares")],
        ),
        "term_loan": (
            n,
            f"When does {short}'s term loan mature, and how much of it was outstanding at the end of {fy}?",
            f"In 2028; ${money(r1(y.total_debt - r1(0.6 * y.total_debt)))} million",
            "The debt note.",
            [("note_debt", f"Term loan due 2028 {money(r1(y.total_debt - r1(0.6 * y.total_debt)))}")],
        ),
        "q4": (
            n,
            f"How much did {short} sell in the last quarter of {fy}?",
            f"${money(y.quarterly_revenue[3])} million",
            "The quarterly results table.",
            [("quarterly", f"{year} " + " ".join(money(q) for q in y.quarterly_revenue))],
        ),
        "facilities": (
            n,
            f"How many sites does {short} run?",
            f"{y.facilities} facilities",
            "The human capital and properties section.",
            [("people", f"We operate {y.facilities} manufacturing")],
        ),
        "lease": (
            n,
            f"What did {short}'s operating leases cost it in {fy}?",
            f"${money(y.lease_cost)} million",
            "The lease note.",
            [("note_debt", f"Operating lease cost was ${money(y.lease_cost)} million")],
        ),
        "guidance": (n, f"What revenue does {short} expect for fiscal {year + 2}?", "", _NO_OUTLOOK, []),
        "ceo_pay": (n, f"How much was {short}'s chief executive paid in {fy}?", "", _PROXY, []),
        "offtopic": (n, "How many goals did the hockey club score last season?", "", _OFFTOPIC, []),
        "older": (n, f"What were {short}'s sales in fiscal {year - 4}?", "", _TOO_OLD, []),
    }


_NO_OUTLOOK = "The filing gives no revenue outlook."
_PROXY = "Executive compensation is incorporated by reference from the proxy statement; the filing states no figure."
_OFFTOPIC = "The question is not about the company or its filing."
_TOO_OLD = "The filing prints only the current and two prior fiscal years."

#: Which questions each filing gets: five each, a third of each kind over the set (`QUESTION_MIX`).
PLAN = {
    ("ACME", 2024): ("capex", "tax", "headcount", "q4", "guidance"),
    ("ACME", 2025): ("gross_margin", "payout", "top_segment", "op_margin", "next_dividend"),
    ("BRIGHTWAVE", 2024): ("fcf", "total_debt", "liquidity", "buyback", "offtopic"),
    ("BRIGHTWAVE", 2025): ("gross_margin", "returned", "leverage", "facilities", "older"),
    ("CORVID", 2024): ("bottom_line", "eps", "capital_intensity", "lease", "ceo_pay"),
    ("CORVID", 2025): ("current_ratio", "capex_share", "us_share", "fastest_segment", "term_loan"),
}


def _evidence(texts: list[str], name: str, wanted: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Return FinanceBench evidence items: each printed text on its named page, and on any other page printing it."""
    from labkit.rag.reports import page_numbers

    numbers = page_numbers()
    items: list[dict[str, Any]] = []
    for key, needle in wanted:
        if needle not in texts[numbers[key] - 1]:
            raise QuestionSetError(f"{name} page {numbers[key]} ({key}) does not contain {needle!r}; fix the plan")
        for index, text in enumerate(texts):
            item = {"evidence_text": needle, "evidence_page_num": index}  # FinanceBench: zero-based
            if needle in text and item not in items:
                items.append(item)
    return items


def build_question_records(folder: Path) -> list[dict[str, Any]]:
    """Return the lesson's question records, each evidence text found in the PDF's extracted page text."""
    from pypdf import PdfReader

    from labkit.rag.companies import COMPANIES, company_years
    from labkit.rag.reports import doc_name

    records: list[dict[str, Any]] = []
    for co in COMPANIES:
        years = company_years(co)
        for year in (2024, 2025):
            name = doc_name(co, year)
            texts = [" ".join(page.extract_text().split()) for page in PdfReader(folder / f"{name}.pdf").pages]
            specs = _specs(co, years, year)
            for key in PLAN[(co.ticker, year)]:
                question_type, question, answer, justification, wanted = specs[key]
                records.append(
                    {
                        "financebench_id": f"labkit_filings_{len(records) + 1:03d}",
                        "company": co.name,
                        "doc_name": name,
                        "question_type": question_type,
                        "question": question,
                        "answer": answer or "The filing does not contain this information.",
                        "justification": justification,
                        "evidence": _evidence(texts, name, wanted),
                    }
                )
    mix = {kind: sum(r["question_type"] == kind for r in records) for kind in QUESTION_MIX}
    if mix != QUESTION_MIX:
        raise QuestionSetError(f"the plan gives {mix} questions per kind; QUESTION_MIX states {QUESTION_MIX}")
    return records


def write_questions(folder: Path | None = None) -> Path:
    """Write ``questions.jsonl`` beside the filings (run `labkit.rag.filings` first)."""
    from labkit.rag.reports import filings_dir, guard_captured

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
