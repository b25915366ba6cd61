"""The semantic profile: kept in a LangGraph store apart from sessions; a correction supersedes the old fact."""

from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.identity import authorize
from labkit.agent.profile import ProfileMemory, distill
from labkit.agent.sessions import DurableSessions


def test_corrected_preference_supersedes_the_old_fact():
    profile = ProfileMemory()
    profile.handle("analyst-ana", "Please remember that I prefer 5 preview rows.")
    answer, change = profile.handle("analyst-ana", "Actually, make that 2 preview rows instead.")
    assert change["supersedes"] == 5 and "replaces 5" in answer
    assert profile.facts("analyst-ana")["preview_rows"] == 2
    assert [h["value"] for h in profile.history("analyst-ana")] == [5]


def test_old_fact_no_longer_influences_answers(tmp_path):
    profile = ProfileMemory()
    profile.handle("analyst-ana", "I prefer 5 preview rows.")
    profile.handle("analyst-ana", "Make that 2 rows.")
    with DurableSessions(tmp_path / "s.sqlite", profile=profile) as sessions:
        shown = sessions.ask(authorize("analyst-ana", "p1", APPROVED_SCOPE), "Show refund requests")
    assert len(shown["rows"]) == 2


def test_profile_is_per_user_and_never_in_the_session_checkpoint(tmp_path):
    profile = ProfileMemory()
    profile.handle("analyst-ana", "I prefer 7 preview rows.")
    assert profile.facts("lead-lee")["preview_rows"] == 3
    with DurableSessions(tmp_path / "s.sqlite", profile=profile) as sessions:
        sessions.ask(authorize("analyst-ana", "p1", APPROVED_SCOPE), "Show refund requests")
        saved = sessions.graph.get_state({"configurable": {"thread_id": "p1"}}).values
    assert "preview_rows" not in saved and not any("prefer" in t["question"] for t in saved["turns"])


def test_message_without_a_fact_states_none():
    assert distill("What does my profile say?") is None and distill("show 40 rows") is None


def test_a_deleted_fact_is_gone_from_the_store_with_its_history_and_answers_use_the_default(tmp_path):
    profile = ProfileMemory()
    profile.handle("analyst-ana", "Please remember that I prefer 5 preview rows.")
    profile.handle("analyst-ana", "Actually, make that 2 preview rows instead.")
    profile.handle("lead-lee", "I prefer 7 preview rows.")
    assert profile.forget("analyst-ana", "preview_rows") == 2  # the current fact and the value it superseded
    assert profile.stored("analyst-ana") == [] and profile.history("analyst-ana") == []
    assert profile.facts("analyst-ana")["preview_rows"] == 3
    with DurableSessions(tmp_path / "s.sqlite", profile=profile) as sessions:
        shown = sessions.ask(authorize("analyst-ana", "p1", APPROVED_SCOPE), "Show refund requests")
    assert len(shown["rows"]) == 3  # the default, not the deleted 2
    assert profile.facts("lead-lee")["preview_rows"] == 7  # another user's fact stays
    assert profile.forget("analyst-ana", "preview_rows") == 0


def test_history_and_deletion_reach_past_the_stores_first_page():
    profile = ProfileMemory()
    for rows in range(1, 16):
        profile.handle("analyst-ana", f"I prefer {rows} preview rows.")
    assert [h["value"] for h in profile.history("analyst-ana")] == list(range(1, 15))
    assert profile.forget("analyst-ana", "preview_rows") == 15 and profile.stored("analyst-ana") == []


def test_forgetting_a_fact_the_profile_does_not_keep_is_refused():
    import pytest

    with pytest.raises(KeyError, match="keeps only preview_rows"):
        ProfileMemory().forget("analyst-ana", "home_address")
