"""`labkit doctor`: an offline preflight for a workshop laptop, as a one-page report."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="offline preflight: Python, pinned packages, kernel, every notebook, recorded runs, extras, disk",
        description="Check, offline, that this machine can run the course: Python version, core packages at their "
        "tested versions, kernel start, every notebook executed in replay mode with the network blocked, every "
        "recorded run verified, a secret scan, optional extras, free disk. Exits 1 if anything needs fixing.",
        epilog="examples:\n  labkit doctor\n  labkit doctor --skip-notebooks   # the quick checks only\n"
        "  labkit doctor --hub --learners 30   # the workshop hub's server: proxy, port, isolation, memory, disk, cores",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--skip-notebooks", action="store_true", help="do not execute the notebooks")
    hub = parser.add_argument_group("workshop hub (docs/workshop-hub.md)")
    hub.add_argument(
        "--hub", action="store_true", help="check the hub's server side instead: proxy, port, isolation, room size"
    )
    hub.add_argument("--learners", type=int, default=30, metavar="N", help="learners expected in the room (default 30)")
    hub.add_argument("--hub-ip", default="127.0.0.1", metavar="IP", help="address the hub will listen on")
    hub.add_argument("--hub-port", type=int, default=8000, metavar="PORT", help="port the hub will listen on")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.doctor import report, run_checks

    if args.hub:
        from labkit.course.hub_checks import run_server_checks

        checks = run_server_checks(learners=args.learners, ip=args.hub_ip, port=args.hub_port)
    else:
        checks = run_checks(notebooks=not args.skip_notebooks)
    print(report(checks))
    return 0 if all(c.ok for c in checks) else 1
