"""A workshop room on one server: JupyterHub for the course, started with one command.

    python -m labkit.course.hub [--ip 127.0.0.1] [--port 8000] [--admin instructor] [--isolation auto]
    python -m labkit.course.hub seed HOME            # give HOME the student copy unless it has one
    python -m labkit.course.hub install-proxy        # install the pinned proxy into .hub/proxy (start does it too)
    python -m labkit.course.hub pack-proxy DIR       # the proxy's npm tarballs into DIR/npm, for offline rooms
    python -m labkit.course.hub remove-accounts      # remove the learner accounts the hub made (homes stay)

``python3 course.py hub`` runs the first form in the course environment. The
room password and the admin password come from ``LABKIT_HUB_PASSWORD`` and
``LABKIT_HUB_ADMIN_PASSWORD`` or a prompt, and must pass JupyterHub's rule. The
proxy is installed into ``.hub/proxy/`` (offline from a wheelhouse's ``npm/``),
the hub's state and the learners' homes go to ``.hub/`` (``--state``), and the
command waits until the hub answers, prints its address and stays in the
foreground: Ctrl-C stops the hub and every learner's server; homes are kept.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from labkit.course.hub_config import (
    ADMIN_PASSWORD_ENV,
    PASSWORD_ENV,
    HubSettings,
    Isolation,
    check_passwords,
    read_passwords,
    write_config,
)
from labkit.errors import LabkitError
from labkit.paths import notebooks_dir, project_root

#: Seconds the hub may take to answer after it was started.
READY_TIMEOUT_S = 120
#: Seconds the hub may take to stop its learners' servers and the proxy before they are killed.
STOP_TIMEOUT_S = 90
VERBS = ("start", "seed", "install-proxy", "pack-proxy", "remove-accounts")


class HubPortBusy(LabkitError, OSError):
    """The address and port the hub should listen on are taken."""


class HubStartFailed(LabkitError, RuntimeError):
    """JupyterHub stopped, or did not answer in time, while starting."""


def wheelhouse() -> Path | None:
    """Return the wheelhouse folder (``$LABKIT_WHEELHOUSE`` or ``wheelhouse/`` in the clone) if there is one."""
    folder = Path(os.environ.get("LABKIT_WHEELHOUSE", project_root() / "wheelhouse"))
    return folder if folder.is_dir() else None


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_problem(ip: str, port: int) -> str | None:
    """Return why the hub cannot listen on ``ip:port`` (taken, or not an address of this machine), or None."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((ip, port))
        except OSError as exc:
            return f"cannot listen on {ip}:{port} ({exc.strerror})"
    return None


def choose_isolation(wanted: str, *, python: str) -> tuple[Isolation, str]:
    """Return the isolation to use for ``--isolation`` auto/users/none and a sentence that says what it means."""
    from labkit.course.hub_homes import IsolationUnavailable, isolation_problem

    if wanted == "none":
        problem = "--isolation none was asked for"
    else:
        problem = isolation_problem(python, project_root()) or ""
        if not problem:
            return "users", (
                "one system account per learner (learner-<name>): no learner's code can open another's home "
                "(the shared password still lets anyone log in under any learner's name)"
            )
        if wanted == "users":
            raise IsolationUnavailable(f"--isolation users is not possible here: {problem}")
    user = "root" if os.geteuid() == 0 else f"the account {os.environ.get('USER', 'running the hub')}"
    return "none", (
        f"NOT ISOLATED ({problem}): every learner's server runs as {user}, so any learner's code can read and change "
        f"every other learner's files and everything {user} may touch on this machine. Use it for a room you trust, "
        "or run the hub as root on Linux with Python readable by every user (docs/workshop-hub.md)"
    )


def hub_environment(room: str, admin: str) -> dict[str, str]:
    """Return the hub process's environment: this one plus the two passwords (the hub removes them at start)."""
    return {**os.environ, PASSWORD_ENV: room, ADMIN_PASSWORD_ENV: admin, "PYTHONNOUSERSITE": "1"}


def wait_until_ready(
    process: subprocess.Popen[bytes], url: str, *, log: Path, timeout: float = READY_TIMEOUT_S
) -> None:
    """Return once the hub answers at ``url``; raise `HubStartFailed` with the log's end if it stops or takes too long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{url}hub/api", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    ended = process.poll()
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:] if log.is_file() else []
    what = f"stopped with exit code {ended}" if ended is not None else f"did not answer within {timeout:.0f} s"
    raise HubStartFailed(f"JupyterHub {what}; the end of {log}:\n" + "\n".join(lines))


def _descendants(pid: int) -> list[object]:
    import psutil

    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.NoSuchProcess:
        return []


def stop_hub(process: subprocess.Popen[bytes], *, timeout: float = STOP_TIMEOUT_S) -> None:
    """Stop the hub (it stops every learner's server, the culler and the proxy), then end anything it left running."""
    import psutil

    left = _descendants(process.pid)
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
    for child in left + _descendants(process.pid):
        assert isinstance(child, psutil.Process)
        try:
            child.kill()
        except psutil.NoSuchProcess:
            continue


@contextmanager
def running_hub(settings: HubSettings, *, room: str, admin: str) -> Iterator[subprocess.Popen[bytes]]:
    """Start JupyterHub for ``settings``, wait until it answers, yield its process, and stop it (also on an error)."""
    config = write_config(settings)
    log = Path(settings.state) / "jupyterhub.log"
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [settings.python, "-m", "jupyterhub", "-f", str(config)],
            cwd=settings.state,
            env=hub_environment(room, admin),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches this command, which then stops the hub in order
        )
    try:
        wait_until_ready(process, settings.url(), log=log)
        yield process
    finally:
        stop_hub(process)


