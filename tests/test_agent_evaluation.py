"""Evaluation across layers: outcome, route confusion, tool use, paraphrase trials counted by wording, safety."""

from types import SimpleNamespace

import pytest

from labkit.agent import evaluation as ev
from labkit.agent import runs
from labkit.agent.graph import ScriptedModel
from labkit.boundary import connect
from labkit.recording import load_run
from labkit.trials import wilson


@pytest.fixture(scope="module")
def authored():
    results = runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))
    return results, ev.evaluation_report(results, load_run(runs.RUN_AUTHORED))


def test_paraphrase_trials_count_wordings_with_no_interval_for_counts_and_declines(authored):
    _, report = authored
    rows = {r["trials"]: r for r in report["reliability"]}
    assert set(rows) == {"trial_count", "trial_decline"}
    for row in rows.values():
        assert row["n"] == 4 and row["correct"] == 4 and "wilson_low" not in row
    shown = ev.side_by_side([report])
    assert shown.loc["count paraphrases: wordings correct / wordings"].iloc[0] == "4/4"
    assert not any("Wilson" in label for label in shown.index)


def test_wilson_interval_matches_the_formula():
    assert wilson(6, 6) == (0.61, 1.0)
    assert wilson(0, 6) == (0.0, 0.39)
    assert wilson(5, 10) == (0.237, 0.763)
    with pytest.raises(ValueError):
        wilson(3, 0)


def test_authored_run_completes_every_case_with_no_unauthorized_call(authored):
    _results, report = authored
    assert report["task_outcome"]["correct"] == report["task_outcome"]["cases"] == len(runs.ALL_CASES)
    assert report["safety"]["unauthorized_calls"] == 0 and report["safety"]["refused_before_tools"] == 2
    assert report["operations"] is None  # an authored run claims no latency, tokens or cost


def test_route_confusion_counts_a_misroute_and_an_invalid_reply():
    results = runs.make_requests(ScriptedModel({"route:": '{"route":"structured"}', "agent:": "no"}))
    confusion = ev.route_confusion(results)
    per_class = {c["route"]: c for c in confusion["per_class"]}
    assert per_class["structured"]["recall"] == 1.0 and per_class["structured"]["precision"] < 1.0
    assert per_class["out_of_scope"]["recall"] == 0.0
    assert per_class["out_of_scope"]["precision"] is None  # no case was sent there: undefined, not 0
    tools = ev.tool_use(results)
    assert tools["valid_arguments"] == 0 and tools["argument_validity"] == 0.0


def test_unauthorized_read_is_counted():
    audit = [
        {"user_id": "analyst-ana", "scope_read": "escalations_restricted"},
        {"user_id": "analyst-ana", "scope_read": "approved_support_dataset"},
    ]
    from labkit.agent.tools import unauthorized_calls

    assert unauthorized_calls(audit, allowed_scopes={"analyst-ana": ["approved_support_dataset"]}) == 1


def test_session_and_profile_checks_pass_including_the_deletion_test(tmp_path):
    checks = ev.session_checks(tmp_path)
    assert all(row["passed"] for row in checks)
    assert checks[-1]["check"].startswith("deleted preference is gone from the store")


@pytest.fixture(scope="module")
def everything_to_profile():
    """A run in which the router sends every question to the profile: no tool is called, nothing is declined."""
    results = runs.make_requests(ScriptedModel({"route:": '{"route":"profile"}', "agent:": "no"}))
    return ev.evaluation_report(results, SimpleNamespace(run_id="scripted", origin="authored"))


def test_a_rate_over_zero_eligible_calls_is_undefined_never_zero(everything_to_profile):
    safety = everything_to_profile["safety"]
    assert (safety["tool_calls"], safety["declines"]) == (0, 0)
    assert safety["unauthorized_call_rate"] is None and safety["decline_leak_rate"] is None
    assert everything_to_profile["tools"]["argument_validity"] is None


