"""Find key-like strings in files that are committed, so a recorded run can never carry a credential."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: Patterns of credentials that must never be written into a recorded run.
PATTERNS = {
    "OpenAI-style key": re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    "bearer token": re.compile(r"\bBearer\s+[A-Za-z0-9._~+/-]{12,}", re.IGNORECASE),
    "authorization header": re.compile(r'"authorization"\s*:', re.IGNORECASE),
    "api-key header or field": re.compile(r'"(x-)?api[-_]?key"\s*:', re.IGNORECASE),
    "Hugging Face token": re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
}


@dataclass(frozen=True)
class SecretFinding:
    """One key-like string found in a file."""

    path: Path
    line: int
    kind: str


def scan_for_secrets(folder: Path) -> list[SecretFinding]:
    """Return every key-like string in the text files under ``folder``, in path and line order."""
    findings: list[SecretFinding] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            findings.extend(
                SecretFinding(path, number, kind) for kind, pattern in PATTERNS.items() if pattern.search(line)
            )
    return findings
