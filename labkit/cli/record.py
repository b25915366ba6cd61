"""`labkit record LESSON`: make a lesson's model requests again and save them as a new run."""

from __future__ import annotations

import argparse
from pathlib import Path

from labkit.paths import relative_to_root


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="record a lesson's model run (captured from an endpoint, or the authored run)",
        description="Run a lesson's model requests against the endpoint in LABKIT_BASE_URL / LABKIT_MODEL "
        "in record mode and save a new captured run beside the old ones; or, with --authored, rewrite the "
        "lesson's authored run from the replies the course wrote.",
        epilog="examples:\n"
        "  labkit serve &    # the bundled local model; prints its base URL\n"
        "  LABKIT_BASE_URL=http://127.0.0.1:PORT/v1 LABKIT_MODEL=SmolLM2-135M-Instruct labkit record 02\n"
        "  labkit record 02 --authored\n"
        "  labkit record 04 --repeats   # each case once per seed of the lesson's TRIALS",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("lesson", metavar="LESSON", help="the lesson number, such as 02")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--authored", action="store_true", help="rewrite the authored run instead of capturing")
    which.add_argument(
        "--repeats",
        action="store_true",
        help="record the lesson's repeated-trials run: each case sent once per seed of its TRIALS",
    )
    parser.add_argument("--run-id", help="id of the new captured run (default: the lesson's id plus a timestamp)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.lessons import (
        RECORDABLE,
        cells_showing_runs,
        lesson_module,
        record_captured,
        repeats_module,
        write_authored,
    )
    from labkit.paths import notebooks_dir

    lesson = args.lesson.zfill(2)
    module = repeats_module(lesson) if args.repeats else lesson_module(lesson)
    if args.authored:
        path = write_authored(lesson)
        print(f"wrote the authored run {relative_to_root(path)}")
        print(_signature_notice(path, origin="authored"))
    else:
        path = record_captured(lesson, run_id=args.run_id, repeats=args.repeats)
        print(f"saved a new captured run {relative_to_root(path)}")
        print(_signature_notice(path, origin="captured"))
        notebook = notebooks_dir() / RECORDABLE[lesson][1]
        cells = cells_showing_runs(notebook, ["RUN_CAPTURED", module.RUN_CAPTURED]) if notebook.is_file() else []
        print(
            f"To replay it, set RUN_CAPTURED in {module.__name__} to {path.parent.name!r}, then refresh the "
            f"outputs of notebooks/{RECORDABLE[lesson][1]} with `labkit run {RECORDABLE[lesson][1].partition('_')[0]} --update`."
        )
        if cells:
            print(f"Code cells that show the captured run, whose outputs will change: {', '.join(map(str, cells))}")
    return 0


def _signature_notice(path: Path, *, origin: str) -> str:
    """Say whether the run just written is signed, and how to sign it if not."""
    from labkit.signing import check_signature, read_allowed_signers, signature_notice

    signature = check_signature(path, allowed=read_allowed_signers(path.parent.parent))
    return signature_notice(path.parent.name, signature, origin=origin)
