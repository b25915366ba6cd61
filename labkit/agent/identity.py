"""Who is asking: caller, session and permitted scope, all decided by the application.

A model never names the caller or the scope: `authorize` builds a `Caller`
from what the application knows (the signed-in user, the session, the scope
the screen asks for) and refuses an unauthorized scope before any tool runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labkit.canonical import load_strict
from labkit.errors import LabkitError


class ScopeRefused(LabkitError, PermissionError):
    """The caller may not read the requested scope or use the requested tool; nothing was run."""


@dataclass(frozen=True)
class Caller:
    """The identity every tool call is bound to."""

    user_id: str
    """The signed-in user, from the application's login."""
    session_id: str
    """The conversation this request belongs to."""
    caller_scope: str
    """The one dataset scope this request may read."""
    dataset_version: str
    """The dataset version the application serves now."""
    tools: tuple[str, ...]
    """The tools this user may call."""


def callers_path(folder: Path | None = None) -> Path:
    """Return the callers file (user -> scopes and tools)."""
    from labkit.agent.dataset import support_dir

    return (folder or support_dir()) / "callers.json"


def load_callers(folder: Path | None = None) -> tuple[str, dict[str, dict[str, list[str]]]]:
    """Return the dataset version and the permissions of every known user, refusing a malformed file."""
    from labkit.agent.dataset import DatasetError

    path = callers_path(folder)
    data, _ = load_strict(path)
    if (
        not isinstance(data, dict)
        or set(data) != {"dataset_version", "callers"}
        or not isinstance(data["callers"], dict)
    ):
        raise DatasetError(
            f"{path}: expected an object with dataset_version and callers; regenerate it with "
            "`python -m labkit.agent.dataset`"
        )
    for user, entry in data["callers"].items():
        if not isinstance(entry, dict) or set(entry) != {"scopes", "tools"}:
            raise DatasetError(f"{path}: caller {user!r} needs exactly 'scopes' and 'tools'; regenerate the file")
    return data["dataset_version"], data["callers"]


def authorize(user_id: str, session_id: str, scope: str, *, folder: Path | None = None) -> Caller:
    """Return the `Caller` for a request, or raise `ScopeRefused` if this user may not read ``scope``."""
    version, callers = load_callers(folder)
    if not session_id or not session_id.strip():
        raise ScopeRefused("a request needs a session id from the application; start a session first")
    entry = callers.get(user_id)
    if entry is None:
        raise ScopeRefused(f"unknown user {user_id!r}: sign in as a known user (see callers.json)")
    if scope not in entry["scopes"]:
        allowed = ", ".join(entry["scopes"]) or "none"
        raise ScopeRefused(
            f"user {user_id!r} may not read scope {scope!r} (allowed: {allowed}); no tool was run. "
            "Ask for access or choose an allowed scope."
        )
    return Caller(user_id, session_id, scope, version, tuple(entry["tools"]))
