"""The prompt test: the lesson's requests with only the tool_call example changed."""

import pytest

from labkit.authored import AuthoringAdapter
from labkit.course import prompt_test
from labkit.course.lessons import module_of_run
from labkit.errors import RecordedRunError
from labkit.recording import load_run
from labkit.system import prompt_fix, runs
from labkit.system.workflow import SYSTEM


def test_the_fixed_prompt_changes_only_the_tool_call_sentence_and_leaves_the_intent_open():
    assert prompt_fix.SYSTEM_FIXED != SYSTEM
    assert SYSTEM.replace(prompt_fix.BUGGED_SENTENCE, "") == prompt_fix.SYSTEM_FIXED.replace(
        prompt_fix.FIXED_SENTENCE, ""
    )
    assert '{"intent": "get_refund"' in SYSTEM
    assert '{"intent": "get_refund"' not in prompt_fix.SYSTEM_FIXED
    assert '{"intent": ...}' in prompt_fix.SYSTEM_FIXED


def _sent(make_requests):
    adapter = AuthoringAdapter(runs.AUTHORED_REPLIES, settings=runs.SETTINGS)
    make_requests(adapter)
    return [body["messages"] for _, body, _ in adapter.exchanges]


def test_the_prompt_test_sends_the_lessons_requests_with_the_fixed_prompt_only():
    lesson, fixed = _sent(runs.make_requests), _sent(prompt_fix.make_requests)
    assert len(lesson) == len(fixed) == 4
    for sent, sent_fixed in zip(lesson, fixed, strict=True):
        assert sent[0]["content"] == SYSTEM and sent_fixed[0]["content"] == prompt_fix.SYSTEM_FIXED
        assert sent[1:] == sent_fixed[1:]


def test_each_new_run_is_checked_against_the_module_that_made_it():
    assert module_of_run(load_run(prompt_fix.RUN_CAPTURED)) is prompt_fix
    assert module_of_run(load_run(prompt_fix.RUN_BASELINE)) is runs


def test_both_runs_replay_offline_each_with_its_own_prompt_and_the_table_sets_them_side_by_side(tmp_path):
    asked = prompt_fix.replay_both(trace_dir=tmp_path)
    table = prompt_fix.comparison_table(asked, tmp_path)
    questions = [q for q, _, _ in asked["unchanged"]]
    assert questions == [q for q, _, _ in asked["fixed"]]
    assert list(table.index) == [(q, name) for q in questions for name in ("unchanged", "fixed")]
    for name, run_id in (("unchanged", prompt_fix.RUN_BASELINE), ("fixed", prompt_fix.RUN_CAPTURED)):
        rows = table.xs(name, level="prompt")
        replies = [b.response["choices"][0]["message"]["content"] for b in load_run(run_id).bindings]
        assert list(rows["raw reply"]) == replies  # in full: the address reply is over 300 characters
        assert list(rows["status"]) == [result["status"] for _, _, result in asked[name]]
    assert table.loc[(runs.EMPTY_COUNT_QUESTION, "fixed"), "golden"] == "not a golden case"
    assert table.loc[(runs.GOLDEN[1].question, "fixed"), "golden"] == "pass"  # the count case, with a tool_call
    assert table.loc[(runs.GOLDEN[1].question, "unchanged"), "golden"] == "fail"


def test_the_server_change_note_counts_the_replies_that_differ_beyond_whitespace_on_identical_requests():
    note = prompt_fix.server_change()
    assert "have the same binding keys" in note and "(llama-cpp-python)" in note and "(xllamacpp)" in note
    assert "2 of 4 replies differ beyond whitespace" in note
    assert runs.GOLDEN[1].question in note and runs.GOLDEN[2].question in note
    assert runs.GOLDEN[0].question not in note  # its replies differ in whitespace only
    assert "cannot say the server alone changed them" in note and "shows that" not in note


def test_the_server_change_note_refuses_to_compare_runs_of_different_requests():
    note = prompt_fix.server_change(earlier=prompt_fix.RUN_CAPTURED)  # sent with SYSTEM_FIXED
    assert "hold different requests" in note and "differ beyond" not in note


def test_recording_the_prompt_test_again_refuses_the_existing_runs_before_any_request(monkeypatch):
    monkeypatch.setenv("LABKIT_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: a request would fail
    monkeypatch.setenv("LABKIT_MODEL", "SmolLM2-135M-Instruct")
    with pytest.raises(RecordedRunError, match=f"recorded_runs/{prompt_fix.RUN_BASELINE} already exists"):
        prompt_test.main([])


def test_the_fix_reading_places_the_invented_address_in_the_xllamacpp_runs_only_without_blaming_the_server(tmp_path):
    asked = prompt_fix.replay_both(trace_dir=tmp_path)
    note = prompt_fix.fix_reading(prompt_fix.comparison_table(asked, tmp_path))
    assert note.startswith("With the example fixed, 3 of the 4 replies still name `get_refund`.")
    assert "the same invented address under both prompts" in note and "New York, USA.*" in note
    assert "does not come from the fix" in note
    assert "in the runs served by xllamacpp, and in no reply of the earlier run `05-system-smollm2`" in note
    assert "One reply per request cannot say the server alone caused it." in note
    assert "came with the server" not in note
    assert "`\\n` is JSON's escape for a line break" in note


def test_the_fix_reading_says_nothing_of_the_server_when_the_address_replies_differ(tmp_path):
    asked = prompt_fix.replay_both(trace_dir=tmp_path)
    table = prompt_fix.comparison_table(asked, tmp_path)
    table.loc[(runs.GOLDEN[2].question, "unchanged"), "raw reply"] = '{"kind": "answer", "text": "Elsewhere."}'
    note = prompt_fix.fix_reading(table)
    assert "under both prompts" not in note and "from the fix" not in note


def test_the_fix_reading_credits_no_server_when_the_earlier_run_holds_the_same_reply(tmp_path):
    asked = prompt_fix.replay_both(trace_dir=tmp_path)
    note = prompt_fix.fix_reading(prompt_fix.comparison_table(asked, tmp_path), earlier_run=prompt_fix.RUN_BASELINE)
    assert "does not come from the fix" in note and "served by xllamacpp" not in note
