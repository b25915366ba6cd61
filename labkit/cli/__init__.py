"""The `labkit` command: one module per verb, each with `add_parser(subparsers)` and `run(args) -> int`.

A `LabkitError` raised by a verb prints its message on standard error and exits 1,
without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: Verb name -> module under labkit.cli that implements it.
VERBS = {
    "run": "labkit.cli.run",
    "grade-routes": "labkit.cli.grade_routes",
    "serve": "labkit.cli.serve",
    "embed": "labkit.cli.embed",
    "record": "labkit.cli.record",
    "verify": "labkit.cli.verify",
    "sign": "labkit.cli.sign",
    "doctor": "labkit.cli.doctor",
    "workshop": "labkit.cli.workshop",
    "evaluate": "labkit.cli.evaluate",
}


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every verb's subparser attached."""
    parser = argparse.ArgumentParser(
        prog="labkit",
        description="The course's command line: run the notebooks, grade, record and check runs.",
    )
    subparsers = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name, module_name in VERBS.items():
        importlib.import_module(module_name).add_parser(subparsers, name)
        subparsers.choices[name].set_defaults(verb_parser=subparsers.choices[name])
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `labkit` console script."""
    from labkit.errors import LabkitError

    args, unknown = build_parser().parse_known_args(argv)
    if unknown:  # the verb's own parser reports it, so a verb that sets its usage exit code keeps it
        args.verb_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.handler(args))
    except LabkitError as exc:
        print(f"labkit {args.verb}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
