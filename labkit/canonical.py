"""Canonical JSON, its SHA-256, and a strict loader for JSON files.

Canonical JSON is the form a data identity (a rubric, an index, a fixture set)
is hashed over: sorted keys, no whitespace, UTF-8, and no NaN or Infinity.
A model request is hashed over its *request form* instead (`request_json`):
the same, except that keys keep the order in which they were sent, because a
model sees that order (a JSON schema's property order changes what it generates). The strict loader refuses what Python's
``json`` module would quietly accept: a repeated key (the last one would win),
``NaN``/``Infinity``, and files over a stated size limit.
"""

from __future__ import annotations

import hashlib
import json
import math
import stat
from pathlib import Path
from typing import Any

from labkit.errors import InvalidJSON

#: Files larger than this are refused before parsing (1 MB, as in the routing walkthrough).
MAX_JSON_BYTES = 1_000_000
#: A recorded run's file may be larger than ordinary inputs, but not unboundedly so.
MAX_RUN_BYTES = 20_000_000


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of ``value``: sorted keys, no whitespace, no NaN."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise InvalidJSON(
            f"Cannot write canonical JSON: {exc}. Replace NaN or Infinity with a number or null."
        ) from exc


def canonical_sha256(value: Any) -> str:
    """Return the SHA-256 hex digest of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def request_json(value: Any) -> str:
    """Return ``value`` as compact JSON with its keys in their own order, as ``json.dumps`` writes it.

    A body read back from the wire is written again here, so its spelling is json's:
    no whitespace between values, escapes such as ``\\u00e9`` written as the character
    itself, and each number as Python's ``json`` writes it (``1.50`` becomes ``1.5``).
    """
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise InvalidJSON(f"Cannot write request JSON: {exc}. Replace NaN or Infinity with a number or null.") from exc


def request_sha256(value: Any) -> str:
    """Return the SHA-256 hex digest of `request_json` of ``value`` (key order counts)."""
    return hashlib.sha256(request_json(value).encode("utf-8")).hexdigest()


def ordered_pretty_json(value: Any) -> str:
    """Return diff-friendly JSON that keeps key order (two-space indent, newline at end), for recorded runs."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise InvalidJSON(f"Cannot write JSON: {exc}. Replace NaN or Infinity with a number or null.") from exc


def file_sha256(path: str | Path) -> str:
    """Return the SHA-256 hex digest of a file's exact bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def pretty_json(value: Any) -> str:
    """Return diff-friendly JSON for files on disk: sorted keys, two-space indent, newline at end."""
    try:
        return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise InvalidJSON(f"Cannot write JSON: {exc}. Replace NaN or Infinity with a number or null.") from exc


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build a JSON object from its ``(key, value)`` pairs, refusing a key that appears twice.

    ``json.loads`` calls it as ``object_pairs_hook``; by default it would keep the last value silently.
    """
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidJSON(f"repeated JSON key {key!r}: keep exactly one value for it")
        result[key] = value
    return result


def reject_constant(name: str) -> Any:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which ``json.loads`` would otherwise turn into floats.

    ``json.loads`` calls it as ``parse_constant`` with the constant's name.
    """
    raise InvalidJSON(f"non-finite number {name} is not allowed: use a finite number or null")


def finite_float(text: str) -> float:
    """Parse a JSON number with a fraction or exponent, refusing one so large it becomes infinity (``1e999``)."""
    value = float(text)
    if math.isinf(value):
        raise InvalidJSON(f"number {text} overflows to infinity: use a smaller number")
    return value


def loads_strict(text: str | bytes, *, source: str = "JSON text") -> Any:
    """Parse JSON text, refusing repeated keys and non-finite numbers.

    ``source`` names the input in error messages (a file path, say).
    """
    try:
        if isinstance(text, bytes):  # json.loads would guess UTF-16 or UTF-32 from bytes; UTF-8 is the only format
            text = text.decode("utf-8")
        return json.loads(
            text, object_pairs_hook=unique_object, parse_constant=reject_constant, parse_float=finite_float
        )
    except InvalidJSON as exc:
        raise InvalidJSON(f"{source}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidJSON(f"{source}: not UTF-8 text ({exc.reason}); save the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InvalidJSON(f"{source}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InvalidJSON(f"{source}: JSON nested too deeply to read") from None
    except ValueError as exc:  # Python refuses to convert a whole number longer than sys.get_int_max_str_digits()
        raise InvalidJSON(f"{source}: a number too long to read ({exc.args[0].split(':')[0]})") from None


def file_kind(mode: int) -> str:
    """Name what a file mode (``os.stat().st_mode``) is: ``a folder``, ``a named pipe (FIFO)``, ``a regular file`` ..."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def read_strict_bytes(path: str | Path, *, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    """Read a regular file's bytes, refusing a pipe or device, and one larger than ``max_bytes``."""
    path = Path(path)
    try:
        status = path.stat()
    except FileNotFoundError:
        raise InvalidJSON(f"{path}: no such file; check the path") from None
    if not stat.S_ISREG(status.st_mode):  # a FIFO would block and a device never end: refused before reading
        raise InvalidJSON(f"{path} is {file_kind(status.st_mode)}, not a regular file; pass the path of a JSON file")
    size = status.st_size
    if size > max_bytes:
        raise InvalidJSON(f"{path}: {size:,} bytes is over the {max_bytes:,}-byte limit; refusing to read it")
    raw = path.read_bytes()
    if len(raw) > max_bytes:  # the file grew between stat and read
        raise InvalidJSON(f"{path}: over the {max_bytes:,}-byte limit; refusing to read it")
    return raw


def load_strict(path: str | Path, *, max_bytes: int = MAX_JSON_BYTES) -> tuple[Any, str]:
    """Load a JSON file strictly and return ``(data, sha256 of its exact bytes)``."""
    raw = read_strict_bytes(path, max_bytes=max_bytes)
    return loads_strict(raw, source=str(path)), hashlib.sha256(raw).hexdigest()


def json_inside(value: Any) -> Any:
    """Parse a string that holds a JSON object or list, so a diff can point inside it; anything else as given."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
