"""``python -m labkit.rag.financebench DIR``: measure part B's retrievers on a FinanceBench folder and print the tables.

Prints one summary line (questions measured, the parse, embed and retrieval times), the names it could not
place, the documents asked about that have no PDF (with how many questions each skips), then page-hit@k per
retriever, per question kind and per kind of document, for one store per document and for one shared
store: every figure with its 95% Wilson interval, and a verdict that prints a difference inside the best
retriever's interval as a tie. It writes the same figures, per question, to a results file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError
from labkit.paths import relative_to_root, scratch_dir
from labkit.rag.financebench.cache import CACHE_SETTING
from labkit.rag.financebench.context import CONTEXTS
from labkit.rag.financebench.results import SCOPES, FinanceBenchResults, page_hit_table, winners, write_results
from labkit.rag.index import CHUNKING

EXAMPLE = "python -m labkit.rag.financebench ../financebench --k 1 3 5 12"


def default_results_path() -> Path:
    """Return where the command writes its results unless told otherwise: ``scratch/financebench-results.json``."""
    return scratch_dir() / "financebench-results.json"


def _wrapped(items: list[str], indent: str = "  ", width: int = 110) -> str:
    """Return the items comma-separated over lines of at most ``width`` characters, never splitting an item."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(indent) + len(line) + len(item) + 2 > width:
            lines.append(indent + line + ",")
            line = ""
        line = f"{line}, {item}" if line else item
    return "\n".join([*lines, indent + line]) if items else ""


def names_report(results: FinanceBenchResults) -> list[str]:
    """Return the lines about names: outside the rule, PDFs spelled another way, repeated records, absent PDFs."""
    names = results.names
    lines = []
    unknown = {place: found for place, found in names["unknown"].items() if found}
    for place, found in unknown.items():
        lines += [f"names in {place} outside FinanceBench's naming rule (kept, reported):", _wrapped(found)]
    for doc, pdf in names["renamed"].items():
        lines.append(f"{pdf}.pdf is used for {doc} (the same company, year, kind and date, spelled another way)")
    for doc, periods in names["repeated_documents"].items():
        lines.append(f"the document list gives {doc} {len(periods)} lines (doc_period {', '.join(map(str, periods))})")
    if names["unused_pdfs"]:
        lines += ["PDFs no question or document line names:", _wrapped(names["unused_pdfs"])]
    if results.absent:
        skipped = sum(results.absent.values())
        lines += [
            f"{len(results.absent)} documents asked about have no PDF; their {skipped} questions are skipped "
            "(questions per document):",
            _wrapped([f"{doc} ({count})" for doc, count in results.absent.items()]),
        ]
    else:
        lines.append("every document asked about has its PDF")
    return lines


def _shown(table: Any, ks: list[int]) -> Any:
    """The table as printed: for each k one column ``0.575 [0.42, 0.71] tie``, then MRR and candidate recall."""
    import pandas as pd

    shown = pd.DataFrame(index=table.index)
    shown["questions"] = table["questions"]
    for k in ks:
        shown[f"page_hit@{k}"] = [
            f"{row[f'page_hit@{k}']:.3f} {row[f'ci95@{k}']} {row[f'vs_best@{k}']}" for _, row in table.iterrows()
        ]
    shown["mrr"] = table["mrr"]
    recall = table["candidate_recall@12"]
    shown["candidate_recall@12"] = ["-" if pd.isna(value) else f"{value:.3f}" for value in recall]
    return shown


def report(results: FinanceBenchResults, *, k: int = 5) -> str:
    """Return the measurement as plain text: the names, then per store the tables and the winners at ``k``."""
    import pandas as pd

    settings, counts, timings = results.settings, results.counts, results.timings
    chunks = sum(d["chunks"] for d in results.documents.values())
    lines = [
        f"{counts['measured']} of {counts['questions']} questions measured over {counts['documents_measured']} "
        f"documents ({counts['skipped_no_pdf']} skipped: no PDF; {counts['skipped_no_evidence']}: no labelled page); "
        f"parse {timings['parse_s']:.1f} s, embed {timings['embed_s']:.1f} s "
        f"({int(timings['texts_embedded_now'])} texts embedded now), retrieve {timings['retrieve_s']:.1f} s",
        *names_report(results),
        f"index: {chunks} chunks of {settings['chunk_size']} characters (overlap {settings['chunk_overlap']}), "
        f"pypdf {settings['extraction']} text, context line: {settings['context']}, "
        f"{settings['embedding_model']}; top-k counts distinct pages; "
        "each page-hit is shown with its 95% Wilson interval and a verdict against the best retriever of its "
        "row group (tie: inside the best one's interval, the data cannot separate them)",
    ]
    with pd.option_context("display.width", 250, "display.max_columns", 30, "display.max_colwidth", 40):
        for scope in SCOPES:
            for title, table in (
                ("question kind", page_hit_table(results, scope=scope, by="kind")),
                ("document kind", page_hit_table(results, scope=scope, by="doc_type")),
            ):
                lines += [
                    "",
                    f"{scope} store: page-hit@k per retriever and {title}",
                    _shown(table, results.ks).to_string(),
                ]
            if k in results.ks:
                lines += [f"{scope} store, best at page-hit@{k} per question kind:"]
                lines += [f"  {s}" for s in winners(page_hit_table(results, scope=scope), k=k)]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Return the command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m labkit.rag.financebench",
        description=__doc__.splitlines()[0].split(": ", 1)[1],
        epilog=f"example: {EXAMPLE}  (parsed pages and vectors are cached under ${CACHE_SETTING} "
        "or scratch/financebench/)",
    )
    parser.add_argument("folder", type=Path, help="a clone of patronus-ai/financebench (holding data/ and pdfs/)")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 12], help="the k values of page-hit@k")
    parser.add_argument("--chunk-size", type=int, default=CHUNKING[0], help="characters per chunk (default 800)")
    parser.add_argument("--chunk-overlap", type=int, default=CHUNKING[1], help="overlap in characters (default 100)")
    parser.add_argument(
        "--extraction", choices=("plain", "layout"), default="plain", help="pypdf's text extraction mode"
    )
    parser.add_argument(
        "--context",
        choices=CONTEXTS,
        default="document",
        help="the line before every chunk: its filing's company, kind and period (document, the default), "
        "that and its section heading (section), or nothing (none)",
    )
    parser.add_argument("--cache", type=Path, default=None, help=f"cache folder (default ${CACHE_SETTING})")
    parser.add_argument("--results", type=Path, default=None, help="results file (default scratch/...)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars, even on a terminal")
    return parser


def main(argv: list[str] | None = None, *, embeddings: Any = None) -> int:
    """Command line: measure, write the results file, print the report; exit 1 with a message on bad input."""
    from labkit.rag.financebench.measure import measure, no_bar, terminal_bar

    args = build_parser().parse_args(argv)
    if any(k < 1 for k in args.k):
        print("error: every --k must be 1 or more", file=sys.stderr)
        return 1
    try:
        results = measure(
            args.folder,
            ks=args.k,
            chunk_size=args.chunk_size,
            chunk_overlap=args.chunk_overlap,
            extraction=args.extraction,
            context=args.context,
            embeddings=embeddings,
            cache=args.cache,
            progress=no_bar if args.quiet else terminal_bar,
        )
        path = write_results(results, args.results or default_results_path())
    except LabkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(report(results, k=5 if 5 in args.k else max(args.k)))
    print(f"\nresults per question: {relative_to_root(path)}")
    return 0
