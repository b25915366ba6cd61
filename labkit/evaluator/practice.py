"""The unseen cases that lesson 01's exercise checks run a learner's function on.

Each label list is drawn from a fixed seed, so a check is the same on every run, and the
cases are never printed in the notebook: a learner tests against the definition,
not against answers copied from the page.
"""

from __future__ import annotations

import random

#: The labels the rubric's criteria use; a case draws its own few from these.
VOCABULARY = ("pass", "fail", "complete", "partial", "incomplete")


def kappa_cases(count: int = 200, *, seed: int = 20261130) -> list[tuple[list[str], list[str]]]:
    """Return ``count`` pairs of equally long label lists whose kappa is defined, for exercise 1.

    The first pair has a tie in its first list's base rate (two ``pass``, two ``fail``);
    the others have 4 to 30 items over 2 to 4 labels, the second list agreeing with the
    first on about 60 % of them.
    """
    rng = random.Random(seed)
    cases = [(["pass", "fail", "fail", "pass"], ["pass", "pass", "fail", "pass"])]
    while len(cases) < count:
        vocabulary = rng.sample(VOCABULARY, rng.randint(2, 4))
        a = [rng.choice(vocabulary) for _ in range(rng.randint(4, 30))]
        b = [x if rng.random() < 0.6 else rng.choice(vocabulary) for x in a]
        if len(set(a) | set(b)) > 1:  # kappa is undefined when both lists hold one and the same label
            cases.append((a, b))
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
        ("Brass and glass, on a copper base.", ["brass"], ["glass", "copper"]),
        ("Nothing here names a material.", ["cotton"], []),
    ]
