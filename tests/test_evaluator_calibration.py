"""Calibration: percent agreement, Cohen's kappa, base rate, bootstrap interval, and the agreement rule."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from labkit.evaluator.calibration import (
    REJECTED,
    Agreement,
    _kappa_many,
    agreement,
    base_rate,
    bootstrap_interval,
    fewest_fixes,
    kappa,
    meets_rule,
    percent_agreement,
    route_criterion,
)
from labkit.evaluator.rubric import AgreementRule

RULE = AgreementRule(
    subset="held_out", reference="adjudicated", min_kappa=0.6, min_percent_agreement=0.8, arrangement="per_criterion"
)
# Six both-pass, two both-fail, one each way apart: po = 0.8, pe = 0.7*0.7 + 0.3*0.3 = 0.58.
HUMAN = ["pass"] * 6 + ["fail"] * 2 + ["pass", "fail"]
JUDGE = ["pass"] * 6 + ["fail"] * 2 + ["fail", "pass"]


def test_kappa_matches_a_hand_computed_value_on_a_small_fixture():
    assert percent_agreement(HUMAN, JUDGE) == pytest.approx(0.8)
    assert kappa(HUMAN, JUDGE) == pytest.approx((0.8 - 0.58) / (1 - 0.58))  # = 11/21
    assert kappa(HUMAN, JUDGE) == pytest.approx(11 / 21)


def test_kappa_is_undefined_when_both_sides_give_one_and_the_same_label():
    assert kappa(["pass"] * 4, ["pass"] * 4) is None


def test_base_rate_is_the_share_of_the_most_common_reference_label():
    assert base_rate(HUMAN) == ("pass", 0.7)


def test_bootstrap_interval_is_reproducible_and_contains_the_estimate():
    first, again = bootstrap_interval(HUMAN, JUDGE), bootstrap_interval(HUMAN, JUDGE)
    assert first == again
    assert first["agreement_low"] <= 0.8 <= first["agreement_high"]
    assert first["kappa_low"] <= 11 / 21 <= first["kappa_high"]
    assert bootstrap_interval(HUMAN, JUDGE, seed=1) != first


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=2, max_size=30))
def test_vectorised_bootstrap_kappa_equals_scikit_learn(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    labels = sorted(set(a) | set(b))
    ai = np.array([[labels.index(x) for x in a]])
    bi = np.array([[labels.index(x) for x in b]])
    ours = float(_kappa_many(ai, bi, len(labels))[0])
    if len(set(a) | set(b)) < 2:
        assert np.isnan(ours)
    else:
        assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)


def test_rejected_judge_reply_counts_as_a_disagreement_and_is_reported():
    row = agreement("tone", "per_criterion", HUMAN, [None, *JUDGE[1:]])
    assert row.rejected == 1 and row.percent_agreement == pytest.approx(0.7) and row.items == 10


def test_criterion_below_the_agreement_rule_goes_to_human_review():
    weak = agreement("tone", "per_criterion", HUMAN, JUDGE)  # kappa 0.52, agreement 0.8
    routed = route_criterion(weak, RULE)
    assert routed.scorer == "human_review" and "below the rule" in routed.reason and "kappa 0.52" in routed.reason


def test_criterion_meeting_both_thresholds_is_scored_by_the_judge():
    strong = agreement("factual_accuracy", "per_criterion", HUMAN, [*HUMAN[:-1], "pass"])  # one miss
    assert strong.kappa >= 0.6 and route_criterion(strong, RULE).scorer == "judge"


def test_high_agreement_from_a_constant_judge_still_goes_to_human_review():
    reference = ["pass"] * 9 + ["fail"]
    constant = agreement("tone", "per_criterion", reference, ["pass"] * 10)  # 90 % agreement, kappa 0
    assert constant.percent_agreement == pytest.approx(0.9) and constant.base_rate == pytest.approx(0.9)
    assert route_criterion(constant, RULE).scorer == "human_review"


def test_rejected_marker_never_collides_with_a_rubric_label():
    from labkit.evaluator.rubric import load_rubric

    assert all(REJECTED not in c.allowed_labels for c in load_rubric().criteria)


def evidence(kappa_value, agreement_value):
    return Agreement(
        criterion="tone",
        arrangement="per_criterion",
        items=10,
        rejected=0,
        percent_agreement=agreement_value,
        kappa=kappa_value,
        base_rate_label="pass",
        base_rate=0.7,
        agreement_low=0.5,
        agreement_high=1.0,
        kappa_low=0.2,
        kappa_high=0.9,
        kappa_undefined=0,
    )


@pytest.mark.parametrize(
    "kappa_value,agreement_value,scorer",
    [
        (0.6, 0.8, "judge"),  # exactly on both thresholds: the rule says "at least"
        (0.6, 0.95, "judge"),  # kappa exactly on its threshold
        (0.9, 0.8, "judge"),  # agreement exactly on its threshold
        (0.5999, 0.95, "human_review"),
        (0.9, 0.7999, "human_review"),
        (None, 1.0, "human_review"),
    ],
)
def test_the_agreement_rule_admits_a_criterion_exactly_on_its_thresholds(kappa_value, agreement_value, scorer):
    routed = route_criterion(evidence(kappa_value, agreement_value), RULE)
    assert routed.scorer == scorer
    assert routed.reason.startswith("meets the rule: " if scorer == "judge" else "below the rule: ")


def test_routing_reason_states_the_evidence_and_the_thresholds():
    routed = route_criterion(evidence(0.6, 0.8), RULE)
    assert routed.reason == "meets the rule: kappa 0.60 (needs 0.60), agreement 80% (needs 80%) on 10 held-out items"
    assert "kappa undefined (needs 0.60)" in route_criterion(evidence(None, 0.9), RULE).reason


def test_programmatic_criteria_are_routed_to_code_without_evidence():
    routed = route_criterion(None, RULE, scored_by="programmatic")
    assert (routed.criterion, routed.scorer) == ("?", "programmatic")
    assert route_criterion(evidence(0.1, 0.1), RULE, scored_by="programmatic").criterion == "tone"


@pytest.mark.parametrize("a,b", [([], []), (["pass"], ["pass", "fail"]), (["pass", "fail"], ["pass"])])
def test_percent_agreement_refuses_empty_or_unequal_lists(a, b):
    with pytest.raises(ValueError, match=r"^compare two non-empty label lists of the same length$"):
        percent_agreement(a, b)


def test_base_rate_breaks_a_tie_by_the_label_not_by_the_order_seen():
    assert base_rate(["pass", "fail"]) == ("fail", 0.5)
    assert base_rate(["pass", "fail", "pass", "fail", "maybe"]) == ("fail", 0.4)


def test_vectorised_kappa_is_computed_per_resample_row():
    a = np.array([[0, 0, 1, 1], [0, 1, 0, 1]])
    b = np.array([[0, 0, 1, 1], [1, 0, 1, 0]])
    assert _kappa_many(a, b, 2).tolist() == [1.0, -1.0]


def test_bootstrap_interval_is_the_percentile_interval_of_seeded_resamples():
    # The same resamples drawn independently here: indices 0..n-1, a 95 % two-sided percentile interval.
    ai = np.array([1 if x == "pass" else 0 for x in HUMAN])
    bi = np.array([1 if x == "pass" else 0 for x in JUDGE])
    picks = np.random.default_rng(7).integers(0, len(HUMAN), size=(300, len(HUMAN)))
    agree = (ai[picks] == bi[picks]).mean(axis=1)
    interval = bootstrap_interval(HUMAN, JUDGE, seed=7, resamples=300)
    assert interval["agreement_low"] == pytest.approx(np.percentile(agree, 2.5))
    assert interval["agreement_high"] == pytest.approx(np.percentile(agree, 97.5))
    narrow = bootstrap_interval(HUMAN, JUDGE, seed=7, resamples=300, level=0.5)
    assert narrow["agreement_low"] == pytest.approx(np.percentile(agree, 25))
    assert narrow["agreement_high"] == pytest.approx(np.percentile(agree, 75))


def test_bootstrap_interval_is_scipys_paired_percentile_bootstrap_with_kappa_from_scikit_learn():
    from scipy.stats import bootstrap

    a = [*HUMAN, "fail", "pass", "pass"]
    b = [*JUDGE, "fail", "fail", "pass"]
    ai = np.array([x == "pass" for x in a], dtype=int)
    bi = np.array([x == "pass" for x in b], dtype=int)

    def kappa_or_nan(x, y):
        return cohen_kappa_score(x, y) if len(set(x) | set(y)) > 1 else np.nan

    def scipy_bootstrap(statistic, vectorized):
        return bootstrap(
            (ai, bi),
            statistic,
            paired=True,
            vectorized=vectorized,
            n_resamples=400,
            method="percentile",
            rng=np.random.default_rng(11),
        )

    agreement = scipy_bootstrap(lambda x, y, axis=-1: (x == y).mean(axis=axis), True).confidence_interval
    kappas = scipy_bootstrap(kappa_or_nan, False).bootstrap_distribution
    ours = bootstrap_interval(a, b, seed=11, resamples=400)
    assert (ours["agreement_low"], ours["agreement_high"]) == pytest.approx((agreement.low, agreement.high))
    assert ours["kappa_low"] == pytest.approx(np.nanpercentile(kappas, 2.5))
    assert ours["kappa_high"] == pytest.approx(np.nanpercentile(kappas, 97.5))
    assert ours["kappa_undefined"] == int(np.isnan(kappas).sum())


def test_bootstrap_kappa_interval_is_none_when_kappa_is_never_defined():
    interval = bootstrap_interval(["pass"] * 3, ["pass"] * 3, resamples=50)
    assert interval["kappa_low"] is None and interval["kappa_high"] is None
    assert interval["kappa_undefined"] == 50
    assert interval["agreement_low"] == interval["agreement_high"] == 1.0


def test_programmatic_routing_says_code_scores_it():
    assert route_criterion(None, RULE, scored_by="programmatic").reason == (
        "scored by code (schema and length checks), not by the judge"
    )


def test_bootstrap_resamples_draw_every_item_including_the_first():
    # Only the first item disagrees: resamples that never draw it agree fully, the others do not.
    interval = bootstrap_interval(["fail"] + ["pass"] * 9, ["pass"] * 10, resamples=400)
    assert interval["agreement_low"] < 1.0 and interval["agreement_high"] == 1.0


def test_bootstrap_percentiles_are_exact_on_many_distinct_agreement_values():
    rng = np.random.default_rng(3)
    a = [str(x) for x in rng.integers(0, 2, size=400)]
    b = [x if keep else ("1" if x == "0" else "0") for x, keep in zip(a, rng.random(400) < 0.8, strict=True)]
    ai, bi = np.array([int(x) for x in a]), np.array([int(x) for x in b])
    picks = np.random.default_rng(11).integers(0, 400, size=(400, 400))
    agree = (ai[picks] == bi[picks]).mean(axis=1)
    interval = bootstrap_interval(a, b, seed=11, resamples=400)
    assert interval["agreement_low"] == pytest.approx(np.percentile(agree, 2.5), rel=1e-12)
    assert interval["agreement_high"] == pytest.approx(np.percentile(agree, 97.5), rel=1e-12)


def test_the_kappa_difference_of_one_judge_with_itself_is_zero_and_a_clear_gain_is_above_zero():
    from labkit.evaluator.calibration import kappa_difference_interval

    assert kappa_difference_interval(HUMAN, JUDGE, JUDGE, resamples=200) == (0.0, 0.0)
    reference = ["pass", "fail"] * 10
    opposite = ["fail", "pass"] * 10  # kappa -1 against the reference
    low, high = kappa_difference_interval(reference, opposite, reference, resamples=200)
    assert low is not None and high is not None and 0 < low <= high <= 2.0


def test_a_rejected_reply_counts_as_a_label_of_its_own_in_the_kappa_difference():
    from labkit.evaluator.calibration import kappa_difference_interval

    with_rejection = [None, *JUDGE[1:]]
    low, high = kappa_difference_interval(HUMAN, JUDGE, with_rejection, resamples=200)
    assert low is not None and high is not None and low < 0  # one reply lost can only cost agreement


def test_fewest_fixes_counts_the_disagreements_to_turn_around_before_the_rule_is_met():
    # po 0.8, kappa 0.52: one fix gives po 0.9 and kappa 0.78 either way
    assert not meets_rule(HUMAN, JUDGE, RULE)
    assert fewest_fixes(HUMAN, JUDGE, RULE) == 1
    assert fewest_fixes(HUMAN, HUMAN, RULE) == 0
    assert fewest_fixes(["pass"] * 4, ["fail"] * 4, RULE) is None  # kappa undefined once fixed


def test_fewest_fixes_tries_every_set_not_the_disagreements_in_order():
    people = ["pass", "pass", "pass", "pass", "pass", "fail", "pass", "pass"]
    judge = ["pass", "pass", "pass", "fail", "pass", "pass", "pass", "pass"]
    # fixing the missed fail (item 5) alone meets the rule; fixing the false alarm first (item 3) does not
    assert fewest_fixes(people, judge, RULE) == 1
    assert not meets_rule(people, ["pass"] * 8, RULE)


def test_lesson_tone_judge_needs_two_fixes_and_a_missed_fail_moves_kappa_more():
    from labkit.evaluator.report import evaluate_run

    report = evaluate_run("01-evaluator-authored")
    labels = report.inputs.labels
    judged = report.runs.judging.labels(arrangement="per_criterion", source="labeled", criterion="tone")
    people, judge = labels.column(labels.held_out, "tone"), [judged[p] for p in labels.held_out]
    assert fewest_fixes(people, judge, report.inputs.rubric.agreement_rule) == 2


def test_kappa_after_one_fix_fixes_one_missed_item_of_the_label_and_refuses_a_label_never_missed():
    from labkit.evaluator.calibration import kappa, kappa_after_one_fix

    people = ["fail", "fail", "pass", "pass", "pass", "pass"]
    judge = ["pass", "fail", "fail", "pass", "pass", "pass"]
    assert kappa_after_one_fix(people, judge, "fail") == kappa(people, ["fail", "fail", "fail", "pass", "pass", "pass"])
    assert kappa_after_one_fix(people, judge, "pass") == kappa(people, ["pass", "fail", "pass", "pass", "pass", "pass"])
    with pytest.raises(ValueError, match="disagrees on no item labeled 'partial'"):
        kappa_after_one_fix(people, judge, "partial")


def test_most_influential_item_is_the_one_whose_removal_moves_kappa_most_in_either_direction():
    from labkit.evaluator.calibration import most_influential_item

    people = ["pass"] * 8 + ["fail"] * 2
    judge = ["pass"] * 6 + ["fail", "fail", "fail", "pass"]  # tone's cross-table: 1 agreed fail, 3 disagreements
    # Leaving out the one agreed fail drops kappa from 0.21 to -0.17; leaving out a disagreement raises it less.
    assert most_influential_item(people, judge) == 8
    assert most_influential_item(["a", "b", "a", "b"], ["a", "b", "a", "b"]) == 0  # all alike: the first


def test_most_influential_item_refuses_lists_whose_kappa_is_undefined_without_an_item():
    from labkit.evaluator.calibration import most_influential_item

    with pytest.raises(ValueError, match="undefined without item 1"):
        most_influential_item(["a", "a"], ["a", "b"])
    with pytest.raises(ValueError, match="undefined on these lists"):
        most_influential_item(["a", "a"], ["a", "a"])
