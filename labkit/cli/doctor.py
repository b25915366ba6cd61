"""`labkit doctor`: an offline preflight for a workshop laptop, as a one-page report."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="offline preflight: Python, pinned packages, kernel, every notebook, recorded runs, extras, disk",
        description="Check, offline, that this machine can run the course: Python version, core packages at their "
        "tested versions, kernel start, every notebook executed in replay mode with the network blocked, every "
        "recorded run verified, a secret scan, optional extras, free disk. Exits 1 if anything needs fixing.",
        epilog="examples:\n  labkit doctor\n  labkit doctor --skip-notebooks   # the quick checks only",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--skip-notebooks", action="store_true", help="do not execute the notebooks")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.doctor import report, run_checks

    checks = run_checks(notebooks=not args.skip_notebooks)
    print(report(checks))
    return 0 if all(c.ok for c in checks) else 1
