"""`labkit workshop`: student copies of the notebooks, and a checker for the learner's exercises."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="export student copies of the notebooks, or check a learner's exercises",
        description="export: write the numbered notebooks into DIR (default scratch/student/) with outputs cleared, "
        "worked solutions replaced by stubs that raise NotImplementedError with a hint, and the listings an "
        "exercise asks for hidden; Run All goes on past an unfinished exercise. A DIR inside the clone is refused "
        "unless git ignores it. check: run a learner's notebook offline (past errors) and say, per exercise, "
        "passed / not finished / failed; exit 1 unless all pass.",
        epilog="examples:\n  labkit workshop export\n  labkit workshop export ~/room-copies\n"
        "  labkit workshop check scratch/student/05_minimal_system.ipynb\n"
        "  labkit workshop check --cell-timeout 120 scratch/student/02b_filings_rag.ipynb",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="write student copies into a new folder (default scratch/student/)")
    export.add_argument(
        "destination", metavar="DIR", type=Path, nargs="?", help="a new or empty folder (default: scratch/student/)"
    )
    check = actions.add_parser("check", help="run a learner's notebook and report its exercise checks")
    check.add_argument("notebook", metavar="NOTEBOOK", type=Path)
    check.add_argument(
        "--cell-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=None,
        help="seconds one cell may run before the check stops it and names it (default 60)",
    )
    parser.set_defaults(handler=run)


def _seconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds, 1 or more")
    return value


def run(args: argparse.Namespace) -> int:
    from labkit.course.runner import course_notebooks
    from labkit.course.workshop import check_exercises, default_export_folder, exercise_report, export_workshop

    if args.action == "export":
        from labkit.paths import relative_to_root

        destination = args.destination if args.destination is not None else default_export_folder()
        written = export_workshop(destination, course_notebooks())
        shown = relative_to_root(destination)
        print(f"wrote {len(written)} student notebooks into {shown}/ (solutions replaced by stubs)")
        print(f"open them with: python3 course.py lab {shown}")
        return 0
    from labkit.course.workshop import EXERCISE_CELL_TIMEOUT_S

    timeout = args.cell_timeout or EXERCISE_CELL_TIMEOUT_S
    report, code = exercise_report(args.notebook.name, check_exercises(args.notebook, cell_timeout=timeout))
    print(report)
    return code
