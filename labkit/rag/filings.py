"""Write the fictional annual-report PDFs of lesson 02 part B: ``python -m labkit.rag.filings``.

`labkit.rag.reports` says what each of the 25 pages prints; this module renders them with fpdf2 as
deterministic PDFs (a fixed creation date and producer, no other changing metadata), writes the manifest
``filings.json`` with every PDF's hash, then the question set (`labkit.rag.questions.write_questions`).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from labkit.canonical import file_sha256, pretty_json
from labkit.errors import LabkitError
from labkit.rag.companies import COMPANIES, PERIODS, Company, Year, company_years
from labkit.rag.reports import PAGE_PLAN, doc_name, filings_dir, guard_captured, page_numbers, pages

__all__ = [
    "CREATION_DATE",
    "MANIFEST",
    "PAGE_PLAN",
    "PRODUCER",
    "filings_dir",
    "guard_captured",
    "main",
    "page_numbers",
    "pages",
    "render_pdf",
    "write_filings",
]

#: The creation date written into every PDF, so that regeneration gives the same bytes.
CREATION_DATE = datetime(2026, 1, 15, tzinfo=UTC)
PRODUCER = "labkit.rag.filings"
MANIFEST = "filings.json"


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
                pdf.set_font("Helvetica", "", 9.5)
                pdf.multi_cell(0, 4.4, str(content), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            else:
                pdf.set_font("Helvetica", "", 9)
                widths = (3,) + (1,) * (len(content[0]) - 1)  # type: ignore[index]
                with pdf.table(text_align="LEFT", line_height=4.6, col_widths=widths) as table:
                    for row in content:  # type: ignore[attr-defined]
                        table.row(row)
            pdf.ln(2)
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
