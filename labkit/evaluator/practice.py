"""The unseen cases that lesson 01's exercise checks run a learner's function on, and how a prediction is graded.

Each label list is drawn from a fixed seed, so a check is the same on every run, and the
cases are never printed in the notebook: a learner tests against the definition,
not against answers copied from the page.
"""

from __future__ import annotations

import random

#: The labels the rubric's criteria use; a case draws its own few from these.
VOCABULARY = ("pass", "fail", "complete", "partial", "incomplete")


def influence_cases(
    first: tuple[list[str], list[str]], count: int = 50, *, seed: int = 20261202
) -> list[tuple[list[str], list[str]]]:
    """Return ``count`` (people, judge) pairs for exercise 1: ``first``, then random ones.

    The random pairs have 6 to 14 items over two or three labels, the judge agreeing with
    people on about 70 % of them. Each keeps kappa defined whichever item is left out, and
    its most influential kind of item (a pair of labels) moves kappa clearly more than any
    other kind, so no rounding decides the answer.
    """
    from labkit.evaluator.calibration import kappa

    rng = random.Random(seed)
    cases = [first]
    while len(cases) < count:
        vocabulary = ["pass", "fail", "partial"][: rng.choice([2, 2, 3])]
        people = [rng.choice(vocabulary) for _ in range(rng.randint(6, 14))]
        judge = [x if rng.random() < 0.7 else rng.choice(vocabulary) for x in people]
        full = kappa(people, judge)
        left = [kappa(people[:i] + people[i + 1 :], judge[:i] + judge[i + 1 :]) for i in range(len(people))]
        kept = [k for k in left if k is not None]
        if full is None or len(kept) < len(people):
            continue
        moves = {pair: abs(k - full) for pair, k in zip(zip(people, judge, strict=True), kept, strict=True)}
        ranked = sorted(moves.values(), reverse=True)
        if len(ranked) > 1 and ranked[0] - ranked[1] > 1e-6:
            cases.append((people, judge))
    return cases


def fix_cases(
    first: tuple[list[str], list[str]], count: int = 80, *, seed: int = 20261201
) -> list[tuple[list[str], list[str]]]:
    """Return ``count`` (people, judge) pairs for exercise 2: ``first``, one the rule can never accept, then random.

    The random pairs have 5 to 10 items over two or three labels, the judge agreeing
    with people on about 70 % of them.
    """
    rng = random.Random(seed)
    cases = [first, (["pass"] * 4, ["fail"] * 4)]
    while len(cases) < count:
        vocabulary = ["pass", "fail", "partial"][: rng.choice([2, 2, 3])]
        people = [rng.choice(vocabulary) for _ in range(rng.randint(5, 10))]
        judge = [x if rng.random() < 0.7 else rng.choice(vocabulary) for x in people]
        cases.append((people, judge))
    return cases


def material_cases(shelf_text: str) -> list[tuple[str, list[str], list[str]]]:
    """Return exercise 3's (text, facts' materials, materials the facts lack) cases, first the shelf p15's text.

    The sentences test what the exercise asks: whole words in any case (*pine* is not in
    *pineapple*), the longer of two names that overlap (*stainless steel*, not *steel*),
    order of first mention, each material once, and a text that names no material.
    """
    return [
        (shelf_text, ["pine"], ["oak"]),
        ("A Stainless Steel body.", ["stainless steel"], []),
        ("A stainless steel lid on a steel frame.", ["steel"], ["stainless steel"]),
        ("A recycled plastic shell.", ["plastic"], ["recycled plastic"]),
        ("Pineapple-yellow handles on a spine of beech.", ["plastic"], ["beech"]),
        ("Oak, oak and more OAK.", ["pine"], ["oak"]),
        ("Solid Oak top, Walnut legs.", ["pine"], ["oak", "walnut"]),
        ("Brass and glass, on a copper base.", ["brass"], ["glass", "copper"]),
        ("Nothing here names a material.", ["cotton"], []),
    ]
