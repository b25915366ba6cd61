"""How many learners one machine's workshop hub holds: N simulated learners run a lesson at once, as a room does.

    python benchmarks/hub_load.py --learners 1 5 10 20      # (.venv/bin/python; needs the hub extra and the proxy)

For each N a fresh hub starts on 127.0.0.1 (a free port, a temporary state
folder, the isolation `python3 course.py hub` would choose). Learner i arrives
``i * --stagger`` seconds after the first, logs in through the hub's login form,
starts their server through the REST API, opens a kernel for the lesson's
notebook in their home as JupyterLab does (a session, then the kernel's
websocket) and runs the lesson's code cells in order (the worked solutions, so
every cell must succeed). A learner's time runs from the login to the last cell's
end; a failure is any error, refusal or a learner past ``--timeout``. While they
run, the resident memory (RSS) of each learner's server and kernels is sampled
every second; "MiB per learner" is the mean of the learners' peaks (the hub, the
proxy and the culler are reported apart, on standard error). Everything
started is stopped at the end (servers, hub, proxy, learner accounts, the state
folder). One line per N on standard output:

    learners N: p50 X s, p95 Y s, failures F, MiB per learner M

and the detail (phases, CPU, memory left, load average before and after) on
standard error. Every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from labkit.course.hub import free_port, prepare, running_hub
from labkit.course.hub_client import HubSession
from labkit.course.runner import course_notebooks, notebook_matches

ROOM_PASSWORD = "benchmark-room-pass"
ADMIN_PASSWORD = "benchmark-admin-password-0123456789abcdef"


@dataclass
class LearnerRun:
    """One simulated learner's timings (seconds) and outcome."""

    name: str
    phases: dict[str, float] = field(default_factory=dict)
    total: float = 0.0
    failure: str = ""


def nearest_rank(values: list[float], fraction: float) -> float:
    """Return the nearest-rank percentile (``fraction`` 0.95 for p95) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def lesson_cells(notebook: str) -> tuple[str, list[str]]:
    """Return the lesson's file name and its code cells (with the worked solutions)."""
    import nbformat

    path = next(p for p in course_notebooks() if notebook_matches(p, notebook))
    nb = nbformat.read(path, as_version=4)
    return path.name, [c.source for c in nb.cells if c.cell_type == "code" and c.source.strip()]


async def learner(base: str, name: str, delay: float, notebook: str, cells: list[str], timeout: float) -> LearnerRun:
    """Arrive after ``delay`` s, log in, start the server, run every cell; never raise, say what failed."""
    run = LearnerRun(name)
    await asyncio.sleep(delay)
    started = time.monotonic()

    async def session() -> None:
        async with HubSession(base, name) as hub:
            mark = time.monotonic()
            for phase, step in (("login", hub.login(ROOM_PASSWORD)), ("spawn", hub.start_server(timeout=timeout))):
                await step
                run.phases[phase], mark = time.monotonic() - mark, time.monotonic()
            kernel = await hub.open_kernel(f"course/{notebook}")
            try:
                first = await kernel.execute("1", timeout=timeout)
                if first.status != "ok":
                    raise RuntimeError(f"the kernel did not answer: {first.error or first.status}")
                run.phases["kernel"], mark = time.monotonic() - mark, time.monotonic()
                for index, code in enumerate(cells):
                    result = await kernel.execute(code, timeout=timeout)
                    if result.status != "ok":
                        raise RuntimeError(f"cell {index}: {result.error or result.status}")
                run.phases["cells"] = time.monotonic() - mark
                run.total = time.monotonic() - started
            finally:
                await kernel.close()

    try:
        await asyncio.wait_for(session(), timeout=timeout)
    except Exception as exc:  # a benchmark reports every failure, whatever its kind
        run.failure = f"{type(exc).__name__}: {exc}"[:300]
        run.total = time.monotonic() - started
    return run


class MemorySampler(threading.Thread):
    """Sample, every second, the RSS of each learner's processes (server and kernels) under the hub; keep the peaks."""

    def __init__(self, hub_pid: int) -> None:
        super().__init__(daemon=True)
        self.hub_pid, self.stop_event = hub_pid, threading.Event()
        self.peaks: dict[str, float] = {}
        self.overhead = 0.0
        self.cpu: list[float] = []
        self.available: list[float] = []

    def run(self) -> None:
        import psutil

        psutil.cpu_percent()
        while not self.stop_event.wait(1.0):
            totals: dict[str, float] = {}
            try:
                hub = psutil.Process(self.hub_pid)
                children = hub.children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for child in [hub, *children]:
                try:  # a learner's processes carry JUPYTERHUB_USER; the hub, the proxy and the culler do not
                    user = child.environ().get("JUPYTERHUB_USER") or ""
                    totals[user] = totals.get(user, 0.0) + child.memory_info().rss / 2**20
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.overhead = max(self.overhead, totals.pop("", 0.0))
            for user, mib in totals.items():
                self.peaks[user] = max(self.peaks.get(user, 0.0), mib)
            self.cpu.append(psutil.cpu_percent())
            self.available.append(psutil.virtual_memory().available / 2**20)


