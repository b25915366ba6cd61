"""The tables lesson 04 prints about its evaluation are read off the results they describe."""

import pytest

from labkit.agent import evaluation as ev
from labkit.agent import findings, runs
from labkit.agent.graph import ScriptedModel
from labkit.boundary import connect
from labkit.recording import load_run


@pytest.fixture(scope="module")
def captured():
    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    return ev.evaluation_report(results, run), results


def _replies(rows):
    return {row["what the replies show"]: row["replies"] for row in rows}


def test_the_reply_failures_count_each_cause_from_the_captured_replies(captured):
    report, results = captured
    rows = _replies(findings.reply_failures(results, load_run(runs.RUN_CAPTURED), report))
    assert list(rows.values()) == [1, 24, 24, 10, 4, 3, 5, 5, 4, 4, 10, 9]
    # the notebook's sentence: every unparsed reply held a control character, and 4 of the 5 were also cut off
    assert rows["  of those, holding a raw control character"] == rows["unparsed replies, router or agent"] == 5
    assert rows["  of those, cut off at max_tokens=64 (finish_reason length)"] == rows["  of those, both"] == 4
    assert rows["agent replies cut off at max_tokens=64"] == 1
    assert rows["router replies that did not parse"] == 4 and rows["  of those, cut off at max_tokens=64"] == 3
    assert rows['most frequent refused call: filter_by_intent, arguments {"answer": "10"}'] == 10
    assert rows['second most frequent: count_rows, arguments {"answer": "10"}'] == 9


def test_the_reply_failures_follow_scripted_replies_that_parse_but_carry_an_answer():
    results = runs.make_requests(
        ScriptedModel(
            {"route:": '{"route":"structured"}', "agent:": '{"decision": "count_rows", "arguments": {"answer": "9"}}'}
        )
    )
    run = load_run(runs.RUN_CAPTURED)
    rows = _replies(findings.reply_failures(results, run, ev.evaluation_report(results, run)))
    refused = sum(event["kind"] == "arguments_invalid" for r in results for event in (r.state or {}).get("events", []))
    assert refused and rows['most frequent refused call: count_rows, arguments {"answer": "9"}'] == refused
    assert rows["agent replies that parsed, with arguments the tool's schema refused"] == refused
    assert rows["  of those, with an answer in the arguments"] == refused
    assert rows["agent replies cut off at max_tokens=64"] == 0
    misrouted = sum(r.case.expected_route not in (None, "structured") for r in results)
    assert rows["router replies in valid JSON with a wrong route"] == misrouted
    assert rows["unparsed replies, router or agent"] == 0


def test_each_failing_case_is_placed_at_the_first_layer_it_broke(captured):
    _, results = captured
    layers = {r.case.id: findings.first_failed_layer(r) for r in results}
    assert {case for case, layer in layers.items() if layer is None} == {"c07", "c08", "c09"}
    assert {case for case, layer in layers.items() if layer == "tool call"} == {"c01", "c02", "c12"}
    assert {layer for layer in layers.values()} == {None, "route", "tool call"}
    rows = {row["broke first at"]: row for row in findings.where_it_broke(results)}
    assert set(rows) == {"route", "tool call"} and rows["route"]["cases"] == 14
    assert rows["tool call"]["which"] == "c01, c02, c12" and rows["tool call"]["cases"] == 3
    c04 = next(r for r in results if r.case.id == "c04")
    declined = [
        runs.CaseResult(r.case, "out_of_scope", None, "out_of_scope", r.state, []) if r is c04 else r for r in results
    ]
    moved = {row["broke first at"]: row for row in findings.where_it_broke(declined)}
    assert moved["route"]["cases"] == 13 and "c04" not in moved["route"]["which"]


def test_a_wrongly_accepted_refusal_breaks_at_identity_and_a_wrong_count_at_the_answer(captured):
    _, results = captured
    c08 = next(r for r in results if r.case.id == "c08")
    let_in = runs.CaseResult(c08.case, "ok", "27 refund requests", "structured", None, [])
    assert findings.first_failed_layer(let_in) == "identity"
    authored = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    c01 = next(r for r in authored if r.case.id == "c01")
    wrong = runs.CaseResult(c01.case, c01.status, "26 refund requests", c01.route, c01.state, [])
    assert findings.first_failed_layer(wrong) == "answer"
    assert findings.where_it_broke(authored) == []


def test_captured_replies_show_each_pick_unchanged_and_refuse_a_missing_one():
    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(runs.replay(runs.RUN_CAPTURED))
    rows = findings.captured_replies(results, run)
    assert [(r["case"], r["step"]) for r in rows] == list(findings.REPLY_PICKS)
    raws = {e["raw"] for r in results for e in (r.state or {}).get("events", []) if "raw" in e}
    assert all(r["reply (captured, as sent)"] in raws for r in rows)
    assert rows[0]["application recorded"] == "route_chosen"
    assert rows[1]["application recorded"] == "tool_proposed, then arguments_invalid"
    assert rows[2]["finish_reason"] == "length" and "not JSON" in rows[2]["application recorded"]
    with pytest.raises(findings.NoSuchReply):
        findings.captured_replies(results, run, picks=[("c08", "agent")])


def test_the_reading_of_the_two_columns_holds_on_the_recorded_runs_and_fails_when_the_runs_are_swapped(captured):
    report, results = captured
    authored = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    findings.check_reading(results, authored, report)  # the recorded runs: every claim holds
    with pytest.raises(findings.ReadingFalse, match="no valid captured tool call") as raised:
        authored_report = ev.evaluation_report(authored, load_run(runs.RUN_AUTHORED))
        findings.check_reading(authored, results, authored_report)  # the authored run read as if captured
    assert "the authored run's one refused argument is c10's" in str(raised.value)


def test_the_reading_fails_when_a_captured_case_ends_ok_but_wrong_outside_profile(captured):
    report, results = captured
    authored = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    c04 = next(r for r in results if r.case.id == "c04")
    moved = [runs.CaseResult(r.case, "ok", None, "unstructured", r.state, []) if r is c04 else r for r in results]
    with pytest.raises(findings.ReadingFalse, match="routed profile"):
        findings.check_reading(moved, authored, report)


def test_the_reading_fails_when_c07_corrects_a_stored_value_or_the_router_declined_a_case(captured):
    report, results = captured
    authored = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    c07 = next(r for r in results if r.case.id == "c07")
    events = [
        {**e, "change": {**e["change"], "supersedes": 5}} if e["kind"] == "profile_updated" else e
        for e in c07.state["events"]
    ]
    corrected = [
        runs.CaseResult(r.case, r.status, r.final, r.route, {**r.state, "events": events}, r.audit) if r is c07 else r
        for r in results
    ]
    with pytest.raises(findings.ReadingFalse, match="c07 passed with nothing to correct"):
        findings.check_reading(corrected, authored, report)
    declined = {**report, "safety": {**report["safety"], "declines": 1}}
    with pytest.raises(findings.ReadingFalse, match="declined no case"):
        findings.check_reading(results, authored, declined)


def test_the_reading_fails_when_the_questions_to_decline_did_not_go_mostly_to_profile(captured):
    report, results = captured
    authored = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    moved = [
        runs.CaseResult(r.case, r.status, r.final, "structured", r.state, r.audit)
        if r.case.expected_route == "out_of_scope" and r.route == "profile" and r.case.id != "c04"
        else r
        for r in results
    ]
    with pytest.raises(findings.ReadingFalse, match="most captured questions to decline went to profile"):
        findings.check_reading(moved, authored, report)
