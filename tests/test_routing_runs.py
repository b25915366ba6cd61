import json

import pytest

from labkit.authored import AuthoringAdapter
from labkit.routing.runs import SETTINGS, make_requests, parse_route_reply, routing_messages, routing_run


def test_model_sees_the_policy_and_one_ticket_never_the_labels_or_penalties():
    messages = routing_messages({"id": "t1", "message": "Checkout is down."})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert json.loads(messages[1]["content"]) == {"id": "t1", "message": "Checkout is down."}
    text = json.dumps(messages)
    assert "expected" not in text and "penalt" not in text.lower()


def test_each_ticket_is_its_own_fresh_conversation():
    class Recording(AuthoringAdapter):
        def generate(self, question, messages):
            ticket = json.loads(question)  # answer every ticket, whatever it says
            self.replies[question] = json.dumps({"id": ticket["id"], "route": "support"})
            return super().generate(question, messages)

    adapter = Recording({}, settings=SETTINGS)
    out = make_requests(adapter)
    assert len(out) == 10 and all(len(request["messages"]) == 2 for _, request, _ in adapter.exchanges)


def test_well_formed_reply_gives_its_route_and_an_unknown_route_is_kept_for_the_grader():
    assert parse_route_reply("t1", '{"id": "t1", "route": "billing"}') == ("billing", None)
    assert parse_route_reply("t1", '{"id": "t1", "route": "legal"}') == ("legal", None)


def test_malformed_replies_are_counted_and_never_repaired():
    replies = [
        ("t1", '{"id": "t1", "route": "sales"}'),
        ("t2", "urgent_support"),
        ("t3", '{"id": "t03", "route": "billing"}'),
        ("t4", '{"id": "t4", "route": "billing", "why": "x"}'),
    ]
    run, malformed = routing_run(replies, label="x", suite_sha256="abc")
    assert run["predictions"] == [{"id": "t1", "route": "sales"}] and run["origin"] == "captured"
    assert [(m.id, m.problem) for m in malformed] == [
        ("t2", "not strict JSON: reply: malformed JSON at line 1, column 1: Expecting value"),
        ("t3", "id changed to 't03'"),
        ("t4", "not an object with exactly id and route"),
    ]


def test_captured_replies_keep_each_raw_reply_with_its_recorded_cost():
    from labkit.recording import load_run
    from labkit.routing.runs import RUN_CAPTURED, captured_replies

    rows = captured_replies()
    recorded = load_run(RUN_CAPTURED)
    assert [row["id"] for row in rows] == [f"t{n}" for n in range(1, 11)]
    assert {row["raw reply"] for row in rows} == {
        b.response["choices"][0]["message"]["content"] for b in recorded.bindings if b.response
    }
    t9 = next(row for row in rows if row["id"] == "t9")
    assert '"./t9"' in t9["raw reply"]  # the rewritten id is kept, never repaired
    assert all(row["tokens"] > 0 and row["latency_s"] > 0 and row["retries"] == 0 for row in rows)


@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        ('{"id": "./t1", "id": "t1", "route": "sales"}', "repeated JSON key 'id'"),
        ('{"id": "t1", "route": NaN}', "NaN"),
        ('{"id": "t1", "route": "sa\nles"}', "Invalid control character"),
    ],
)
def test_a_reply_json_loads_would_accept_leniently_is_malformed_and_its_problem_names_the_cause(raw, cause):
    route, problem = parse_route_reply("t1", raw)
    assert route is None and problem.startswith("not strict JSON: ") and cause in problem


def test_recording_summary_names_the_model_the_server_and_counts_errors_and_retries():
    from labkit.recording import load_run
    from labkit.routing.runs import RUN_CAPTURED, recording_summary

    recorded = load_run(RUN_CAPTURED)
    lines = recording_summary().splitlines()
    assert lines[0] == f"{RUN_CAPTURED}: origin=captured, model={recorded.model.id}"
    assert lines[1] == f"endpoint kind recorded: local-llama-cpp, created_at: {recorded.created_at}"
    assert "response_format" not in lines[2] and "'max_tokens': 40" in lines[2]
    assert lines[-1] == f"calls: {len(recorded.bindings)}, transport errors: 0, retries: 0"
    assert "system prompt" not in recording_summary(instruction=None)


def test_captured_calls_puts_the_expected_route_beside_each_raw_reply():
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import load
    from labkit.routing.runs import captured_calls, captured_replies

    suite, _ = load(fixtures_dir() / "routing" / "suite.json")
    calls = captured_calls(suite)
    assert list(calls.columns) == ["expected", "raw reply (captured)", "tokens", "latency_s"]
    assert calls.loc["t9", "expected"] == "support"
    assert list(calls["raw reply (captured)"].items()) == [(r["id"], r["raw reply"]) for r in captured_replies()]
