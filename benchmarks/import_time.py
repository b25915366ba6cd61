"""Measure `import labkit` in fresh interpreters (budget: under 0.3 s); prints min, median and max.

.venv/bin/python benchmarks/import_time.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys

CODE = "import time; t = time.perf_counter(); import labkit; print(time.perf_counter() - t)"
BUDGET_S = 0.3


def main(runs: int = 15) -> int:
    subprocess.run([sys.executable, "-c", "import labkit"], check=True)  # warm the file cache
    times = [
        float(subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout)
        for _ in range(runs)
    ]
    median = statistics.median(times)
    print(
        f"import labkit over {runs} fresh interpreters: min {min(times):.4f} s, median {median:.4f} s, "
        f"max {max(times):.4f} s (budget {BUDGET_S} s): {'within' if median < BUDGET_S else 'OVER'} budget"
    )
    return 0 if median < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 15))