def test_the_table_prints_a_rate_over_zero_eligible_as_not_applicable(everything_to_profile):
    column = ev.side_by_side([everything_to_profile])["scripted"]
    assert column["unauthorized-call rate: unauthorized / tool calls"] == "n/a (0 eligible)"
    assert column["declines with data-tool calls / declines"] == "n/a (0 eligible)"
    assert column["route structured: precision, recall"] == "n/a (0 eligible), 0/9"
    assert column["latency per case, p50 / p95 (s)"] == "not measured (authored)"


def test_a_rate_with_eligible_calls_prints_its_count_and_denominator(authored):
    _, report = authored
    column = ev.side_by_side([report])[runs.RUN_AUTHORED]
    assert column["unauthorized-call rate: unauthorized / tool calls"] == "0/21"
    assert column["declines with data-tool calls / declines"] == "0/6"
    assert ev.of_eligible(0, 0) == "n/a (0 eligible)" and ev.rate(0, 0) is None and ev.rate(1, 4) == 0.25


class FlatPrices:
    """A price table for the test: one unit per prompt token, ten per completion token."""

    def cost(self, model_id, *, prompt_tokens, completion_tokens):
        assert model_id == "SmolLM2-135M-Instruct"
        return prompt_tokens + 10 * completion_tokens


def test_cost_is_the_captured_tokens_times_the_price_table_and_absent_without_one():
    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    priced = ev.operations(results, run, prices=FlatPrices())
    bindings = [run.binding_for(q) for r in results for q in r.requests]
    prompt = sum(b.usage.prompt_tokens for b in bindings)
    completion = sum(b.usage.completion_tokens for b in bindings)
    assert (priced["prompt_tokens"], priced["completion_tokens"]) == (prompt, completion)
    assert priced["cost_per_case"] == pytest.approx((prompt + 10 * completion) / priced["cases"])
    assert ev.operations(results, run)["cost_per_case"] is None
    column = ev.side_by_side([ev.evaluation_report(results, run)])[runs.RUN_CAPTURED]
    assert (
        column["cost per 1,000 cases that called the model (USD, illustrative prices)"]
        == "not computed (no price table)"
    )


def test_unparsed_captured_replies_name_their_finish_reason_and_the_parsers_complaint():
    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    rows = ev.unparsed_replies(results, run)
    by_case = {(row["case"], row["step"]): row for row in rows}
    assert by_case[("c06", "route")]["reply"].startswith('{"route": "profile"')
    assert {row["finish_reason"] for row in rows} <= {"stop", "length"}
    assert any(row["finish_reason"] == "length" for row in rows)
    control = [row for row in rows if row["finish_reason"] == "stop"]
    assert control and all("control character" in row["strict JSON parser"] for row in control)


def test_a_case_that_fixes_no_answer_is_wrong_when_routed_elsewhere_even_if_it_ends_ok():
    profile_case = next(case for case in runs.CASES if case.id == "c06")
    assert profile_case.expected_final is None and profile_case.expected_status == "ok"

    def ended(route):
        return runs.CaseResult(profile_case, "ok", "a summary", route, {}, [])

    assert ev.outcome_correct(ended("profile"))
    assert not ev.outcome_correct(ended("unstructured"))  # status ok, but not the case's route


def test_route_matrices_keep_the_invalid_column_and_drop_the_invalid_row_no_case_expects():
    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    (matrix,) = ev.route_matrices([ev.evaluation_report(results, run)]).values()
    assert list(matrix.index) == ["structured", "unstructured", "profile", "out_of_scope"]
    assert list(matrix.columns) == [*matrix.index, "invalid"]
    assert matrix.loc["out_of_scope", "profile"] == 5 and matrix["invalid"].sum() == 4


def test_a_route_matrix_without_the_invalid_row_plots_each_axis_with_its_own_labels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from labkit.plots import plot_route_confusion

    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    matrices = ev.route_matrices([ev.evaluation_report(results, run)])
    fig = plot_route_confusion(matrices)
    try:
        (ax,) = fig.axes
        (matrix,) = matrices.values()
        assert [t.get_text() for t in ax.get_xticklabels()] == list(matrix.columns)
        assert [t.get_text() for t in ax.get_yticklabels()] == list(matrix.index)
        assert [t.get_text() for t in ax.texts] == [str(v) for v in matrix.to_numpy().ravel()]
    finally:
        plt.close(fig)


