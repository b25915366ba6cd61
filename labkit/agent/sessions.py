"""Durable sessions: a conversation checkpointed in SQLite by session id, restored only for its own user.

`DurableSessions` runs a small LangGraph graph (``resolve`` -> ``fetch`` or
``clarify``) with LangGraph's ``SqliteSaver``, one thread per session id. The
checkpoint keeps the owner, the scope, the last category shown and how many
rows were shown, so "show three more" in a new process continues the same
category. A session whose checkpoint names another user or scope is refused
before anything runs. Profile facts come from the profile store, never from
the checkpoint.

``python -m labkit.agent.sessions DB USER SESSION QUESTION`` asks one question
in its own process and prints the result as JSON (the restart test uses it).
"""

from __future__ import annotations

import operator
import re
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

from labkit.agent.dataset import APPROVED_SCOPE, INTENTS
from labkit.agent.identity import Caller, authorize
from labkit.agent.profile import NUMBER_WORDS
from labkit.agent.tools import IntentFilter, SupportData, SupportTools
from labkit.agent.validator import intent_noun
from labkit.errors import LabkitError

#: Intents by the words a request uses for them, longest first (so "track refund" wins over "refund").
_PHRASES = sorted(((intent_noun(i), i) for i in INTENTS), key=lambda p: -len(p[0]))


class SessionOwnerMismatch(LabkitError, PermissionError):
    """A saved session belongs to another user or scope; it is not restored."""


class SessionProcessFailed(LabkitError, RuntimeError):
    """The new process that reopened the session store exited with an error of its own."""


class SessionStoreCorrupt(LabkitError, ValueError):
    """The SQLite file that holds the sessions is not a database (corrupt, or some other file)."""


class BrowseState(TypedDict, total=False):
    """What a session checkpoint holds; ``turns`` is appended to, every other key is replaced."""

    user_id: str
    caller_scope: str
    question: str
    intent: str | None
    offset: int
    limit: int
    last_intent: str | None
    shown: int
    rows: list[dict[str, Any]]
    status: str
    turns: Annotated[list[dict[str, Any]], operator.add]


def _number(text: str) -> int | None:
    match = re.search(r"\b(\d+|" + "|".join(NUMBER_WORDS) + r")\b", text)
    if match is None:
        return None
    word = match.group(1)
    return int(word) if word.isdigit() else NUMBER_WORDS[word]


def resolve_request(question: str, state: BrowseState, *, default_rows: int) -> dict[str, Any]:
    """Work out which intent, offset and row count a browsing question means, using the session's last category."""
    text = question.lower()
    limit = max(1, min(_number(text) or default_rows, 20))
    if re.search(r"\bmore\b", text):
        if not state.get("last_intent"):
            return {"intent": None, "status": "needs_clarification"}
        return {"intent": state["last_intent"], "offset": state.get("shown", 0), "limit": limit, "status": "resolved"}
    intent = next((i for phrase, i in _PHRASES if phrase in text), None)
    if intent is None:
        return {"intent": None, "status": "needs_clarification"}
    return {"intent": intent, "offset": 0, "limit": limit, "status": "resolved"}


