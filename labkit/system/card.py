"""Lesson 05's report card: the golden set, each case asked on a fresh thread.

RULE: at least as many golden cases pass as for the baseline.
"""

from __future__ import annotations

from typing import Any

from labkit.scorecard import Card, Verdict, at_least, share
from labkit.system import runs as RUNS

LESSON = "05"
TITLE = "minimal complete system"
RULE = "at least as many golden cases pass as for the baseline"
GOLDEN_PASSED = "golden cases passed"


def grade(boundary: Any) -> Card:
    """Ask the golden set (and the empty count) through ``boundary``; grade each with `passed`."""
    from labkit.system.golden import GOLDEN, passed

    rows = RUNS.make_requests(boundary)
    results = {(question, team): result for question, team, result in rows}
    verdicts = [passed(results[(case.question, case.team)], case) for case in GOLDEN]
    statuses = [results[(case.question, case.team)].get("status") for case in GOLDEN]
    measures = [
        share(GOLDEN_PASSED, sum(verdicts), len(GOLDEN)),
        share(
            "replies that broke the contract",
            sum(s == "invalid_output" for s in statuses),
            len(GOLDEN),
            lower_is_better=True,
        ),
    ]
    return Card(measures, evidence=rows)


def decide(candidate: Card, baseline: Card) -> Verdict:
    """Apply the lesson's rule."""
    return Verdict(*at_least(GOLDEN_PASSED, candidate, baseline))
