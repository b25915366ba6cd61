"""The exercises' what-if helpers and their checks refuse what they should."""

from __future__ import annotations

import re

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


INPUTS = {  # name: (ticket id, reply)
    "two routes": ("t4", '{"id": "t4", "route": "sales", "route": "billing"}'),
    "cut short": ("t3", '{"id": "t3", "route": "bill'),
    "rewritten id": ("t9", '{ "id": "./t9", "route": "sales"}'),
    "unknown route": ("t2", '{"id": "t2", "route": "refunds"}'),
    "keys reordered": ("t8", '{ "route": "sales", "id": "t8" }'),
    "route in a list": ("t10", '{"id": "t10", "route": ["support"]}'),
}
RIGHT = {
    "two routes": "loads_strict refuses",
    "cut short": "json.loads refuses",
    "rewritten id": "the contract refuses",
    "unknown route": "well-formed",
    "keys reordered": "well-formed",
    "route in a list": "the contract refuses",
}


def _reply_check(predicted, source=""):
    from labkit.routing.practice import check_reply_predictions

    return check_reply_predictions(predicted, INPUTS, source=source, variable="PREDICTED")


def test_reply_stage_runs_json_loads_then_loads_strict_then_the_contract():
    from labkit.routing.practice import reply_stage

    assert {name: reply_stage(*reply) for name, reply in INPUTS.items()} == RIGHT
    assert reply_stage("t5", '{"id": "t5", "route": NaN}') == "loads_strict refuses"
    assert reply_stage("t1", '{"id": "t1", "route": 1e999}') == "loads_strict refuses"
    assert reply_stage("t7", '{"id": "t7", "route": "sales"} {"id": "t7"}') == "json.loads refuses"
    assert reply_stage("t7", '{"id": "t7", "route": "sales", "confidence": 0.9}') == "the contract refuses"
    assert reply_stage("t6", '{"id": "t7", "route": "sales"}') == "the contract refuses"  # another ticket's id


def test_reply_predictions_pass_when_right_and_say_only_how_many_are_wrong():
    assert _reply_check(RIGHT, source="PREDICTED = {'two routes': 'well-formed'}") == RIGHT
    with pytest.raises(NotImplementedError, match="hint"):
        _reply_check({**RIGHT, "cut short": None})
    with pytest.raises(AssertionError, match="2 of your 6 predictions are wrong") as refused:
        _reply_check({**RIGHT, "unknown route": "the contract refuses", "route in a list": "well-formed"})
    assert "refunds" not in str(refused.value) and "list" not in str(refused.value)  # no answer given away
    with pytest.raises(AssertionError, match="predict one of"):
        _reply_check({**RIGHT, "cut short": "refused"})


def test_reply_predictions_refuse_an_all_malformed_guess():
    with pytest.raises(AssertionError, match="4 of your 6 predictions are wrong"):
        _reply_check(dict.fromkeys(RIGHT, "the contract refuses"))


def test_reply_predictions_refuse_a_stage_computed_by_running_the_loaders():
    computed = "PREDICTED = {name: reply_stage(*reply) for name, reply in MINE.items()}"
    with pytest.raises(AssertionError, match="type PREDICTED out as words"):
        _reply_check(RIGHT, source=computed)
    with pytest.raises(AssertionError, match="type PREDICTED out"):
        _reply_check(RIGHT, source="PREDICTED = {'two routes': STAGES[reads(json.loads, text)]}")
    with pytest.raises(AssertionError, match="type PREDICTED out"):
        _reply_check(RIGHT, source="PREDICTED = dict(RIGHT)")


def test_typed_out_reads_only_the_last_assignment_of_the_variable():
    from labkit.routing.practice import typed_out

    assert typed_out("", "PREDICTED")
    assert typed_out("PREDICTED = {'a': 'both'}", "PREDICTED")
    assert typed_out("PREDICTED = f()\nPREDICTED = {'a': 'both'}", "PREDICTED")
    assert not typed_out("PREDICTED = {'a': 'both'}\nPREDICTED = f()", "PREDICTED")
    assert not typed_out("OTHER = {'a': 'both'}", "PREDICTED")


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


def test_release_predictions_computed_by_the_gate_are_refused_though_right(shipped):
    from labkit.routing.practice import check_release_predictions

    suite, sha, baseline, candidate = shipped
    trials = _release_trials(suite, baseline, candidate)
    right = {"same": True, "outage": {2, 3}}
    typed = "PREDICTED = {'same': True, 'outage': {2, 3}}"
    check_release_predictions(right, trials, suite_sha256=sha, source=typed)
    computed = "PREDICTED = {name: failed_conditions(compare(*trial)) for name, trial in trials.items()}"
    with pytest.raises(AssertionError, match="type PREDICTED out"):
        check_release_predictions(right, trials, suite_sha256=sha, source=computed)
    wrong = {"same": True, "outage": {3}}  # a computed wrong answer learns nothing about its rightness
    with pytest.raises(AssertionError, match="type PREDICTED out"):
        check_release_predictions(wrong, trials, suite_sha256=sha, source=computed)


