"""The semantic profile: distilled user facts kept in a LangGraph store, apart from the conversation.

A profile holds a few facts per user (here: how many preview rows they want).
`ProfileMemory.remember` writes the current fact under ``("profile", user)``;
a correction replaces it and names the value it supersedes, and the old value
moves to ``("profile_history", user)``, which answers never read. So a
corrected preference supersedes the old fact, and only the current fact
influences answers. `ProfileMemory.forget` deletes a fact with every value it
superseded, so nothing of it stays in the store (book Table 12.4's deletion
test). Checkpointed conversations never hold profile facts.
"""

from __future__ import annotations

import re
from typing import Any

#: Facts the profile may hold, with their defaults.
DEFAULTS = {"preview_rows": 3}
#: Number words a user may write instead of digits ("show three more", "five rows").
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_PREFERENCE = re.compile(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(?:preview\s+)?rows\b", re.IGNORECASE)


def distill(text: str) -> tuple[str, Any] | None:
    """Return the profile fact a message states (``("preview_rows", 5)``), or None if it states none."""
    match = _PREFERENCE.search(text)
    if match is None:
        return None
    word = match.group(1).lower()
    value = int(word) if word.isdigit() else NUMBER_WORDS[word]
    return ("preview_rows", value) if 1 <= value <= 20 else None


class ProfileMemory:
    """Profile facts in a LangGraph store (an ``InMemoryStore`` unless one is given)."""

    def __init__(self, store: Any = None) -> None:
        if store is None:
            from langgraph.store.memory import InMemoryStore

            store = InMemoryStore()
        self.store = store

    def remember(self, user_id: str, key: str, value: Any, *, said: str) -> dict[str, Any]:
        """Store ``key = value`` as the user's current fact; return the change, naming the value it supersedes."""
        if key not in DEFAULTS:
            raise KeyError(f"the profile keeps only {', '.join(DEFAULTS)}; {key!r} is not one of them")
        old = self.store.get(("profile", user_id), key)
        version = old.value["version"] + 1 if old else 1
        if old:
            self.store.put(("profile_history", user_id), f"{key}:{old.value['version']}", dict(old.value))
        record = {"value": value, "said": said, "version": version, "supersedes": old.value["value"] if old else None}
        self.store.put(("profile", user_id), key, record)
        return {"key": key, "value": value, "supersedes": record["supersedes"], "version": version}

    def items(self, namespace: tuple[str, str]) -> list[Any]:
        """Return every item the store holds under ``namespace`` (read page by page: a search returns at most 100)."""
        found: list[Any] = []
        while page := self.store.search(namespace, limit=100, offset=len(found)):
            found += page
        return found

    def facts(self, user_id: str) -> dict[str, Any]:
        """Return the user's current facts over the defaults; superseded values are not among them."""
        current = {item.key: item.value["value"] for item in self.items(("profile", user_id))}
        return {**DEFAULTS, **current}

    def history(self, user_id: str) -> list[dict[str, Any]]:
        """Return the superseded facts, oldest first (kept for audit, never for answers)."""
        items = self.items(("profile_history", user_id))
        return sorted((dict(item.value, key=item.key) for item in items), key=lambda v: v["version"])

    def stored(self, user_id: str) -> list[tuple[str, str]]:
        """Return what the store holds about the user, as ``(namespace, key)`` pairs: current facts and history."""
        return [
            (namespace, item.key)
            for namespace in ("profile", "profile_history")
            for item in self.items((namespace, user_id))
        ]

    def forget(self, user_id: str, key: str) -> int:
        """Delete the user's fact ``key`` and every value it superseded; return how many records were removed.

        After this the store holds nothing of the fact, and answers use the default again.
        """
        if key not in DEFAULTS:
            raise KeyError(f"the profile keeps only {', '.join(DEFAULTS)}; {key!r} is not one of them")
        removed = 0
        if self.store.get(("profile", user_id), key) is not None:
            self.store.delete(("profile", user_id), key)
            removed += 1
        for item in self.items(("profile_history", user_id)):
            if item.key.startswith(f"{key}:"):
                self.store.delete(("profile_history", user_id), item.key)
                removed += 1
        return removed

    def handle(self, user_id: str, text: str) -> tuple[str, dict[str, Any] | None]:
        """Answer a profile message: remember the fact it states, or report the current profile."""
        fact = distill(text)
        if fact is None:
            facts = self.facts(user_id)
            return "Your profile: " + ", ".join(f"{k} = {v}" for k, v in sorted(facts.items())) + ".", None
        change = self.remember(user_id, fact[0], fact[1], said=text)
        note = f" (replaces {change['supersedes']})" if change["supersedes"] is not None else ""
        return f"Noted: {change['key']} = {change['value']}{note}.", change
