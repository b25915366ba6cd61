"""Lesson 01's report card: how well a model's judge agrees with people, and where it may score.

RULE: the candidate's judge qualifies (meets the rubric's agreement rule on the
held-out labels) on at least as many criteria as the baseline's judge.
"""

from __future__ import annotations

from typing import Any

from labkit.evaluator import lesson as RUNS
from labkit.scorecard import Card, Measure, Verdict, at_least, share

LESSON = "01"
TITLE = "product-description evaluator"
RULE = "the judge qualifies on at least as many criteria as the baseline's judge"
QUALIFIED = "criteria the judge may score"


def grade(boundary: Any) -> Card:
    """Make lesson 01's requests through ``boundary`` and measure judge agreement and qualified criteria."""
    from labkit.evaluator.report import build_report

    inputs = RUNS.load_inputs()
    runs = RUNS.make_requests(boundary, inputs=inputs)
    report = build_report(boundary.run_id, boundary.origin or runs.generation.origin, inputs, runs)
    rule = inputs.rubric.agreement_rule
    judged = [c.id for c in inputs.rubric.judged()]
    measures = []
    for criterion in judged:
        row = report.agreement_for(criterion, rule.arrangement)
        kappa = None if row is None else row.kappa
        shown = "undefined" if kappa is None else f"{kappa:.2f}"
        measures.append(Measure(f"judge kappa, {criterion}", kappa, shown))
    qualified = [c for c in judged if report.routing[c].scorer == "judge"]
    measures.append(share(QUALIFIED, len(qualified), len(judged)))
    return Card(measures, evidence=report)


def decide(candidate: Card, baseline: Card) -> Verdict:
    """Apply the lesson's rule."""
    return Verdict(*at_least(QUALIFIED, candidate, baseline))
