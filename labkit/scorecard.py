"""What a lesson's report card holds: named measures of one run, and a verdict of candidate against baseline.

Each lesson that calls a model has a ``card`` module (``labkit.evaluator.card``,
``labkit.rag.card``, ...) that grades a run with the lesson's own checks and
states, in its ``RULE``, when a candidate model is not worse than the baseline.
`labkit evaluate` (``labkit.course.evaluate``) puts the cards side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Measure:
    """One figure of one run, as the lesson grades it."""

    name: str
    """What is measured, in the lesson's words (``golden cases passed``)."""
    value: float | None
    """The number a rule compares; None when the run gives nothing to measure."""
    shown: str
    """How the report prints it (``2/3``, ``0.74 [0.51, 0.89]``)."""
    lower_is_better: bool = False
    """True for a measure of harm (failed trials, penalty points, unauthorized calls): less is better."""


@dataclass(frozen=True)
class Card:
    """A run's measures, and whatever else the lesson's rule needs to compare two runs."""

    measures: list[Measure]
    """In the order the report shows them."""
    evidence: Any = field(default=None, compare=False)
    """Lesson-specific material for the rule (for lesson 06: the gradable routing run)."""

    def measure(self, name: str) -> Measure:
        """Return the measure called ``name``."""
        return next(m for m in self.measures if m.name == name)

    def value(self, name: str) -> float | None:
        """Return the value of the measure called ``name``."""
        return self.measure(name).value


@dataclass(frozen=True)
class Verdict:
    """Whether the candidate may replace the baseline on one lesson, and why."""

    passed: bool
    reason: str


def share(name: str, part: int, whole: int, *, lower_is_better: bool = False) -> Measure:
    """Return a measure shown as ``part/whole`` whose value is the share (None when ``whole`` is 0)."""
    return Measure(name, part / whole if whole else None, f"{part}/{whole}", lower_is_better)


def at_least(name: str, candidate: Card, baseline: Card) -> tuple[bool, str]:
    """Return whether the candidate's ``name`` is at least the baseline's, and a sentence saying so."""
    new, old = candidate.measure(name), baseline.measure(name)
    if new.value is None or old.value is None:
        missing = "candidate" if new.value is None else "baseline"
        return False, f"{name}: cannot compare ({missing} has {(new if missing == 'candidate' else old).shown})"
    ok = new.value >= old.value
    return ok, f"{name}: {new.shown} {'>=' if ok else '<'} baseline {old.shown}"
