"""Measure each notebook's execution time, kernel start excluded (budget: under 10 s each on two cores).

Runs every notebook RUNS times through `labkit run --json` and prints min, median and max per notebook.

    .venv/bin/python benchmarks/notebook_times.py [RUNS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

BUDGET_S = 10.0
LABKIT = Path(sys.executable).parent / "labkit"


def main(runs: int = 3) -> int:
    seconds: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        done = subprocess.run([str(LABKIT), "run", "--json", "--jobs", "1"], capture_output=True, text=True)
        for result in json.loads(done.stdout):
            if result["status"] != "passed":
                print(f"{result['notebook']} failed: {result['error']}")
                return 1
            seconds[result["notebook"]].append(result["seconds"])
    worst = 0.0
    print(f"{'notebook':<28} {'min':>6} {'median':>7} {'max':>6}   (seconds, {runs} runs, kernel start excluded)")
    for name, values in sorted(seconds.items()):
        median = statistics.median(values)
        worst = max(worst, median)
        print(f"{name:<28} {min(values):>6.2f} {median:>7.2f} {max(values):>6.2f}")
    print(f"slowest median {worst:.2f} s (budget {BUDGET_S} s): {'within' if worst < BUDGET_S else 'OVER'} budget")
    return 0 if worst < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
