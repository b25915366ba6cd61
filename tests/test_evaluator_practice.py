"""The exercise checks' unseen label lists: fixed by their seed, and holding the cases the checks promise."""

from labkit.evaluator.calibration import kappa, most_influential_item
from labkit.evaluator.practice import fix_cases, influence_cases, material_cases


def test_influence_cases_start_with_the_given_pair_and_keep_every_leave_one_out_kappa_defined():
    people, judge = ["pass", "fail", "pass", "fail"], ["pass", "fail", "fail", "fail"]
    cases = influence_cases((people, judge))
    assert cases[0] == (people, judge) and len(cases) == 50
    assert cases == influence_cases((people, judge)) and cases != influence_cases((people, judge), seed=1)
    for p, j in cases[1:]:
        assert all(kappa(p[:i] + p[i + 1 :], j[:i] + j[i + 1 :]) is not None for i in range(len(p)))


def test_influence_cases_hold_pairs_where_the_first_disagreement_or_the_largest_rise_is_not_the_answer():
    def first_disagreement(people, judge):
        return next(i for i, (p, j) in enumerate(zip(people, judge, strict=True)) if p != j)

    def largest_rise(people, judge):  # signed: forgets that removing an item can also lower kappa
        full = kappa(people, judge)
        rises = [kappa(people[:i] + people[i + 1 :], judge[:i] + judge[i + 1 :]) - full for i in range(len(people))]
        return rises.index(max(rises))

    cases = influence_cases((["pass", "fail", "pass"], ["pass", "fail", "fail"]))[1:]
    assert sum(first_disagreement(*c) != most_influential_item(*c) for c in cases) >= 10
    assert sum(largest_rise(*c) != most_influential_item(*c) for c in cases) >= 5


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


def test_fixing_the_best_item_first_is_also_fewest_as_fewest_fixes_says():
    """A fix moves p_e by the reference's counts of its two labels only, so greedy is exact."""
    from labkit.evaluator.calibration import fewest_fixes, meets_rule
    from labkit.evaluator.lesson import load_inputs

    rule = load_inputs().rubric.agreement_rule

    def best_first(people, judge):
        judge, fixes = list(judge), 0
        while not meets_rule(people, judge, rule):
            wrong = [i for i, (p, j) in enumerate(zip(people, judge, strict=True)) if p != j]
            if not wrong:
                return None

            def kappa_after(i):
                k = kappa(people, [people[i] if n == i else x for n, x in enumerate(judge)])
                return -2.0 if k is None else k

            best = max(wrong, key=kappa_after)
            judge[best], fixes = people[best], fixes + 1
        return fixes

    cases = fix_cases((["pass", "fail", "pass", "pass"], ["pass", "pass", "fail", "fail"]))
    assert all(best_first(*c) == fewest_fixes(*c, rule) for c in cases)


def test_a_capitalised_material_the_facts_lack_is_a_case_so_a_case_sensitive_match_fails():
    """Some case names materials only with capitals: a match that ignores case finds them, one that does not finds none."""
    import re

    def named_only_capitalised(text, want):
        return want and all(not re.search(rf"\\b{re.escape(w)}\\b", text) for w in want)

    assert any(named_only_capitalised(text, want) for text, _, want in material_cases("solid oak"))


def test_fix_cases_hold_pairs_where_kappa_alone_meets_the_rule_with_fewer_fixes_than_both_thresholds():
    """An answer that tests kappa only, skipping the percent-agreement floor, is refused by some case."""
    from itertools import combinations

    from labkit.evaluator.calibration import fewest_fixes
    from labkit.evaluator.rubric import load_rubric

    rule = load_rubric().agreement_rule

    def kappa_only(people, judge):
        wrong = [i for i, (p, j) in enumerate(zip(people, judge, strict=True)) if p != j]
        for size in range(len(wrong) + 1):
            for fixed in combinations(wrong, size):
                k = kappa(people, [people[i] if i in fixed else x for i, x in enumerate(judge)])
                if k is not None and k >= rule.min_kappa:
                    return size
        return None

    cases = fix_cases((["pass", "fail", "pass"], ["pass", "pass", "pass"]))
    assert any(kappa_only(p, j) != fewest_fixes(p, j, rule) for p, j in cases)
