"""`labkit evaluate`: a report card of one model over every lesson that calls a model, gated against the baseline."""

from __future__ import annotations

import argparse
import json
import os
import sys


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="record every lesson against an endpoint and gate it against the committed runs",
        description="Record every lesson that calls a model against the endpoint in LABKIT_BASE_URL / LABKIT_MODEL "
        "(or the bundled model with --local) into scratch/evaluations/, grade each run with the lesson's own "
        "checks beside the committed captured run and the authored ideal, and apply each lesson's rule. "
        "Exit 0 when every rule passes, 2 when a rule fails, 1 on invalid input or an endpoint error.",
        epilog="examples:\n"
        "  labkit evaluate --local                  # the bundled SmolLM2 (extra local)\n"
        "  labkit evaluate --committed              # no endpoint: the committed captured runs against the ideal\n"
        "  labkit evaluate --lessons 05 06 --json   # two lessons, JSON for CI",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--local", action="store_true", help="start the bundled local model and evaluate it")
    source.add_argument(
        "--committed",
        action="store_true",
        help="evaluate the committed captured runs against the authored ideal, in replay (no endpoint)",
    )
    parser.add_argument("--lessons", nargs="+", metavar="NN", help="only these lessons (default: all)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--html", metavar="FILE", help="also write the report as one offline HTML page")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from contextlib import ExitStack
    from pathlib import Path
    from unittest.mock import patch

    from labkit.course.evaluate import as_json, evaluate, render_table
    from labkit.course.report_card import write_html

    with ExitStack() as stack:
        if args.local:
            from labkit.serve import local_model_server

            server = stack.enter_context(local_model_server(threads=1))
            stack.enter_context(patch.dict(os.environ, LABKIT_BASE_URL=server.base_url, LABKIT_MODEL=server.model_id))
        report = evaluate(
            candidate="captured" if args.committed else "endpoint",
            baseline="authored" if args.committed else "captured",
            lessons=args.lessons,
            progress=not (args.quiet or args.json),
        )
    if args.json:
        print(json.dumps(as_json(report), indent=2))
    else:
        print(render_table(report))
    html_path = Path(args.html) if args.html else (report.folder / "report.html" if report.folder else None)
    if html_path is not None:
        write_html(report, html_path)
        print(f"report written to {html_path}", file=sys.stderr)
    return report.exit_code
