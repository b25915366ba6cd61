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
    assert "table C's bundled `tone` is `fail` on *The tone is friendly and free of pressure." in text
    litre = lantern.facts.model_copy(update={"materials": [*lantern.facts.materials, "litre"]})
    priced = {**captured.inputs.products, "p07": lantern.model_copy(update={"facts": litre})}
    held = dataclasses.replace(captured, inputs=dataclasses.replace(captured.inputs, products=priced))
    with pytest.raises(ReadingOutdated, match="names a litre"):
        readings.captured_first_look(held)  # a litre the facts hold is no invented price


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


def test_materials_debrief_says_why_fabric_is_flagged_and_tells_a_learner_whose_check_flags_otherwise(runs):
    _, captured, _ = runs
    text = readings.materials_debrief({"p06": ["fabric"]}, captured)
    assert "the facts of p04 name it" in text and "*alumium* is not flagged" in text
    assert "Its *alumina* goes unflagged too: its facts say *aluminium, linen*" in text
    assert "The fabric is also designed to be breathable" in text and "a false positive" in text
    assert "*waterproof* and *perfect for the beach*" in text
    other = readings.materials_debrief({"p06": ["fabric"], "p01": ["alumium"]}, captured)
    assert other.startswith("Your check flags {'p06': ['fabric'], 'p01': ['alumium']} in the captured run")
    assert "false positive" not in other  # no explanation of flags the learner's check did not make


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
    assert "The labels file holds the `fail`, but the release never reads it" in text


def test_shelf_reading_names_p15_as_the_judges_one_miss_and_refuses_a_second(runs):
    authored, _, _ = runs
    text = readings.shelf_reading(authored)
    assert "p15 is the judge's only disagreement with the adjudicated labels, of 10 held-out items" in text
    assert "the reference was right, the judge wrong" in text
    assert "within the agreement rule (90% agreement, kappa 0.74)" in text
    assert "A judge that meets the rule can still pass a false claim" in text
    labels = authored.inputs.labels
    p12 = {**labels.labels[("p12", "factual_accuracy")], "adjudicated": "pass"}  # the judge said fail
    changed = dataclasses.replace(labels, labels={**labels.labels, ("p12", "factual_accuracy"): p12})
    other = dataclasses.replace(authored, inputs=dataclasses.replace(authored.inputs, labels=changed))
    with pytest.raises(ReadingOutdated, match="only held-out disagreement"):
        readings.shelf_reading(other)


def test_shelf_reading_says_the_reviewed_shelf_is_released_with_its_false_material(runs):
    authored, _, _ = runs
    assert "the shelf is released with a false material claim" in readings.shelf_reading(authored)


def test_intervals_reading_says_what_ten_items_can_show_and_refuses_a_judge_below_its_raters(runs):
    authored, _, _ = runs
    text = readings.intervals_reading(authored)
    assert "**What 10 items can show.** One disagreement moves percent agreement by 10 points" in text
    assert "`tone`'s kappa interval, [-0.32, 0.78], cannot separate" in text
    assert "would agree on 80% of tone's items, with a kappa of 0" in text
    assert "kappa (0.71) tops the raters' (0.63)" in text and "not a judge better than its raters" in text
    assert "9 of its 10 reference labels are `pass`" in text and "the 691 draws (of 2000)" in text
    below = _with_agreement(authored, "completeness", "per_criterion", kappa=0.5)
    with pytest.raises(ReadingOutdated, match="tops the raters'"):
        readings.intervals_reading(below)


def test_routing_reading_names_who_qualifies_and_refuses_a_qualified_interval_clear_of_chance(runs):
    authored, _, _ = runs
    text = readings.routing_reading(authored)
    assert "The judge scores `factual_accuracy` and `completeness`, but it is the course's:" in text
    assert "qualifies with kappa 0.74 though its `kappa_95`, [0.00, 1.00], reaches down to chance" in text
    assert "**The 80% floor does little here.** On `completeness` and `tone` the base rate is 80%" in text
    assert "on `tone` (rater A against rater B: kappa 0.52, agreement 80%)" in text
    clear = _with_agreement(authored, "factual_accuracy", "per_criterion", kappa_low=0.2)
    with pytest.raises(ReadingOutdated, match="reaches chance"):
        readings.routing_reading(clear)


def test_refusals_reading_counts_the_refused_replies_and_refuses_a_judge_above_chance(runs):
    _, captured, _ = runs
    text = readings.refusals_reading(captured)
    assert "3 of the model's 43 judge replies were refused" in text
    assert "a refused bundled reply counts once per criterion" in text
    assert "the one the rule reads, is -0.07, no better than chance" in text
    above = _with_agreement(captured, "completeness", "per_criterion", kappa=0.1)
    with pytest.raises(ReadingOutdated, match="no better than chance"):
        readings.refusals_reading(above)


def test_sampled_reading_names_the_text_and_the_seeds_figures_and_refuses_verdicts_that_never_vary(runs):
    from labkit.evaluator.repeats import replay_sampled_judge

    _, captured, _ = runs
    sampled = replay_sampled_judge(captured)
    text = readings.sampled_reading(sampled, captured)
    assert "p07's labeled description, the course's 12-hour lantern of §3" in text
    assert "varies across seeds on `factual_accuracy` and `tone`, and none of the 15 sampled replies" in text
    assert "on `factual_accuracy`, 3 of 5 agreeing gives [0.23, 0.88]" in text
    assert "Its 5 seeds cannot show how good it is" in text and "the other 9 held-out items" in text
    steady = dataclasses.replace(sampled, trials=[t for t in sampled.trials if t.criterion == "completeness"])
    with pytest.raises(ReadingOutdated, match="varies across seeds"):
        readings.sampled_reading(steady, captured)


def test_release_reading_says_what_holds_each_run_and_what_review_changes(runs):
    authored, captured, _ = runs
    text = readings.release_reading(authored, captured)
    assert "Neither run releases a description; each holds 16." in text
    assert "all 3 judged criteria. Of the authored 16, 6 wait only for `tone`; the other 10 also wait" in text
    assert "those 6 are settled (4 released, 2 blocked on the people's `fail`), and p09, a `calibration` text" in text
    assert "the other 9 still wait. The 4 release on judge labels given on the very items" in text
    assert "The captured run moves nothing" in text


def test_release_reading_refuses_a_released_description_or_a_captured_text_the_raters_labeled(runs):
    authored, captured, _ = runs
    released = captured.records["p01"].model_copy(update={"release": "release"})
    with pytest.raises(ReadingOutdated, match="neither recorded run releases"):
        readings.release_reading(authored, dataclasses.replace(captured, records={**captured.records, "p01": released}))
    digest = captured.inputs.labels.description_sha256["p02"]
    labeled = captured.records["p02"].model_copy(update={"description_sha256": digest})
    relabeled = dataclasses.replace(captured, records={**captured.records, "p02": labeled})
    with pytest.raises(ReadingOutdated, match="no captured description is a text the raters labeled"):
        readings.release_reading(authored, relabeled)
