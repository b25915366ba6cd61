"""The gate as a CI job runs it: `labkit grade-routes` in a fresh process, with its exit code and both streams.

`grade_routes` runs the command on three files and returns a `GateCommand`: what
was typed, the exit code and what it means (`EXIT_CODES`), standard output (the
JSON report, or nothing) and standard error. A notebook prints it as a CI log
would show it, with the paths written as a learner types them from the course
folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.errors import LabkitError

#: What each exit code of `labkit grade-routes` means. A CI job stops on either nonzero code.
EXIT_CODES = {
    0: "pass: the candidate passes the release rule",
    2: "rule failed: the inputs are valid and the candidate fails the release rule",
    1: "invalid input: nothing was graded, and standard output is empty",
}
#: Seconds the command may take before it is stopped (it grades three small files; starting Python is most of it).
TIMEOUT_S = 120


class GateCommandTimedOut(LabkitError, TimeoutError):
    """`labkit grade-routes` did not finish within its time limit."""


@dataclass(frozen=True)
class GateCommand:
    """One run of ``labkit grade-routes`` in a fresh process, as a CI log records it."""

    command: str
    """The command line, its paths written from the course folder (``fixtures/...``, ``scratch/...``)."""
    exit_code: int
    """The process's exit code: 0, 2 or 1 (`EXIT_CODES`)."""
    stdout: str
    """Standard output: the JSON report, or empty when the inputs were invalid."""
    stderr: str
    """Standard error, its paths written as in ``command``: empty, or one line saying what is invalid."""

    @property
    def meaning(self) -> str:
        """What the exit code means."""
        return EXIT_CODES.get(self.exit_code, "not an exit code the gate gives: read standard error")

    @property
    def report(self) -> dict[str, Any] | None:
        """The JSON report the command printed, or None when it printed nothing."""
        return json.loads(self.stdout) if self.stdout.strip() else None

    def __str__(self) -> str:
        report = self.report
        out = (
            "(empty)"
            if report is None
            else f'{len(self.stdout.splitlines())} lines of JSON, "pass": {json.dumps(report["pass"])}'
        )
        return "\n".join(
            [
                f"$ {self.command}",
                f"exit code: {self.exit_code} ({self.meaning})",
                f"stdout: {out}",
                f"stderr: {self.stderr.strip() or '(empty)'}",
            ]
        )


def shown_path(path: str | Path) -> str:
    """Write ``path`` as a learner types it: from the course folder, or ``scratch/...`` for the scratch folder."""
    from labkit.paths import project_root, scratch_dir

    resolved = Path(path).resolve()
    for folder, prefix in ((scratch_dir().resolve(), "scratch"), (project_root().resolve(), "")):
        if resolved.is_relative_to(folder):
            inside = resolved.relative_to(folder).as_posix()
            return f"{prefix}/{inside}" if prefix else inside
    return str(path)


def grade_routes(
    suite: str | Path,
    baseline: str | Path,
    candidate: str | Path,
    *,
    protect: Iterable[str] = (),
    extra: Iterable[str] = (),
) -> GateCommand:
    """Run ``labkit grade-routes SUITE BASELINE CANDIDATE [--protect ID ...]`` in a fresh process and return it.

    ``extra`` arguments go on the command line as given, after the others: a way to show a usage error.
    """
    paths = [suite, baseline, candidate]
    options = [part for cid in protect for part in ("--protect", cid)] + list(extra)
    argv = [sys.executable, "-m", "labkit", "grade-routes", *map(str, paths), *options]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise GateCommandTimedOut(
            f"labkit grade-routes did not finish in {TIMEOUT_S} s; the machine may be overloaded: run it again "
            "when it is quieter, or run it by hand to see where it stops"
        ) from None
    stderr = done.stderr
    for path in paths:
        stderr = stderr.replace(str(path), shown_path(path))
    command = " ".join(["labkit grade-routes", *map(shown_path, paths), *options])
    return GateCommand(command, done.returncode, done.stdout, stderr)
