"""Find credentials in recorded runs with Yelp's ``detect-secrets``, so a run can never carry a key.

The detectors are detect-secrets' own plugins (AWS, GitHub, GitLab, JWT, private
keys, Slack, Stripe, basic-auth URLs, and the rest of its regex plugins). Providers it
has no plugin for (OpenAI-style ``sk-`` keys, Hugging Face, Google API keys,
Bearer tokens, AWS secret keys outside its ``aws...key = '...'`` shape, an
authorization or api-key header) are added as plugin classes on its
`RegexBasedDetector` base, so ``detect-secrets scan --plugin labkit/secret_scan.py``
runs them too. Entropy detectors are left out: run files hold SHA-256 digests.

Every text is scanned as written and again after decoding: JSON values with
escapes resolved (``\\u0073k-...`` is ``sk-...``), base64 runs decoded, and a
file that is not UTF-8 read byte by byte. A finding names the kind of secret
and where it is, never the secret itself.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector

from labkit.errors import LabkitError

#: detect-secrets plugins left out: entropy and keyword guesses flag the hashes and prose of every run.
_SKIPPED = {"Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword", "Public IP (ipv4)"}


class OpenAIStyleKeyDetector(RegexBasedDetector):
    """Scans for OpenAI-style ``sk-`` keys in every current shape (``sk-proj-``, ``sk-ant-``, ``_`` and ``-``)."""

    secret_type = "OpenAI-style key"
    denylist = (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"),)


class HuggingFaceTokenDetector(RegexBasedDetector):
    """Scans for Hugging Face access tokens (``hf_`` and 30 or more letters and digits)."""

    secret_type = "Hugging Face token"
    denylist = (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),)


class GoogleAPIKeyDetector(RegexBasedDetector):
    """Scans for Google API keys (``AIza`` and 35 characters)."""

    secret_type = "Google API key"
    denylist = (re.compile(r"AIza[0-9A-Za-z_-]{35}"),)


class BearerTokenDetector(RegexBasedDetector):
    """Scans for a Bearer token, as in an echoed ``Authorization`` header."""

    secret_type = "Bearer token"
    denylist = (re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{12,}", re.IGNORECASE),)


class AWSSecretKeyDetector(RegexBasedDetector):
    """Scans for an AWS secret access key named as such (``aws_secret_access_key`` and 40 characters)."""

    secret_type = "AWS secret access key"
    denylist = (re.compile(r"aws_?secret_?(?:access_?)?key\W{0,6}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])", re.IGNORECASE),)


class CredentialHeaderDetector(RegexBasedDetector):
    """Scans for an ``Authorization`` or api-key header or field: recorded runs never keep headers."""

    secret_type = "authorization or api-key header"
    denylist = (
        re.compile(r"[\"']?\bauthorization[\"']?\s*[:=]\s*[\"']?\S", re.IGNORECASE),
        re.compile(r"[\"']\s*(?:x-)?api[-_]?key[\"']\s*:", re.IGNORECASE),
    )


_OWN_PLUGINS: tuple[type[RegexBasedDetector], ...] = (
    OpenAIStyleKeyDetector,
    HuggingFaceTokenDetector,
    GoogleAPIKeyDetector,
    BearerTokenDetector,
    AWSSecretKeyDetector,
    CredentialHeaderDetector,
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")


class SecretFound(LabkitError, ValueError):
    """A run about to be saved holds a credential; it is not written."""


@dataclass(frozen=True)
class SecretFinding:
    """One credential found in a file (the secret itself is never kept)."""

    path: Path
    line: int
    """Line number in the file, or 0 when found in a decoded JSON value."""
    kind: str
    """The detector's name for it, such as ``GitHub Token``."""
    where: str = ""
    """For a decoded JSON value: its place, such as ``bindings[2].response.choices[0].message.content``."""

    @property
    def place(self) -> str:
        """``file:line``, or ``file at bindings[2]...`` for a decoded JSON value (project-relative)."""
        from labkit.paths import relative_to_root

        return (
            f"{relative_to_root(self.path)}:{self.line}"
            if self.line
            else f"{relative_to_root(self.path)} at {self.where}"
        )


