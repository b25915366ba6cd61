"""Durable sessions: a SQLite checkpoint keyed by session survives a real process restart, for its own user only."""

import json
import subprocess
import sys

import pytest

from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.identity import authorize
from labkit.agent.sessions import DurableSessions, SessionOwnerMismatch, resolve_request


def ask_in_new_process(db, user, session, question):
    done = subprocess.run(
        [sys.executable, "-m", "labkit.agent.sessions", str(db), user, session, question],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 2), done.stderr
    return json.loads(done.stdout)


def test_show_three_more_resolves_the_previous_category_after_a_process_restart(tmp_path):
    db = tmp_path / "sessions.sqlite"
    first = ask_in_new_process(db, "analyst-ana", "s-42", "Show three refund requests")
    second = ask_in_new_process(db, "analyst-ana", "s-42", "show three more")
    assert first["intent"] == second["intent"] == "get_refund"
    assert len(second["rows"]) == 3 and second["restored_turns"] == 1
    assert not {r["row"] for r in first["rows"]} & {r["row"] for r in second["rows"]}
    assert second["shown"] == 6


def test_restarted_session_restores_only_for_its_own_user(tmp_path):
    db = tmp_path / "sessions.sqlite"
    ask_in_new_process(db, "analyst-ana", "s-42", "Show three refund requests")
    other = ask_in_new_process(db, "lead-lee", "s-42", "show three more")
    assert other["error"] == "SessionOwnerMismatch"
    own = ask_in_new_process(db, "analyst-ana", "s-42", "show three more")
    assert own["intent"] == "get_refund"


def test_sessions_are_kept_apart_by_session_id(tmp_path):
    with DurableSessions(tmp_path / "s.sqlite") as sessions:
        sessions.ask(authorize("analyst-ana", "a", APPROVED_SCOPE), "Show three complaint requests")
        other = sessions.ask(authorize("analyst-ana", "b", APPROVED_SCOPE), "show three more")
    assert other["status"] == "needs_clarification" and other["rows"] == []


def test_scope_change_on_a_saved_session_is_refused(tmp_path):
    with DurableSessions(tmp_path / "s.sqlite") as sessions:
        sessions.ask(authorize("lead-lee", "a", APPROVED_SCOPE), "Show three refund requests")
        with pytest.raises(SessionOwnerMismatch):
            sessions.ask(authorize("lead-lee", "a", "escalations_restricted"), "show three more")


@pytest.mark.parametrize(
    "question,intent", [("Show 4 track refund requests", "track_refund"), ("show two refund requests", "get_refund")]
)
def test_longest_intent_phrase_wins(question, intent):
    assert resolve_request(question, {}, default_rows=3)["intent"] == intent


def test_a_corrupt_session_file_is_a_clear_error_naming_it(tmp_path):
    from labkit.agent.sessions import SessionStoreCorrupt

    db = tmp_path / "sessions.sqlite"
    db.write_bytes(b"this is not a database, just text " * 100)
    with pytest.raises(SessionStoreCorrupt, match=r"sessions\.sqlite: not a readable session file"):
        DurableSessions(db)
    assert db.read_bytes().startswith(b"this is not a database")


def test_a_corrupt_session_file_from_the_command_line_is_a_one_line_error(tmp_path):
    db = tmp_path / "sessions.sqlite"
    db.write_bytes(b"garbage" * 200)
    result = ask_in_new_process(db, "analyst-ana", "s-1", "Show three refund requests")
    assert result["error"] == "SessionStoreCorrupt" and "sessions.sqlite" in result["message"]


def test_the_checkpoint_holds_the_owner_scope_last_intent_and_rows_shown(tmp_path):
    ana = authorize("analyst-ana", "s-checkpoint", APPROVED_SCOPE)
    with DurableSessions(tmp_path / "s.sqlite") as sessions:
        sessions.ask(ana, "Show three refund requests")
        sessions.ask(ana, "show three more")
    with DurableSessions(tmp_path / "s.sqlite") as reopened:
        assert reopened.checkpoint("s-checkpoint") == {
            "user_id": "analyst-ana",
            "caller_scope": APPROVED_SCOPE,
            "last_intent": "get_refund",
            "shown": 6,
        }
        assert reopened.checkpoint("never-used") == dict.fromkeys(("user_id", "caller_scope", "last_intent", "shown"))


def test_ask_in_new_process_answers_from_the_file_another_process_wrote(tmp_path):
    from labkit.agent.sessions import ask_in_new_process as ask_restarted

    db = tmp_path / "sessions.sqlite"
    ana = authorize("analyst-ana", "s-7", APPROVED_SCOPE)
    with DurableSessions(db) as sessions:
        first = sessions.ask(ana, "Show three refund requests")
    restarted = ask_restarted(db, ana, "show three more")
    assert restarted["intent"] == first["intent"] == "get_refund" and restarted["restored_turns"] == 1
    refused = ask_restarted(db, authorize("lead-lee", "s-7", APPROVED_SCOPE), "show three more")
    assert refused["error"] == "SessionOwnerMismatch"


def test_a_failing_session_process_raises_a_labkit_error_that_says_how_to_see_its_error(tmp_path, monkeypatch):
    import subprocess
    from types import SimpleNamespace

    from labkit.agent import sessions
    from labkit.errors import LabkitError

    def failed(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, stdout="", stderr="Traceback: boom")

    monkeypatch.setattr(subprocess, "run", failed)
    caller = SimpleNamespace(user_id="ana", session_id="s1")  # the two fields the child process is given
    with pytest.raises(sessions.SessionProcessFailed, match=r"boom; run `python -m labkit\.agent\.sessions") as raised:
        sessions.ask_in_new_process(tmp_path / "s.db", caller, "show three more")
    assert isinstance(raised.value, LabkitError) and isinstance(raised.value, RuntimeError)
