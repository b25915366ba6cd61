"""Write the fictional annual-report PDFs of lesson 02 part B: ``python -m labkit.rag.filings``.

Each report is a 17-page PDF laid out like a US annual report on Form 10-K:
cover, table of contents, letter, business, risk factors, management's
discussion, the three statements, notes, quarterly data and the auditor's
report. Two fiscal years of three invented companies give six documents whose
pages look alike (the same template, the prior year printed beside the current
one), so retrieval has something to get wrong. The bytes are deterministic: a
fixed creation date and producer, and no other changing metadata.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from labkit.canonical import file_sha256, pretty_json
from labkit.errors import FixtureOverwriteRefused, LabkitError
from labkit.paths import fixtures_dir, recorded_runs_dir
from labkit.rag.companies import COMPANIES, PERIODS, Company, Year, company_years, r1

#: The creation date written into every PDF, so that regeneration gives the same bytes.
CREATION_DATE = datetime(2026, 1, 15, tzinfo=UTC)
PRODUCER = "labkit.rag.filings"
MANIFEST = "filings.json"

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


def _rows(current: Year, prior: Year, lines: list[tuple[str, str]]) -> list[list[str]]:
    return [[label, money(getattr(current, attr)), money(getattr(prior, attr))] for label, attr in lines]


def pages(company: Company, year: int, years: dict[int, Year]) -> list[tuple[str, list[Block]]]:
    """Return the report's pages as ``(section title, blocks)``; a block is a paragraph or a table."""
    c, p = years[year], years[year - 1]
    name, fy, prior = company.name, f"fiscal {year}", f"fiscal {year - 1}"
    head = ["(in millions)", str(year), str(year - 1)]
    growth = 100 * (c.revenue - p.revenue) / p.revenue
    margin = 100 * c.gross_profit / c.revenue
    s = company.segments
    toc = [
        ("Letter to Shareholders", 3),
        ("Item 1. Business", 4),
        ("Item 1A. Risk Factors", 5),
        ("Items 3, 5 and 10-14", 6),
        ("Item 7. Management's Discussion and Analysis", 7),
        ("Segment Results", 8),
        ("Liquidity and Capital Resources", 9),
        ("Consolidated Statements of Income", 10),
        ("Consolidated Balance Sheets", 11),
        ("Consolidated Statements of Cash Flows", 12),
        ("Notes 1-2: Basis of Presentation and Revenue", 13),
        ("Note 3: Debt", 14),
        ("Notes 4-5: Income Taxes and Leases", 15),
        ("Notes 6-7: Equity and Subsequent Events", 16),
        ("Quarterly Results and Auditor's Report", 17),
    ]
    return [
        (
            "Annual Report on Form 10-K",
            [
                ("title", name),
                (
                    "p",
                    f"Annual report for the fiscal year ended December 31, {year}. {name} is {company.industry}, "
                    f"headquartered in {company.city}.",
                ),
                (
                    "p",
                    "This document is a fictional annual report written for a course on engineering AI systems. "
                    "The company, its people and every figure in it are invented.",
                ),
            ],
        ),
        ("Table of Contents", [("table", [["Section", "Page"]] + [[t, str(n)] for t, n in toc])]),
        (
            "Letter to Shareholders",
            [
                (
                    "p",
                    f"Dear shareholders, {fy} was a year of steady execution for {name}. Revenue reached "
                    f"${money(c.revenue)} million, a change of {growth:.1f}% from {prior}, and we returned "
                    f"${money(-c.dividends - c.buybacks)} million to shareholders through dividends and repurchases.",
                ),
                (
                    "p",
                    f"Our customers buy {company.products}. We kept investing in our plants and systems, and we "
                    "continued to simplify the portfolio so that each segment can earn its cost of capital.",
                ),
                (
                    "p",
                    f"I thank our employees for their work this year. Sincerely, {company.ceo}, Chief Executive Officer.",
                ),
            ],
        ),
        (
            "Item 1. Business",
            [
                (
                    "p",
                    f"{name} is {company.industry}. We report three segments: {s[0]}, {s[1]} and {s[2]}. "
                    f"Our principal products and services are {company.products}.",
                ),
                (
                    "p",
                    f"Human capital. As of December 31, {year}, we employed {c.employees:,} people, compared with "
                    f"{p.employees:,} a year earlier. We operated {c.facilities} manufacturing, distribution and "
                    f"service facilities, most of them in the United States.",
                ),
                (
                    "p",
                    "Competition. We compete on price, product availability, reliability and service. Our largest "
                    "customers are national retailers and distributors, none of which accounted for more than 10% "
                    "of consolidated revenue.",
                ),
            ],
        ),
        (
            "Item 1A. Risk Factors",
            [
                (
                    "p",
                    "Our results depend on demand in the markets we serve, which can fall quickly in a recession. "
                    "Higher interest rates raise our borrowing costs and can reduce our customers' spending.",
                ),
                (
                    "p",
                    "We buy raw materials, fuel and components from a limited number of suppliers. Price increases "
                    "or interruptions in supply could reduce our margins or delay deliveries.",
                ),
                (
                    "p",
                    "Cyber attacks on our systems or those of our vendors could disrupt operations, expose data "
                    "and lead to litigation. Changes in tax law could raise our effective tax rate.",
                ),
            ],
        ),
        (
            "Items 3, 5 and 10-14",
            [
                (
                    "p",
                    "Item 3. Legal Proceedings. We are party to ordinary routine litigation incidental to our "
                    "business. We do not expect any pending matter to have a material adverse effect.",
                ),
                (
                    "p",
                    f"Item 5. Market for Common Equity. Our common stock trades on the New York Stock Exchange under "
                    f"the symbol {company.ticker}. We paid dividends of ${c.dividend_per_share:.2f} per share in {fy}.",
                ),
                (
                    "p",
                    "Items 10 to 14. Information about our directors, executive officers, executive compensation, "
                    "security ownership and principal accountant fees is incorporated by reference from our proxy "
                    "statement for the next annual meeting of shareholders.",
                ),
            ],
        ),
        (
            "Item 7. Management's Discussion and Analysis",
            [
                (
                    "p",
                    f"Overview. Revenue in {fy} was ${money(c.revenue)} million compared with ${money(p.revenue)} "
                    f"million in {prior}. Gross profit was ${money(c.gross_profit)} million, a gross margin of "
                    f"{margin:.1f}%.",
                ),
                (
                    "p",
                    f"Operating income was ${money(c.operating_income)} million, and net income was "
                    f"${money(c.net_income)} million, or ${c.diluted_eps:.2f} per diluted share.",
                ),
                (
                    "p",
                    "Selling, general and administrative expenses reflect wage inflation and investment in "
                    "digital sales channels, partly offset by lower freight costs.",
                ),
            ],
        ),
        (
            "Segment Results",
            [
                (
                    "p",
                    f"The table below shows revenue by segment. {s[0]} remained our largest business by revenue."
                    if c.segment_revenue[0] >= max(c.segment_revenue)
                    else "The table below shows revenue by segment.",
                ),
                (
                    "table",
                    [["Segment revenue (in millions)", str(year), str(year - 1)]]
                    + [[s[i], money(c.segment_revenue[i]), money(p.segment_revenue[i])] for i in range(3)]
                    + [["Total revenue", money(c.revenue), money(p.revenue)]],
                ),
                ("p", "Segment results exclude corporate expenses, which are reported separately."),
            ],
        ),
        (
            "Liquidity and Capital Resources",
            [
                (
                    "p",
                    f"Cash provided by operating activities was ${money(c.operating_cash_flow)} million in {fy}. "
                    f"Capital expenditures were ${money(-c.capex)} million, mainly for equipment and systems.",
                ),
                (
                    "p",
                    f"We ended the year with cash and cash equivalents of ${money(c.cash)} million and total debt "
                    f"of ${money(c.current_debt + c.long_term_debt)} million. We believe cash on hand and our "
                    "revolving credit facility will meet our needs for the next twelve months.",
                ),
            ],
        ),
        (
            "Consolidated Statements of Income",
            [
                (
                    "table",
                    [
                        head,
                        *_rows(
                            c,
                            p,
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
                        ["Diluted earnings per share ($)", f"{c.diluted_eps:.2f}", f"{p.diluted_eps:.2f}"],
                    ],
                )
            ],
        ),
        (
            "Consolidated Balance Sheets",
            [
                (
                    "table",
                    [
                        ["December 31 (in millions)", str(year), str(year - 1)],
                        *_rows(
                            c,
                            p,
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
                )
            ],
        ),
        (
            "Consolidated Statements of Cash Flows",
            [
                (
                    "table",
                    [
                        head,
                        *_rows(
                            c,
                            p,
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
                )
            ],
        ),
        (
            "Notes 1-2: Basis of Presentation and Revenue",
            [
                (
                    "p",
                    f"Note 1. The consolidated financial statements include the accounts of {name} and its "
                    "subsidiaries and are prepared in accordance with US generally accepted accounting principles.",
                ),
                (
                    "p",
                    "Note 2. Revenue is recognized when control of the goods or services passes to the customer. "
                    "Revenue by geography was as follows.",
                ),
                (
                    "table",
                    [
                        ["Revenue by geography (in millions)", str(year), str(year - 1)],
                        ["United States", money(c.us_revenue), money(p.us_revenue)],
                        ["International", money(c.revenue - c.us_revenue), money(p.revenue - p.us_revenue)],
                    ],
                ),
            ],
        ),
        (
            "Note 3: Debt",
            [
                (
                    "p",
                    "Our debt consists of senior unsecured notes and a term loan. The revolving credit facility "
                    f"was undrawn at December 31, {year}.",
                ),
                (
                    "table",
                    [
                        ["Debt (in millions)", str(year), str(year - 1)],
                        [
                            "Senior notes due 2031",
                            money(r1(0.6 * (c.current_debt + c.long_term_debt))),
                            money(r1(0.6 * (p.current_debt + p.long_term_debt))),
                        ],
                        [
                            "Term loan due 2028",
                            money(
                                r1(c.current_debt + c.long_term_debt - r1(0.6 * (c.current_debt + c.long_term_debt)))
                            ),
                            money(
                                r1(p.current_debt + p.long_term_debt - r1(0.6 * (p.current_debt + p.long_term_debt)))
                            ),
                        ],
                        ["Less current portion", money(-c.current_debt), money(-p.current_debt)],
                        ["Long-term debt", money(c.long_term_debt), money(p.long_term_debt)],
                    ],
                ),
            ],
        ),
        (
            "Notes 4-5: Income Taxes and Leases",
            [
                (
                    "p",
                    f"Note 4. The provision for income taxes was ${money(c.income_tax)} million in {fy}, an "
                    f"effective tax rate of {c.effective_tax_rate:.1f}%, compared with {p.effective_tax_rate:.1f}% "
                    f"in {prior}. The rate differs from the federal statutory rate mainly because of state taxes.",
                ),
                (
                    "p",
                    "Note 5. We lease warehouses, offices and vehicles under operating leases with remaining terms "
                    "of one to twelve years. Lease cost is recognized on a straight-line basis.",
                ),
            ],
        ),
        (
            "Notes 6-7: Equity and Subsequent Events",
            [
                (
                    "p",
                    f"Note 6. In {fy} we repurchased {c.shares_repurchased:.1f} million shares of common stock for "
                    f"${money(-c.buybacks)} million and paid dividends of ${money(-c.dividends)} million.",
                ),
                (
                    "p",
                    f"Note 7. On February 12, {year + 1}, the board of directors declared a quarterly dividend of "
                    f"${c.next_dividend:.2f} per share, payable on March 20, {year + 1}.",
                ),
            ],
        ),
        (
            "Quarterly Results and Auditor's Report",
            [
                (
                    "table",
                    [
                        ["Quarterly revenue (unaudited, in millions)", "Q1", "Q2", "Q3", "Q4"],
                        [str(year)] + [money(q) for q in c.quarterly_revenue],
                    ],
                ),
                (
                    "p",
                    f"Report of Independent Registered Public Accounting Firm. We have audited the consolidated "
                    f"financial statements of {name} for {fy}. In our opinion they present fairly, in all material "
                    f"respects, the financial position of the company. {company.auditor}, {company.city}.",
                ),
            ],
        ),
    ]


def render_pdf(company: Company, year: int, years: dict[int, Year]) -> bytes:
    """Return the bytes of one report, identical on every run."""
    from fpdf import FPDF
    from fpdf.enums import XPos, YPos

    pdf = FPDF(format="Letter")
    pdf.set_creation_date(CREATION_DATE)
    pdf.set_producer(PRODUCER)
    pdf.set_creator(PRODUCER)
    pdf.set_title(f"{company.name} annual report {year}")
    pdf.set_auto_page_break(auto=False)
    name = doc_name(company, year)
    for number, (section, blocks) in enumerate(pages(company, year, years), start=1):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 14)
        pdf.cell(0, 10, section, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        for kind, content in blocks:
            if kind == "title":
                pdf.set_font("Helvetica", "B", 20)
                pdf.multi_cell(0, 12, str(content), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            elif kind == "p":
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(0, 6, str(content), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            else:
                pdf.set_font("Helvetica", "", 10)
                widths = (3,) + (1,) * (len(content[0]) - 1)  # type: ignore[index]
                with pdf.table(text_align="LEFT", line_height=6, col_widths=widths) as table:
                    for row in content:  # type: ignore[attr-defined]
                        table.row(row)
            pdf.ln(3)
        if pdf.get_y() > pdf.h - 22:
            raise RuntimeError(f"{name}: page {number} runs into the footer; shorten its text")
        pdf.set_y(-15)
        pdf.set_font("Helvetica", "", 8)
        pdf.cell(0, 8, f"{company.name} | {name} | page {number}", align="C")
    return bytes(pdf.output())


def write_filings(folder: Path | None = None) -> list[Path]:
    """Write every report, the manifest and the question file to ``folder``; refuse a folder a captured run depends on."""
    folder = folder or filings_dir()
    guard_captured(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written, manifest = [], []
    for company in COMPANIES:
        years = company_years(company)
        for year in PERIODS:
            name = doc_name(company, year)
            path = folder / f"{name}.pdf"
            path.write_bytes(render_pdf(company, year, years))
            written.append(path)
            manifest.append(
                {
                    "doc_name": name,
                    "company": company.name,
                    "period": year,
                    "file": path.name,
                    "sha256": file_sha256(path),
                }
            )
    (folder / MANIFEST).write_text(pretty_json({"documents": manifest}), encoding="utf-8")
    from labkit.rag.questions import write_questions

    return [*written, folder / MANIFEST, write_questions(folder)]


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


def main(argv: list[str] | None = None) -> int:
    """Command line: write the filings (default: fixtures/filings/)."""
    parser = argparse.ArgumentParser(prog="python -m labkit.rag.filings", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="folder to write to (default fixtures/filings)")
    args = parser.parse_args(argv)
    try:
        written = write_filings(args.out)
    except LabkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
