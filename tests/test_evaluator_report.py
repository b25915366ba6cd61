"""The report's counts: passes per check, labels the arrangement changes, release decisions per run."""

import pytest

from labkit.evaluator.report import evaluate_run, release_counts


def test_pass_counts_count_each_check_over_every_description():
    report = evaluate_run("01-evaluator-smollm2")
    assert report.pass_counts() == {"schema": "24/24", "length": "22/24", "cost": "24/24", "numeric_claims": "18/24"}


def test_label_changes_count_held_out_items_whose_two_arrangements_disagree_a_refusal_included():
    assert evaluate_run("01-evaluator-authored").label_changes() == {
        "factual_accuracy": 1,
        "completeness": 1,
        "tone": 1,
    }
    # the captured run's three refused replies: an item labeled in one arrangement only counts as a change
    assert evaluate_run("01-evaluator-smollm2").label_changes() == {
        "factual_accuracy": 3,
        "completeness": 5,
        "tone": 6,
    }


def test_release_counts_count_every_decision_per_run_zeros_included():
    table = release_counts({"authored": evaluate_run("01-evaluator-authored")})
    assert table.loc["authored"].to_dict() == {"release": 0, "blocked": 8, "awaiting_human_review": 16}


def test_with_human_review_fills_only_held_criteria_of_labeled_texts_and_decides_the_release_again():
    from labkit.evaluator.lesson import load_inputs

    inputs = load_inputs()
    authored = evaluate_run("01-evaluator-authored", inputs=inputs)
    captured = evaluate_run("01-evaluator-smollm2", inputs=inputs)
    reviewed = authored.with_human_review()
    table = release_counts({"a": authored, "r": reviewed, "c": captured.with_human_review()})
    assert table.loc["a"].to_dict() == {"release": 0, "blocked": 8, "awaiting_human_review": 16}
    assert table.loc["r"].to_dict() == {"release": 4, "blocked": 11, "awaiting_human_review": 9}
    # no captured description is a text the raters labeled, so none of their labels applies
    assert table.loc["c"].to_dict() == {"release": 0, "blocked": 8, "awaiting_human_review": 16}
    p15 = {c.criterion: c for c in reviewed.records["p15"].criteria}
    assert (p15["tone"].scorer, p15["tone"].label, p15["tone"].passed) == ("human", "pass", True)
    # factual_accuracy was routed to the judge: the raters' adjudicated fail does not replace its pass
    assert inputs.labels.label("p15", "factual_accuracy") == "fail"
    assert p15["factual_accuracy"].scorer == "judge" and p15["factual_accuracy"].passed
    assert reviewed.records["p15"].release == "release"
    assert authored.records["p15"].release == "awaiting_human_review"  # the report it came from is unchanged


def test_with_material_check_fails_factual_accuracy_where_the_finder_flags_and_blocks_the_reviewed_shelf():
    reviewed = evaluate_run("01-evaluator-authored").with_human_review()

    def oak(text, materials):
        return ["oak"] if "oak" in text and "oak" not in materials else []

    gated = reviewed.with_material_check(oak)
    fa = next(c for c in gated.records["p15"].criteria if c.criterion == "factual_accuracy")
    assert (fa.label, fa.passed, fa.scorer) == ("fail", False, "programmatic")
    assert fa.evidence[-1] == "materials: oak, not in the facts"
    assert reviewed.records["p15"].release == "release" and gated.records["p15"].release == "blocked"
    changed = {p for p, r in gated.records.items() if r != reviewed.records[p]}
    assert changed == {"p15"}  # no other authored description names oak
    assert reviewed.with_material_check(lambda text, materials: []).records == reviewed.records


def test_flag_descriptions_lists_only_what_the_finder_flags_in_generated_or_labeled_texts():
    from labkit.evaluator.lesson import RUN_AUTHORED, load_inputs

    report = evaluate_run(RUN_AUTHORED, inputs=load_inputs())

    def oak(text, materials):
        return ["oak"] if "oak" in text and "oak" not in materials else []

    assert report.flag_descriptions(oak) == {"p15": ["oak"]}
    assert report.flag_descriptions(oak, source="labeled") == {"p15": ["oak"]}
    with pytest.raises(ValueError, match="give 'generated' or 'labeled'"):
        report.flag_descriptions(oak, source="judged")


def test_agreement_table_names_the_raters_row_as_authored_not_human():
    from labkit.evaluator.report import RATERS_ROW

    table = evaluate_run("01-evaluator-authored").agreement_table()
    shown = set(table.data["arrangement"]) if hasattr(table, "data") else set(table["arrangement"])
    assert RATERS_ROW in shown and "authored" in RATERS_ROW
    assert not any("human" in name for name in shown)


def test_authored_runs_judge_rows_say_authored_and_captured_runs_do_not():
    def column(table, name):
        return list(table.data[name]) if hasattr(table, "data") else list(table[name])

    authored, captured = evaluate_run("01-evaluator-authored"), evaluate_run("01-evaluator-smollm2")
    arrangements = column(authored.agreement_table(), "arrangement")
    assert "per_criterion (authored)" in arrangements and "bundled (authored)" in arrangements
    assert "per_criterion" not in arrangements and "programmatic" in arrangements
    assert "judge (authored)" in column(authored.routing_table(), "scorer")
    assert "per_criterion" in column(captured.agreement_table(), "arrangement")
    assert not any("authored" in s for s in column(captured.routing_table(), "scorer"))


