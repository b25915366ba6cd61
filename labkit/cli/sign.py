"""`labkit sign RUN ...`: sign recorded runs that pass their checks, with the key in LABKIT_SIGNING_KEY."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="sign recorded runs (ssh-keygen -Y sign) after checking their hashes",
        description="Check each run as `labkit verify` does (hashes, manifest, fixtures, origin) and sign the "
        "run.json of each one that passes with ssh-keygen, in the namespace labkit-run; the signature is kept "
        "as run.json.sig beside it. A run that fails a check, or whose old signature no longer verifies, is "
        "refused and nothing is written; a run already validly signed is left as it is. The key is --key or "
        "LABKIT_SIGNING_KEY (a private key file, or its .pub with the key loaded in ssh-agent). Exits 1 if any "
        "run was refused.",
        epilog="examples:\n"
        "  LABKIT_SIGNING_KEY=~/.ssh/labkit_ed25519 labkit sign 02-rag-smollm2\n"
        "  labkit sign --all --key ~/.ssh/labkit_ed25519   # every run not yet signed",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run ids under recorded_runs/")
    parser.add_argument("--all", action="store_true", help="every run under recorded_runs/ (signed ones are kept)")
    parser.add_argument("--key", help="the signing key (default: LABKIT_SIGNING_KEY)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from labkit.course.sign_runs import sign_runs
    from labkit.signing import (
        ALLOWED_SIGNERS_FILE,
        NAMESPACE,
        SIGNING_KEY_SETTING,
        SigningFailed,
        signing_key,
    )

    if bool(args.runs) == bool(args.all):
        raise SigningFailed("name the runs to sign (labkit sign RUN ...) or pass --all, not both")
    key = signing_key(args.key)
    if key is None:
        raise SigningFailed(
            f"no signing key: set {SIGNING_KEY_SETTING} to your SSH private key, or pass --key PATH "
            "(docs/recording.md, 'Signing runs')"
        )
    results = sign_runs(None if args.all else args.runs, key=key)
    unlisted = {}
    for result in results:
        if result.signature is None:
            print(f"{result.run_id}: REFUSED: {result.detail}")
            continue
        print(f"{result.run_id}: {'now' if result.outcome == 'signed' else 'already'} {result.signature.describe()}")
        if result.signature.status == "unknown key":
            unlisted[result.signature.fingerprint] = result.signature.key
    for fingerprint, public in unlisted.items():
        print(
            f"The key {fingerprint} is not in recorded_runs/{ALLOWED_SIGNERS_FILE}, so `labkit verify` refuses "
            "these runs until a reviewed commit adds this line (your name first):\n"
            f'  YOUR-NAME namespaces="{NAMESPACE}" {public}'
        )
    refused = sum(result.outcome == "refused" for result in results)
    print(f"{len(results) - refused} of {len(results)} runs signed or already signed")
    return 1 if refused or not results else 0
