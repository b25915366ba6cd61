"""The experiment log keeps every experiment, failed ones included, each changing one variable."""

import pytest

from labkit.evaluator.experiments import Experiment, ExperimentLogError, load_experiments, log_experiment


def _experiment(**change):
    fields = dict(
        id="arrangement-1",
        hypothesis="Per-criterion calls agree better than bundled calls.",
        variable="judge arrangement",
        baseline="bundled",
        changed_to="per_criterion",
        conditions={"rubric_sha256": "abc", "subset": "held_out"},
        result={"kappa": {"tone": [0.1, 0.2]}},
        outcome="failed",
        evidence_origin={"baseline": "captured", "changed_to": "captured"},
    )
    return Experiment(**{**fields, **change})


def test_failed_experiment_is_kept_with_its_hypothesis_and_conditions(tmp_path):
    log = tmp_path / "experiments.jsonl"
    log_experiment(log, _experiment())
    log_experiment(log, _experiment(id="arrangement-2", outcome="succeeded"))
    kept = load_experiments(log)
    assert [e.outcome for e in kept] == ["failed", "succeeded"]
    assert kept[0].hypothesis.startswith("Per-criterion") and kept[0].conditions["subset"] == "held_out"
    assert len(log.read_text().splitlines()) == 2


def test_repeated_experiment_id_is_refused(tmp_path):
    log = tmp_path / "experiments.jsonl"
    log_experiment(log, _experiment())
    with pytest.raises(ExperimentLogError, match="already holds"):
        log_experiment(log, _experiment(outcome="succeeded"))


def test_experiment_that_changes_nothing_or_fixes_its_own_variable_is_refused():
    with pytest.raises(ValueError, match="nothing was changed"):
        _experiment(changed_to="bundled")
    with pytest.raises(ValueError, match="both the changed variable and a fixed condition"):
        _experiment(conditions={"judge arrangement": "bundled"})


def test_malformed_log_line_is_refused_with_its_line_number(tmp_path):
    log = tmp_path / "experiments.jsonl"
    log_experiment(log, _experiment())
    with log.open("a") as handle:
        handle.write('{"id": "x", "id": "y"}\n')
    with pytest.raises(ExperimentLogError, match="line 2"):
        load_experiments(log)


# --- comparing two sides: a difference whose interval holds zero is a tie ---------------------------------

from labkit.evaluator.experiments import (  # noqa: E402  # grouped with the tests that use them
    outcome_of,
    share_difference_interval,
    tie_or_ahead,
)


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.2, 0.3, "tie"),
        (0.0, 0.3, "tie"),  # zero is inside the interval: the data cannot tell the sides apart
        (-0.3, 0.0, "tie"),
        (0.01, 0.3, "changed_to ahead"),
        (-0.3, -0.01, "baseline ahead"),
        (None, None, "undefined"),
    ],
)
def test_a_difference_is_a_tie_exactly_when_its_interval_holds_zero(low, high, verdict):
    assert tie_or_ahead(low, high) == verdict


@pytest.mark.parametrize(
    ("verdicts", "outcome"),
    [
        (["tie", "tie"], "tie"),
        (["changed_to ahead", "tie"], "tie"),  # ahead on one measure only is not the hypothesis
        (["changed_to ahead", "changed_to ahead"], "succeeded"),
        (["changed_to ahead", "baseline ahead"], "failed"),
        (["tie", "undefined"], "inconclusive"),
        ([], "tie"),
    ],
)
def test_an_experiment_succeeds_only_beyond_the_noise_on_every_measure(verdicts, outcome):
    assert outcome_of([{"verdict": v} for v in verdicts]) == outcome


def test_the_pass_share_difference_is_a_tie_on_equal_sides_and_ahead_on_a_clear_change():
    same = [True, False] * 10
    assert share_difference_interval(same, same) == (0.0, 0.0)
    low, high = share_difference_interval([False] * 20, [True] * 18 + [False] * 2)
    assert 0 < low <= 0.9 <= high
    assert tie_or_ahead(*share_difference_interval([True] * 9 + [False], [True] * 8 + [False] * 2)) == "tie"


def test_the_lessons_experiments_call_a_difference_inside_the_noise_a_tie():
    from labkit.evaluator.experiments import arrangement_experiment
    from labkit.evaluator.lesson import RUN_AUTHORED, load_inputs
    from labkit.evaluator.report import evaluate_run

    report = evaluate_run(RUN_AUTHORED, inputs=load_inputs())
    experiment = arrangement_experiment(report)
    comparisons = experiment.result["comparisons"]
    assert [c["measure"] for c in comparisons] == [f"kappa, {c.id}" for c in report.inputs.rubric.judged()]
    for c in comparisons:
        low, high = (float(x) for x in c["difference_95"].strip("[]").split(", "))
        assert c["verdict"] == ("tie" if low <= 0 <= high else c["verdict"])
    assert experiment.outcome == outcome_of(comparisons)


def test_the_generation_model_experiment_does_not_compare_costs_priced_differently():
    from labkit.evaluator.experiments import generation_model_experiment
    from labkit.evaluator.lesson import RUN_AUTHORED, RUN_CAPTURED, load_inputs
    from labkit.evaluator.report import evaluate_run

    inputs = load_inputs()
    experiment = generation_model_experiment(
        evaluate_run(RUN_AUTHORED, inputs=inputs), evaluate_run(RUN_CAPTURED, inputs=inputs)
    )
    measures = [c["measure"] for c in experiment.result["comparisons"]]
    assert measures == ["passes schema", "passes length", "passes numeric_claims"]


def test_the_judge_model_experiment_is_decided_by_the_rule_and_has_no_comparison_rows(tmp_path):
    from labkit.evaluator.experiments import comparisons_table, log_lesson_experiments
    from labkit.evaluator.lesson import RUN_AUTHORED, RUN_CAPTURED, load_inputs
    from labkit.evaluator.report import evaluate_run

    inputs = load_inputs()
    authored = evaluate_run(RUN_AUTHORED, inputs=inputs)
    captured = evaluate_run(RUN_CAPTURED, inputs=inputs)
    log = tmp_path / "log.jsonl"
    log.write_text("not json\n", encoding="utf-8")  # an old log is replaced, not appended to
    logged = log_lesson_experiments(authored, captured, log)
    assert [e.variable for e in logged] == ["judge arrangement", "judge arrangement", "judge model", "generation model"]
    judge = logged[2]
    assert "comparisons" not in judge.result and judge.result["kappa_differences"]
    assert judge.outcome == "failed"  # the rule routes no criterion to the captured judge
    assert not comparisons_table(logged)["experiment"].str.startswith("judge-model").any()
    assert len(log.read_text(encoding="utf-8").splitlines()) == 4


def test_comparisons_table_shows_every_logged_float_to_two_decimals_and_counts_as_they_are():
    from labkit.evaluator.experiments import Experiment, comparison, comparisons_table

    logged = Experiment.model_construct(
        id="x",
        result={
            "comparisons": [
                comparison("kappa, tone", -0.22, -0.316, -0.5, 0.1),
                comparison("passes", "1/2", "2/2", 0.0, 0.5),
            ]
        },
    )
    table = comparisons_table([logged])
    assert table["baseline"].tolist() == ["-0.22", "1/2"]
    assert table["changed_to"].tolist() == ["-0.32", "2/2"]
