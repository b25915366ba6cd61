"""Lesson 06's two captured runs: the model returns only a route, the application keeps the ids, the gate decides."""

from __future__ import annotations

import json

import pytest

from labkit.authored import AuthoringAdapter
from labkit.paths import fixtures_dir
from labkit.recording import load_run
from labkit.routing.grader import ROUTES, compare, load
from labkit.routing.prompts import (
    PROMPTS,
    RUN_CAPTURED,
    SETTINGS,
    captured_pair,
    captured_replies,
    captured_table,
    gate_run,
    make_requests,
    parse_route,
    prompt_difference,
    prompt_messages,
)
from labkit.routing.suite import POLICY


def test_the_model_sees_a_prompt_version_and_the_ticket_text_never_its_id_label_or_penalty():
    suite, _ = load(fixtures_dir() / "routing" / "suite.json")
    t1 = suite["cases"][0]
    for version in PROMPTS:
        messages = prompt_messages(version, t1["message"])
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[1]["content"] == t1["message"]
        text = json.dumps(messages)
        assert '"t1"' not in text and "penalt" not in text.lower() and "expected" not in text
    assert prompt_messages("baseline", "x")[0] != prompt_messages("candidate", "x")[0]


def test_the_reply_schema_allows_only_a_route_from_the_enum():
    schema = SETTINGS["response_format"]["schema"]
    assert SETTINGS["response_format"]["type"] == "json_object"
    assert schema["required"] == ["route"] and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"route"} and schema["properties"]["route"]["enum"] == list(ROUTES)


def test_both_prompt_versions_route_the_same_suite_with_the_same_settings():
    class Support(AuthoringAdapter):
        def generate(self, question, messages):
            self.replies[question] = json.dumps({"route": "support"})
            return super().generate(question, messages)

    adapter = Support({}, settings=SETTINGS)
    replies = make_requests(adapter)
    assert list(replies) == list(PROMPTS)
    ids = [[cid for cid, _ in replies[version]] for version in PROMPTS]
    assert ids[0] == ids[1] and len(ids[0]) == 10
    users = [request["messages"][1] for _, request, _ in adapter.exchanges]
    assert users[:10] == users[10:]
    settings = {json.dumps({k: v for k, v in r.items() if k != "messages"}) for _, r, _ in adapter.exchanges}
    assert len(settings) == 1


def test_a_reply_that_names_an_id_or_adds_a_field_is_malformed_and_never_repaired():
    assert parse_route('{"route": "billing"}') == ("billing", None)
    assert parse_route('{"route": "legal"}') == ("legal", None)  # kept as is, for the grader to refuse
    replies = [
        ("t1", '{"route": "urgent_support"}'),
        ("t2", '{"id": "t02", "route": "billing"}'),
        ("t3", "billing"),
        ("t4", '{"route": 3}'),
    ]
    run, malformed = gate_run(replies, label="x", suite_sha256="abc")
    assert run["predictions"] == [{"id": "t1", "route": "urgent_support"}] and run["origin"] == "captured"
    assert [(m.id, m.problem) for m in malformed] == [
        ("t2", "not an object with exactly route"),
        ("t3", "not strict JSON: reply: malformed JSON at line 1, column 1: Expecting value"),
        ("t4", "route is not text"),
    ]


def test_the_committed_captured_pair_grades_and_the_gate_rejects_the_more_accurate_candidate():
    recorded = load_run(RUN_CAPTURED)
    assert recorded.origin == "captured" and recorded.model.endpoint_kind == "local-llama-cpp"
    assert len(recorded.bindings) == 2 * 10
    baseline, candidate, malformed = captured_pair()
    assert malformed == []
    assert (baseline["origin"], candidate["origin"]) == ("captured", "captured")
    suite, sha = load(fixtures_dir() / "routing" / "suite.json")
    report = compare(suite, sha, baseline, candidate)
    old, new = report["baseline"], report["candidate"]
    # What SmolLM2-135M did under each prompt (recorded once, replayed exactly): the candidate prompt
    # fixes two tickets and breaks none, yet both urgent tickets still go to ordinary queues.
    assert (old["correct"], old["penalty_points"], old["urgent_misses"]) == (2, 46, 2)
    assert (new["correct"], new["penalty_points"], new["urgent_misses"]) == (4, 44, 2)
    assert report["explanation"]["fixed"] == ["t3", "t8"] and report["explanation"]["regressed"] == []
    assert report["pass"] is False
    assert report["reasons"] == ["2 urgent_support case(s) misrouted: t1 (sent to sales), t2 (sent to billing)"]


def test_the_captured_replies_are_the_raw_text_the_pair_was_built_from():
    model, replies = captured_replies()
    assert model == load_run(RUN_CAPTURED).model.id
    baseline, candidate, _ = captured_pair()
    for version, run in (("baseline", baseline), ("candidate", candidate)):
        assert [tid for tid, _ in replies[version]] == [p["id"] for p in run["predictions"]]
        assert [json.loads(raw)["route"] for _, raw in replies[version]] == [p["route"] for p in run["predictions"]]


def test_a_reply_with_a_repeated_route_key_is_malformed_not_the_last_value():
    route, problem = parse_route('{"route": "sales", "route": "urgent_support"}')
    assert route is None and problem.startswith("not strict JSON: ") and "repeated JSON key 'route'" in problem


def test_prompt_difference_shows_the_shared_end_and_the_inserted_order_of_decisions():
    text = prompt_difference()
    shared, inserted = text.split("\n\nthe candidate inserts, just before that line:\n")
    assert shared == "both prompts: the policy printed in section 1, then\n" + PROMPTS["baseline"].removeprefix(POLICY)
    assert PROMPTS["candidate"] == PROMPTS["baseline"].replace(
        shared.splitlines()[-1], inserted + shared.splitlines()[-1]
    )
    assert inserted.startswith("Decide in this order")


def test_prompt_difference_refuses_prompts_that_differ_by_more_than_one_insertion():
    with pytest.raises(ValueError, match="one passage inserted"):
        prompt_difference("Route it. Reply.", "Route it now. Answer.")


def test_captured_table_puts_each_tickets_expected_route_beside_both_raw_replies():
    suite, _ = load(fixtures_dir() / "routing" / "suite.json")
    model, table = captured_table(suite)
    _, replies = captured_replies()
    assert model == load_run(RUN_CAPTURED).model.id
    assert list(table.columns) == ["expected", "baseline prompt", "candidate prompt"]
    assert table.loc["t1", "expected"] == "urgent_support"
    assert list(table["candidate prompt"].items()) == replies["candidate"]
