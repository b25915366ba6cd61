"""The exercise checks' unseen label lists: fixed by their seed, and holding the cases the checks promise."""

from labkit.evaluator.calibration import base_rate, kappa
from labkit.evaluator.practice import fix_cases, kappa_cases, material_cases


def test_kappa_cases_are_fixed_by_the_seed_start_with_a_base_rate_tie_and_all_have_a_kappa():
    cases = kappa_cases()
    assert cases == kappa_cases() and cases != kappa_cases(seed=1)
    assert len(cases) == 200
    first, _ = cases[0]
    assert first.count("pass") == first.count("fail") and base_rate(first) == ("fail", 0.5)
    assert all(len(a) == len(b) and kappa(a, b) is not None for a, b in cases)


def test_fix_cases_start_with_the_given_pair_and_a_pair_no_fix_can_rescue():
    people, judge = ["pass", "fail", "pass"], ["pass", "pass", "pass"]
    cases = fix_cases((people, judge))
    assert cases[0] == (people, judge) and len(cases) == 80
    never_people, _ = cases[1]
    assert kappa(never_people, never_people) is None  # even with every label fixed, kappa is undefined
    assert cases == fix_cases((people, judge)) and all(len(p) == len(j) for p, j in cases)


def test_fix_cases_hold_pairs_where_fixing_the_first_disagreements_is_not_fewest():
    from labkit.evaluator.calibration import fewest_fixes, meets_rule
    from labkit.evaluator.lesson import load_inputs

    rule = load_inputs().rubric.agreement_rule

    def first_ones(people, judge):  # the tempting greedy answer: fix disagreements in reading order
        wrong = [i for i, (p, j) in enumerate(zip(people, judge, strict=True)) if p != j]
        for size in range(len(wrong) + 1):
            fixed = [people[i] if i in wrong[:size] else label for i, label in enumerate(judge)]
            if meets_rule(people, fixed, rule):
                return size
        return None

    cases = fix_cases((["pass", "fail"], ["pass", "fail"]))
    order_matters = [c for c in cases if first_ones(*c) != fewest_fixes(*c, rule)]
    assert len(order_matters) >= 2


def test_material_cases_start_with_the_shelf_and_test_overlap_case_and_repeats():
    cases = material_cases("It is made of solid oak.")
    assert cases[0] == ("It is made of solid oak.", ["pine"], ["oak"])
    texts = " ".join(text for text, _, _ in cases[1:])
    assert "Pineapple" in texts and "stainless steel lid on a steel frame" in texts and "OAK" in texts
    assert any(want == [] for _, _, want in cases)
