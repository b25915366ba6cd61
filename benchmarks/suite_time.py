"""Measure the whole test suite, notebooks included (budget: under 4 minutes on two cores); prints each run and the median.

.venv/bin/python benchmarks/suite_time.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 240.0


def main(runs: int = 1) -> int:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=ROOT, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
        print(f"run {len(seconds)}: {seconds[-1]:.0f} s, exit {done.returncode}: {summary}")
        if done.returncode != 0:
            return 1
    median = statistics.median(seconds)
    print(
        f"median {median:.0f} s over {runs} run(s) (budget {BUDGET_S:.0f} s): {'within' if median < BUDGET_S else 'OVER'} budget"
    )
    return 0 if median < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
