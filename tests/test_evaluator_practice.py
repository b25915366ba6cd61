"""The exercise checks' unseen label lists: fixed by their seed, and holding the cases the checks promise."""

from labkit.evaluator.calibration import base_rate, kappa
from labkit.evaluator.practice import fix_cases, kappa_cases


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
