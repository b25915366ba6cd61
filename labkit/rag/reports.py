"""What each fictional annual report of lesson 02 part B prints, page by page (`labkit.rag.filings` writes the PDFs).

Each report is a 25-page PDF laid out like a US annual report on Form 10-K (`PAGE_PLAN`): cover, contents,
letter, business, risk factors, management's discussion, the statements (income and cash flows over three
years, the balance sheet over two), notes with segment, debt, tax and equity tables, quarterly data and the
auditor's report. Every page is filled to a real report's density (2,500-4,000 extracted characters, about
five 800-character chunks) with seeded running text (`labkit.rag.prose`) whose risk factors and accounting
discussions repeat the line items' words without their figures. Two fiscal years of three invented companies
give six documents whose pages look alike, so retrieval has something to get wrong. The bytes are
deterministic: a fixed creation date and producer, and no other changing metadata.

This module sits below both writers: `labkit.rag.filings` renders these pages as PDFs and
`labkit.rag.questions` writes the questions whose evidence they print, so neither imports the other's
module for what both need (names, figures, page numbers, the folder and its guard).
"""

from __future__ import annotations

import random
from pathlib import Path

from labkit.errors import FixtureOverwriteRefused
from labkit.paths import fixtures_dir, recorded_runs_dir
from labkit.rag.companies import YEARS_PRINTED, Company, Year, r1
from labkit.rag.prose import fill

Block = tuple[str, object]


def filings_dir() -> Path:
    """Return the folder of the committed filings, their manifest and the question set."""
    return fixtures_dir() / "filings"


def doc_name(company: Company, year: int) -> str:
    """Return the FinanceBench-style document name, such as ``ACME_2025_10K``."""
    return f"{company.ticker}_{year}_10K"


def money(value: float) -> str:
    """Format millions the way the statements do: thousands separators, negatives in parentheses."""
    text = f"{abs(value):,.1f}"
    return f"({text})" if value < 0 else text


def _rows(years: list[Year], lines: list[tuple[str, str]]) -> list[list[str]]:
    return [[label, *(money(getattr(y, attr)) for y in years)] for label, attr in lines]


#: The pages of every report, in order: (key, section title). Questions name their evidence page by key.
PAGE_PLAN: tuple[tuple[str, str], ...] = (
    ("cover", "Annual Report on Form 10-K"),
    ("contents", "Table of Contents"),
    ("letter", "Letter to Shareholders"),
    ("business", "Item 1. Business"),
    ("people", "Item 1. Business: Human Capital and Properties"),
    ("risk_markets", "Item 1A. Risk Factors: Markets and Operations"),
    ("risk_finance", "Item 1A. Risk Factors: Financial, Tax, People and Regulation"),
    ("market_equity", "Item 5. Market for Common Equity and Shareholder Returns"),
    ("selected", "Item 6. Selected Financial Data"),
    ("mdna_overview", "Item 7. Management's Discussion and Analysis: Overview"),
    ("mdna_results", "Item 7. Results of Operations"),
    ("mdna_segments", "Item 7. Segment Results"),
    ("liquidity", "Item 7. Liquidity and Capital Resources"),
    ("estimates", "Item 7. Critical Accounting Estimates; Item 7A. Market Risk"),
    ("income", "Consolidated Statements of Income"),
    ("balance", "Consolidated Balance Sheets"),
    ("cash_flows", "Consolidated Statements of Cash Flows"),
    ("note_revenue", "Notes 1-2: Basis of Presentation and Revenue"),
    ("note_segments", "Note 3: Segment Information"),
    ("note_debt", "Notes 4-5: Debt and Leases"),
    ("note_tax", "Note 6: Income Taxes"),
    ("note_equity", "Notes 7-8: Equity and Subsequent Events"),
    ("quarterly", "Quarterly Results (Unaudited)"),
    ("auditor", "Report of Independent Registered Public Accounting Firm; Item 9A"),
    ("part3", "Part III, Exhibits and Signatures"),
)
#: The bank each page is filled from, then the one it falls back on when the first runs out.
_FILL = {
    "cover": ("forward", "notes"),
    "contents": ("forward", "proxy"),
    "letter": ("letter", "mdna"),
    "business": ("business", "letter"),
    "people": ("people", "legal"),
    "risk_markets": ("risk", "risk"),
    "risk_finance": ("risk", "risk"),
    "market_equity": ("equity", "capital"),
    "selected": ("mdna", "statement"),
    "mdna_overview": ("mdna", "letter"),
    "mdna_results": ("mdna", "estimates"),
    "mdna_segments": ("mdna", "business"),
    "liquidity": ("capital", "market"),
    "estimates": ("estimates", "market"),
    "income": ("statement", "notes"),
    "balance": ("statement", "notes"),
    "cash_flows": ("statement", "notes"),
    "note_revenue": ("notes", "estimates"),
    "note_segments": ("notes", "mdna"),
    "note_debt": ("capital", "notes"),
    "note_tax": ("estimates", "notes"),
    "note_equity": ("equity", "notes"),
    "quarterly": ("mdna", "statement"),
    "auditor": ("audit", "estimates"),
    "part3": ("proxy", "audit"),
}
#: Banks any page falls back on, in order, when its own two run out before the page is full.
_SPARE = ("mdna", "estimates", "notes", "capital", "business")
#: The characters a page aims at (drawn per page), extracted text included; the tests hold pages to 2,500-4,000.
PAGE_CHARS = (2700, 3300)


