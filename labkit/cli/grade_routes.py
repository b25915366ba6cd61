"""`labkit grade-routes`: grade a baseline and a candidate routing run; exit 0 pass, 2 rule failed, 1 invalid input."""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

EXAMPLE = """\
example:
  labkit grade-routes fixtures/routing/suite.json fixtures/routing/baseline.json \\
      fixtures/routing/candidate.json --protect t3

exit codes:
  0  the candidate passes the release rule
  2  the inputs are valid and the candidate fails the rule (the report says why)
  1  the inputs are invalid: one line on standard error, nothing on standard output
"""


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """Attach the `grade-routes` verb."""
    parser = subparsers.add_parser(
        name,
        help="grade two routing runs against a labelled suite (the release gate)",
        description="Grade a baseline and a candidate routing run on one suite, print the JSON report, "
        "and exit with the gate's verdict.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("suite", metavar="SUITE", help="the labelled suite (suite.json)")
    parser.add_argument("baseline", metavar="BASELINE", help="the run in use today")
    parser.add_argument("candidate", metavar="CANDIDATE", help="the proposed run")
    parser.add_argument(
        "--protect",
        metavar="ID",
        action="append",
        default=[],
        help="a case id that must not regress (correct in the baseline, wrong in the candidate); repeat for more",
    )
    parser.set_defaults(handler=run)
    exit_1_on_usage_error(parser)
    return parser


def exit_1_on_usage_error(parser: argparse.ArgumentParser) -> None:
    """Make a usage error of this verb (an argument missing or not recognized) exit 1, not argparse's 2.

    This verb keeps exit code 2 for a failed rule. `labkit.cli.main` sends unrecognized arguments
    to the verb's own parser, so they reach this handler too.
    """

    def usage_error(message: str) -> NoReturn:
        parser.exit(1, f"{parser.prog}: error: {message} (see --help)\n")

    parser.error = usage_error  # type: ignore[method-assign]  # argparse has no hook for the exit code


def run(args: argparse.Namespace) -> int:
    """Load the three files, grade them and print the JSON report; return 0 (pass) or 2 (a rule failed).

    Invalid input raises a `LabkitError` before anything is printed: `labkit.cli.main` turns it into exit code 1.
    """
    from labkit.routing.grader import grade_files

    report = grade_files(args.suite, args.baseline, args.candidate, protected=args.protect)
    sys.stdout.write(json.dumps(report, indent=2, allow_nan=False) + "\n")
    return 0 if report["pass"] else 2
