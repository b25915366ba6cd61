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
