"""Lesson 01's recorded runs: made by the lesson's own requests, replayed exactly, refused when fixtures change."""

import json

import pytest

from labkit.authored import AuthoringAdapter
from labkit.course.lessons import write_authored
from labkit.errors import FixtureChanged
from labkit.evaluator import lesson
from labkit.recording import load_run


def test_authored_run_is_rewritten_byte_for_byte(course):
    path = course / "recorded_runs" / lesson.RUN_AUTHORED / "run.json"
    before = path.read_bytes()
    assert write_authored("01") == path and path.read_bytes() == before


def test_requests_generate_every_description_before_any_judge_call():
    adapter = AuthoringAdapter(lesson.AUTHORED_REPLIES, settings=lesson.SETTINGS)
    runs = lesson.make_requests(adapter)
    keys = [question for question, _, _ in adapter.exchanges]
    assert [k.split(":")[0] for k in keys] == ["describe"] * 24 + ["judge"] * (len(keys) - 24)
    held_out = lesson.load_inputs().labels.held_out
    assert len(keys) == 24 + len(held_out) * 4  # three criteria alone, then one bundled call, per held-out product
    assert len(runs.generation.generations) == 24
    # the narrative description equals the labeled text here, so its judge calls are asked once and reused
    assert {c.description_source for c in runs.judging.calls if c.product_id == "p07"} == {"labeled", "generated"}


def test_each_request_carries_its_own_reply_schema_and_the_shared_settings():
    run = load_run(lesson.RUN_AUTHORED)
    for binding in run.bindings:
        request = binding.request
        assert request["temperature"] == 0 and request["seed"] == lesson.SETTINGS["seed"]
        properties = request["response_format"]["schema"]["required"]  # a list keeps its order in the run file
        if binding.question.startswith("describe:"):
            assert properties == ["title", "description"]
        elif binding.question.endswith(":bundled"):
            assert properties == ["factual_accuracy", "completeness", "tone"]
        else:
            assert properties == ["explanation", "verdict"]


def test_changed_held_out_subset_invalidates_the_runs(course):
    path = course / "fixtures" / "evaluator" / "human_labels.json"
    data = json.loads(path.read_text())
    data["subsets"]["held_out"][0], data["subsets"]["calibration"][0] = (
        data["subsets"]["calibration"][0],
        data["subsets"]["held_out"][0],
    )
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(FixtureChanged, match=r"human_labels\.json"):
        load_run(lesson.RUN_CAPTURED)


def test_captured_run_replays_with_measured_latency_and_reported_tokens():
    from labkit.evaluator.report import evaluate_run

    report = evaluate_run(lesson.RUN_CAPTURED)
    calls = [g.call for g in report.runs.generation.generations]
    assert report.origin == "captured" and all(c.origin == "captured" for c in calls)
    assert all(c.usage_source == "reported" and c.latency_s is not None for c in calls)
    run = load_run(lesson.RUN_CAPTURED)
    binding = run.binding_for(calls[6].request)
    assert binding.latency_s == calls[6].latency_s and binding.usage.prompt_tokens == calls[6].prompt_tokens
    assert len(report.runs.generation.generations) == 24 and report.records["p07"].model_id == run.model.id


def test_each_calls_request_sha256_is_its_replay_binding_key():
    from labkit.evaluator.report import evaluate_run

    report = evaluate_run(lesson.RUN_AUTHORED)
    keys = {b.key for b in load_run(lesson.RUN_AUTHORED).bindings}
    calls = [g.call for g in report.runs.generation.generations]
    assert calls and all(c.request_sha256 in keys for c in calls)


def test_held_out_by_rater_gives_each_raters_own_labels_in_held_out_order():
    from labkit.evaluator.lesson import load_inputs

    labels = load_inputs().labels
    rater_a, rater_b = labels.held_out_by_rater("tone")
    assert rater_a == [labels.label(p, "tone", who=labels.raters[0]) for p in labels.held_out]
    assert rater_b == [labels.label(p, "tone", who=labels.raters[1]) for p in labels.held_out]
    assert rater_a != rater_b  # the raters disagree on some tone label