def uptime() -> str:
    """Return the load averages as `uptime` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"load average: {one:.2f}, {five:.2f}, {fifteen:.2f}"


async def room(
    base: str, learners: int, *, stagger: float, notebook: str, cells: list[str], timeout: float
) -> list[LearnerRun]:
    """Run ``learners`` simulated learners against the hub at ``base``, arriving ``stagger`` s apart."""
    tasks = [learner(base, f"l{i:03d}", i * stagger, notebook, cells, timeout) for i in range(learners)]
    return list(await asyncio.gather(*tasks))


def measure(learners: int, args: argparse.Namespace) -> str:
    """Start a hub, run one room of ``learners``, stop everything; return the summary line."""
    notebook, cells = lesson_cells(args.notebook)
    top = Path(tempfile.mkdtemp(prefix="labkit-hub-load-", dir=args.tmp))
    os.chmod(top, 0o711)
    options = argparse.Namespace(
        ip="127.0.0.1",
        port=free_port(),
        admin="instructor",
        state=str(top),
        isolation=args.isolation,
        account_prefix=f"lkb{os.getpid() % 10000}-",
        idle_timeout=3600,
    )
    before = uptime()
    try:
        settings, _ = prepare(options, room=ROOM_PASSWORD, admin=ADMIN_PASSWORD)
        print(f"  N={learners}: before: {before}; isolation {settings.isolation}", file=sys.stderr, flush=True)
        with running_hub(settings, room=ROOM_PASSWORD, admin=ADMIN_PASSWORD) as process:
            sampler = MemorySampler(process.pid)
            sampler.start()
            try:
                runs = asyncio.run(
                    room(
                        settings.url(),
                        learners,
                        stagger=args.stagger,
                        notebook=notebook,
                        cells=cells,
                        timeout=args.timeout,
                    )
                )
            finally:
                sampler.stop_event.set()
                sampler.join(timeout=10)
    finally:
        if args.isolation != "none":
            from labkit.course.hub_homes import remove_accounts

            if os.geteuid() == 0:
                remove_accounts(options.account_prefix)
        shutil.rmtree(top, ignore_errors=True)
    failures = [r for r in runs if r.failure]
    totals = [r.total for r in runs if not r.failure] or [float("nan")]
    peaks = list(sampler.peaks.values()) or [float("nan")]
    for phase in ("login", "spawn", "kernel", "cells"):
        values = [r.phases[phase] for r in runs if phase in r.phases]
        if values:
            print(
                f"    {phase:<6} p50 {statistics.median(values):5.1f} s, max {max(values):5.1f} s",
                file=sys.stderr,
            )
    if sampler.cpu:
        print(
            f"    cpu mean {statistics.mean(sampler.cpu):.0f} %, memory available min {min(sampler.available):.0f} MiB, "
            f"learner peak RSS max {max(peaks):.0f} MiB, hub + proxy + culler peak RSS {sampler.overhead:.0f} MiB; "
            f"after: {uptime()}",
            file=sys.stderr,
        )
    for run in failures[:5]:
        print(f"    failed {run.name}: {run.failure}", file=sys.stderr)
    return (
        f"learners {learners}: p50 {statistics.median(totals):.1f} s, p95 {nearest_rank(totals, 0.95):.1f} s, "
        f"failures {len(failures)}, MiB per learner {statistics.mean(peaks):.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, nargs="+", default=[1, 5, 10, 20], help="room sizes, run in turn")
    parser.add_argument("--notebook", default="03", help="the lesson every learner runs (default 03)")
    parser.add_argument("--stagger", type=float, default=1.0, help="seconds between two learners' arrivals")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one learner may take in all")
    parser.add_argument("--isolation", choices=("auto", "users", "none"), default="auto", help="as course.py hub")
    parser.add_argument("--tmp", default="/tmp", help="where the hub's temporary state goes (learners must reach it)")
    args = parser.parse_args(argv)
    if any(n < 1 or n > 200 for n in args.learners):
        parser.error("--learners takes room sizes from 1 to 200")
    for learners in args.learners:
        print(measure(learners, args), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
