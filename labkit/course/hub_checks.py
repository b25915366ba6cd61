"""The workshop hub's server-side preflight (``labkit doctor --hub``): packages, proxy, port, isolation, room size.

The per-learner figures come from ``benchmarks/hub_load.py`` on a 2-core machine
(docs/workshop-hub.md has the runs): a room larger than the cores, the memory or
the disk can hold is a FAIL line that says what to add.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
from pathlib import Path

from labkit.course.doctor import Check
from labkit.paths import project_root

#: Resident memory of one learner's server and kernel at its peak while running lesson 03 (benchmark's MiB per learner).
MIB_PER_LEARNER = 300
#: Memory of the hub, the proxy and the idle culler together (the benchmark measured peaks of 229 and 343 MiB).
HUB_OVERHEAD_MIB = 350
#: Disk one learner's home takes: the student copy and scratch files (lesson 03 left 0.5 MiB; this leaves room for all six).
DISK_MIB_PER_LEARNER = 50
#: Learners one core holds with every learner's run of lesson 03 under 30 s at p95 (the benchmark: 5 on 2 busy cores).
LEARNERS_PER_CORE = 2.5


def check_hub_packages() -> Check:
    """JupyterHub (5.3 or newer, for the shared-password login) and the idle culler are installed at their pins."""
    from labkit.course.doctor import _pins

    pins, found, problems = _pins(project_root() / "constraints.txt"), [], []
    for name in ("jupyterhub", "jupyterhub-idle-culler"):
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{name} missing")
            continue
        found.append(f"{name} {version}")
        if pins.get(name) and version != pins[name]:
            problems.append(f"{name} {version} (tested {pins[name]})")
    if problems:
        return Check(
            "hub packages",
            False,
            "; ".join(problems)
            + '. python3 course.py hub installs them (or pip install -c constraints.txt -e ".[hub]")',
        )
    return Check("hub packages", True, ", ".join(found))


def check_proxy() -> Check:
    """configurable-http-proxy is installed into .hub/proxy at its pinned version, and Node.js runs it."""
    from labkit.course.hub_proxy import MIN_NODE, node_version, pinned_version, proxy_executable, proxy_version

    node, wanted = node_version(), pinned_version()
    if node is None or node[:2] < MIN_NODE:
        old = "no Node.js" if node is None else "Node.js " + ".".join(map(str, node))
        return Check("proxy", False, f"{old}: install Node.js 20.19 or newer with npm (apt-get install nodejs npm)")
    found = proxy_version(proxy_executable())
    if found != wanted:
        what = "not installed" if found is None else f"{found} installed"
        return Check(
            "proxy",
            False,
            f"configurable-http-proxy {wanted} {what} in .hub/proxy: python3 course.py hub installs it "
            "(offline from wheelhouse/npm when the wheelhouse has it)",
        )
    return Check("proxy", True, f"configurable-http-proxy {found} on Node.js {'.'.join(map(str, node))}")


def check_port(ip: str, port: int) -> Check:
    """The address and port the room will connect to are free."""
    from labkit.course.hub import port_problem

    problem = port_problem(ip, port)
    detail = f"{problem}: stop what uses it, or use --port" if problem else "free"
    return Check(f"port {ip}:{port}", problem is None, detail)


def check_isolation() -> Check:
    """Say whether learners will be kept apart (one account each) and, if not, why; not being isolated is not a FAIL."""
    from labkit.course.hub import choose_isolation

    _, note = choose_isolation("auto", python=sys.executable)
    return Check("isolation", True, note)


def _available_mib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def check_memory(learners: int, *, available: float | None = None) -> Check:
    """There is memory for ``learners`` learners' servers and kernels, plus the hub."""
    available = _available_mib() if available is None else available
    needed = learners * MIB_PER_LEARNER + HUB_OVERHEAD_MIB
    name = f"memory for {learners} learners"
    if available is None:
        return Check(name, True, f"needs about {needed} MiB; this system does not say how much is free")
    ok = available >= needed
    detail = f"{available:.0f} MiB available, about {needed} MiB needed ({MIB_PER_LEARNER} MiB per learner + hub)"
    return Check(name, ok, detail if ok else f"{detail}: add memory or split the room")


def check_disk(learners: int, *, folder: Path | None = None, free: int | None = None) -> Check:
    """There is disk for ``learners`` learners' homes."""
    folder = folder or project_root()
    free = shutil.disk_usage(folder).free if free is None else free
    needed = learners * DISK_MIB_PER_LEARNER
    ok = free / 2**20 >= needed
    detail = (
        f"{free / 2**30:.1f} GiB free at {folder}, about {needed} MiB needed ({DISK_MIB_PER_LEARNER} MiB per learner)"
    )
    return Check(f"disk for {learners} learners", ok, detail if ok else f"{detail}: free disk or put --state elsewhere")


def check_cores(learners: int, *, cores: int | None = None) -> Check:
    """The cores can run ``learners`` learners' lesson at once within 30 s at p95 (the benchmark's capacity per core)."""
    cores = cores or os.cpu_count() or 1
    holds = int(cores * LEARNERS_PER_CORE)
    ok = learners <= holds
    detail = f"{cores} cores hold about {holds} learners running a lesson at once ({LEARNERS_PER_CORE} per core)"
    return Check(f"cores for {learners} learners", ok, detail if ok else f"{detail}: add cores or split the room")


def run_hub_checks(*, learners: int, ip: str, port: int) -> list[Check]:
    """Run the server-side checks for a room of ``learners`` on ``ip:port``, in report order."""
    checks = [check_hub_packages()]
    if checks[0].ok:
        checks.append(check_proxy())
        checks.append(check_isolation())
    checks += [check_port(ip, port), check_memory(learners), check_disk(learners), check_cores(learners)]
    return checks


def run_server_checks(*, learners: int, ip: str, port: int) -> list[Check]:
    """Run the workshop hub's server-side checks (``labkit doctor --hub``): Python, core pins, then the hub's own."""
    from labkit.course.doctor import check_dependencies, check_python

    return [check_python(), check_dependencies(), *run_hub_checks(learners=learners, ip=ip, port=port)]
