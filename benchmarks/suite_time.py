"""Measure the whole test suite as `python3 course.py test` runs it (budget: under 4 minutes on two cores).

.venv/bin/python benchmarks/suite_time.py [RUNS]

Each run is the command course.py's ``test`` runs (pytest over one worker per core, notebooks included),
with the same environment; it prints each run with the machine's load average before it, and the median.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = 240.0


def _course() -> object:
    spec = importlib.util.spec_from_file_location("course_script", ROOT / "course.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def suite_command() -> list[str]:
    """Return the command `python3 course.py test -q` runs (read from course.py, so the two cannot drift)."""
    command: list[str] = _course().pytest_command(["-q"])  # type: ignore[attr-defined]
    return command


def main(runs: int = 1) -> int:
    command = suite_command()
    env = dict(os.environ, PYTHONNOUSERSITE="1")  # as course.py sets it
    print(f"$ {' '.join(command[1:])}  ({os.cpu_count()} cores)")
    seconds = []
    for _ in range(runs):
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
        print(
            f"run {len(seconds)}: {seconds[-1]:.0f} s (load average {load:.1f} before), exit {done.returncode}: {summary}"
        )
        if done.returncode != 0:
            return 1
    median = statistics.median(seconds)
    print(
        f"median {median:.0f} s over {runs} run(s) (budget {BUDGET_S:.0f} s): {'within' if median < BUDGET_S else 'OVER'} budget"
    )
    return 0 if median < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