def test_protected_predictions_computed_by_the_gate_are_refused_though_right(shipped):
    from labkit.routing.practice import check_protected_predictions

    suite, sha, baseline, _candidate = shipped
    trials = {"same": (suite, baseline, baseline, ["t1"])}
    check_protected_predictions({"same": True}, trials, suite_sha256=sha, source="PREDICTED_PROTECTED = {'same': True}")
    with pytest.raises(AssertionError, match="type PREDICTED_PROTECTED out"):
        check_protected_predictions(
            {"same": True}, trials, suite_sha256=sha, source="PREDICTED_PROTECTED = {'same': verdict(trials)}"
        )


def test_typed_out_accepts_a_set_of_typed_conditions_but_not_a_computed_set():
    from labkit.routing.practice import typed_out

    assert typed_out("PREDICTED = {'a': {2, 3}, 'b': True}", "PREDICTED")
    assert not typed_out("PREDICTED = {'a': {f(2)}}", "PREDICTED")
    assert not typed_out("PREDICTED = {'a': set(conditions)}", "PREDICTED")


def test_protect_answers_accept_any_regressed_id_and_none_only_when_nothing_regressed(shipped):
    from labkit.routing.practice import check_protect_answers, with_routes

    suite, sha, baseline, _ = shipped
    trials = {
        "two broken": (suite, baseline, with_routes(baseline, t7="sales", t9="support", t3="sales", t5="sales")),
        "nothing broken": (suite, baseline, with_routes(baseline, t7="billing")),
    }
    for either in ("t3", "t5"):  # either regressed ticket, protected, fails the gate
        check_protect_answers({"two broken": either, "nothing broken": None}, trials, suite_sha256=sha)
    for wrong in ({"two broken": "t7", "nothing broken": None}, {"two broken": "t3", "nothing broken": "t7"}):
        with pytest.raises(AssertionError, match="1 of your 2 answers are wrong") as refused:
            check_protect_answers(wrong, trials, suite_sha256=sha)
        assert "t3" not in str(refused.value)  # no answer given away
    with pytest.raises(AssertionError, match="answer one suite id"):
        check_protect_answers({"two broken": "t33", "nothing broken": None}, trials, suite_sha256=sha)
    with pytest.raises(NotImplementedError):
        check_protect_answers({"two broken": ..., "nothing broken": None}, trials, suite_sha256=sha)
    with pytest.raises(AssertionError, match="must pass unprotected"):
        failing = {"outage": (suite, baseline, with_routes(baseline, t1="billing"))}
        check_protect_answers({"outage": None}, failing, suite_sha256=sha)
    with pytest.raises(AssertionError, match="type PROTECT out"):
        check_protect_answers(
            {"two broken": "t3", "nothing broken": None}, trials, suite_sha256=sha, source="PROTECT = dict(x)"
        )
    with pytest.raises(AssertionError, match="type PROTECT out"):  # checked before rightness: no oracle
        check_protect_answers(
            {"two broken": "t7", "nothing broken": None}, trials, suite_sha256=sha, source="PROTECT = dict(x)"
        )


def _trade(suite, sha, baseline, run):
    from labkit.routing.practice import check_passing_trade

    return check_passing_trade(run, suite=suite, suite_sha256=sha, baseline=baseline)


def test_a_passing_trade_passes_and_says_what_it_fixed_broke_and_kept(shipped):
    suite, sha, baseline, _ = shipped
    mine = {**with_routes(baseline, t9="support", t4="sales"), "label": "my-candidate"}
    assert _trade(suite, sha, baseline, mine).splitlines() == [
        "fixed t9: the baseline sent it to sales, yours to support, as the suite expects",
        "broke t4: the baseline sent it to billing, as the suite expects; yours to sales",
        "correct routes 8 -> 8, penalty points 2 -> 2, urgent misses 0 -> 0: the gate passes it",
    ]


def test_a_trade_still_a_stub_is_not_finished(shipped):
    suite, sha, baseline, _ = shipped
    stub = {**baseline, "predictions": [{"id": p["id"], "route": ...} for p in baseline["predictions"]]}
    with pytest.raises(NotImplementedError, match="hint"):
        _trade(suite, sha, baseline, stub)