def test_the_captured_route_matrix_declines_nothing_sends_most_declines_to_profile_and_spreads_structured():
    run = load_run(runs.RUN_CAPTURED)
    results = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    (matrix,) = ev.route_matrices([ev.evaluation_report(results, run)]).values()
    declines = matrix.loc["out_of_scope"]
    assert declines["out_of_scope"] == 0 and declines["profile"] > declines.sum() / 2
    assert (matrix.loc["structured", ["structured", "unstructured", "profile", "out_of_scope"]] > 0).sum() == 3


def test_the_outcome_table_shows_each_cases_expected_end_beside_each_runs_verdict(authored):
    results, _ = authored
    table = ev.outcome_table({"a": results})
    assert list(table.columns) == ["expected route / status", "expected answer", "a"]
    assert table.loc["c01", "expected answer"] == "27 refund requests in approved_support_dataset"
    assert table.loc["c03", "expected answer"] == "(not fixed)"
    assert table.loc["c08", "expected route / status"] == "- / refused"
    assert table["a"].str.startswith("✓").all()
    wrong = runs.make_requests(ScriptedModel({"route:": '{"route":"profile"}'}))
    marks = ev.outcome_table({"w": wrong})["w"]
    assert marks.loc["c01"] == "✗ profile / ok" and marks.str.startswith("✗").any()


def test_the_fallback_rate_counts_fallbacks_over_cases_that_reached_the_graph(authored):
    results, _ = authored
    ran = sum(r.state is not None for r in results)
    assert ev.fallback_rate(results) == {"fallbacks": 0, "graph_runs": ran, "rate": 0.0}
    looping = runs.make_requests(ScriptedModel({"route:": '{"route":"structured"}', "agent:": "not json"}))
    counted = ev.fallback_rate(looping)
    assert counted["fallbacks"] > 0 and counted["rate"] == round(counted["fallbacks"] / counted["graph_runs"], 3)
    assert ev.fallback_rate([]) == {"fallbacks": 0, "graph_runs": 0, "rate": None}


def test_grounding_counts_the_ok_answers_a_validator_checked_and_no_summary_or_profile_answer():
    from labkit.agent import runs

    results = runs.make_requests(runs.replay(runs.RUN_AUTHORED))
    counted = ev.grounding(results)
    ok = [r for r in results if r.status == "ok"]
    unchecked = {r.case.id for r in ok if r.route in ("unstructured", "profile")}
    assert unchecked == {"c03", "c06", "c07"}
    assert counted == {"answered": len(ok), "checked": len(ok) - 3, "rate": ev.rate(len(ok) - 3, len(ok))}
    captured = ev.grounding(runs.make_requests(runs.replay(runs.RUN_CAPTURED)))
    assert captured["checked"] == 0 < captured["answered"]


def test_every_row_of_the_table_measures_exactly_one_dimension_of_table_12_4(authored):
    _, report = authored
    rows = [row for row in ev.report_figures(report) if row != "origin"]
    assert {ev.dimension_of(row) for row in rows} == set(ev.DIMENSIONS)
    with pytest.raises(ValueError, match="0 dimensions"):
        ev.dimension_of("a row no dimension names")


def test_the_table_keeps_only_the_named_dimensions_with_the_origin_row_first(authored):
    _, report = authored
    routing = ev.side_by_side([report], "routing")
    assert list(routing.index) == ["origin", *(r for r in ev.report_figures(report) if r.startswith("route "))]
    both = ev.side_by_side([report], "operations", "safety")
    assert {ev.dimension_of(row) for row in both.index[1:]} == {"operations", "safety"}
    assert list(ev.side_by_side([report]).index) == list(ev.report_figures(report))
    with pytest.raises(ValueError, match="choose from task outcome"):
        ev.side_by_side([report], "latency")
