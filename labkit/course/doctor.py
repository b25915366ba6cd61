"""Workshop preflight: check, offline, that this machine can run the whole course, and say what to fix.

Each check returns a `Check`; `labkit doctor` prints them as a one-page report
and exits nonzero if any failed. Nothing here needs the network.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labkit.paths import project_root, recorded_runs_dir

if TYPE_CHECKING:
    from labkit.recording import RecordedRun

#: Below this much free disk a workshop laptop gets a warning-level failure.
MIN_FREE_BYTES = 1_000_000_000
#: The slow checks (each notebook, the recorded runs) run this many at a time, each in its own process, as
#: `labkit run` runs notebooks, so that a laptop's second core shares the work.
JOBS = min(2, os.cpu_count() or 1)

#: Optional extra -> (a module it brings, what it enables).
EXTRAS = {
    "local": ("xllamacpp", "labkit serve and explore mode: a real model on 127.0.0.1 (prebuilt llama.cpp server)"),
    "local-source": ("llama_cpp", "the same model served by llama-cpp-python, built from source (the fallback)"),
    "embed": ("sentence_transformers", "labkit embed: recomputing the saved embedding vectors"),
    "mcp": ("mcp", "lesson 04's MCP boundary, served and called over stdio"),
}


@dataclass(frozen=True)
class Check:
    """The outcome of one preflight check."""

    name: str
    """What was checked."""
    ok: bool
    """True when nothing needs fixing."""
    detail: str
    """What was found, and on failure what to do."""


def check_python() -> Check:
    """Python must be 3.11.5 or newer (soupsieve, a pinned dependency, needs it)."""
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11, 5)
    return Check("python", ok, version if ok else f"{version}: install Python 3.11.5 or newer and run course.py again")


def _pins(constraints: Path) -> dict[str, str]:
    pins = {}
    for line in constraints.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return pins


def _core_requirements() -> list[str]:
    names = []
    for requirement in importlib.metadata.requires("labkit") or []:
        if "extra ==" in requirement:
            continue
        names.append(re.sub(r"[-_.]+", "-", re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]).lower())
    return names


def check_dependencies(constraints: Path | None = None) -> Check:
    """Every core dependency is installed at the tested (pinned) version."""
    constraints = constraints or project_root() / "constraints.txt"
    if not constraints.is_file():
        return Check(
            "dependencies",
            False,
            f"{constraints} is missing, so the tested versions are unknown; restore it with "
            "`git checkout -- constraints.txt`",
        )
    pins = _pins(constraints)
    problems, count = [], 0
    for name in _core_requirements():
        count += 1
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{name} missing")
            continue
        pinned = pins.get(name)
        if pinned and installed.split("+")[0] != pinned.split("+")[0]:
            problems.append(f"{name} {installed} (tested {pinned})")
    if problems:
        return Check(
            "dependencies", False, "; ".join(problems) + ". Reinstall: python3 course.py run (it installs the pins)"
        )
    return Check("dependencies", True, f"{count} core packages at their tested versions")


def check_kernel(timeout: float = 60) -> Check:
    """A Python kernel starts and answers; reports how long that took."""
    import tempfile

    from labkit.course.runner import kernel_manager

    with tempfile.TemporaryDirectory(prefix="labkit-doctor-") as folder:
        manager = kernel_manager(Path(folder))
        started = time.perf_counter()
        try:
            manager.start_kernel()
            client = manager.client()
            client.start_channels()
            client.wait_for_ready(timeout=timeout)
        except Exception as exc:  # any failure here is what the instructor needs to see
            manager.shutdown_kernel(now=True)
            return Check(
                "kernel", False, f"could not start a python3 kernel: {exc}. Reinstall with python3 course.py run"
            )
        seconds = time.perf_counter() - started
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return Check("kernel", True, f"python3 kernel ready in {seconds:.1f} s")


def check_offline_guard() -> Check:
    """Report which offline guard the notebooks' kernels run under; the Python block alone still passes."""
    from labkit.offline import offline_guard

    return Check("offline guard", True, offline_guard())


def check_notebook(path: Path) -> Check:
    """The notebook executes in replay mode with the network blocked."""
    from labkit.course.runner import run_notebook

    result = run_notebook(path)
    detail = (
        f"{result.seconds:.1f} s" if result.status == "passed" else f"{result.error} (run: labkit run {path.name[:2]})"
    )
    return Check(f"notebook {path.name}", result.status == "passed", detail)


def check_notebooks(*, jobs: int = 1) -> list[Check]:
    """Every notebook executes in replay mode with the network blocked (``jobs`` at a time)."""
    from labkit.course.runner import course_notebooks

    checks = _at_once([(check_notebook, (path,)) for path in course_notebooks()], jobs=jobs)
    return checks or [Check("notebooks", False, "no numbered notebooks found in notebooks/")]


