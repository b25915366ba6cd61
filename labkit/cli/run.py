"""`labkit run`: execute every notebook headless and offline; print notebook, status and seconds."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from labkit.errors import LabkitError

if TYPE_CHECKING:
    from labkit.course.runner import NotebookResult


class NoSuchNotebook(LabkitError, FileNotFoundError):
    """A notebook named on the command line is not in notebooks/."""


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="execute the notebooks headless and offline",
        description="Execute every numbered notebook in replay mode with the network blocked, "
        "print a table of notebook, status and seconds, and exit 1 if any failed.",
        epilog="examples:\n  labkit run\n  labkit run 06\n  labkit run --json\n  labkit run --html scratch/html\n"
        "  labkit run 02 --update\n  labkit run --jobs 1    # one at a time: each notebook's seconds without contention",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "notebooks", nargs="*", metavar="NOTEBOOK", help="run only these (a number such as 06, or a file name)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of the table")
    parser.add_argument("--html", metavar="DIR", type=Path, help="also write each executed notebook to DIR as HTML")
    parser.add_argument(
        "--update",
        action="store_true",
        help="save each notebook that passed in place with its new outputs (refresh after re-recording)",
    )
    parser.add_argument(
        "--jobs",
        type=_positive,
        default=min(2, os.cpu_count() or 1),
        metavar="N",
        help="notebooks executed at once, each in its own process and kernel (default: 2, or 1 on one core); "
        "with more than one, the seconds include waiting for a shared core",
    )
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _select(names: list[str]) -> list[Path]:
    from labkit.course.runner import course_notebooks, notebook_matches

    every = course_notebooks()
    if not names:
        return every
    chosen = []
    for name in names:
        match = [p for p in every if notebook_matches(p, name)]
        if not match:
            known = ", ".join(p.name for p in every)
            raise NoSuchNotebook(f"no notebook {name!r}; the notebooks are: {known}")
        chosen.extend(match)
    return chosen


def run(args: argparse.Namespace) -> int:
    from labkit.course.runner import results_json, results_table, run_notebook
    from labkit.paths import writable_folder

    chosen = _select(args.notebooks)
    if args.html is not None:
        writable_folder(args.html)  # before any notebook runs: a file or an unwritable folder is refused now
    results = []
    if args.jobs == 1 or len(chosen) == 1:
        for path in chosen:
            if not args.json:
                print(f"running {path.name} ...", flush=True)
            results.append(run_notebook(path, html_dir=args.html, write_back=args.update))
    else:
        results = _run_at_once(chosen, jobs=args.jobs, html_dir=args.html, write_back=args.update, quiet=args.json)
    print(json.dumps(results_json(results), indent=2) if args.json else results_table(results))
    return 0 if results and all(r.status == "passed" for r in results) else 1


def _run_at_once(
    chosen: list[Path], *, jobs: int, html_dir: Path | None, write_back: bool, quiet: bool
) -> list[NotebookResult]:
    """Run the notebooks ``jobs`` at a time, each in a fresh process; return the results in the order asked.

    A process per notebook, not a thread: the runner sets the kernel's environment in
    ``os.environ`` while it starts the kernel, which threads would share.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from labkit.course.runner import run_notebook

    if not quiet:
        print(f"running {len(chosen)} notebooks, {jobs} at a time ...", flush=True)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {
            pool.submit(run_notebook, path, html_dir=html_dir, write_back=write_back): index
            for index, path in enumerate(chosen)
        }
        done: dict[int, NotebookResult] = {}
        for future in as_completed(futures):
            result = done[futures[future]] = future.result()
            if not quiet:
                print(f"  {result.notebook} {result.status}", flush=True)
    return [done[index] for index in range(len(chosen))]
