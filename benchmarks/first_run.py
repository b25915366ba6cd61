"""Measure a learner's first `python3 course.py run` from a fresh clone, with pip and with uv side by side.

For each installer, clones this repository's committed HEAD into a temporary folder, runs
`python3 course.py run` there with `LABKIT_INSTALLER` set (so a uv failure is an error, not a
silent fallback to pip), and splits the wall time into venv creation, install and notebooks
(course.py prints the first two; notebooks is the rest). Then it compares `pip freeze` of the
two resulting environments: same names and versions, pip, setuptools, wheel and uv themselves
aside. Exit 1 if a run fails or the two sets differ.

    python3 benchmarks/first_run.py [--repeat N] [--extras embed,mcp] [--install-only] [--cold-cache] [--only uv]

`--install-only` runs `python3 course.py run --help` (sets up .venv, executes no notebook).
`--cold-cache` gives every run empty pip and uv caches: a laptop that never installed before.
`--only INSTALLER` times one installer (no comparison of the two sets).
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
INSTALLERS = ("pip", "uv")
SETUP = re.compile(
    r"Set up \.venv/ in [\d.]+ s \(venv (?P<venv>[\d.]+) s, install with (?P<installer>\w+) (?P<install>[\d.]+) s\)"
)
THE_INSTALLERS_THEMSELVES = {"pip", "setuptools", "wheel", "uv"}
CUDA = ("nvidia-", "triton")


def first_run(installer: str, folder: Path, *, extras: str, install_only: bool, cold_cache: bool) -> dict[str, float]:
    """Clone HEAD into ``folder``, run `course.py run` with ``installer``; return venv, install, notebooks and total seconds."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder / "clone")], check=True)
    clone = folder / "clone"
    env = dict(os.environ, LABKIT_INSTALLER=installer)
    if cold_cache:
        env.update(UV_CACHE_DIR=str(folder / "uv-cache"), PIP_CACHE_DIR=str(folder / "pip-cache"))
    command = [sys.executable, "course.py", "run", *(["--extras", extras] if extras else [])]
    command += ["--help"] if install_only else []
    started = time.perf_counter()
    done = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True)
    total = time.perf_counter() - started
    setup = SETUP.search(done.stdout)
    if done.returncode != 0 or setup is None or setup["installer"] != installer:
        sys.stdout.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(
            f"course.py run with LABKIT_INSTALLER={installer} failed (exit {done.returncode}); output above"
        )
    venv_s, install_s = float(setup["venv"]), float(setup["install"])
    return {"venv": venv_s, "install": install_s, "notebooks": total - venv_s - install_s, "total": total}


def frozen(clone: Path) -> dict[str, str]:
    """Return {normalized name: version} from `pip freeze` of the clone's .venv, the installers themselves left out."""
    python = clone / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    listing = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--all", "--exclude-editable", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    packages = {}
    for line in listing.splitlines():
        name, _, version = line.partition("==")
        normalized = re.sub(r"[-_.]+", "-", name).lower()
        if version and normalized not in THE_INSTALLERS_THEMSELVES:
            packages[normalized] = version
    return packages


def differences(by_pip: dict[str, str], by_uv: dict[str, str]) -> list[str]:
    """Return one line per package whose presence or version differs between the two installs."""
    lines = []
    for name in sorted(by_pip.keys() | by_uv.keys()):
        if by_pip.get(name) != by_uv.get(name):
            lines.append(f"{name}: pip {by_pip.get(name, '(absent)')}, uv {by_uv.get(name, '(absent)')}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per installer (medians are reported)")
    parser.add_argument("--extras", default="", help="passed to course.py run --extras")
    parser.add_argument("--install-only", action="store_true", help="set up .venv only, run no notebook")
    parser.add_argument("--cold-cache", action="store_true", help="empty pip and uv caches for every run")
    parser.add_argument("--only", choices=INSTALLERS, help="time this installer alone")
    options = parser.parse_args()
    installers = (options.only,) if options.only else INSTALLERS
    times: dict[str, list[dict[str, float]]] = {name: [] for name in installers}
    sets: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="labkit-first-run-") as tmp:
        for round_ in range(options.repeat):
            for installer in installers if round_ % 2 == 0 else installers[::-1]:
                folder = Path(tmp) / f"{installer}-{round_}"
                folder.mkdir()
                print(f"round {round_ + 1}: course.py run with {installer} ...", flush=True)
                times[installer].append(
                    first_run(
                        installer,
                        folder,
                        extras=options.extras,
                        install_only=options.install_only,
                        cold_cache=options.cold_cache,
                    )
                )
                sets.setdefault(installer, frozen(folder / "clone"))
    print(f"\nfresh clone -> python3 course.py run, median of {options.repeat} (seconds)")
    print(f"{'installer':<10}{'venv':>8}{'install':>9}{'notebooks':>11}{'total':>8}")
    for installer in installers:
        medians = {part: statistics.median(run[part] for run in times[installer]) for part in times[installer][0]}
        print(
            f"{installer:<10}" + "".join(f"{medians[p]:>{w}.1f}" for p, w in zip(medians, (8, 9, 11, 8), strict=True))
        )
    for installer in installers:
        totals = ", ".join(f"{run['total']:.1f}" for run in times[installer])
        print(f"each run's total with {installer}: {totals}")
    if options.only:
        return 0
    gone_astray = differences(sets["pip"], sets["uv"])
    cuda = sorted(name for packages in sets.values() for name in packages if name.startswith(CUDA))
    print(
        f"\npip freeze: {len(sets['pip'])} packages by pip, {len(sets['uv'])} by uv (pip, setuptools, wheel, uv aside)"
    )
    print("\n".join(gone_astray) if gone_astray else "same names and versions in both environments")
    print(f"CUDA packages: {', '.join(cuda)}" if cuda else "no CUDA packages (nvidia-*, triton) in either environment")
    return 1 if gone_astray or cuda else 0


if __name__ == "__main__":
    sys.exit(main())
