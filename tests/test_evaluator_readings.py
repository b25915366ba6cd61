"""Lesson 01's sentences carry the runs' figures, and refuse a run that no longer supports them."""

import dataclasses

import pytest

from labkit.errors import ReadingOutdated
from labkit.evaluator import readings
from labkit.evaluator.experiments import (
    arrangement_experiment,
    generation_model_experiment,
    judge_model_experiment,
)
from labkit.evaluator.lesson import load_inputs
from labkit.evaluator.report import evaluate_run


@pytest.fixture(scope="module")
def runs():
    inputs = load_inputs()
    authored = evaluate_run("01-evaluator-authored", inputs=inputs)
    captured = evaluate_run("01-evaluator-smollm2", inputs=inputs)
    logged = [
        arrangement_experiment(authored),
        arrangement_experiment(captured),
        judge_model_experiment(authored, captured),
        generation_model_experiment(authored, captured),
    ]
    return authored, captured, logged


def _with_agreement(report, criterion, arrangement, **changes):
    rows = [
        a.model_copy(update=changes) if (a.criterion, a.arrangement) == (criterion, arrangement) else a
        for a in report.agreements
    ]
    return dataclasses.replace(report, agreements=rows)


def test_influence_reading_names_the_item_tones_kappa_hangs_on_and_refuses_another(runs):
    authored, _, _ = runs
    people = authored.inputs.labels.column(authored.inputs.labels.held_out, "tone")
    judged = authored.runs.judging.labels(arrangement="per_criterion", source="labeled", criterion="tone")
    index = next(i for i, p in enumerate(authored.inputs.labels.held_out) if people[i] == judged[p] == "fail")
    text = readings.influence_reading(authored, "tone", index)
    assert "both say `fail`" in text and "from 0.21 to -0.17" in text and "rarer label `fail`" in text
    with pytest.raises(ReadingOutdated, match="moves tone's kappa most"):
        readings.influence_reading(authored, "tone", (index + 1) % len(people))


def test_captured_first_look_calls_the_quote_asked_for_and_the_verdict_the_failure(runs):
    _, captured, _ = runs
    text = readings.captured_first_look(captured)
    assert "The prompt asks for an explanation that quotes the description" in text
    assert "five words or more: 5 of the 6 in table C do, all the same sentence, *The Trailhead Lantern is a" in text
    assert "the verdict does not follow from the quote" in text
    assert "available at 5 EUR per litre." in text  # the §3 text's explanation, quoted whole
    assert "**Refused replies.**" not in text  # the notebook says that beside the routing table
    assert "Then it passes the text." in text
    assert "(The model's *rectangular* is in no fact either: a shape, which the numeric check cannot read" in text
    lantern = captured.inputs.products["p07"]
    facts = lantern.facts.model_copy(update={"materials": [*lantern.facts.materials, "rectangular"]})
    products = {**captured.inputs.products, "p07": lantern.model_copy(update={"facts": facts})}
    shaped = dataclasses.replace(captured, inputs=dataclasses.replace(captured.inputs, products=products))
    with pytest.raises(ReadingOutdated, match="rectangular"):
        readings.captured_first_look(shaped)  # a shape the facts hold is no unsupported claim


def test_arrangement_reading_calls_a_lead_inside_the_noise_a_tie(runs):
    authored, _, logged = runs
    text = readings.arrangement_reading(logged[0], authored)
    assert "(0.74 vs 0.41, 0.71 vs 0.26, 0.21 vs 0.09)" in text
    assert "this lead is authored" in text
    assert "by the rule every measure is a tie" in text and "does not mean the two score the same" in text
    assert "10 items cannot rule out no difference" in text
    with pytest.raises(ReadingOutdated, match="every measure is a tie"):
        readings.arrangement_reading(logged[0].model_copy(update={"outcome": "succeeded"}), authored)


