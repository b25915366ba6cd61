"""What every fixture script shares: a folder guard that protects captured runs, and the script's command line.

Fixture files are written by scripts in the package and committed. A script
never writes into a folder that holds a captured run (or a JSON file it cannot
read, which might be one): it refuses before writing anything.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from labkit.canonical import MAX_JSON_BYTES, loads_strict, pretty_json, read_strict_bytes
from labkit.errors import FixtureOverwriteRefused, InvalidJSON
from labkit.paths import relative_to_root


def prepare_fixture_folder(folder: str | Path) -> Path:
    """Return ``folder``, created if needed, after refusing a file in its place or a captured run inside it."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise FixtureOverwriteRefused(f"{folder} is a file, not a folder; pass a folder to write the fixtures into")
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = loads_strict(read_strict_bytes(path, max_bytes=50 * MAX_JSON_BYTES), source=str(path))
        except (InvalidJSON, OSError) as exc:
            raise FixtureOverwriteRefused(
                f"{path} cannot be read as JSON ({exc}), so it might be a captured run; nothing was written. "
                "Move it out of the folder or write the fixtures into an empty folder."
            ) from None
        if isinstance(data, dict) and data.get("origin") == "captured":
            raise FixtureOverwriteRefused(
                f"{path} is a captured run; refusing to write fixtures next to it, nothing was written. "
                "Keep captured runs in their own folder (recorded_runs/), or pass an empty folder."
            )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_json_fixtures(folder: Path, contents: Mapping[str, Any]) -> dict[str, str]:
    """Write each ``name: data`` as diff-friendly JSON into ``folder``; return each file's SHA-256."""
    hashes = {}
    for name, data in contents.items():
        raw = (data if isinstance(data, str) else pretty_json(data)).encode("utf-8")
        (folder / name).write_bytes(raw)
        hashes[name] = hashlib.sha256(raw).hexdigest()
    return hashes


def fixture_script(
    argv: list[str] | None, *, prog: str, default: Path, write: Callable[[Path], Mapping[str, str]]
) -> int:
    """Run a fixture script's command line ``prog [FOLDER]``: write, then print each file's hash."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 or any(arg.startswith("-") for arg in argv):
        print(f"usage: python -m {prog} [FOLDER]   (default: {relative_to_root(default)})", file=sys.stderr)
        return 1
    folder = Path(argv[0]) if argv else default
    try:
        hashes = write(folder)
    except FixtureOverwriteRefused as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    for name, digest in hashes.items():
        print(f"{digest}  {relative_to_root(folder / name)}")
    return 0