@cache
def plugins() -> tuple[BasePlugin, ...]:
    """Return every detector used: detect-secrets' regex plugins and labkit's own plugin classes."""
    mapping: dict[str, Any] = (
        get_mapping_from_secret_type_to_class()
    )  # plugin classes; secret_type is a class attribute
    shipped = [cls for kind, cls in mapping.items() if kind not in _SKIPPED]
    return tuple(cls() for cls in sorted(shipped, key=lambda c: c.secret_type)) + tuple(cls() for cls in _OWN_PLUGINS)


def _base64_texts(text: str) -> Iterator[str]:
    for match in _BASE64_RUN.finditer(text):
        token = match.group(0)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                decoded = decode(token + "=" * (-len(token) % 4)).decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            if decoded.isprintable() or all(c.isprintable() or c.isspace() for c in decoded):
                yield decoded
                break


def secret_kinds(text: str, *, depth: int = 2) -> list[str]:
    """Return the kinds of secret in ``text``, sorted; base64 runs are decoded and scanned too (``depth`` levels)."""
    kinds = {plugin.secret_type for plugin in plugins() if any(True for _ in plugin.analyze_string(text))}
    if depth:
        for decoded in _base64_texts(text):
            kinds.update(f"{kind} (inside base64)" for kind in secret_kinds(decoded, depth=depth - 1))
    return sorted(kinds)


def scan_value(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Return ``(place, kind)`` for every secret in a parsed JSON value; each key and value is scanned decoded."""
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            place = f"{where}.{key}" if where else str(key)
            # Key and value together, so a detector that needs the field's name (``"api_key": ...``) sees it.
            leaf = item if isinstance(item, str | int | float | bool) or item is None else ""
            found.extend((place, kind) for kind in secret_kinds(json.dumps({key: leaf}, ensure_ascii=False)))
            if isinstance(item, dict | list):
                found.extend(scan_value(item, place))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(scan_value(item, f"{where}[{index}]"))
    elif isinstance(value, str):
        found.extend((where, kind) for kind in secret_kinds(value))
    return sorted(set(found))


def scan_file(path: Path) -> list[SecretFinding]:
    """Return the secrets in one file: line by line as written, then in its decoded JSON values."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        # Not UTF-8: read every byte as a character, and again without NULs (UTF-16 text).
        text = raw.decode("latin-1")
        text = text + "\n" + text.replace("\x00", "")
    findings = [
        SecretFinding(path, number, kind)
        for number, line in enumerate(text.splitlines(), start=1)
        for kind in secret_kinds(line)
    ]
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        findings.extend(SecretFinding(path, 0, kind, where) for where, kind in scan_value(data))
    return findings


def scan_for_secrets(folder: Path) -> list[SecretFinding]:
    """Return every secret in the files under ``folder``, in path and line order."""
    return [f for path in sorted(p for p in folder.rglob("*") if p.is_file()) for f in scan_file(path)]


def refuse_secrets(data: dict[str, Any], *, run_id: str) -> None:
    """Raise `SecretFound` if a run (as JSON data) holds a secret, naming each binding and kind, never the secret."""
    found = scan_value(data)
    if not found:
        return
    bindings = data.get("bindings") or []
    named = []
    for where, kind in found:
        match = re.match(r"bindings\[(\d+)\]\.?(.*)", where)
        if match and int(match.group(1)) < len(bindings):
            binding = bindings[int(match.group(1))]
            fields = binding if isinstance(binding, dict) else {}  # a binding may itself be the secret string
            key = str(fields.get("key") or "")
            label = fields.get("question") or (f"key {key[:12]}" if key else "no question or key")
            named.append(f"binding {int(match.group(1)) + 1} ({label}) {match.group(2) or 'itself'}: {kind}")
        else:
            named.append(f"{where or 'run'}: {kind}")
    raise SecretFound(
        f"run {run_id!r} was not saved: it holds a secret ({'; '.join(named)}). "
        "An endpoint echoed a key or a prompt carries one: remove it from the lesson or endpoint, rotate the key, "
        "and record again."
    )
