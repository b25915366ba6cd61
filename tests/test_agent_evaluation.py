"""Evaluation across layers: outcome, route confusion, tool use, paraphrase trials with Wilson intervals, safety."""

import pytest

from labkit.agent import evaluation as ev
from labkit.agent import runs
from labkit.agent.graph import ScriptedModel
from labkit.boundary import connect
from labkit.recording import load_run


@pytest.fixture(scope="module")
def authored():
    results = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    return results, ev.evaluation_report(results, load_run(runs.RUN_AUTHORED))


def test_paraphrase_trials_report_rates_and_wilson_intervals_for_counts_and_declines(authored):
    _, report = authored
    rows = {r["trials"]: r for r in report["reliability"]}
    assert set(rows) == {"trial_count", "trial_decline"}
    for row in rows.values():
        assert row["n"] == 4 and row["wilson_low"] <= row["rate"] <= row["wilson_high"]


def test_wilson_interval_matches_the_formula():
    assert ev.wilson(6, 6) == (0.61, 1.0)
    assert ev.wilson(0, 6) == (0.0, 0.39)
    assert ev.wilson(5, 10) == (0.237, 0.763)
    with pytest.raises(ValueError):
        ev.wilson(3, 0)


def test_authored_run_completes_every_case_with_no_unauthorized_call(authored):
    _results, report = authored
    assert report["task_outcome"]["correct"] == report["task_outcome"]["cases"] == len(runs.ALL_CASES)
    assert report["safety"]["unauthorized_calls"] == 0 and report["safety"]["refused_before_tools"] == 2
    assert report["latency"] is None  # an authored run claims no latency


def test_route_confusion_counts_a_misroute_and_an_invalid_reply():
    results = runs.make_requests(ScriptedModel({"route:": '{"route":"structured"}', "agent:": "no"}))
    confusion = ev.route_confusion(results)
    per_class = {c["route"]: c for c in confusion["per_class"]}
    assert per_class["structured"]["recall"] == 1.0 and per_class["structured"]["precision"] < 1.0
    assert per_class["out_of_scope"]["recall"] == 0.0
    tools = ev.tool_use(results)
    assert tools["valid_arguments"] == 0 and tools["argument_validity"] == 0.0


def test_unauthorized_read_is_counted():
    audit = [
        {"user_id": "analyst-ana", "scope_read": "escalations_restricted"},
        {"user_id": "analyst-ana", "scope_read": "approved_support_dataset"},
    ]
    from labkit.agent.tools import unauthorized_calls

    assert unauthorized_calls(audit, allowed_scopes={"analyst-ana": ["approved_support_dataset"]}) == 1


def test_session_and_profile_checks_pass(tmp_path):
    assert all(row["passed"] for row in ev.session_checks(tmp_path))
