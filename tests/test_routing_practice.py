"""The exercises' what-if helpers and the smallest-repair check refuse what they should."""

from __future__ import annotations

import pytest

from labkit.course.shortcuts import calls_to
from labkit.errors import RouteGradeError
from labkit.paths import fixtures_dir
from labkit.routing.grader import compare, load
from labkit.routing.practice import check_smallest_repair, with_penalties, with_routes


@pytest.fixture
def shipped():
    folder = fixtures_dir() / "routing"
    suite, sha = load(folder / "suite.json")
    baseline, _ = load(folder / "baseline.json")
    candidate, _ = load(folder / "candidate.json")
    return suite, sha, baseline, candidate


def test_with_routes_changes_only_the_named_cases_and_leaves_the_run_alone(shipped):
    _, _, baseline, _ = shipped
    changed = with_routes(baseline, t7="sales", t3="sales")
    routes = {p["id"]: p["route"] for p in changed["predictions"]}
    before = {p["id"]: p["route"] for p in baseline["predictions"]}
    assert routes == {**before, "t7": "sales", "t3": "sales"}
    assert before["t3"] == "billing"


def test_with_penalties_changes_a_weight_and_refuses_an_unknown_route(shipped):
    suite, _, _, _ = shipped
    assert with_penalties(suite, billing=3)["penalties"]["billing"] == 3
    assert suite["penalties"]["billing"] == 1
    with pytest.raises(RouteGradeError, match="no route refunds"):
        with_penalties(suite, refunds=3)


def _urgent_first(old, new):
    chosen = [f for f in new["failures"] if f["expected"] == "urgent_support"]
    for failure in sorted((f for f in new["failures"] if f not in chosen), key=lambda f: -f["penalty"]):
        if (
            new["correct"] + len(chosen) >= old["correct"]
            and new["penalty_points"] - sum(f["penalty"] for f in chosen) <= old["penalty_points"]
        ):
            break
        chosen.append(failure)
    return [f["id"] for f in chosen]


def _trials(suite, baseline):
    return {
        "outage weighs 1": (
            with_penalties(suite, urgent_support=1),
            baseline,
            with_routes(baseline, t7="sales", t9="support", t1="billing"),
        ),
        "two billing misses": (suite, baseline, with_routes(baseline, t3="sales", t4="sales")),
    }


def test_a_correct_repair_passes_the_check(shipped):
    suite, sha, baseline, _ = shipped
    check_smallest_repair(_urgent_first, _trials(suite, baseline), suite_sha256=sha, watch=calls_to)


def test_a_repair_that_ignores_a_cheap_outage_is_refused_without_the_answer(shipped):
    suite, sha, baseline, _ = shipped

    def counts_only(old, new):
        return [] if new["correct"] >= old["correct"] else [new["failures"][0]["id"]]

    with pytest.raises(AssertionError, match=r"outage weighs 1: with .* still fails"):
        check_smallest_repair(counts_only, _trials(suite, baseline), suite_sha256=sha, watch=calls_to)


def test_a_repair_that_never_tests_the_correct_count_is_refused_without_the_answer(shipped):
    suite, sha, _, candidate = shipped
    # The candidate misses only t1; this run fixes t1 and misses t3, t4: only condition 1 fails.
    trials = {"count alone": (suite, candidate, with_routes(candidate, t1="urgent_support", t3="sales", t4="sales"))}

    def penalty_only(old, new):
        chosen = [f for f in new["failures"] if f["expected"] == "urgent_support"]
        for failure in sorted((f for f in new["failures"] if f not in chosen), key=lambda f: -f["penalty"]):
            if new["penalty_points"] - sum(f["penalty"] for f in chosen) <= old["penalty_points"]:
                break
            chosen.append(failure)
        return [f["id"] for f in chosen]

    with pytest.raises(AssertionError, match=r"count alone: with \[\] routed right it still fails") as refused:
        check_smallest_repair(penalty_only, trials, suite_sha256=sha, watch=calls_to)
    assert "t3" not in str(refused.value) and "t4" not in str(refused.value)
    check_smallest_repair(_urgent_first, trials, suite_sha256=sha, watch=calls_to)


def test_a_longer_repair_than_needed_is_refused(shipped):
    suite, sha, baseline, _ = shipped

    def everything(old, new):
        return [f["id"] for f in new["failures"]]

    with pytest.raises(AssertionError, match="fewer are enough"):
        check_smallest_repair(everything, _trials(suite, baseline), suite_sha256=sha, watch=calls_to)


def test_a_call_into_the_grader_is_refused(shipped):
    suite, sha, baseline, _ = shipped
    from labkit.routing import grader

    def borrowed(old, new):
        grader.regressions(old, new)
        return _urgent_first(old, new)

    with pytest.raises(AssertionError, match=r"calls labkit's labkit\.routing\.grader\.regressions"):
        check_smallest_repair(borrowed, _trials(suite, baseline), suite_sha256=sha, watch=calls_to)


def _release_trials(suite, baseline, candidate):
    return {
        "same": (suite, baseline, baseline),
        "outage": (suite, baseline, candidate),
    }


