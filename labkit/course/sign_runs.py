"""Signing the course's recorded runs (`labkit sign`): only runs that pass every check of `labkit verify`.

The signature itself is `labkit.signing`'s; what this adds is the rule of when to sign:
a run must first pass its hashes, manifest, fixtures and origin, and a run whose old
signature no longer verifies is refused, since signing it again would vouch for the change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from labkit.paths import recorded_runs_dir
from labkit.recording import RUN_FILE, verify_runs
from labkit.signing import RunSignature, check_signature, read_allowed_signers, sign_run_file


@dataclass(frozen=True)
class SignedRun:
    """What signing one run did."""

    run_id: str
    outcome: Literal["signed", "already signed", "refused"]
    """``signed`` now, ``already signed`` (a valid signature was kept), or ``refused`` (nothing written)."""
    signature: RunSignature | None
    """The run's signature afterwards, unless refused."""
    detail: str = ""
    """Why it was refused."""


def sign_runs(
    run_ids: Sequence[str] | None, *, key: Path, runs_dir: Path | None = None, root: Path | None = None
) -> list[SignedRun]:
    """Sign each run that passes every check of its hashes, manifest, fixtures and origin; refuse the rest.

    ``None`` means every run under ``runs_dir``. A run with a valid signature keeps
    it (so signing twice changes nothing); a run whose signature no longer verifies
    changed after it was signed, and is refused: signing it again would vouch for
    the change.
    """
    runs_dir = runs_dir or recorded_runs_dir()
    checked = {name: problem for name, _, problem in verify_runs(runs_dir, root=root, signatures=False)}
    allowed = read_allowed_signers(runs_dir)
    results = []
    for name in list(run_ids) if run_ids is not None else sorted(checked):
        if name not in checked:
            problem = f"no run {name!r} under {runs_dir}; `labkit verify` lists the runs"
            results.append(SignedRun(name, "refused", None, problem))
            continue
        if checked[name]:
            results.append(
                SignedRun(name, "refused", None, f"it fails its checks, so it was not signed: {checked[name]}")
            )
            continue
        path = runs_dir / name / RUN_FILE
        current = check_signature(path, allowed=allowed)
        if current.status == "invalid":
            problem = (
                f"its signature is invalid ({current.reason}): the run changed after it was signed. Restore it "
                "from git; signing it again would vouch for the change"
            )
            results.append(SignedRun(name, "refused", None, problem))
        elif current.status == "unsigned":
            results.append(SignedRun(name, "signed", sign_run_file(path, key=key, allowed=allowed)))
        else:
            results.append(SignedRun(name, "already signed", current))
    return results
