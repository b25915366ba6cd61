"""Find credentials in recorded runs with Yelp's ``detect-secrets``, so a run can never carry a key.

The detectors are detect-secrets' own plugins (AWS, GitHub, GitLab, JWT, private
keys, Slack, Stripe, basic-auth URLs, and the rest of its regex plugins) and labkit's
plugins for the token formats its 1.5 release misses, written on its base class in
`labkit.secret_plugins`, a file ``detect-secrets scan --plugin labkit/secret_plugins.py``
loads too. Entropy detectors are left out: run files hold SHA-256 digests.

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
from detect_secrets.plugins.base import BasePlugin

from labkit.canonical import loads_strict
from labkit.errors import InvalidJSON, LabkitError
from labkit.secret_plugins import OWN_PLUGINS

#: detect-secrets plugins left out: entropy and keyword guesses flag the hashes and prose of every run.
_SKIPPED = {"Base64 High Entropy String", "Hex High Entropy String", "Secret Keyword", "Public IP (ipv4)"}


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
    return tuple(cls() for cls in sorted(shipped, key=lambda c: c.secret_type)) + tuple(cls() for cls in OWN_PLUGINS)


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
    """Return ``(place, kind)`` for every secret in a parsed JSON value; each key and value is scanned decoded.

    The walk keeps its own stack, so a value nested as deep as the JSON loader reads is scanned whole.
    """
    found: list[tuple[str, str]] = []
    pending: list[tuple[Any, str]] = [(value, where)]
    while pending:
        value, where = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                place = f"{where}.{key}" if where else str(key)
                # Key and value together, so a detector that needs the field's name (``"api_key": ...``) sees it.
                leaf = item if isinstance(item, str | int | float | bool) or item is None else ""
                found.extend((place, kind) for kind in secret_kinds(json.dumps({key: leaf}, ensure_ascii=False)))
                if isinstance(item, dict | list):
                    pending.append((item, place))
        elif isinstance(value, list):
            pending.extend((item, f"{where}[{index}]") for index, item in enumerate(value))
        elif isinstance(value, str):
            found.extend((where, kind) for kind in secret_kinds(value))
    return sorted(set(found))


def scan_file(path: Path) -> list[SecretFinding]:
    """Return the secrets in one file: line by line as written, then in its decoded JSON values.

    A ``.json`` file nested too deeply to read is refused with the strict loader's `InvalidJSON`,
    as `labkit.recording.load_run` refuses it: a scan that cannot read a file cannot clear it.
    """
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
            data = loads_strict(text, source=str(path))
        except InvalidJSON as refusal:
            try:
                data = json.loads(text)  # a repeated key or NaN: still scanned, as Python's json reads it
            except RecursionError:
                raise refusal from None  # nested too deeply to read: refused in the loader's own words
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