class DurableSessions:
    """Sessions checkpointed in one SQLite file; `ask` answers a browsing question within a session."""

    def __init__(self, db_path: str | Path, *, data: SupportData | None = None, profile: Any = None) -> None:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(str(db_path), check_same_thread=False)
        try:
            self.conn.execute("PRAGMA schema_version").fetchone()  # a corrupt file fails here, not mid-graph
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise SessionStoreCorrupt(
                f"{db_path}: not a readable session file ({exc}); move it aside, and new sessions start in a fresh file"
            ) from None
        self.saver = SqliteSaver(self.conn)
        self.data = data or SupportData()
        self.profile = profile
        self._caller: Caller | None = None
        self.graph = self._build()

    def _build(self) -> Any:
        from langgraph.graph import END, START, StateGraph

        builder = StateGraph(BrowseState)
        builder.add_node("resolve", self._resolve)
        builder.add_node("fetch", self._fetch)
        builder.add_node("clarify", self._clarify)
        builder.add_edge(START, "resolve")
        builder.add_conditional_edges(
            "resolve",
            lambda s: "fetch" if s["status"] == "resolved" else "clarify",
            {"fetch": "fetch", "clarify": "clarify"},
        )
        builder.add_edge("fetch", END)
        builder.add_edge("clarify", END)
        return builder.compile(checkpointer=self.saver)

    def _caller_now(self) -> Caller:
        """The caller of the request being handled (set by the public method before the graph runs)."""
        if self._caller is None:
            raise RuntimeError("no caller: run the graph through SessionStore's public methods")
        return self._caller

    def _resolve(self, state: BrowseState) -> dict[str, Any]:
        default = self.profile.facts(self._caller_now().user_id)["preview_rows"] if self.profile else 3
        return resolve_request(state["question"], state, default_rows=default)

    def _fetch(self, state: BrowseState) -> dict[str, Any]:
        tools = SupportTools(self._caller_now(), self.data)
        result = tools.filter_by_intent(
            IntentFilter(intent=state["intent"], limit=state["limit"], offset=state["offset"])
        )
        rows = result["preview"]
        shown = state["offset"] + len(rows)
        return {
            "rows": rows,
            "last_intent": state["intent"],
            "shown": shown,
            "status": "ok",
            "turns": [{"question": state["question"], "intent": state["intent"], "rows": [r["row"] for r in rows]}],
        }

    def _clarify(self, state: BrowseState) -> dict[str, Any]:
        return {"rows": [], "turns": [{"question": state["question"], "intent": None, "rows": []}]}

    def ask(self, caller: Caller, question: str) -> dict[str, Any]:
        """Answer ``question`` in the caller's session; refuse a session saved for another user or scope."""
        config = {"configurable": {"thread_id": caller.session_id}}
        saved = self.graph.get_state(config).values
        if saved and (saved.get("user_id") != caller.user_id or saved.get("caller_scope") != caller.caller_scope):
            raise SessionOwnerMismatch(
                f"session {caller.session_id!r} belongs to another user or scope; it is not restored. Start a new session."
            )
        self._caller = caller
        state = self.graph.invoke(
            {"user_id": caller.user_id, "caller_scope": caller.caller_scope, "question": question}, config
        )
        return {
            "session_id": caller.session_id,
            "question": question,
            "status": state["status"],
            "intent": state.get("intent"),
            "rows": state.get("rows", []),
            "shown": state.get("shown", 0),
            "restored_turns": len(state["turns"]) - 1,
        }

    def checkpoint(self, session_id: str) -> dict[str, Any]:
        """Return what the session's saved checkpoint holds: owner, scope, last intent and rows shown so far."""
        saved = self.graph.get_state({"configurable": {"thread_id": session_id}}).values
        return {key: saved.get(key) for key in ("user_id", "caller_scope", "last_intent", "shown")}

    def close(self) -> None:
        """Close the SQLite connection."""
        self.conn.close()

    def __enter__(self) -> DurableSessions:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def ask_in_new_process(db_path: str | Path, caller: Caller, question: str) -> dict[str, Any]:
    """Ask ``question`` in a new Python process that opens ``db_path`` (as after a restart); return its answer.

    The child runs ``python -m labkit.agent.sessions DB USER SESSION QUESTION``, which
    authorizes the caller's user for the approved scope, and shares nothing with
    this process but the SQLite file. A refusal in the child comes back as
    ``{"error", "message"}``.
    """
    import json
    import subprocess

    command = [sys.executable, "-m", "labkit.agent.sessions", str(db_path), caller.user_id, caller.session_id, question]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode not in (0, 2):
        raise SessionProcessFailed(
            f"the session process failed ({done.returncode}): {done.stderr.strip()}; "
            "run `python -m labkit.agent.sessions DB USER SESSION QUESTION` by hand to see its full error"
        )
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    """Ask one question in a session stored in ``DB``; print the result as canonical JSON."""
    from labkit.canonical import canonical_json

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 4:
        print("usage: python -m labkit.agent.sessions DB USER SESSION QUESTION", file=sys.stderr)
        return 1
    db, user, session, question = argv
    try:
        with DurableSessions(db) as sessions:
            result = sessions.ask(authorize(user, session, APPROVED_SCOPE), question)
    except LabkitError as exc:
        print(canonical_json({"error": type(exc).__name__, "message": str(exc)}))
        return 2
    print(canonical_json(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
