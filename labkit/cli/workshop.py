"""`labkit workshop`: student copies of the notebooks, and a checker for the learner's exercises."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="export student copies of the notebooks, or check a learner's exercises",
        description="export: write the numbered notebooks into DIR with outputs cleared and worked solutions "
        "removed. check: run a learner's notebook offline and say, for each exercise check, whether it passes.",
        epilog="examples:\n  labkit workshop export room-copies\n  labkit workshop check room-copies/05_minimal_system.ipynb",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="write student copies into a new folder")
    export.add_argument("destination", metavar="DIR", type=Path)
    check = actions.add_parser("check", help="run a learner's notebook and report its exercise checks")
    check.add_argument("notebook", metavar="NOTEBOOK", type=Path)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.runner import course_notebooks
    from labkit.course.workshop import check_exercises, export_workshop

    if args.action == "export":
        written = export_workshop(args.destination, course_notebooks())
        print(f"wrote {len(written)} student notebooks into {args.destination}")
        return 0
    results = check_exercises(args.notebook)
    if not results:
        print(f"{args.notebook.name} has no exercise checks")
        return 0
    for result in results:
        print(f"cell {result.cell}: {'passes' if result.passed else 'not yet: ' + result.message}")
    print(f"{sum(r.passed for r in results)} of {len(results)} exercise checks pass")
    return 0 if all(r.passed for r in results) else 1