def test_kappa_summary_sets_each_arrangement_beside_the_other_with_its_refusals():
    table = evaluate_run("01-evaluator-smollm2").kappa_summary()
    assert list(table.index) == ["factual_accuracy", "completeness", "tone"]
    assert table.loc["completeness"].to_dict() == {
        "kappa, per_criterion": -0.07,
        "refused, per_criterion": 1,
        "kappa, bundled": -0.02,
        "refused, bundled": 1,
    }
    assert table["refused, per_criterion"].sum() == 2  # plus the one refused bundled reply: three in all


def test_waiting_for_tells_a_criterion_routed_to_people_from_one_never_judged():
    authored = evaluate_run("01-evaluator-authored").waiting_for()
    assert authored[("tone:human_review",)] == 6
    assert authored[("completeness:not_judged", "factual_accuracy:not_judged", "tone:human_review")] == 10
    captured = evaluate_run("01-evaluator-smollm2").waiting_for()
    assert captured == {("completeness:human_review", "factual_accuracy:human_review", "tone:human_review"): 16}


def test_created_at_is_the_recorded_runs_time_after_the_rubric_was_fixed():
    report = evaluate_run("01-evaluator-smollm2")
    assert report.created_at.startswith("2026-11-29T")
    assert report.created_at[:10] > report.inputs.rubric.fixed_at


def test_spread_table_gives_the_judge_calls_latency_median_and_range_or_says_not_measured():
    from labkit.evaluator.report import spread_table

    table = spread_table({"a": evaluate_run("01-evaluator-authored"), "c": evaluate_run("01-evaluator-smollm2")})
    data = table.data if hasattr(table, "data") else table
    assert data.loc["judge latency s (median)", "a"] == "not measured"
    assert data.loc["judge latency s (median)", "c"] == 15.36
    assert data.loc["judge latency range", "a"] == "-"
    assert data.loc["judge latency range", "c"] == "[8.67, 40.84]"


def test_judge_cost_counts_the_release_arrangements_calls_not_the_bundled_one_compared_beside_it():
    report = evaluate_run("01-evaluator-authored")
    digest = report.records["p07"].description_sha256
    calls = {c.call.request_sha256: c for c in report.runs.judging.calls if c.description_sha256 == digest}
    per_criterion = [c for c in calls.values() if c.arrangement == "per_criterion"]
    assert len(per_criterion) == 3 and any(c.arrangement == "bundled" for c in calls.values())
    assert report.records["p07"].judge_cost_usd == pytest.approx(sum(c.call.cost_usd for c in per_criterion))


def test_release_table_names_each_runs_origin():
    def origins(report):
        table = report.release_table()
        return set((table.data if hasattr(table, "data") else table)["origin"])

    assert origins(evaluate_run("01-evaluator-authored")) == {"authored"}
    assert origins(evaluate_run("01-evaluator-smollm2")) == {"captured"}


def test_cost_ceiling_table_says_whether_the_cost_check_could_fail_on_each_run():
    import dataclasses

    from labkit.evaluator.report import cost_ceiling_table

    authored = evaluate_run("01-evaluator-authored")

    def table(report):
        shown = cost_ceiling_table({"a": report})
        return shown.data if hasattr(shown, "data") else shown

    data = table(authored)
    calls = [g.call for g in authored.runs.generation.generations]
    assert float(data.loc["a", "dearest, USD"]) == pytest.approx(max(c.cost_usd for c in calls), abs=1e-6)
    assert float(data.loc["a", "ceiling, USD"]) >= float(data.loc["a", "dearest, USD"])
    assert data.loc["a", "cost check"] == "cannot fail here"
    rubric = authored.inputs.rubric
    tight = rubric.model_copy(update={"limits": rubric.limits.model_copy(update={"max_cost_usd": 0.00011})})
    strict = dataclasses.replace(authored, inputs=dataclasses.replace(authored.inputs, rubric=tight))
    assert table(strict).loc["a", "cost check"] == "can fail"


def test_cost_ceiling_table_adds_the_judge_calls_the_cost_check_leaves_out():
    from labkit.evaluator.report import cost_ceiling_table

    authored = evaluate_run("01-evaluator-authored")
    shown = cost_ceiling_table({"a": authored})
    data = shown.data if hasattr(shown, "data") else shown
    total = max(r.cost_usd + r.judge_cost_usd for r in authored.records.values())
    limit = authored.inputs.rubric.limits.max_cost_usd
    assert data.loc["a", "with judge calls, USD"] == f"{total:.6f} (over the limit)"
    assert total > limit >= max(r.cost_usd for r in authored.records.values())  # the check passes what this adds


def test_record_table_shows_the_judges_explanation_only_where_the_judge_decides_the_label():
    table = evaluate_run("01-evaluator-authored").record_table("p07").set_index("criterion")
    assert table.loc["completeness", "scorer"] == "judge"
    assert table.loc["completeness", "judge's explanation"] != "-"
    # tone waits for people and factual_accuracy is failed by the numeric check: the judge replied on both
    assert table.loc["tone", "scorer"] == "human_review"
    assert table.loc[["tone", "factual_accuracy", "format_length"], "judge's explanation"].eq("-").all()


def test_review_table_accounts_for_every_product_whose_release_the_review_changes():
    report = evaluate_run("01-evaluator-authored")
    table = report.review_table()
    after = report.with_human_review().records
    moved = sorted(p for p, r in report.records.items() if after[p].release != r.release)
    assert sorted(table["product"]) == moved and len(moved) == 7
    row = table.set_index("product").loc["p09"]  # waits on tone and a criterion never judged; people fail tone
    assert row["waited on"] == "factual_accuracy: not_judged, completeness: not_judged, tone: human_review"
    assert (row["review gave"], row["before"], row["after"]) == ("tone: fail", "awaiting_human_review", "blocked")
    assert evaluate_run("01-evaluator-smollm2").review_table().empty  # no captured text is one the raters labeled