def _length(blocks: list[Block]) -> int:
    total = 0
    for kind, content in blocks:
        if kind == "table" and isinstance(content, list):
            total += sum(len(" ".join(row)) + 1 for row in content)
        else:
            total += len(str(content)) + 1
    return total


def _content(company: Company, year: int, years: dict[int, Year]) -> dict[str, list[Block]]:
    """Return each page's own content (the figures and the sentences that print them), before the fill."""
    c, p = years[year], years[year - 1]
    shown = [years[year - n] for n in range(YEARS_PRINTED)]
    name, fy, prior = company.name, f"fiscal {year}", f"fiscal {year - 1}"
    head = ["(in millions)", *(str(y.year) for y in shown)]
    growth = 100 * (c.revenue - p.revenue) / p.revenue
    s = company.segments
    debt_rows = [
        ["Senior notes due 2031", *(money(r1(0.6 * y.total_debt)) for y in (c, p))],
        ["Term loan due 2028", *(money(r1(y.total_debt - r1(0.6 * y.total_debt))) for y in (c, p))],
        ["Total debt", *(money(y.total_debt) for y in (c, p))],
        ["Less current portion", *(money(-y.current_debt) for y in (c, p))],
        ["Long-term debt", *(money(y.long_term_debt) for y in (c, p))],
    ]
    toc = [[title, str(n)] for n, (_, title) in enumerate(PAGE_PLAN, start=1) if n > 2]
    return {
        "cover": [
            ("title", name),
            (
                "p",
                f"Annual report for the fiscal year ended December 31, {year}. {name} is {company.industry}, "
                f"headquartered in {company.city}. Commission file number 001-{company.seed:05d}.",
            ),
            (
                "p",
                "This document is a fictional annual report written for a course on engineering AI systems. "
                "The company, its people and every figure in it are invented.",
            ),
        ],
        "contents": [("table", [["Section", "Page"], *toc])],
        "letter": [
            (
                "p",
                f"Dear shareholders, {fy} was a year of steady execution for {name}. Revenue reached "
                f"${money(c.revenue)} million, a change of {growth:.1f}% from {prior}, and we returned "
                f"${money(-c.dividends - c.buybacks)} million to shareholders through dividends and repurchases.",
            ),
            ("p", f"Our customers buy {company.products}."),
            ("p", f"Sincerely, {company.ceo}, Chief Executive Officer."),
        ],
        "business": [
            (
                "p",
                f"{name} is {company.industry}. We report three segments: {s[0]}, {s[1]} and {s[2]}. "
                f"Our principal products and services are {company.products}.",
            ),
        ],
        "people": [
            (
                "p",
                f"At December 31, {year}, we employed {c.employees:,} people, compared with {p.employees:,} a year "
                f"earlier. We operate {c.facilities} manufacturing, distribution and service facilities.",
            ),
        ],
        "risk_markets": [
            ("p", "The risks below could materially affect our business, results and financial condition.")
        ],
        "risk_finance": [],
        "market_equity": [
            (
                "p",
                f"In {fy} we paid dividends of ${c.dividend_per_share:.2f} per share and repurchased "
                f"{c.shares_repurchased:.1f} million shares.",
            ),
            (
                "table",
                [
                    ["Dividends declared per share ($)", *(str(y.year) for y in shown)],
                    ["Full year", *(f"{y.dividend_per_share:.2f}" for y in shown)],
                ],
            ),
        ],
        "selected": [
            (
                "table",
                [
                    head,
                    *_rows(
                        shown,
                        [
                            ("Revenue", "revenue"),
                            ("Operating income", "operating_income"),
                            ("Net income", "net_income"),
                            ("Total assets", "total_assets"),
                            ("Long-term debt", "long_term_debt"),
                            ("Cash provided by operations", "operating_cash_flow"),
                        ],
                    ),
                    ["Diluted earnings per share ($)", *(f"{y.diluted_eps:.2f}" for y in shown)],
                ],
            ),
        ],
        "mdna_overview": [
            (
                "p",
                f"Revenue in {fy} was ${money(c.revenue)} million compared with ${money(p.revenue)} million in "
                f"{prior}. Net income was ${money(c.net_income)} million.",
            ),
        ],
        "mdna_results": [
            (
                "table",
                [
                    ["As a percentage of revenue", *(str(y.year) for y in shown)],
                    ["Gross margin", *(f"{100 * y.gross_profit / y.revenue:.1f}%" for y in shown)],
                    ["Selling, general and administrative", *(f"{100 * y.sga / y.revenue:.1f}%" for y in shown)],
                    ["Research and development", *(f"{100 * y.rnd / y.revenue:.1f}%" for y in shown)],
                ],
            ),
        ],
        "mdna_segments": [
            (
                "table",
                [
                    ["Segment revenue (in millions)", *(str(y.year) for y in shown)],
                    *[[s[i], *(money(y.segment_revenue[i]) for y in shown)] for i in range(3)],
                    ["Total revenue", *(money(y.revenue) for y in shown)],
                ],
            ),
        ],
        "liquidity": [
            (
                "p",
                f"Cash provided by operating activities was ${money(c.operating_cash_flow)} million in {fy}. "
                f"Capital expenditures were ${money(-c.capex)} million, mainly for equipment and systems.",
            ),
            (
                "p",
                f"We ended the year with cash and cash equivalents of ${money(c.cash)} million and total debt "
                f"of ${money(c.total_debt)} million.",
            ),
        ],
        "estimates": [],
        "income": [
            (
                "table",
                [
                    head,
                    *_rows(
                        shown,
                        [
                            ("Revenue", "revenue"),
                            ("Cost of revenue", "cost_of_revenue"),
                            ("Gross profit", "gross_profit"),
                            ("Selling, general and administrative", "sga"),
                            ("Research and development", "rnd"),
                            ("Operating income", "operating_income"),
                            ("Interest expense", "interest_expense"),
                            ("Other income (expense), net", "other_income"),
                            ("Income before income taxes", "pretax_income"),
                            ("Provision for income taxes", "income_tax"),
                            ("Net income", "net_income"),
                            ("Diluted shares outstanding", "diluted_shares"),
                        ],
                    ),
                    ["Diluted earnings per share ($)", *(f"{y.diluted_eps:.2f}" for y in shown)],
                ],
            ),
        ],
        "balance": [
            (
                "table",
                [
                    ["December 31 (in millions)", str(year), str(year - 1)],
                    *_rows(
                        [c, p],
                        [
                            ("Cash and cash equivalents", "cash"),
                            ("Accounts receivable, net", "receivables"),
                            ("Inventories", "inventories"),
                            ("Other current assets", "other_current"),
                            ("Total current assets", "total_current_assets"),
                            ("Property, plant and equipment, net", "ppe"),
                            ("Goodwill", "goodwill"),
                            ("Other assets", "other_assets"),
                            ("Total assets", "total_assets"),
                            ("Accounts payable", "payables"),
                            ("Accrued liabilities", "accrued"),
                            ("Current portion of long-term debt", "current_debt"),
                            ("Total current liabilities", "total_current_liabilities"),
                            ("Long-term debt", "long_term_debt"),
                            ("Other liabilities", "other_liabilities"),
                            ("Total liabilities", "total_liabilities"),
                            ("Total shareholders' equity", "equity"),
                        ],
                    ),
                ],
            ),
        ],
        "cash_flows": [
            (
                "table",
                [
                    head,
                    *_rows(
                        shown,
                        [
                            ("Net income", "net_income"),
                            ("Depreciation and amortization", "depreciation"),
                            ("Stock-based compensation", "stock_comp"),
                            ("Changes in working capital", "working_capital_change"),
                            ("Net cash provided by operating activities", "operating_cash_flow"),
                            ("Capital expenditures", "capex"),
                            ("Acquisitions, net of cash acquired", "acquisitions"),
                            ("Net cash used in investing activities", "investing_cash_flow"),
                            ("Repayments of long-term debt", "debt_repaid"),
                            ("Dividends paid", "dividends"),
                            ("Repurchases of common stock", "buybacks"),
                            ("Net cash used in financing activities", "financing_cash_flow"),
                            ("Net change in cash and cash equivalents", "net_change_in_cash"),
                            ("Cash and cash equivalents, end of year", "cash"),
                        ],
                    ),
                ],
            ),
        ],
        "note_revenue": [
            (
                "p",
                f"Note 1. The consolidated financial statements include the accounts of {name} and its "
                "subsidiaries and are prepared in accordance with US generally accepted accounting principles. "
                "Note 2. Revenue is recognized when control of the goods or services passes to the customer.",
            ),
            (
                "table",
                [
                    ["Revenue by geography (in millions)", *(str(y.year) for y in shown)],
                    ["United States", *(money(y.us_revenue) for y in shown)],
                    ["International", *(money(r1(y.revenue - y.us_revenue)) for y in shown)],
                ],
            ),
        ],
        "note_segments": [
            (
                "table",
                [
                    ["Segment operating income (in millions)", *(str(y.year) for y in shown)],
                    *[[s[i], *(money(y.segment_operating_income[i]) for y in shown)] for i in range(3)],
                    ["Total operating income", *(money(y.operating_income) for y in shown)],
                ],
            ),
        ],
        "note_debt": [
            (
                "p",
                "Note 4. Our debt consists of senior unsecured notes and a term loan. The revolving credit facility "
                f"was undrawn at December 31, {year}.",
            ),
            ("table", [["Debt (in millions)", str(year), str(year - 1)], *debt_rows]),
            (
                "p",
                f"Note 5. We lease warehouses, offices and vehicles under operating leases. Operating lease cost was "
                f"${money(c.lease_cost)} million in {fy} and ${money(p.lease_cost)} million in {prior}.",
            ),
        ],
        "note_tax": [
            (
                "p",
                f"Note 6. The provision for income taxes was ${money(c.income_tax)} million in {fy}, an "
                f"effective tax rate of {c.effective_tax_rate:.1f}%, compared with {p.effective_tax_rate:.1f}% "
                f"in {prior}. The rate differs from the federal statutory rate mainly because of state taxes.",
            ),
            (
                "table",
                [
                    ["Tax rate reconciliation", *(str(y.year) for y in shown)],
                    ["Federal statutory rate", *("21.0%" for _ in shown)],
                    ["State taxes, net of federal benefit", *(f"{y.state_tax_rate:.1f}%" for y in shown)],
                    [
                        "Foreign rates and other",
                        *(f"{y.effective_tax_rate - 21.0 - y.state_tax_rate:.1f}%" for y in shown),
                    ],
                    ["Effective tax rate", *(f"{y.effective_tax_rate:.1f}%" for y in shown)],
                ],
            ),
        ],
        "note_equity": [
            (
                "p",
                f"Note 7. In {fy} we repurchased {c.shares_repurchased:.1f} million shares of common stock for "
                f"${money(-c.buybacks)} million and paid dividends of ${money(-c.dividends)} million.",
            ),
            (
                "p",
                f"Note 8. On February 12, {year + 1}, the board of directors declared a quarterly dividend of "
                f"${c.next_dividend:.2f} per share, payable on March 20, {year + 1}.",
            ),
        ],
        "quarterly": [
            (
                "table",
                [
                    ["Quarterly revenue (in millions)", "Q1", "Q2", "Q3", "Q4"],
                    *[[str(y.year), *(money(q) for q in y.quarterly_revenue)] for y in (c, p)],
                ],
            ),
        ],
        "auditor": [
            (
                "p",
                f"To the shareholders and board of directors of {name}. We have audited the consolidated "
                f"financial statements of {name} for {fy}. In our opinion they present fairly, in all material "
                f"respects, the financial position of the company. {company.auditor}, {company.city}.",
            ),
        ],
        "part3": [("p", f"Signed: {company.ceo}, Chief Executive Officer, February 20, {year + 1}.")],
    }


