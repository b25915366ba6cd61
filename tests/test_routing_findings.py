"""Lesson 06's rendered findings: every figure in a sentence comes from the gate's own numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.routing.command import GateCommand
from labkit.routing.findings import (
    accuracy_hides_the_outage,
    followed_step,
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


def test_accuracy_hides_the_outage_names_the_counts_the_outage_and_the_changed_tickets(shipped):
    suite, sha, baseline, candidate = shipped
    report = compare(suite, sha, baseline, candidate)
    text = accuracy_hides_the_outage(report["baseline"], report["candidate"])
    assert "9 of 10 right against the baseline's 8" in text
    assert "from 2 to 20: it misroutes t1, an outage" in text
    assert "t7, t9 (fixed by the candidate) and t1 (broken)" in text
    assert "p =" not in text  # the sign test is the release rule's footnote, not this finding's
    repaired = compare(suite, sha, baseline, apply_changes(candidate, [{"id": "t1", "route": "urgent_support"}]))
    changed = accuracy_hides_the_outage(repaired["baseline"], repaired["candidate"])
    assert "10 of 10" in changed and "an outage" not in changed and "and none (broken)" in changed


def test_where_the_points_went_reads_the_costliest_slice_and_its_queue_precision(shipped):
    suite, sha, baseline, candidate = shipped
    report = compare(suite, sha, baseline, candidate)
    text = where_the_points_went(report, route_confusion(suite, sha, candidate))
    assert "`urgent_support` slice is 2 of the 10 tickets and carries 20 of the candidate's 20" in text
    assert "Its miss sits in the `urgent_support` row, `billing` column" in text
    assert (
        "sent 4 tickets to billing, 3 of which belonged there: a billing precision of 3/4, a count on 4 tickets" in text
    )
    to_sales = apply_changes(candidate, [{"id": "t1", "route": "sales"}])
    moved = compare(suite, sha, baseline, to_sales)
    assert "a sales precision of 3/4" in where_the_points_went(moved, route_confusion(suite, sha, to_sales))


def test_refused_not_rejected_counts_the_malformed_and_the_right_well_formed_replies(shipped):
    suite, _, baseline, _ = shipped
    refused = GateCommand("labkit grade-routes s b c", 1, "", "labkit grade-routes: no prediction for t9\n")
    bad = [Malformed("t9", '{"id": "./t9"}', "id changed to './t9'")]
    readable = {**baseline, "predictions": [p for p in baseline["predictions"] if p["id"] != "t9"]}
    readable = apply_changes(readable, [{"id": "t1", "route": "sales"}])
    text = refused_not_rejected(refused, bad, readable, suite)
    assert "refused to grade" in text and "no prediction for t9" in text and "(1 of 10 replies here)" in text
    assert "Of its 9 well-formed replies, 7 name the expected route (t2, t3, t4, t5, t6, t8, t10)" in text
    assert "whose reply broke the reply contract (t9: id changed to './t9')" in text
    graded = GateCommand("labkit grade-routes s b c", 2, '{"pass": false}', "")
    assert "refused" not in refused_not_rejected(graded, [], baseline, suite)


def test_followed_step_says_where_the_ticket_went_and_whether_the_candidate_kept_its_step(shipped):
    suite, _, baseline, _ = shipped
    billing = apply_changes(baseline, [{"id": "t8", "route": "billing"}])
    step = {"ticket": "t8", "step": 2, "step_route": "billing"}
    against = followed_step(suite, billing, baseline, **step)
    assert "to billing under the baseline prompt and to sales under the candidate" in against
    assert "does not follow its own step 2, which says billing" in against and "consistent" not in against
    fixed_t3 = apply_changes(baseline, [{"id": "t3", "route": "billing"}])
    fixes_both = followed_step(suite, apply_changes(billing, [{"id": "t3", "route": "sales"}]), fixed_t3, **step)
    assert "Its fix of t3 (billing) is consistent with step 2." in fixes_both
    kept = followed_step(suite, baseline, billing, **step)
    assert "to sales under the baseline prompt and to billing" in kept and "followed step 2" in kept
    assert "against" not in kept
    both = followed_step(suite, billing, billing, **step)
    assert "to billing under both prompts" in both and "followed step 2" in both
    read = followed_step(suite, billing, baseline, **step, rival="step 3 (sales)")
    assert "If t8 meets step 2 (billing)" in read and "if it meets only step 3 (sales), it does" in read
    assert "a reading, not a fact" in read and "does not follow its own step 2" not in read
    neither = followed_step(suite, billing, apply_changes(baseline, [{"id": "t8", "route": "support"}]), **step)
    assert "followed neither" in neither


def test_prompt_change_verdict_tells_a_failed_absolute_condition_from_a_regression(shipped):
    suite, sha, baseline, _ = shipped
    wrong_urgent = apply_changes(baseline, [{"id": "t1", "route": "sales"}, {"id": "t2", "route": "sales"}])
    better = apply_changes(wrong_urgent, [{"id": "t7", "route": "sales"}])
    report = compare(suite, sha, wrong_urgent, better)
    text = prompt_change_verdict(report, [wrong_urgent, better])
    assert "gets 7 of 10 right against 6" in text and "This is not a regression" in text
    assert "(2 urgent misses)" in text and "a 1-0 split on the 1 ticket exactly one of them gets right" in text
    from labkit.routing.grader import constant_run

    sales = [compare(suite, sha, wrong_urgent, constant_run(suite, sha, "sales"))]
    text = prompt_change_verdict(report, [wrong_urgent, better], constants=sales)
    assert "ahead of it by 4 right routes: a 4-0 split on the 4 tickets" in text
    assert "(p = 1.00; 1 ticket can give no p below 1.00)" in text  # the prompts' floor, said once
    assert text.count("can give no p below") == 1  # not again for the constant run
    worse = compare(suite, sha, better, wrong_urgent)
    assert "This is not a regression" not in prompt_change_verdict(worse, [better, wrong_urgent])
    fixes = [{"id": "t7", "route": "sales"}, {"id": "t9", "route": "support"}, {"id": "t3", "route": "sales"}]
    trade = apply_changes(wrong_urgent, fixes)  # no worse on either count, yet t3 broke
    traded = compare(suite, sha, wrong_urgent, trade)
    assert "This is not a regression" not in prompt_change_verdict(traded, [wrong_urgent, trade])


def test_prompt_change_verdict_sets_constant_runs_beside_the_prompts_and_tells_their_gate(shipped):
    from labkit.routing.grader import constant_run

    suite, sha, baseline, _ = shipped
    wrong_urgent = apply_changes(baseline, [{"id": "t1", "route": "sales"}, {"id": "t2", "route": "sales"}])
    report = compare(suite, sha, wrong_urgent, baseline)
    constants = [compare(suite, sha, wrong_urgent, constant_run(suite, sha, r)) for r in ("sales", "urgent_support")]
    text = prompt_change_verdict(report, [wrong_urgent, baseline], constants=constants)
    assert "'always sales' gets 3 right with 45 points and 2 urgent misses" in text
    assert "ahead of it by 5 right routes: a 6-1 split on the 7 tickets exactly one of them gets right" in text
    seven = text.split("a 6-1 split on the 7 tickets")[1].split(")")[0]
    assert "can give no p below" not in seven  # 7 differing tickets can reach the 5% level
    assert "'always urgent_support' gets 2 right with 8 points and 0 urgent misses" in text
    assert "ahead of it by 6 right routes" in text  # 8 right and 2 points against 2 right and 8 points
    assert "passes the gate" not in text  # 2 right against 6: the constant run fails here
    assert "Neither prompt routes" not in text  # the runs choose four routes


def test_prompt_change_verdict_names_a_constant_run_that_passes_and_a_one_ticket_margin(shipped):
    from labkit.routing.grader import constant_run

    suite, sha, _, _ = shipped
    sales_like = apply_changes(constant_run(suite, sha, "sales"), [{"id": "t3", "route": "billing"}])
    poor = apply_changes(constant_run(suite, sha, "billing"), [{"id": "t3", "route": "sales"}])  # 2 right
    report = compare(suite, sha, poor, sales_like)
    constants = [compare(suite, sha, poor, constant_run(suite, sha, r)) for r in ("sales", "urgent_support")]
    text = prompt_change_verdict(report, [poor, sales_like], constants=constants)
    assert "ahead of it by 1 right route: a 1-0 split on the 1 ticket exactly one" in text and "p = 1.00" in text
    assert "can give no p below" not in text  # 6 differing tickets between the prompts can reach 5%
    assert "only billing or sales" in text and "Neither prompt routes in any real sense" in text
    assert "'always urgent_support' passes the gate" in text  # 2 right, 8 points, no urgent miss
    assert "ahead of it by 2" not in text  # more right routes than always urgent_support, yet 44 points to 8


def _all_routes_runs(suite, sha, count, seed):
    import random

    rng = random.Random(seed)
    ids = [case["id"] for case in suite["cases"]]
    for _ in range(count):
        yield {
            "label": "what-if",
            "origin": "simulated",
            "suite_sha256": sha,
            "predictions": [{"id": cid, "route": rng.choice(sorted(suite["penalties"]))} for cid in ids],
        }


def test_penalty_condition_is_implied_by_the_other_two_under_the_shipped_weights(shipped):
    from labkit.routing.findings import penalty_condition_decides, penalty_condition_note
    from labkit.routing.practice import failed_conditions, with_penalties

    suite, sha, baseline, candidate = shipped
    assert not penalty_condition_decides(suite["penalties"])
    assert "never decides anything" in penalty_condition_note(suite["penalties"])
    runs = [baseline, candidate, *_all_routes_runs(suite, sha, 60, seed=6)]
    for old in runs:
        for new in runs:
            failed = failed_conditions(compare(suite, sha, old, new))
            assert failed is True or failed != {2}, "condition 2 decided alone under the shipped weights"
    heavy = with_penalties(suite, billing=3)
    assert penalty_condition_decides(heavy["penalties"])
    assert "can fail a candidate" in penalty_condition_note(heavy["penalties"])
    trade = {
        **baseline,
        "predictions": [
            {**p, "route": {"t7": "sales", "t9": "support", "t4": "sales", "t5": "sales"}.get(p["id"], p["route"])}
            for p in baseline["predictions"]
        ],
    }
    assert failed_conditions(compare(heavy, sha, baseline, trade)) == {2}


def test_penalty_condition_decides_when_urgent_weighs_less_than_an_ordinary_route(shipped):
    from labkit.routing.findings import penalty_condition_decides, penalty_condition_note
    from labkit.routing.practice import failed_conditions, with_penalties, with_routes

    suite, sha, baseline, _ = shipped
    cheap = with_penalties(suite, urgent_support=1, billing=3, sales=3, support=3)
    assert penalty_condition_decides(cheap["penalties"])
    assert "can fail a candidate" in penalty_condition_note(cheap["penalties"])
    old = with_routes(baseline, t1="billing")  # a cheap urgent miss in the baseline
    new = with_routes(baseline, t3="sales")  # traded for a dearer ordinary miss
    assert failed_conditions(compare(cheap, sha, old, new)) == {2}