@pytest.mark.parametrize(
    ("routes", "reasons"),
    [
        ({"t7": "sales", "t9": "support", "t2": "billing"}, r"penalty points rose .* t2 \(sent to billing\)"),
        ({"t7": "sales", "t3": "sales", "t4": "sales"}, "correct routes fell from 8 to 7 of 10"),
    ],
    ids=["an outage pays for two fixes", "two breaks for one fix"],
)
def test_a_trade_the_gate_fails_is_refused_with_the_gates_reasons(shipped, routes, reasons):
    suite, sha, baseline, _ = shipped
    with pytest.raises(AssertionError, match=f"the gate fails your run: .*{reasons}"):
        _trade(suite, sha, baseline, with_routes(baseline, **routes))


def test_the_shipped_candidate_copied_is_refused_because_the_gate_fails_it(shipped):
    suite, sha, baseline, candidate = shipped
    with pytest.raises(AssertionError, match=r"the gate fails your run: .*t1 \(sent to billing\)"):
        _trade(suite, sha, baseline, candidate)


@pytest.mark.parametrize(
    "run",
    [
        lambda baseline: baseline,
        lambda baseline: {**baseline, "label": "my-candidate"},
        lambda baseline: with_routes(baseline, t7="billing"),  # a baseline miss moved to another wrong queue
    ],
    ids=["the baseline", "the baseline relabelled", "a miss moved"],
)
def test_a_passing_run_that_breaks_nothing_is_refused_as_no_trade(shipped, run):
    suite, sha, baseline, _ = shipped
    with pytest.raises(AssertionError, match="trades nothing"):
        _trade(suite, sha, baseline, run(baseline))


@pytest.mark.parametrize(
    ("change", "grader_says"),
    [
        (lambda ps: [p for p in ps if p["id"] != "t4"], "no prediction for t4"),
        (lambda ps: [*ps, {"id": "t11", "route": "sales"}], "does not have: t11"),
        (lambda ps: [{**p, "route": "refunds"} if p["id"] == "t4" else p for p in ps], '"refunds", not a known route'),
    ],
    ids=["missing id", "extra id", "unknown route"],
)
def test_a_malformed_trade_is_refused_by_the_graders_own_checks(shipped, change, grader_says):
    suite, sha, baseline, _ = shipped
    mine = with_routes(baseline, t9="support", t4="sales")
    malformed = {**mine, "predictions": change(mine["predictions"])}
    with pytest.raises(AssertionError, match=f"the grader refuses your run.*{re.escape(grader_says)}"):
        _trade(suite, sha, baseline, malformed)


def test_a_typed_trade_labelled_captured_is_refused(shipped):
    suite, sha, baseline, _ = shipped
    mine = {**with_routes(baseline, t9="support", t4="sales"), "origin": "captured"}
    with pytest.raises(AssertionError, match='label it "simulated"'):
        _trade(suite, sha, baseline, mine)


@pytest.mark.parametrize(
    "mine",
    [
        lambda printed: {**printed, "label": "my-candidate"},
        lambda printed: with_routes(printed, t7="billing"),  # ... and a miss both share moved to another wrong queue
    ],
    ids=["an exact copy", "a copy with a shared miss moved"],
)
def test_a_trade_copied_from_a_shown_scenario_is_refused_by_its_name(shipped, mine):
    from labkit.routing.practice import check_passing_trade

    suite, sha, baseline, _ = shipped
    printed = with_routes(baseline, t9="support", t3="sales")  # a shown candidate: fixes t9, breaks t3
    shown = {"trades t3 for t9": printed, "same as baseline": baseline}
    with pytest.raises(AssertionError, match="same tickets as the notebook's 'trades t3 for t9'"):
        check_passing_trade(mine(printed), suite=suite, suite_sha256=sha, baseline=baseline, shown=shown)
    own = {**with_routes(baseline, t9="support", t4="sales"), "label": "my-candidate"}
    assert "broke t4" in check_passing_trade(own, suite=suite, suite_sha256=sha, baseline=baseline, shown=shown)


def test_a_shown_scenario_on_another_suite_does_not_stop_an_own_trade(shipped):
    from labkit.routing.practice import check_passing_trade

    suite, sha, baseline, _ = shipped
    elsewhere = {**baseline, "predictions": baseline["predictions"][:3]}  # the grader refuses it on this suite
    own = {**with_routes(baseline, t9="support", t4="sales"), "label": "my-candidate"}
    summary = check_passing_trade(own, suite=suite, suite_sha256=sha, baseline=baseline, shown={"other": elsewhere})
    assert "broke t4" in summary
