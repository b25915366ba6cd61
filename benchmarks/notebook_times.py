"""Measure each notebook's execution time, kernel start excluded (budget: under 10 s each on two cores).

Runs every notebook (or the ones named) RUNS times through `labkit run --json` and prints min, median and max
per notebook. `labkit run` gives every run its own empty scratch folder, so each measured run builds lesson 02's
index afresh, as on a fresh clone's first run: the figure is the first build, which also bounds a run with a warm
cache. ``--cold`` says so explicitly (``LABKIT_SCRATCH`` set to a new temporary folder as well). The budget is
``--budget`` (default 10 s; lesson 02's first build is held to 30 s).

    .venv/bin/python benchmarks/notebook_times.py [--runs N] [--cold] [--budget S] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

BUDGET_S = 10.0
LABKIT = Path(sys.executable).parent / "labkit"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="only these (a number such as 02)")
    parser.add_argument("--runs", type=int, default=3, help="runs per notebook (default 3)")
    parser.add_argument("--cold", action="store_true", help="an empty scratch folder for every run (no cached index)")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help=f"seconds per notebook (default {BUDGET_S})")
    args = parser.parse_args(argv)
    seconds: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="labkit-cold-") as cold:
            env = os.environ | ({"LABKIT_SCRATCH": cold} if args.cold else {})
            done = subprocess.run(
                [str(LABKIT), "run", "--json", "--jobs", "1", *args.notebooks], capture_output=True, text=True, env=env
            )
        for result in json.loads(done.stdout):
            if result["status"] != "passed":
                print(f"{result['notebook']} failed: {result['error']}")
                return 1
            seconds[result["notebook"]].append(result["seconds"])
    worst = 0.0
    state = "empty scratch folder each run: every index built afresh"
    print(f"{'notebook':<28} {'min':>6} {'median':>7} {'max':>6}   (seconds, {args.runs} runs, {state})")
    for name, values in sorted(seconds.items()):
        median = statistics.median(values)
        worst = max(worst, median)
        print(f"{name:<28} {min(values):>6.2f} {median:>7.2f} {max(values):>6.2f}")
    verdict = "within" if worst < args.budget else "OVER"
    print(f"slowest median {worst:.2f} s (budget {args.budget} s): {verdict} budget")
    return 0 if worst < args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
