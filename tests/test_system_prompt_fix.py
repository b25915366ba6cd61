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


def test_both_runs_replay_offline_each_with_its_own_prompt(tmp_path):
    from labkit.system.golden import passed

    asked = prompt_fix.replay_both(trace_dir=tmp_path)
    questions = [q for q, _, _ in asked["unchanged"]]
    assert (
        questions
        == [q for q, _, _ in asked["fixed"]]
        == [*(c.question for c in runs.GOLDEN), runs.EMPTY_COUNT_QUESTION]
    )
    for name, run_id in (("unchanged", prompt_fix.RUN_BASELINE), ("fixed", prompt_fix.RUN_CAPTURED)):
        assert (tmp_path / f"{run_id}.jsonl").exists()
        scores = [passed(result, case) for (_, _, result), case in zip(asked[name], runs.GOLDEN, strict=False)]
        assert scores == ([False, False, False] if name == "unchanged" else [False, True, False])


def test_server_timings_are_the_recorded_prompt_and_reply_times_and_a_run_without_them_is_refused():
    for run_id in prompt_fix.RUNS:
        timings = prompt_fix.server_timings(run_id)
        run = load_run(run_id)
        assert set(timings) == {b.question for b in run.bindings}
        for binding in run.bindings:
            recorded = binding.response["timings"]
            got = timings[binding.question]
            assert got == {
                "reading prompt (s)": round(recorded["prompt_ms"] / 1000, 1),
                "writing reply (s)": round(recorded["predicted_ms"] / 1000, 1),
                "ms per prompt token": round(recorded["prompt_ms"] / recorded["prompt_n"]),
                "ms per reply token": round(recorded["predicted_ms"] / recorded["predicted_n"]),
            }
            assert got["reading prompt (s)"] != got["writing reply (s)"]  # not one number twice
            seconds = got["reading prompt (s)"] + got["writing reply (s)"]
            assert abs(seconds - binding.latency_s) < 1.0  # the two parts make the call
    with pytest.raises(RecordedRunError, match="no server timings"):
        prompt_fix.server_timings("05-system-smollm2")  # llama-cpp-python keeps only the total


def test_a_reply_gist_names_the_kind_and_each_filled_field():
    gist = prompt_fix.reply_gist
    assert gist('{"kind": "answer", "tool_args": {"intent": "get_refund"}}') == "answer + intent get_refund"
    assert gist('{"kind": "answer", "text": "Within 30 days.", "citation_ids": ["p1"]}') == (
        "answer + text 'Within 30 days.' + cites p1"
    )
    assert gist('{"kind": "answer", "text": "' + "x" * 40 + '"}') == f"answer + text '{'x' * 30}'…"
    assert gist("Customers have 30 days.") == "not JSON"
    assert gist("[1, 2]") == "not JSON"


def test_recording_the_prompt_test_again_refuses_the_existing_runs_before_any_request(monkeypatch):
    monkeypatch.setenv("LABKIT_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: a request would fail
    monkeypatch.setenv("LABKIT_MODEL", "SmolLM2-135M-Instruct")
    with pytest.raises(RecordedRunError, match=f"recorded_runs/{prompt_fix.RUN_BASELINE} already exists"):
        prompt_test.main([])


def test_the_settings_table_shows_what_each_run_changed_read_from_the_run_files():
    table = prompt_fix.settings_table()
    first, base, fixed = (table[r] for r in ("05-system-smollm2", *prompt_fix.RUNS))
    assert list(table.index[base != fixed]) == ["system prompt sha256"]
    assert list(table.index[first != base]) == ["server"]
    assert base["system prompt sha256"] == prompt_fix.sha12(SYSTEM)
    assert fixed["system prompt sha256"] == prompt_fix.sha12(prompt_fix.SYSTEM_FIXED)
    assert (base["temperature"], base["seed"], base["max_tokens"]) == ("0", "5", "300")


def test_sha12_hashes_a_text_as_it_is_and_anything_else_as_sorted_json():
    import hashlib

    assert prompt_fix.sha12("abc") == hashlib.sha256(b"abc").hexdigest()[:12]
    assert prompt_fix.sha12({"b": 1, "a": 2}) == prompt_fix.sha12({"a": 2, "b": 1})
    assert prompt_fix.sha12({"a": 1}) != prompt_fix.sha12({"a": 2})


def test_golden_scores_count_each_prompts_passed_golden_cases_and_skip_the_empty_count():
    from labkit.system.golden import EMPTY_COUNT_QUESTION, GOLDEN

    ok = {"status": "answered", "text": "2 get_refund tickets", "observation": {"count": 2}}
    replayed = {
        "a": [(GOLDEN[1].question, "team-a", ok), (EMPTY_COUNT_QUESTION, "team-b", ok)],
        "b": [(GOLDEN[0].question, "team-a", ok)],
    }
    assert prompt_fix.golden_scores(replayed) == {"a": 1, "b": 0}


def test_the_recorded_prompt_test_scores_and_intents(tmp_path):
    from labkit.system.golden import EMPTY_COUNT_QUESTION, GOLDEN

    assert prompt_fix.golden_scores(prompt_fix.replay_both(trace_dir=tmp_path)) == {
        "unchanged": 0,
        "fixed": 1,
    }
    named = prompt_fix.intents_named(tmp_path / f"{prompt_fix.RUN_CAPTURED}.jsonl")
    assert named[GOLDEN[1].question] == "get_refund" and named[EMPTY_COUNT_QUESTION] == "get_refund"
    assert named[GOLDEN[2].question] is None  # a reply without tool_args names no intent
