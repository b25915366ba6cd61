"""`labkit verify`: every recorded run loads, matches its fixtures, says its origin, and holds no secret."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="check every recorded run: loadable, fixtures unchanged, honest origin, signed, no secrets",
        description="Load every run under recorded_runs/, refusing an edited request, reply or run (their "
        "SHA-256 hashes), a run missing from or added outside recorded_runs/manifest.json, a changed or "
        "unlisted fixture, a fixture outside the checkout, a missing or dishonest origin (an authored run "
        "that claims latency, usage or endpoint ids, a captured run without them), a signature that does not "
        "verify or is by a key recorded_runs/allowed_signers does not list, and a run, authored or captured, "
        "without a signature; and scan the folder for secrets with detect-secrets. Prints who signed each run, and each "
        "listed signer's principal and key fingerprint. Exits 1 on any problem, naming the run and the field.",
        epilog="example:\n  labkit verify",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.lessons import verify_course_runs
    from labkit.paths import recorded_runs_dir
    from labkit.secret_scan import scan_for_secrets
    from labkit.signing import ALLOWED_SIGNERS_FILE, AllowedSignersError, signer_lines

    results = verify_course_runs()
    width = max([len("run")] + [len(name) for name, _, _ in results])
    signed_by = [loaded.signature.principal if loaded and loaded.signature else None for _, loaded, _ in results]
    column = max([len("signed by")] + [len(who or "unsigned") for who in signed_by])
    print(f"{'run':<{width}}  {'origin':<8}  {'lesson':<6}  {'bindings':>8}  {'signed by':<{column}}  status")
    for (name, loaded, problem), who in zip(results, signed_by, strict=True):
        if loaded is None:
            print(f"{name:<{width}}  {'?':<8}  {'?':<6}  {'?':>8}  {'?':<{column}}  REFUSED: {problem}")
        else:
            print(
                f"{name:<{width}}  {loaded.origin:<8}  {loaded.lesson:<6}  {len(loaded.bindings):>8}  "
                f"{who or 'unsigned':<{column}}  ok ({loaded.model.id})"
            )
    try:
        signers = signer_lines([loaded.signature for _, loaded, _ in results if loaded and loaded.signature])
    except AllowedSignersError as exc:  # every run was refused with this message too
        signers = [str(exc)]
    print(f"signers listed in recorded_runs/{ALLOWED_SIGNERS_FILE}, the trust root (review every change to it):")
    for line in signers or ["none, so no signature can be accepted"]:
        print(f"  {line}")
    findings = scan_for_secrets(recorded_runs_dir())
    for finding in findings:
        print(f"SECRET: {finding.place}: {finding.kind}; remove it and rotate the key")
    verified = [loaded for _, loaded, _ in results if loaded is not None]
    failed = len(results) - len(verified) + len(findings)
    print(
        f"{len(verified)} of {len(results)} runs verified, each signed by a listed key; "
        f"{len(findings)} secrets found (detect-secrets)"
    )
    return 0 if results and not failed else 1
