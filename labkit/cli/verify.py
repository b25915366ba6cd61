"""`labkit verify`: every recorded run loads, matches its fixtures, says its origin, and holds no secret."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="check every recorded run: loadable, fixtures unchanged, honest origin, no secrets",
        description="Load every run under recorded_runs/, refusing an edited request, reply or run (their "
        "SHA-256 hashes), a run missing from or added outside recorded_runs/manifest.json, a changed or "
        "unlisted fixture, a fixture outside the checkout, a missing or dishonest origin (an authored run "
        "that claims latency, usage or endpoint ids, a captured run without them), and scan the folder for "
        "secrets with detect-secrets. Exits 1 on any problem, naming the run and the field.",
        epilog="example:\n  labkit verify",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.lessons import verify_course_runs
    from labkit.paths import recorded_runs_dir
    from labkit.secret_scan import scan_for_secrets

    results = verify_course_runs()
    width = max([len("run")] + [len(name) for name, _, _ in results])
    print(f"{'run':<{width}}  {'origin':<8}  {'lesson':<6}  {'bindings':>8}  status")
    for name, loaded, problem in results:
        if loaded is None:
            print(f"{name:<{width}}  {'?':<8}  {'?':<6}  {'?':>8}  REFUSED: {problem}")
        else:
            print(
                f"{name:<{width}}  {loaded.origin:<8}  {loaded.lesson:<6}  {len(loaded.bindings):>8}  ok ({loaded.model.id})"
            )
    findings = scan_for_secrets(recorded_runs_dir())
    for finding in findings:
        print(f"SECRET: {finding.place}: {finding.kind}; remove it and rotate the key")
    failed = sum(loaded is None for _, loaded, _ in results) + len(findings)
    print(
        f"{len(results) - sum(loaded is None for _, loaded, _ in results)} of {len(results)} runs verified, "
        f"{len(findings)} secrets found (detect-secrets)"
    )
    return 0 if results and not failed else 1
