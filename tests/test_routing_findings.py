"""Lesson 06's rendered findings: every figure in a sentence comes from the gate's own numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.routing.command import GateCommand
from labkit.routing.findings import (
    accuracy_hides_the_outage,
    prompt_change_verdict,
    refused_not_rejected,
    where_the_points_went,
)
from labkit.routing.grader import apply_changes, compare, load, route_confusion
from labkit.routing.runs import Malformed
from labkit.routing.suite import write_routing_fixtures


@pytest.fixture
def shipped(tmp_path: Path):
    folder = tmp_path / "routing"
    write_routing_fixtures(folder)
    suite, sha = load(folder / "suite.json")
    baseline, _ = load(folder / "baseline.json")
    candidate, _ = load(folder / "candidate.json")
    return suite, sha, baseline, candidate


def test_accuracy_hides_the_outage_names_the_counts_the_outage_and_the_sign_test(shipped):
    suite, sha, baseline, candidate = shipped
    report = compare(suite, sha, baseline, candidate)
    text = accuracy_hides_the_outage(report["baseline"], report["candidate"])
    assert "9 of 10 right against the baseline's 8" in text
    assert "from 2 to 20: it misroutes t1, an outage" in text
    assert "t7, t9 (fixed by the candidate) and t1 (broken)" in text
    assert "p = 1.00" in text and "cannot be told apart" in text
    repaired = compare(suite, sha, baseline, apply_changes(candidate, [{"id": "t1", "route": "urgent_support"}]))
    changed = accuracy_hides_the_outage(repaired["baseline"], repaired["candidate"])
    assert "10 of 10" in changed and "an outage" not in changed and "and none (broken)" in changed


def test_where_the_points_went_reads_the_costliest_slice_and_its_queue_precision(shipped):
    suite, sha, baseline, candidate = shipped
    report = compare(suite, sha, baseline, candidate)
    text = where_the_points_went(report, route_confusion(suite, sha, candidate))
    assert "`urgent_support` slice is 2 of the 10 tickets and carries 20 of the candidate's 20" in text
    assert "sent 4 tickets to billing, 3 of which belonged there: a billing precision of 3/4" in text
    to_sales = apply_changes(candidate, [{"id": "t1", "route": "sales"}])
    moved = compare(suite, sha, baseline, to_sales)
    assert "a sales precision of 3/4" in where_the_points_went(moved, route_confusion(suite, sha, to_sales))


def test_refused_not_rejected_counts_the_malformed_replies_and_names_their_tickets():
    refused = GateCommand("labkit grade-routes s b c", 1, "", "labkit grade-routes: no prediction for t9\n")
    bad = [Malformed("t9", '{"id": "./t9"}', "id changed to './t9'")]
    text = refused_not_rejected(refused, bad, 10)
    assert "refused to grade" in text and "no prediction for t9" in text and "(1 of 10 replies here)" in text
    graded = GateCommand("labkit grade-routes s b c", 2, '{"pass": false}', "")
    assert "refused" not in refused_not_rejected(graded, [], 10)


def test_prompt_change_verdict_tells_a_failed_absolute_condition_from_a_regression(shipped):
    suite, sha, baseline, _ = shipped
    wrong_urgent = apply_changes(baseline, [{"id": "t1", "route": "sales"}, {"id": "t2", "route": "sales"}])
    better = apply_changes(wrong_urgent, [{"id": "t7", "route": "sales"}])
    report = compare(suite, sha, wrong_urgent, better)
    text = prompt_change_verdict(report, [wrong_urgent, better])
    assert "gets 7 of 10 right against 6" in text and "This is not a regression" in text
    assert "(2 urgent misses)" in text and "In all 20 well-formed replies" in text
    assert "never urgent_support" in text
    worse = compare(suite, sha, better, wrong_urgent)
    assert "This is not a regression" not in prompt_change_verdict(worse, [better, wrong_urgent])
    fixes = [{"id": "t7", "route": "sales"}, {"id": "t9", "route": "support"}, {"id": "t3", "route": "sales"}]
    trade = apply_changes(wrong_urgent, fixes)  # no worse on either count, yet t3 broke
    traded = compare(suite, sha, wrong_urgent, trade)
    assert "This is not a regression" not in prompt_change_verdict(traded, [wrong_urgent, trade])


def test_prompt_change_verdict_sets_each_prompt_against_a_trivial_floor(shipped):
    from labkit.routing.grader import constant_run, score, validate_suite

    suite, sha, baseline, _ = shipped
    wrong_urgent = apply_changes(baseline, [{"id": "t1", "route": "sales"}, {"id": "t2", "route": "sales"}])
    report = compare(suite, sha, wrong_urgent, baseline)
    floor = score(suite, validate_suite(suite), sha, constant_run(suite, sha, "sales"))
    text = prompt_change_verdict(report, [wrong_urgent, baseline], floor=floor)
    assert "The baseline prompt (6 right, 42 points) beats the trivial run 'always sales'" in text
    assert "The candidate prompt (8 right, 2 points) beats the trivial run 'always sales' (3 right, 45 points)" in text
    always = constant_run(suite, sha, "sales")
    tied = prompt_change_verdict(compare(suite, sha, always, baseline), [always, baseline], floor=floor)
    assert "The baseline prompt (3 right, 45 points) does not beat the trivial run 'always sales'" in tied