def test_release_predictions_pass_when_right_and_say_only_how_many_are_wrong(shipped):
    from labkit.routing.practice import check_release_predictions

    suite, sha, baseline, candidate = shipped
    trials = _release_trials(suite, baseline, candidate)
    check_release_predictions({"same": True, "outage": {2, 3}}, trials, suite_sha256=sha)
    with pytest.raises(AssertionError, match="1 of your 2 predictions are wrong") as refused:
        check_release_predictions({"same": True, "outage": True}, trials, suite_sha256=sha)
    with pytest.raises(AssertionError, match="1 of your 2 predictions are wrong"):  # fails, but not only on 3
        check_release_predictions({"same": True, "outage": {3}}, trials, suite_sha256=sha)
    assert "penalty" not in str(refused.value) and "urgent" not in str(refused.value)  # no reasons given away
    with pytest.raises(NotImplementedError):
        check_release_predictions({"same": True, "outage": None}, trials, suite_sha256=sha)


def _reply_check(parse, **changes):
    from labkit.routing.practice import check_reply_parser
    from labkit.routing.runs import Malformed

    sha = "0" * 64
    captured = [("t1", '{"id": "t1", "route": "sales"}'), ("t9", '{"id": "./t9", "route": "sales"}')]
    arguments = {
        "good": {("t2", '{"id": "t2", "route": "refunds"}'): "refunds"},
        "bad": {
            ("t3", '{"id": "t3", "id": "t3", "route": "billing"}'): "repeated",
            ("t5", '{"id": "t5", "route": NaN}'): "NaN",
        },
        "captured": captured,
        "malformed": [Malformed("t9", captured[1][1], "id changed")],
        "suite_sha256": sha,
        "watch": calls_to,
        **changes,
    }
    return check_reply_parser(parse, **arguments)


def test_reply_parser_check_passes_a_strict_parser_and_counts_its_malformed_replies():
    from labkit.canonical import loads_strict

    def strict(ticket_id, raw):
        try:
            data = loads_strict(raw)
        except ValueError as error:
            return None, f"not strict JSON: {error}"
        if not isinstance(data, dict) or set(data) != {"id", "route"} or data["id"] != ticket_id:
            return None, "wrong shape or id"
        return (data["route"], None) if isinstance(data["route"], str) else (None, "route is not text")

    assert _reply_check(strict) == 1


def test_reply_parser_check_refuses_a_lenient_parser_and_labkits_own():
    import json

    from labkit.routing.runs import parse_route_reply

    def lenient(ticket_id, raw):
        try:
            data = json.loads(raw)
        except ValueError:
            return None, "not JSON"
        return (data.get("route"), None) if data.get("id") == ticket_id else (None, "wrong id")

    with pytest.raises(AssertionError, match="is malformed: yours routes it 'billing'"):
        _reply_check(lenient)
    with pytest.raises(AssertionError, match="calls labkit's"):
        _reply_check(lambda cid, raw: parse_route_reply(cid, raw))


def test_reply_parser_check_refuses_a_parser_that_lets_nan_through_as_a_number():
    import json

    from labkit.canonical import unique_object

    def no_nan_rule(ticket_id, raw):  # refuses repeated keys, but NaN only as "not text"
        try:
            data = json.loads(raw, object_pairs_hook=unique_object)
        except ValueError as error:
            return None, f"not strict JSON: {error}"
        if not isinstance(data, dict) or set(data) != {"id", "route"} or data["id"] != ticket_id:
            return None, "wrong shape or id"
        return (data["route"], None) if isinstance(data["route"], str) else (None, "route is not text")

    with pytest.raises(AssertionError, match="does not name the rule it breaks") as refused:
        _reply_check(no_nan_rule)
    assert "NaN" in str(refused.value)  # the reply is named; the word is the reply's own


def test_failed_conditions_names_each_condition_a_candidate_fails(shipped):
    from labkit.routing.practice import failed_conditions, with_penalties

    suite, sha, baseline, candidate = shipped
    assert failed_conditions(compare(suite, sha, baseline, baseline)) is True
    assert failed_conditions(compare(suite, sha, baseline, candidate)) == {2, 3}
    assert failed_conditions(compare(suite, sha, candidate, baseline)) == {1}
    cheap_outage = with_routes(baseline, t7="sales", t1="billing")
    assert failed_conditions(compare(with_penalties(suite, urgent_support=1), sha, baseline, cheap_outage)) == {3}
    swapped = with_routes(candidate, t1="urgent_support", t3="sales")
    assert failed_conditions(compare(suite, sha, baseline, swapped, protected=["t3"])) == {4}


def test_protected_predictions_watch_only_cases_the_baseline_routed_right(shipped):
    from labkit.routing.practice import check_protected_predictions

    suite, sha, baseline, _ = shipped  # the baseline misroutes t7 (to support) and t9
    trials = {
        "t4 broken": (suite, baseline, with_routes(baseline, t7="sales", t4="sales"), ["t4"]),
        "t7 wrong another way": (suite, baseline, with_routes(baseline, t7="billing"), ["t7"]),
        "outage": (suite, baseline, with_routes(baseline, t1="billing"), ["t1"]),
    }
    right = {"t4 broken": {4}, "t7 wrong another way": True, "outage": {1, 2, 3, 4}}
    check_protected_predictions(right, trials, suite_sha256=sha)
    for wrong in ({**right, "t7 wrong another way": {4}}, {**right, "outage": {3, 4}}):
        with pytest.raises(AssertionError, match="1 of your 3 predictions are wrong") as caught:
            check_protected_predictions(wrong, trials, suite_sha256=sha)
        assert "t7" not in str(caught.value) and "outage" not in str(caught.value)
    with pytest.raises(NotImplementedError, match="protected-case rule"):
        check_protected_predictions({**right, "outage": None}, trials, suite_sha256=sha)