def prepare(args: argparse.Namespace, *, room: str, admin: str) -> tuple[HubSettings, str]:
    """Check the passwords, the port and the isolation, install the proxy; return the settings and the isolation note."""
    from labkit.course.hub_homes import prepare_homes_folder
    from labkit.course.hub_proxy import install_proxy, pinned_version, proxy_executable

    check_passwords(room, admin)
    problem = port_problem(args.ip, args.port)
    if problem:
        raise HubPortBusy(f"{problem}; stop what uses it or choose another with --port")
    python = sys.executable
    isolation, note = choose_isolation(args.isolation, python=python)
    top = Path(args.state).resolve()
    top.mkdir(parents=True, exist_ok=True)
    os.chmod(top, 0o711)  # learners pass through to their homes without listing the folder
    state, homes = top / "state", top / "homes"
    state.mkdir(exist_ok=True)
    os.chmod(state, 0o700)  # the hub's database, cookie secret and log: the hub's alone
    prepare_homes_folder(homes, isolated=isolation == "users")
    if not proxy_executable().exists():
        print(
            f"labkit hub: installing configurable-http-proxy {pinned_version()} into .hub/proxy with npm ...",
            flush=True,
        )
    settings = HubSettings(
        state=str(state),
        homes=str(homes),
        notebooks=str(notebooks_dir()),
        proxy=str(install_proxy(wheelhouse=wheelhouse())),
        ip=args.ip,
        port=args.port,
        admin=args.admin,
        isolation=isolation,
        account_prefix=args.account_prefix,
        idle_timeout=args.idle_timeout,
        python=python,
    )
    return replace(settings, hub_port=free_port(), proxy_api_port=free_port()), note


def _interrupt(signum: int, frame: object) -> None:
    """Turn the first Ctrl-C or SIGTERM into KeyboardInterrupt; ignore more of them while the hub stops in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def start(args: argparse.Namespace) -> int:
    """Start the hub in the foreground until Ctrl-C (or SIGTERM)."""
    room, admin = read_passwords()
    settings, note = prepare(args, room=room, admin=admin)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    url = settings.url()
    print(f"labkit hub: starting JupyterHub at {url} (log: {Path(settings.state) / 'jupyterhub.log'}) ...", flush=True)
    try:
        with running_hub(settings, room=room, admin=admin) as process:
            print(
                f"labkit hub: ready at {url}\n"
                "  learners: open that address, choose a name (lower case letters and digits) and type the room password\n"
                f"  instructor: log in as {settings.admin!r} with the admin password; admin page {url}hub/admin\n"
                f"  isolation: {note}\n"
                f"  homes: {settings.homes} (kept when the hub stops); idle servers stop after {settings.idle_timeout} s\n"
                "  stop: press Ctrl-C (stops every learner's server and the proxy)",
                flush=True,
            )
            code = process.wait()
            print(f"labkit hub: JupyterHub stopped by itself (exit code {code}); see the log", flush=True)
            return 1
    except KeyboardInterrupt:
        print("labkit hub: stopped; every learner's server is stopped, their homes are kept", flush=True)
        return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``python -m labkit.course.hub``."""
    parser = argparse.ArgumentParser(
        prog="python -m labkit.course.hub",
        description="Start the course's JupyterHub for a workshop room (see docs/workshop-hub.md).",
        epilog="examples:\n  python3 course.py hub\n  python3 course.py hub --ip 0.0.0.0 --port 8000\n"
        "  python -m labkit.course.hub pack-proxy wheelhouse",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("verb", nargs="?", choices=VERBS, default="start", help="what to do (default: start)")
    parser.add_argument("target", nargs="?", type=Path, help="seed: the home; pack-proxy: the wheelhouse folder")
    parser.add_argument("--ip", default="127.0.0.1", help="address the room connects to (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port the room connects to (default 8000)")
    parser.add_argument("--admin", default="instructor", help="the instructor's login name (default instructor)")
    parser.add_argument(
        "--state", default=str(project_root() / ".hub"), help="folder for state/ and homes/ (default .hub)"
    )
    parser.add_argument(
        "--isolation",
        choices=("auto", "users", "none"),
        default="auto",
        help="auto: one account per learner where possible, else none with a warning; users: refuse without it",
    )
    parser.add_argument("--account-prefix", default="learner-", help="prefix of the learners' system accounts")
    parser.add_argument("--idle-timeout", type=int, default=3600, help="seconds before an idle server is stopped")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m labkit.course.hub``; a `LabkitError` prints its message and exits 1."""
    args = build_parser().parse_args(argv)
    try:
        if args.verb == "start":
            return start(args)
        if args.verb == "install-proxy":
            from labkit.course.hub_proxy import install_proxy, proxy_version

            executable = install_proxy(wheelhouse=wheelhouse())
            print(f"configurable-http-proxy {proxy_version(executable)} is at {executable}")
            return 0
        if args.verb == "remove-accounts":
            from labkit.course.hub_homes import remove_accounts

            removed = remove_accounts(args.account_prefix)
            print(f"removed {len(removed)} learner accounts: {', '.join(removed) or 'none'} (their homes are kept)")
            return 0
        if args.target is None:
            print(f"{args.verb} needs a folder: python -m labkit.course.hub {args.verb} DIR", file=sys.stderr)
            return 2
        if args.verb == "seed":
            from labkit.course.hub_homes import seed_home
            from labkit.course.runner import course_notebooks

            print(f"{args.target}: {seed_home(args.target, course_notebooks())}")
            return 0
        from labkit.course.hub_proxy import pack_proxy

        written = pack_proxy(args.target)
        print(f"wrote {len(written)} npm tarballs of the hub's proxy into {args.target / 'npm'}")
        return 0
    except LabkitError as exc:
        print(f"labkit hub: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