def _run_detail(run: RecordedRun) -> str:
    signature = run.signature
    signed = f"signed by {signature.principal}" if signature and signature.principal else "unsigned"
    return f"{run.origin}, {run.model.id}, {len(run.bindings)} bindings, {signed}"


def _at_once(calls: list[tuple[Callable[..., Any], tuple[Any, ...]]], *, jobs: int) -> list[Any]:
    """Return each call's result in order, ``jobs`` calls at a time, each in a fresh process.

    A process each, not a thread: the runner sets the kernel's environment in ``os.environ``
    while it starts a kernel, which threads would share. Calls start in the order given.
    """
    if jobs <= 1 or len(calls) <= 1:
        return [function(*arguments) for function, arguments in calls]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(function, *arguments) for function, arguments in calls]
        return [future.result() for future in futures]


def check_recorded_runs() -> list[Check]:
    """Every recorded run loads unedited, matches manifest and fixtures, states its origin, and is signed; no secrets.

    Every run, authored or captured, must carry a signature by a key in
    ``recorded_runs/allowed_signers``. The last checks name each listed signer and scan for secrets.
    """
    from labkit.course.lessons import verify_course_runs
    from labkit.secret_scan import scan_for_secrets
    from labkit.signing import ALLOWED_SIGNERS_FILE, AllowedSignersError, signer_lines

    results = verify_course_runs()
    checks = [
        Check(f"run {name}", loaded is not None, _run_detail(loaded) if loaded else problem)
        for name, loaded, problem in results
    ]
    try:
        signers = signer_lines([loaded.signature for _, loaded, _ in results if loaded and loaded.signature])
    except AllowedSignersError as exc:
        signers, unreadable = [], str(exc)
    else:
        unreadable = f"recorded_runs/{ALLOWED_SIGNERS_FILE} lists no key; restore it from git"
    listed = "; ".join(" ".join(line.split()) for line in signers)
    checks.append(
        Check(
            "run signers",
            bool(signers),
            f"recorded_runs/{ALLOWED_SIGNERS_FILE} (the trust root) lists {listed}" if signers else unreadable,
        )
    )
    findings = scan_for_secrets(recorded_runs_dir())
    checks.append(
        Check(
            "secret scan",
            not findings,
            "no secrets in recorded_runs/ (detect-secrets)"
            if not findings
            else "; ".join(f"{f.place} {f.kind}" for f in findings) + ": remove them and rotate the keys",
        )
    )
    return checks


def check_extras() -> list[Check]:
    """Report each optional extra as present or absent, with what it enables; absence is not a failure."""
    checks = []
    for extra, (module, enables) in EXTRAS.items():
        if importlib.util.find_spec(module) is not None:
            detail = f"present: {enables}"
        else:
            detail = f'absent; it enables {enables}. To add it: pip install -c constraints.txt -e ".[{extra}]"'
        checks.append(Check(f"extra {extra}", True, detail))
    return checks


def check_disk(minimum: int = MIN_FREE_BYTES) -> Check:
    """There is enough free disk for scratch files and an extra's install."""
    free = shutil.disk_usage(project_root()).free
    ok = free >= minimum
    detail = f"{free / 1e9:.1f} GB free" + ("" if ok else f"; free at least {minimum / 1e9:.0f} GB")
    return Check("disk", ok, detail)


def run_checks(*, notebooks: bool = True, jobs: int = JOBS) -> list[Check]:
    """Run every preflight check and return them in report order; the slow ones run ``jobs`` at a time.

    The recorded runs' check (verification and the secret scan, the longest single task) starts
    first, beside the first notebook; with ``jobs`` above one a notebook's seconds include
    waiting for a shared core.
    """
    from labkit.course.runner import course_notebooks

    checks = [check_python(), check_dependencies(), check_kernel(), check_offline_guard()]
    paths = course_notebooks() if notebooks else []
    runs, *each = _at_once([(check_recorded_runs, ()), *((check_notebook, (path,)) for path in paths)], jobs=jobs)
    if notebooks:
        checks.extend(each or [Check("notebooks", False, "no numbered notebooks found in notebooks/")])
    checks.extend(runs)
    checks.extend(check_extras())
    checks.append(check_disk())
    return checks


def report(checks: list[Check]) -> str:
    """Return the one-page report: one line per check, then a verdict."""
    width = max(len(c.name) for c in checks)
    lines = [f"{'ok' if c.ok else 'FAIL':<4}  {c.name:<{width}}  {c.detail}" for c in checks]
    failed = sum(not c.ok for c in checks)
    lines.append(
        f"{len(checks) - failed} of {len(checks)} checks passed" + ("" if not failed else ": fix the FAIL lines above")
    )
    return "\n".join(lines)