def test_arrangement_reading_explains_the_zero_ends_by_the_items_whose_labels_change(runs):
    authored, _, logged = runs
    text = readings.arrangement_reading(logged[0], authored)
    assert "1 for `factual_accuracy`, 1 for `completeness`, 1 for `tone`" in text
    same = dataclasses.replace(authored)
    same.label_changes = lambda: {"factual_accuracy": 0, "completeness": 1, "tone": 1}  # type: ignore[method-assign]
    with pytest.raises(ReadingOutdated, match="labels differ on some item"):
        readings.arrangement_reading(logged[0], same)


def test_materials_debrief_says_why_fabric_is_flagged_and_refuses_other_flags(runs):
    _, captured, _ = runs
    text = readings.materials_debrief({"p06": ["fabric"]}, captured)
    assert "the facts of p04 name it" in text and "*alumium* is not flagged" in text
    assert "Its *alumina* goes unflagged too: its facts say *aluminium, linen*" in text
    assert "The fabric is also designed to be breathable" in text and "a false positive" in text
    assert "*waterproof* and *perfect for the beach*" in text
    with pytest.raises(ReadingOutdated, match="only p06's fabric"):
        readings.materials_debrief({"p06": ["fabric"], "p01": ["alumium"]}, captured)


def test_log_reading_refuses_a_changed_judge_that_qualifies(runs):
    _, _, logged = runs
    assert "so it `failed`" in readings.log_reading(logged)
    assert "each with its comparisons" not in readings.log_reading(logged)
    assert "with flaws on purpose" in readings.log_reading(logged)
    assert "below* bundled on each of its 3 point estimates" in readings.log_reading(logged)
    assert "holds all 4 entries" in readings.log_reading(logged)
    assert "2 of its 3 intervals hold zero only as an end" in readings.log_reading(logged)
    assert "`passes numeric_claims` [-0.38, 0.00] (22/24 against 18/24)" in readings.log_reading(logged)
    inside = [{**c, "difference_95": "[-0.10, 0.10]"} for c in logged[3].result["comparisons"]]
    wide = logged[3].model_copy(update={"result": {"comparisons": inside}})
    with pytest.raises(ReadingOutdated, match="ends at zero"):
        readings.log_reading([*logged[:3], wide])
    assert "holds all 5 entries" in readings.log_reading([*logged, logged[3]])
    judge = logged[2]
    scorer = {c: {**s, "changed_to": "judge"} for c, s in judge.result["scorer"].items()}
    qualified = judge.model_copy(update={"result": {**judge.result, "scorer": scorer}})
    with pytest.raises(ReadingOutdated, match="qualifies for no criterion"):
        readings.log_reading([*logged[:2], qualified, logged[3]])


def test_shelf_reading_tells_the_passed_false_material_and_refuses_a_released_shelf(runs):
    authored, _, _ = runs
    text = readings.shelf_reading(authored)
    assert "Facts: *pine*" in text and "1 of the 2 authored raters" in text and "kappa 0.74" in text
    record = authored.records["p15"].model_copy(update={"release": "release"})
    released = dataclasses.replace(authored, records={**authored.records, "p15": record})
    with pytest.raises(ReadingOutdated, match="waits only for tone"):
        readings.shelf_reading(released)


def test_shelf_reading_says_the_release_ignores_the_raters_label_of_that_text(runs):
    authored, _, _ = runs
    text = readings.shelf_reading(authored)
    assert "The raters' `fail` on its factual accuracy is in the labels file, but the release never reads it" in text


def test_shelf_reading_says_the_judge_that_met_the_rule_is_authored(runs):
    authored, _, _ = runs
    assert "The authored judge still met the agreement rule" in readings.shelf_reading(authored)


def test_shelf_reading_says_the_reviewed_shelf_is_released_with_its_false_material(runs):
    authored, _, _ = runs
    assert "the shelf is released with a false material claim" in readings.shelf_reading(authored)
