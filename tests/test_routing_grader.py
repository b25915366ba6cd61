"""The routing gate: strict inputs, the release rule, the explanation, slices and the confusion matrix."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from labkit.errors import InvalidJSON, LabkitError, RouteGradeError
from labkit.routing.grader import (
    ROUTES,
    apply_changes,
    compare,
    explain,
    fixes,
    grade_files,
    load,
    regressions,
    release_reasons,
    route_confusion,
    route_slices,
    score,
    sign_test_sentence,
    ticket_changes,
    validate_suite,
)
from labkit.routing.suite import write_routing_fixtures


class Gate:
    """Fresh, independently mutable copies of the shipped suite and runs."""

    def __init__(self, folder: Path) -> None:
        write_routing_fixtures(folder)
        self.folder = folder
        self.suite, self.sha = load(folder / "suite.json")
        self.baseline, _ = load(folder / "baseline.json")
        self.candidate, _ = load(folder / "candidate.json")

    def report(self, **options):
        return compare(self.suite, self.sha, self.baseline, self.candidate, **options)

    def perfect(self) -> dict:
        run = copy.deepcopy(self.candidate)
        run["predictions"] = [{"id": c["id"], "route": c["expected"]} for c in self.suite["cases"]]
        return run


@pytest.fixture
def gate(tmp_path) -> Gate:
    return Gate(tmp_path / "routing")


def routes_of(run: dict) -> dict[str, str]:
    return {row["id"]: row["route"] for row in run["predictions"]}


def with_routes(run: dict, routes: dict[str, str]) -> dict:
    return apply_changes(run, [{"id": cid, "route": route} for cid, route in routes.items()])


# --- the release rule -------------------------------------------------------------------------


def summary(correct: int, points: int, urgent: int = 0, failures: tuple[str, ...] = ()) -> dict:
    """A run summary as `score` returns it, with only what the release rule reads."""
    rows = [{"id": cid, "expected": "sales", "actual": "billing", "penalty": 1} for cid in failures]
    return {"cases": 10, "correct": correct, "penalty_points": points, "urgent_misses": urgent, "failures": rows}


def test_score_counts_one_runs_correct_routes_penalty_points_and_urgent_misses(gate):
    cases = validate_suite(gate.suite)
    old = score(gate.suite, cases, gate.sha, gate.baseline)
    new = score(gate.suite, cases, gate.sha, gate.candidate)
    assert (old["correct"], old["penalty_points"], old["urgent_misses"]) == (8, 2, 0)
    assert (new["correct"], new["penalty_points"], new["urgent_misses"]) == (9, 20, 1)
    assert [f["id"] for f in old["failures"]] == ["t7", "t9"]
    assert new["failures"] == [{"id": "t1", "expected": "urgent_support", "actual": "billing", "penalty": 20}]
    assert new == gate.report()["candidate"]  # compare reports exactly what score counts


def test_score_refuses_a_run_for_other_suite_bytes_and_names_the_run(gate):
    cases = validate_suite(gate.suite)
    with pytest.raises(RouteGradeError, match=r"^candidate run was made for suite bytes"):
        score(gate.suite, cases, "0" * 64, gate.candidate, name="candidate")


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (summary(7, 2), "correct routes fell from 8 to 7 of 10"),
        (summary(8, 3), "penalty points rose from 2 to 3"),
        (summary(9, 1, urgent=1), "1 urgent_support case(s) misrouted: "),
    ],
    ids=["correct falls", "points rise", "urgent miss"],
)
def test_each_condition_of_the_release_rule_fails_the_candidate_on_its_own(new, reason):
    assert [r.startswith(reason) for r in release_reasons(summary(8, 2), new)] == [True]


@pytest.mark.parametrize(
    "new",
    [summary(8, 2), summary(9, 2), summary(8, 1)],
    ids=["tie on both", "tie on points", "tie on correct"],
)
def test_a_tie_passes_the_release_rule_since_it_asks_only_that_nothing_gets_worse(new):
    assert release_reasons(summary(8, 2), new) == []


def test_an_urgent_miss_fails_even_when_the_baseline_misses_it_too():
    same = summary(9, 20, urgent=1)
    assert len(release_reasons(same, same)) == 1


def test_regressions_and_fixes_leave_out_cases_the_baseline_already_missed():
    old = summary(7, 3, failures=("t4", "t7", "t10"))
    new = summary(7, 3, failures=("t2", "t7", "t10", "t12"))
    assert regressions(old, new) == ["t2", "t12"]
    assert fixes(old, new) == ["t4"]


def test_only_a_protected_case_that_regressed_fails_the_rule():
    old = summary(8, 2, failures=("t7", "t9"))
    new = summary(8, 2, failures=("t3", "t9"))
    assert release_reasons(old, new, protected=["t9"]) == []  # t9 was already wrong
    assert release_reasons(old, new, protected=["t3", "t9"]) == ["protected case(s) regressed: t3"]


def test_checkout_outage_sent_to_billing_fails_the_gate(gate):
    report = gate.report()
    old, new = report["baseline"], report["candidate"]
    assert (old["correct"], old["accuracy"], old["penalty_points"], old["urgent_misses"]) == (8, 0.8, 2, 0)
    assert (new["correct"], new["accuracy"], new["penalty_points"], new["urgent_misses"]) == (9, 0.9, 20, 1)
    assert new["failures"] == [{"id": "t1", "expected": "urgent_support", "actual": "billing", "penalty": 20}]
    assert report["pass"] is False
    assert report["reasons"] == [
        "penalty points rose from 2 to 20",
        "1 urgent_support case(s) misrouted: t1 (sent to billing)",
    ]


def test_report_names_suite_and_keeps_each_runs_origin(gate):
    report = gate.report()
    assert (report["baseline"]["label"], report["candidate"]["label"]) == ("baseline-simulated", "candidate-simulated")
    assert report["suite_version"] == "quillfeather-routing-v1"
    assert report["suite_sha256"] == gate.sha
    assert (report["baseline"]["origin"], report["candidate"]["origin"]) == ("simulated", "simulated")
    assert json.loads(json.dumps(report, allow_nan=False)) == report


def test_failures_are_sorted_by_id_with_t10_after_t9(gate):
    gate.candidate = with_routes(gate.candidate, {"t10": "sales", "t2": "sales", "t9": "sales"})
    ids = [f["id"] for f in gate.report()["candidate"]["failures"]]
    assert ids == ["t1", "t2", "t9", "t10"]


def test_perfect_candidate_passes(gate):
    gate.candidate = gate.perfect()
    report = gate.report()
    assert report["pass"] is True
    assert report["reasons"] == []
    assert (report["candidate"]["correct"], report["candidate"]["penalty_points"]) == (10, 0)


def test_identical_runs_pass(gate):
    gate.candidate = copy.deepcopy(gate.baseline)
    assert gate.report()["pass"] is True


def test_reordered_predictions_give_the_same_report(gate):
    expected = gate.report()
    gate.candidate["predictions"].reverse()
    gate.baseline["predictions"] = gate.baseline["predictions"][3:] + gate.baseline["predictions"][:3]
    assert gate.report() == expected


def test_ordinary_accuracy_regression_without_urgent_misses_fails(gate):
    gate.candidate = with_routes(gate.baseline, {"t3": "sales"})
    report = gate.report()
    assert report["candidate"]["urgent_misses"] == 0
    assert report["pass"] is False
    assert report["reasons"] == ["correct routes fell from 8 to 7 of 10", "penalty points rose from 2 to 3"]


def test_ordinary_swap_that_keeps_counts_passes_without_protection(gate):
    # Fixes t7 and t9, breaks t3: more correct, fewer points, so the three-condition rule passes.
    gate.candidate = with_routes(gate.perfect(), {"t3": "sales"})
    assert gate.report()["pass"] is True


def test_protected_case_that_regresses_fails_with_its_id(gate):
    gate.candidate = with_routes(gate.perfect(), {"t3": "sales", "t4": "support"})
    report = gate.report(protected=["t4", "t3", "t6"])
    assert report["pass"] is False
    assert report["protected"] == ["t3", "t4", "t6"]
    assert report["reasons"] == ["protected case(s) regressed: t3, t4"]


def test_protected_case_the_baseline_already_missed_cannot_regress(gate):
    gate.candidate = copy.deepcopy(gate.baseline)
    assert gate.report(protected=["t7", "t9"])["pass"] is True


@pytest.mark.parametrize("protected", [["t99"], ["t1", "T1"], [7], "t1"])
def test_unknown_or_malformed_protected_id_is_rejected(gate, protected):
    with pytest.raises(RouteGradeError, match="protect"):
        gate.report(protected=protected)


# --- the explanation --------------------------------------------------------------------------


def test_explanation_names_the_deciding_case_and_the_flip(gate):
    why = gate.report()["explanation"]
    assert why["fixed"] == ["t7", "t9"]
    assert why["regressed"] == ["t1"]
    assert why["deciding_cases"] == ["t1"]
    assert why["smallest_flip"] == [{"id": "t1", "route": "urgent_support"}]
    assert "route t1 to urgent_support" in why["summary"]
    assert "route t1 to urgent_support" in explain(gate.report())


def test_applying_the_suggested_flip_makes_the_shipped_candidate_pass(gate):
    flip = gate.report()["explanation"]["smallest_flip"]
    assert compare(gate.suite, gate.sha, gate.baseline, apply_changes(gate.candidate, flip))["pass"] is True


def test_a_passing_candidate_is_told_which_single_misroute_would_fail_it(gate):
    gate.candidate = gate.perfect()
    flip = gate.report()["explanation"]["smallest_flip"]
    assert flip == [{"id": "t1", "route": "sales"}]
    assert compare(gate.suite, gate.sha, gate.baseline, apply_changes(gate.candidate, flip))["pass"] is False


def _flips(gate, baseline, candidate, protected, changes) -> bool:
    before = compare(gate.suite, gate.sha, baseline, candidate, protected=protected)["pass"]
    return (
        compare(gate.suite, gate.sha, baseline, apply_changes(candidate, changes), protected=protected)["pass"]
        != before
    )


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_suggested_flip_flips_the_verdict_and_no_smaller_change_does(gate, data):
    ids = [c["id"] for c in gate.suite["cases"]]
    expected = {c["id"]: c["expected"] for c in gate.suite["cases"]}
    baseline = with_routes(gate.baseline, {i: data.draw(st.sampled_from(ROUTES)) for i in ids})
    candidate = with_routes(gate.candidate, {i: data.draw(st.sampled_from(ROUTES)) for i in ids})
    protected = data.draw(st.lists(st.sampled_from(ids), max_size=3))
    flip = compare(gate.suite, gate.sha, baseline, candidate, protected=protected)["explanation"]["smallest_flip"]
    if not flip:  # only possible for a passing candidate against a baseline that got everything wrong
        assert all(routes_of(baseline)[i] != expected[i] for i in ids)
        return
    assert _flips(gate, baseline, candidate, protected, flip)
    # No smaller change flips it. Fixing more cases only helps a failing candidate and misrouting
    # more only hurts a passing one, so checking every set one change smaller is enough.
    passed = compare(gate.suite, gate.sha, baseline, candidate, protected=protected)["pass"]
    useful = [i for i in ids if (routes_of(candidate)[i] == expected[i]) == passed]
    for chosen in itertools.combinations(useful, len(flip) - 1):
        changes = [
            {"id": i, "route": next(r for r in ROUTES if r != expected[i]) if passed else expected[i]} for i in chosen
        ]
        assert not _flips(gate, baseline, candidate, protected, changes)


def test_explain_tells_the_verdict_the_changes_the_counts_the_reasons_and_the_flip(gate):
    assert explain(gate.report()).splitlines() == [
        "verdict: fail",
        "fixed by the candidate: t7, t9",
        "regressed in the candidate: t1",
        "correct 8 -> 9, penalty points 2 -> 20, urgent misses 0 -> 1",
        "reason: penalty points rose from 2 to 20",
        "reason: 1 urgent_support case(s) misrouted: t1 (sent to billing)",
        "deciding cases: t1",
        "The candidate fails. The smallest change that would make it pass (1 change): route t1 to urgent_support.",
    ]


def test_explain_says_none_when_nothing_was_fixed_or_regressed_and_names_a_passing_verdict(gate):
    gate.candidate = copy.deepcopy(gate.baseline)
    assert explain(gate.report()) == (
        "verdict: pass\n"
        "fixed by the candidate: none\n"
        "regressed in the candidate: none\n"
        "correct 8 -> 8, penalty points 2 -> 2, urgent misses 0 -> 0\n"
        "deciding cases: t1\n"
        "The candidate passes. The smallest change that would fail it (1 change): route t1 to sales."
    )


def test_explain_lists_every_deciding_case_when_several_must_change(gate):
    gate.candidate = with_routes(gate.baseline, {"t1": "billing", "t2": "sales"})
    assert explain(gate.report()).splitlines() == [
        "verdict: fail",
        "fixed by the candidate: none",
        "regressed in the candidate: t1, t2",
        "correct 8 -> 6, penalty points 2 -> 42, urgent misses 0 -> 2",
        "reason: correct routes fell from 8 to 6 of 10",
        "reason: penalty points rose from 2 to 42",
        "reason: 2 urgent_support case(s) misrouted: t1 (sent to billing), t2 (sent to sales)",
        "deciding cases: t1, t2",
        "The candidate fails. The smallest change that would make it pass (2 changes): "
        "route t1 to urgent_support, route t2 to urgent_support.",
    ]


def test_every_regressed_protected_case_is_named_however_many_there_are(gate):
    expected = routes_of(gate.perfect())
    right = [cid for cid, route in routes_of(gate.baseline).items() if route == expected[cid]]
    gate.candidate = with_routes(gate.baseline, {cid: next(r for r in ROUTES if r != expected[cid]) for cid in right})
    report = gate.report(protected=right)
    assert len(right) == 8
    assert report["reasons"][-1] == "protected case(s) regressed: t1, t2, t3, t4, t5, t6, t8, t10"


# --- slices, confusion matrix, plot -----------------------------------------------------------


def test_route_slices_show_the_urgent_slice_carrying_the_penalty(gate):
    slices = route_slices(gate.report())
    assert list(slices.index) == list(ROUTES)
    urgent = slices.loc["urgent_support"]
    assert list(slices.columns) == [
        "cases",
        "baseline_right",
        "candidate_right",
        "baseline_points",
        "candidate_points",
    ]
    assert (urgent["cases"], urgent["baseline_right"], urgent["candidate_right"]) == (2, 2, 1)
    assert (urgent["baseline_points"], urgent["candidate_points"]) == (0, 20)
    assert slices["baseline_points"].sum() == 2 and slices["candidate_points"].sum() == 20
    assert slices["candidate_right"].sum() == 9 and slices["cases"].sum() == 10


def test_confusion_matrix_puts_the_checkout_outage_in_the_billing_column(gate):
    matrix = route_confusion(gate.suite, gate.sha, gate.candidate)
    assert list(matrix.index) == list(ROUTES) == list(matrix.columns)
    assert matrix.loc["urgent_support", "billing"] == 1
    assert matrix.loc["urgent_support", "urgent_support"] == 1
    assert int(matrix.to_numpy().trace()) == 9 and int(matrix.to_numpy().sum()) == 10


def test_confusion_matrix_refuses_an_invalid_run(gate):
    gate.candidate["predictions"].pop()
    with pytest.raises(RouteGradeError, match="no prediction for t10"):
        route_confusion(gate.suite, gate.sha, gate.candidate)


def test_confusion_plot_draws_one_panel_per_run(gate):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from labkit.plots import plot_route_confusion

    matrices = {
        name: route_confusion(gate.suite, gate.sha, run)
        for name, run in (("baseline", gate.baseline), ("candidate", gate.candidate))
    }
    fig = plot_route_confusion(matrices, title="routes")
    try:
        titles = [ax.get_title() for ax in fig.axes]
        assert titles == ["baseline", "candidate"]
        assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == list(ROUTES)
    finally:
        plt.close(fig)


def test_importing_the_grader_does_not_import_heavy_libraries():
    code = (
        "import sys, labkit.routing.grader, labkit.routing.suite, labkit.plots, labkit.cli.grade_routes; "
        "print(sorted(m for m in ('pandas', 'sklearn', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- strict inputs: every rejection says what is wrong ----------------------------------------


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"label": "a", "label": "b"}', "repeated JSON key 'label'"),
        ('{"penalty": NaN}', "non-finite number NaN"),
        ('{"penalty": Infinity}', "non-finite number Infinity"),
        ('{"penalty": -Infinity}', "non-finite number -Infinity"),
        ('{"penalty": 1e999}', "overflows to infinity"),
        ('{"cases": [', "malformed JSON"),
    ],
)
def test_ambiguous_or_malformed_json_file_is_rejected(tmp_path, raw, problem):
    path = tmp_path / "run.json"
    path.write_text(raw, encoding="utf-8")
    with pytest.raises(InvalidJSON, match=problem) as caught:
        load(path)
    assert isinstance(caught.value, ValueError)


def test_file_over_one_megabyte_is_rejected(tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"pad": "x" * 1_000_001}), encoding="utf-8")
    with pytest.raises(InvalidJSON, match="over the 1,000,000-byte limit"):
        load(path)


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_unreadable_file_is_rejected_with_the_path(tmp_path, kind):
    path = tmp_path / "nothing.json"
    if kind == "folder":
        path.mkdir()
    with pytest.raises(LabkitError, match=r"nothing\.json"):
        load(path)


@pytest.mark.parametrize("path", ["run\0.json", None])
def test_unusable_path_is_rejected(path):
    with pytest.raises(RouteGradeError, match="not a usable file path"):
        load(path)


def _suite(g):
    return g.suite


def _case(g):
    return g.suite["cases"][2]


def _run(g):
    return g.candidate


def _prediction(g):
    return g.candidate["predictions"][4]


PARTS = {"suite": _suite, "case": _case, "run": _run, "prediction": _prediction}
FIELDS = {"suite": "cases", "case": "expected", "run": "suite_sha256", "prediction": "route"}


@pytest.mark.parametrize("part", PARTS)
def test_unexpected_field_is_rejected(gate, part):
    PARTS[part](gate)["note"] = "looks right to me"
    with pytest.raises(RouteGradeError, match='unexpected field\\(s\\) "note"'):
        gate.report()


@pytest.mark.parametrize("part", PARTS)
def test_missing_field_is_rejected(gate, part):
    del PARTS[part](gate)[FIELDS[part]]
    with pytest.raises(RouteGradeError, match=f'missing field\\(s\\) "{FIELDS[part]}"'):
        gate.report()


@pytest.mark.parametrize("where", ["case", "prediction"])
@pytest.mark.parametrize("route", ["maybe", "Urgent_Support", "urgent", "", 3, None])
def test_unknown_route_is_rejected(gate, where, route):
    if where == "case":
        gate.suite["cases"][0]["expected"] = route
    else:
        gate.candidate["predictions"][0]["route"] = route
    with pytest.raises(RouteGradeError, match="not a known route; use one of sales, billing, support, urgent_support"):
        gate.report()


def test_penalties_must_name_exactly_the_four_routes(gate):
    gate.suite["penalties"]["refunds"] = 3
    with pytest.raises(RouteGradeError, match='suite penalties has unexpected field\\(s\\) "refunds"'):
        gate.report()


def test_missing_prediction_is_rejected(gate):
    del gate.candidate["predictions"][6]
    with pytest.raises(
        RouteGradeError, match="candidate run has no prediction for t7; a run must answer every suite case"
    ):
        gate.report()


def test_extra_prediction_is_rejected(gate):
    gate.baseline["predictions"].append({"id": "t11", "route": "sales"})
    with pytest.raises(RouteGradeError, match="baseline run predicts ids the suite does not have: t11"):
        gate.report()


def test_duplicate_prediction_is_rejected(gate):
    gate.candidate["predictions"].append({"id": "t2", "route": "urgent_support"})
    with pytest.raises(RouteGradeError, match='candidate run predicts case "t2" more than once'):
        gate.report()


def test_duplicate_case_id_is_rejected(gate):
    gate.suite["cases"][9]["id"] = "t1"
    with pytest.raises(RouteGradeError, match='suite case id "t1" appears more than once'):
        gate.report()


def test_run_made_for_other_suite_bytes_is_rejected(gate):
    gate.candidate["suite_sha256"] = "0" * 64
    with pytest.raises(
        RouteGradeError,
        match=r"candidate run was made for suite bytes with sha256 000000000000[.][.][.], but this suite's bytes hash to [0-9a-f]{12}[.][.][.];",
    ):
        gate.report()


def test_edited_suite_file_no_longer_matches_its_runs(gate):
    path = gate.folder / "suite.json"
    path.write_bytes(path.read_bytes() + b"\n")
    suite, sha = load(path)
    with pytest.raises(RouteGradeError, match="grade it against the suite it was made for"):
        compare(suite, sha, gate.baseline, gate.candidate)


@pytest.mark.parametrize("sha", ["", "abc", "F" * 64, None, 64])
def test_suite_fingerprint_argument_must_be_a_sha256(gate, sha):
    with pytest.raises(RouteGradeError, match="not a SHA-256 hex digest"):
        compare(gate.suite, sha, gate.baseline, gate.candidate)


def test_empty_suite_is_rejected(gate):
    gate.suite["cases"] = []
    with pytest.raises(RouteGradeError, match="suite has no cases"):
        gate.report()


@pytest.mark.parametrize("weight", [0, -1, True, False, "20", 2.5, 20.0, None, [20]])
def test_bad_penalty_weight_is_rejected(gate, weight):
    gate.suite["penalties"]["urgent_support"] = weight
    with pytest.raises(RouteGradeError, match="penalties must be positive whole numbers"):
        gate.report()


TEXT_FIELDS = {
    "suite version": lambda g, v: g.suite.__setitem__("version", v),
    "suite case 3 id": lambda g, v: g.suite["cases"][2].__setitem__("id", v),
    "suite case 3 message": lambda g, v: g.suite["cases"][2].__setitem__("message", v),
    "baseline run label": lambda g, v: g.baseline.__setitem__("label", v),
    "candidate run prediction 5 id": lambda g, v: g.candidate["predictions"][4].__setitem__("id", v),
}


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("value", ["", "   \n", 7, None, ["t3"], {"text": "x"}])
def test_non_text_or_blank_field_is_rejected(gate, field, value):
    TEXT_FIELDS[field](gate, value)
    with pytest.raises(RouteGradeError, match=f"{field} must be non-blank text"):
        gate.report()


@pytest.mark.parametrize("origin", ["authored", "real", "Captured", "captured ", "", None, 1, ["captured"]])
def test_origin_other_than_simulated_or_captured_is_rejected(gate, origin):
    gate.baseline["origin"] = origin
    with pytest.raises(RouteGradeError, match=r'it must be "simulated" .* or "captured"'):
        gate.report()


@pytest.mark.parametrize("predictions", [{}, {"t1": "sales"}, "t1", None, 10])
def test_predictions_that_are_not_a_list_are_rejected(gate, predictions):
    gate.candidate["predictions"] = predictions
    with pytest.raises(RouteGradeError, match="candidate run predictions must be a list"):
        gate.report()


@pytest.mark.parametrize("cases", [{}, "t1", None])
def test_cases_that_are_not_a_list_are_rejected(gate, cases):
    gate.suite["cases"] = cases
    with pytest.raises(RouteGradeError, match="suite cases must be a list"):
        gate.report()


@pytest.mark.parametrize("which", ["suite", "baseline", "candidate"])
@pytest.mark.parametrize("top", [[], "suite", None, 3, [{"id": "t1"}]])
def test_top_level_that_is_not_an_object_is_rejected(gate, which, top):
    setattr(gate, which, top)
    label = which if which == "suite" else f"{which} run"
    with pytest.raises(RouteGradeError, match=f"^{label} must be a JSON object"):
        gate.report()


@pytest.mark.parametrize("where", ["case", "prediction"])
def test_non_object_row_is_rejected(gate, where):
    rows = gate.suite["cases"] if where == "case" else gate.candidate["predictions"]
    rows[0] = ["t1", "urgent_support"]
    with pytest.raises(RouteGradeError, match="must be a JSON object, got list"):
        gate.report()


# --- arbitrary malformed inputs raise only the library's error -------------------------------

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from((*ROUTES, "t1", "t10", "simulated", "captured", "", " ", "0" * 64))
)
json_like = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=6) | st.sampled_from(["id", "route", "label", "cases"]), inner, max_size=3)
    ),
    max_leaves=8,
)
odd_values = (
    json_like
    | st.tuples(json_leaves)
    | st.sets(st.integers(), max_size=2)
    | st.binary(max_size=4)
    | st.dictionaries(st.integers() | st.none(), json_leaves, max_size=2)
    | st.just(object())
)


def _containers(value, path=()):
    """Yield (path, container) for every dict and list inside value, the root first."""
    if isinstance(value, (dict, list)):
        yield path, value
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            yield from _containers(child, (*path, key))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_arbitrary_substitution_raises_only_labkit_errors(gate, data):
    docs = {
        "suite": copy.deepcopy(gate.suite),
        "baseline": copy.deepcopy(gate.baseline),
        "candidate": copy.deepcopy(gate.candidate),
    }
    for _ in range(data.draw(st.integers(1, 3))):
        which = data.draw(st.sampled_from(sorted(docs)))
        spots = list(_containers(docs[which]))
        _path, container = data.draw(st.sampled_from([*spots, ((), None)]))
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if container is None:
            docs[which] = data.draw(odd_values)
        elif isinstance(container, dict) and container and action != "add":
            key = data.draw(st.sampled_from(list(container)))
            if action == "delete":
                del container[key]
            else:
                container[key] = data.draw(odd_values)
        elif isinstance(container, list) and container and action != "add":
            index = data.draw(st.integers(0, len(container) - 1))
            if action == "delete":
                del container[index]
            else:
                container[index] = data.draw(odd_values)
        elif isinstance(container, dict):
            container[data.draw(st.text(max_size=6) | st.integers())] = data.draw(odd_values)
        else:
            container.append(data.draw(odd_values))
    protected = data.draw(st.lists(st.sampled_from(["t1", "t3", "t10"]), max_size=2) | odd_values)
    try:
        report = compare(docs["suite"], gate.sha, docs["baseline"], docs["candidate"], protected=protected)
    except LabkitError as exc:
        event(" ".join(str(exc).split()[:3]))  # see --hypothesis-show-statistics: which checks were reached
        return
    assert isinstance(report["pass"], bool)
    json.dumps(report, allow_nan=False)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raw=st.binary(max_size=200)
    | st.builds(lambda t: t.encode("utf-8"), st.text(max_size=200))
    | st.builds(lambda v: json.dumps(v).encode("utf-8"), json_like)
)
def test_arbitrary_file_bytes_raise_only_labkit_errors(gate, tmp_path, raw):
    path = tmp_path / "candidate.json"
    path.write_bytes(raw)
    try:
        candidate, _ = load(path)
        report = compare(gate.suite, gate.sha, gate.baseline, candidate)
    except LabkitError as exc:
        assert str(exc)
        return
    # An accepted file yields a complete, JSON-safe report.
    assert isinstance(report["pass"], bool)
    json.dumps(report, allow_nan=False)


# --- what a rejection shows of the offending value ---------------------------------------------


@pytest.mark.parametrize(("length", "whole"), [(58, True), (59, False)])
def test_a_long_offending_value_is_shown_whole_up_to_sixty_characters_then_cut(gate, length, whole):
    route = "".join(chr(ord("a") + i % 26) for i in range(length))
    shown = json.dumps(route)
    gate.candidate["predictions"][0]["route"] = route
    with pytest.raises(RouteGradeError) as info:
        gate.report()
    expected = shown if whole else shown[:45] + "..." + shown[-10:]
    assert str(info.value).startswith(f"candidate run prediction 1 route is {expected}, not a known route")


def test_an_offending_value_keeps_its_non_ascii_text(gate):
    gate.candidate["predictions"][0]["route"] = "dringend_unterstützung"
    with pytest.raises(RouteGradeError, match='route is "dringend_unterstützung", not a known route'):
        gate.report()


def test_an_offending_value_that_is_not_json_is_shown_as_python_shows_it(gate):
    gate.candidate["predictions"][0]["route"] = {1, 2}
    with pytest.raises(RouteGradeError, match=r"route is \{1, 2\}, not a known route"):
        gate.report()


def test_a_run_suite_hash_that_is_not_a_digest_is_shown_as_written(gate):
    gate.candidate["suite_sha256"] = "abc"
    with pytest.raises(RouteGradeError, match='made for suite bytes with sha256 "abc", but this suite'):
        gate.report()


def test_route_slices_count_each_routes_right_answers_and_show_a_route_without_cases_as_zero(gate):
    for case in gate.suite["cases"]:
        if case["expected"] == "sales":
            case["expected"] = "support"
    gate.candidate = with_routes(gate.candidate, {"t3": "sales", "t4": "sales"})
    slices = route_slices(gate.report())
    assert (slices.loc["billing", "cases"], slices.loc["billing", "candidate_right"]) == (3, 1)
    assert slices.loc["billing", "candidate_points"] == 2  # both misrouted billing cases count
    assert slices.loc["sales"].tolist() == [0, 0, 0, 0, 0]


def test_confusion_matrix_axes_are_named_expected_and_predicted(gate):
    matrix = route_confusion(gate.suite, gate.sha, gate.candidate)
    assert (matrix.index.name, matrix.columns.name) == ("expected", "predicted")


def test_confusion_matrix_names_the_run_it_refuses(gate):
    gate.candidate["predictions"].pop()
    with pytest.raises(RouteGradeError, match=r"^candidate run has no prediction for t10"):
        route_confusion(gate.suite, gate.sha, gate.candidate, name="candidate")
    with pytest.raises(RouteGradeError, match=r"^run run has no prediction for t10"):
        route_confusion(gate.suite, gate.sha, gate.candidate)


def test_grade_files_grades_the_files_against_the_suite_files_own_hash(gate):
    folder = gate.folder
    report = grade_files(folder / "suite.json", folder / "baseline.json", folder / "candidate.json", protected=["t2"])
    assert report == gate.report(protected=["t2"])
    assert report["suite_sha256"] == hashlib.sha256((folder / "suite.json").read_bytes()).hexdigest()
    assert report["protected"] == ["t2"]


# --- exact wording of the rejections that tell the user what to do ----------------------------


def test_a_path_the_system_cannot_open_says_why_and_what_to_check(tmp_path):
    with pytest.raises(
        RouteGradeError, match=r"\.json: cannot read it \(File name too long\); check the path and permissions$"
    ):
        load(tmp_path / ("x" * 5000 + ".json"))


def test_ids_sort_by_their_numbers_then_by_their_text():
    from labkit.routing.grader import id_order

    ids = ["t10", "a1b10", "t9", "t010", "t", "a1b2", "t2", "t011", "a1ab1", "b1", "ab1"]
    assert sorted(ids, key=id_order) == ["a1ab1", "a1b2", "a1b10", "ab1", "b1", "t", "t2", "t9", "t010", "t10", "t011"]


@pytest.mark.parametrize(
    ("kept", "named"),
    [(6, "t1, t2, t3, t4"), (3, "t1, t2, t3, t4, t5, t6 and 1 more"), (2, "t1, t2, t3, t4, t5, t6 and 2 more")],
)
def test_a_long_list_of_missing_ids_names_six_and_counts_the_rest(gate, kept, named):
    gate.candidate["predictions"] = gate.candidate["predictions"][-kept:]
    with pytest.raises(RouteGradeError, match=f"^candidate run has no prediction for {named}; a run must answer"):
        gate.report()


def test_a_misnamed_field_is_reported_as_missing_and_unexpected_with_the_fields_required(gate):
    row = gate.candidate["predictions"][4]
    row["routes"] = row.pop("route")
    with pytest.raises(RouteGradeError) as info:
        gate.report()
    assert str(info.value) == (
        'candidate run prediction 5 has missing field(s) "route" and unexpected field(s) "routes"; '
        "it must have exactly id, route"
    )


@pytest.mark.parametrize(
    ("protected", "message"),
    [
        ("t1", 'protected must be a list of case ids, got "t1"; write ["t3"], not "t3"'),
        (5, 'protected must be a list of case ids, got 5; write ["t3"], not "t3"'),
        ([7], "protected case id 7 is not in the suite; protect ids such as t1, t2, t3, t4, t5, t6 and 4 more"),
    ],
)
def test_a_bad_protected_list_is_refused_with_what_to_write(gate, protected, message):
    with pytest.raises(RouteGradeError) as info:
        gate.report(protected=protected)
    assert str(info.value) == message


def test_protected_ids_are_reported_once_each_in_id_order(gate):
    assert gate.report(protected=["t10", "t2", "t2"])["protected"] == ["t2", "t10"]
    assert gate.report()["protected"] == []


def test_an_unknown_suite_version_names_the_schemas_the_gate_knows(gate):
    gate.suite["version"] = "v2"
    with pytest.raises(RouteGradeError) as info:
        gate.report()
    assert str(info.value) == (
        'suite version "v2" is not a schema this gate knows; the version states the cases\' fields, so write one '
        "of: quillfeather-routing-v1 (cases carry 'message'), maple-routing-v1 (cases carry 'input')"
    )


def test_a_maple_suite_carries_its_ticket_text_in_input(gate):
    expected = gate.report()
    gate.suite["version"] = "maple-routing-v1"
    for case in gate.suite["cases"]:
        case["input"] = case.pop("message")
    assert gate.report() == {**expected, "suite_version": "maple-routing-v1"}
    gate.suite["cases"][2]["message"] = gate.suite["cases"][2].pop("input")
    with pytest.raises(
        RouteGradeError, match=r'^suite case 3 \(schema maple-routing-v1\) has missing field\(s\) "input"'
    ):
        gate.report()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda g: g.suite["penalties"].__setitem__("sales", 0),
            "suite penalty for sales is 0; penalties must be positive whole numbers "
            "(not 0, negative, true/false, text or decimals)",
        ),
        (lambda g: g.suite.__setitem__("cases", {}), "suite cases must be a list, got dict"),
        (
            lambda g: g.suite.__setitem__("cases", []),
            "suite has no cases; a gate over an empty suite would pass anything, so add labelled cases",
        ),
        (
            lambda g: g.suite["cases"][2].__setitem__("message", " "),
            'suite case 3 message must be non-blank text, got " "',
        ),
        (
            lambda g: g.candidate.__setitem__("origin", "real"),
            'candidate run origin is "real"; it must be "simulated" (authored to show a rule) '
            'or "captured" (recorded from a real model call)',
        ),
        (
            lambda g: g.candidate.__setitem__("predictions", {}),
            "candidate run predictions must be a list of {id, route} objects, got dict",
        ),
        (
            lambda g: g.baseline.__setitem__("label", 3),
            "baseline run label must be non-blank text, got 3",
        ),
    ],
)
def test_each_rejection_says_exactly_what_is_wrong_and_what_to_do(gate, change, message):
    change(gate)
    with pytest.raises(RouteGradeError) as info:
        gate.report()
    assert str(info.value) == message


def test_the_report_and_its_explanation_hold_exactly_the_documented_fields(gate):
    report = gate.report()
    assert set(report) == {
        "suite_version",
        "suite_sha256",
        "protected",
        "baseline",
        "candidate",
        "pass",
        "reasons",
        "explanation",
    }
    assert set(report["explanation"]) == {"fixed", "regressed", "deciding_cases", "smallest_flip", "summary"}
    assert set(report["candidate"]) == {
        "label",
        "origin",
        "cases",
        "correct",
        "accuracy",
        "penalty_points",
        "urgent_misses",
        "failures",
        "by_route",
    }


def test_when_no_change_to_the_candidate_could_fail_it_the_summary_says_why(gate):
    # No urgent cases, and both runs get every case wrong the same way: nothing the candidate gets right can go wrong.
    for case in gate.suite["cases"]:
        if case["expected"] == "urgent_support":
            case["expected"] = "billing"
    gate.baseline = with_routes(
        gate.baseline, {c["id"]: "sales" if c["expected"] != "sales" else "support" for c in gate.suite["cases"]}
    )
    gate.candidate = copy.deepcopy(gate.baseline)
    report = gate.report()
    assert report["pass"] is True
    assert (report["explanation"]["smallest_flip"], report["explanation"]["deciding_cases"]) == ([], [])
    assert report["explanation"]["summary"] == (
        "The candidate passes, and no change to the candidate alone could fail it: the baseline got every case wrong."
    )


# --- the smallest flip on suites built for one rule each ----------------------------------------

FAKE_SHA = "ab" * 32


def mini_suite(expected: dict[str, str], **weights: int) -> dict:
    penalties = {"sales": 1, "billing": 1, "support": 1, "urgent_support": 20} | weights
    cases = [{"id": cid, "message": f"ticket {cid}", "expected": route} for cid, route in expected.items()]
    return {"version": "quillfeather-routing-v1", "penalties": penalties, "cases": cases}


def mini_run(suite: dict, wrong: set[str], label: str = "run") -> dict:
    def route(case):
        return next(r for r in ROUTES if r != case["expected"]) if case["id"] in wrong else case["expected"]

    predictions = [{"id": c["id"], "route": route(c)} for c in suite["cases"]]
    return {"label": label, "origin": "simulated", "suite_sha256": FAKE_SHA, "predictions": predictions}


def flip_ids(suite: dict, baseline_wrong: set[str], candidate_wrong: set[str], protected=()) -> tuple[bool, list]:
    report = compare(
        suite, FAKE_SHA, mini_run(suite, baseline_wrong), mini_run(suite, candidate_wrong), protected=protected
    )
    return report["pass"], report["explanation"]["deciding_cases"]


def test_a_failing_candidate_is_told_to_fix_its_costliest_failure_first():
    suite = mini_suite({"c1": "billing", "c2": "sales", "c3": "sales", "c4": "support"}, billing=5)
    # Baseline: 2 correct, 2 points. Candidate: 2 correct, 6 points; fixing c1 alone passes, fixing c4 alone does not.
    assert flip_ids(suite, {"c2", "c3"}, {"c1", "c4"}) == (False, ["c1"])


def test_a_failing_candidate_stops_fixing_once_its_points_equal_the_baselines():
    suite = mini_suite({"c1": "sales", "c2": "sales", "c3": "sales", "c4": "support"})
    # Baseline: 3 correct, 1 point. Candidate: 2 correct, 2 points; one fix brings both counts back to the baseline's.
    assert flip_ids(suite, {"c2"}, {"c3", "c4"}) == (False, ["c3"])


def test_a_passing_candidate_with_slack_in_points_fails_first_on_its_correct_count():
    suite = mini_suite({"c1": "billing", "c2": "billing", "c3": "sales", "c4": "sales", "c5": "sales"}, billing=10)
    # Baseline: 3 correct, 20 points. Candidate: 3 correct, 2 points: one misroute drops the correct count.
    assert flip_ids(suite, {"c1", "c2"}, {"c3", "c4"}) == (True, ["c1"])


def test_a_passing_candidate_counts_every_misroute_against_both_counts():
    expected = {"c1": "billing", "c2": "sales", "c3": "sales", "c4": "sales", "c5": "sales", "c6": "sales"}
    suite = mini_suite(expected, billing=10)
    # Baseline: 4 correct, 11 points; a perfect candidate fails only after three misroutes (correct 3 < 4).
    assert flip_ids(suite, {"c1", "c2"}, set()) == (True, ["c1", "c2", "c3"])
    expected = {"c9": "billing", "c10": "billing", "c3": "sales", "c4": "sales", "c5": "sales", "c6": "sales"}
    suite = mini_suite(expected, billing=2)
    # Baseline: 3 correct, 3 points; a perfect candidate fails on points after the two billing misroutes (4 > 3).
    assert flip_ids(suite, {"c3", "c4", "c5"}, set()) == (True, ["c9", "c10"])


def test_a_failing_candidates_fixes_are_listed_in_id_order():
    suite = mini_suite({"c9": "sales", "c10": "sales", "c3": "sales"})
    assert flip_ids(suite, set(), {"c9", "c10"}) == (False, ["c9", "c10"])


def test_fixed_and_regressed_cases_are_listed_in_id_order(gate):
    gate.baseline = with_routes(gate.baseline, {"t10": "sales"})
    gate.candidate = with_routes(gate.perfect(), {"t2": "sales", "t3": "sales"})
    why = gate.report()["explanation"]
    assert why["fixed"] == ["t7", "t9", "t10"]
    assert why["regressed"] == ["t2", "t3"]
    gate.candidate = with_routes(gate.perfect(), {"t2": "sales", "t10": "sales"})
    gate.baseline = with_routes(gate.perfect(), {"t9": "sales"})
    assert gate.report()["explanation"]["regressed"] == ["t2", "t10"]


def test_a_suite_fingerprint_that_is_not_a_digest_is_shown_in_the_refusal(gate):
    with pytest.raises(RouteGradeError) as info:
        compare(gate.suite, "abc", gate.baseline, gate.candidate)
    assert str(info.value) == 'suite_sha256 "abc" is not a SHA-256 hex digest; pass the hash that load() returned'


def test_a_passing_candidate_is_told_to_misroute_its_costliest_case_first():
    suite = mini_suite({"c1": "sales", "c2": "billing", "c3": "sales"}, billing=5)
    assert flip_ids(suite, {"c1"}, set()) == (True, ["c2"])


def test_a_protected_case_the_baseline_got_right_breaks_a_passing_candidate_alone():
    suite = mini_suite({"c1": "sales", "c2": "sales", "c3": "sales", "c4": "sales"})
    # One ordinary misroute would still pass (3 correct, 1 point, as the baseline); the protected c3 fails alone.
    assert flip_ids(suite, {"c4"}, set(), protected=["c3"]) == (True, ["c3"])
    # A protected case the baseline already missed cannot regress, so it does not break the candidate alone.
    assert flip_ids(suite, {"c4"}, set(), protected=["c4"]) == (True, ["c1", "c2"])


def test_every_missing_and_unexpected_field_is_named(gate):
    for field in ("label", "origin"):
        del gate.baseline[field]
    gate.baseline["note"] = gate.baseline["notes"] = "x"
    with pytest.raises(RouteGradeError) as info:
        gate.report()
    assert str(info.value) == (
        'baseline run has missing field(s) "label", "origin" and unexpected field(s) "note", "notes"; '
        "it must have exactly label, origin, predictions, suite_sha256"
    )


def test_a_missing_prediction_is_never_to_be_filled_in(gate):
    del gate.candidate["predictions"][6]
    with pytest.raises(RouteGradeError) as info:
        gate.report()
    assert str(info.value) == (
        "candidate run has no prediction for t7; a run must answer every suite case "
        "(count a missing or malformed reply separately; never fill it in or drop the case)"
    )


def test_an_unknown_expected_route_names_the_suite_case(gate):
    gate.suite["cases"][0]["expected"] = "maybe"
    with pytest.raises(RouteGradeError, match=r'^suite case 1 expected route is "maybe", not a known route'):
        gate.report()


def _failing(*ids: str) -> dict:
    return {"failures": [{"id": cid} for cid in ids]}


def test_a_split_of_two_fixed_to_one_broken_is_a_tie():
    changes = ticket_changes(_failing("t7", "t9"), _failing("t1"))
    assert (changes["fixed"], changes["broke"], changes["no_evidence"]) == (["t7", "t9"], ["t1"], True)
    assert changes["p_value"] == 1.0


def test_a_lopsided_split_on_enough_tickets_is_not_a_tie():
    many = [f"t{n}" for n in range(1, 7)]
    changes = ticket_changes(_failing(*many), _failing())
    assert changes["fixed"] == many and changes["broke"] == []
    assert changes["p_value"] == 2 * 0.5**6 and changes["no_evidence"] is False
    five = ticket_changes(_failing(*many[:5]), _failing())
    assert five["p_value"] == 2 * 0.5**5 and five["no_evidence"] is True  # 5 to 0 is still no evidence: 0.0625 >= 0.05


def test_too_few_differing_tickets_are_said_to_be_untestable():
    two = ticket_changes(_failing("t3", "t8"), _failing())
    assert two["smallest_p"] == 0.5
    sentence = sign_test_sentence(two)
    assert "cannot be told apart" in sentence and "could not have told them apart" in sentence
    assert sentence.startswith("2 fixed and 0 broken of the 2 tickets exactly one run gets right")
    six = ticket_changes(_failing(*[f"t{n}" for n in range(1, 7)]), _failing())
    sentence = sign_test_sentence(six)
    assert "differ beyond chance" in sentence and "could not have" not in sentence


def test_own_functions_lists_the_graders_functions_private_ones_too():
    from labkit.routing import grader

    functions = grader.own_functions()
    assert grader.release_reasons in functions and grader._smallest_flip in functions
    assert all(f.__module__ == "labkit.routing.grader" for f in functions)


def test_prediction_routes_refuses_a_missing_or_repeated_answer_instead_of_dropping_or_choosing(gate):
    from labkit.routing.grader import prediction_routes

    cases = validate_suite(gate.suite)
    predictions = gate.candidate["predictions"]
    assert prediction_routes(predictions, cases=cases) == {p["id"]: p["route"] for p in predictions}
    with pytest.raises(RouteGradeError, match="mine has no prediction for t10"):
        prediction_routes([p for p in predictions if p["id"] != "t10"], cases=cases, where="mine")
    with pytest.raises(RouteGradeError, match='predicts case "t1" more than once'):
        prediction_routes([*predictions, {"id": "t1", "route": "sales"}], cases=cases)


def test_a_constant_run_sends_every_case_to_one_route_and_scores_as_the_floor():
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import constant_run, summary_table

    suite, sha = load(fixtures_dir() / "routing" / "suite.json")
    always = constant_run(suite, sha, "sales")
    assert always["origin"] == "simulated" and always["label"] == "always sales"
    assert {p["route"] for p in always["predictions"]} == {"sales"}
    summary = score(suite, validate_suite(suite), sha, always)
    assert (summary["correct"], summary["penalty_points"], summary["urgent_misses"]) == (3, 45, 2)
    table = summary_table(summary)
    assert table.loc["always sales", "correct"] == 3 and table.columns[0] == "origin"
    with pytest.raises(RouteGradeError, match="not a known route"):
        constant_run(suite, sha, "refunds")


def test_failure_and_case_tables_hold_every_failure_and_every_weight():
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import case_table, failure_table

    suite, sha = load(fixtures_dir() / "routing" / "suite.json")
    candidate, _ = load(fixtures_dir() / "routing" / "candidate.json")
    summary = score(suite, validate_suite(suite), sha, candidate)
    failures = failure_table(summary)
    assert list(failures["id"]) == ["t1"] and failures["penalty"].tolist() == [20]
    cases = case_table(suite)
    assert list(cases.columns[:2]) == ["expected", "weight"]
    assert cases.loc["t1", "weight"] == 20 and cases.loc["t3", "weight"] == 1