def pages(company: Company, year: int, years: dict[int, Year]) -> list[tuple[str, list[Block]]]:
    """Return the report's pages as ``(section title, blocks)``: each page's content, then seeded running text."""
    content = _content(company, year, years)
    words = {
        "short": company.name.split()[0],
        "products": company.products,
        "city": company.city,
        "seg0": company.segments[0],
        "seg1": company.segments[1],
        "seg2": company.segments[2],
        "next": year + 1,
        "year_plus5": year + 5,
        "facility": f"${round(company.base_revenue * 0.1, -1):,.0f}",
        "holders": f"{company.seed * 97 + 1200:,}",
    }
    rng = random.Random(f"{company.ticker}-{year}")
    used: set[str] = set()
    result = []
    for key, title in PAGE_PLAN:
        blocks = list(content[key])
        target = rng.randint(*PAGE_CHARS) - len(title) - 60  # the footer takes about 60 characters
        for bank in (*_FILL[key], *_SPARE):
            missing = target - _length(blocks)
            blocks += [("p", text) for text in fill(bank, rng, words, chars=missing, used=used)]
        result.append((title, blocks))
    return result


def page_numbers() -> dict[str, int]:
    """Return each page key's one-based page number (the same in every report)."""
    return {key: number for number, (key, _) in enumerate(PAGE_PLAN, start=1)}


def guard_captured(folder: Path) -> None:
    """Raise `FixtureOverwriteRefused` if a captured run depends on a file in ``folder``."""
    from labkit.recording import verify_runs

    rel = folder.resolve()
    for name, run, _ in verify_runs(recorded_runs_dir()):
        if run is None or run.origin != "captured":
            continue
        from labkit.paths import project_root

        if any((project_root() / f).resolve().parent == rel for f in run.fixtures):
            raise FixtureOverwriteRefused(
                f"{folder} holds fixtures of the captured run {name!r}; regenerating them would break it. "
                "Write to another folder with --out, or remove that run first and record it again."
            )
