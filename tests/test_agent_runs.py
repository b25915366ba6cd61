"""Lesson 04's recorded runs: the authored run replays every case; labels are honest."""

import pytest

from labkit.agent import runs
from labkit.recording import load_run


def test_authored_run_is_labelled_authored_and_claims_no_latency():
    run = load_run(runs.RUN_AUTHORED)
    assert run.origin == "authored" and all(b.latency_s is None for b in run.bindings)


def test_authored_replies_cover_exactly_the_requests_the_cases_make():
    run = load_run(runs.RUN_AUTHORED)
    assert {b.question for b in run.bindings} == set(runs.AUTHORED_REPLIES)


def test_case_questions_are_unique_so_each_request_binds_once():
    questions = [c.question for c in runs.ALL_CASES if c.expected_route]
    assert len(questions) == len(set(questions))


def test_each_case_keeps_the_exact_requests_it_made_so_latency_can_be_looked_up():
    from labkit.boundary import connect

    run = load_run(runs.RUN_AUTHORED)
    results = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    requests = [request for result in results for request in result.requests]
    assert len(requests) == len(run.bindings)
    assert {run.binding_for(request).key for request in requests} == {b.key for b in run.bindings}


def test_a_refresh_after_the_first_filter_makes_that_row_ref_stale_and_only_that_one():
    from labkit.agent.dataset import APPROVED_SCOPE
    from labkit.agent.identity import authorize
    from labkit.agent.tools import CountRows, IntentFilter, RowRefRefused, SupportData, SupportTools

    tools = SupportTools(authorize("analyst-ana", "r1", APPROVED_SCOPE), SupportData())
    runs.refresh_after_first_filter(tools)
    first = tools.filter_by_intent(IntentFilter(intent="track_refund"))["row_ref"]
    assert tools.data.dataset_version == runs.REFRESHED_VERSION
    with pytest.raises(RowRefRefused) as refused:
        tools.count_rows(CountRows(rows=first))
    assert refused.value.reason == "stale"
    second = tools.filter_by_intent(IntentFilter(intent="track_refund"))["row_ref"]
    assert tools.count_rows(CountRows(rows=second))["dataset_version"] == runs.REFRESHED_VERSION


def test_the_case_table_lists_every_case_once_with_its_question_and_any_other_scope():
    rows = runs.case_rows()
    assert [row["case"] for row in rows] == [case.id for case in runs.ALL_CASES] and len(rows) == 20
    assert {row["scope"] for row in rows} == {"", "escalations_restricted"}
    assert rows[0]["question"] == "How many refund requests are in the dataset?"


def test_replay_answers_from_the_recorded_run_with_the_lessons_settings():
    results = runs.make_requests(runs.replay(runs.RUN_AUTHORED))
    assert results[0].final == "27 refund requests in approved_support_dataset"
