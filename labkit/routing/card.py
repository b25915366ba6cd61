"""Lesson 06's report card: route the suite's tickets and let the regression gate decide.

RULE: the gate itself (`labkit.routing.grader.compare`): the candidate passes when
the three-condition release rule passes with the baseline's run as the baseline.
A run with malformed replies cannot be graded, so it cannot pass.
"""

from __future__ import annotations

from typing import Any

from labkit.routing import runs as RUNS
from labkit.scorecard import Card, Measure, Verdict, share

LESSON = "06"
TITLE = "routing gate"
RULE = "the regression gate's three-condition release rule, candidate against baseline"


def _suite() -> tuple[Any, str]:
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import load

    return load(fixtures_dir() / "routing" / "suite.json")


def _card(run: dict[str, Any], malformed: int) -> Card:
    from labkit.routing.grader import compare

    suite, sha = _suite()
    if malformed:
        cases = len(suite["cases"])
        return Card(
            [
                Measure("routes correct", None, "not gradable"),
                Measure("penalty points", None, "not gradable"),
                Measure("urgent tickets missed", None, "not gradable"),
                share("malformed replies", malformed, cases),
            ],
            evidence=None,
        )
    summary = compare(suite, sha, run, run)["candidate"]
    return Card(
        [
            share("routes correct", summary["correct"], summary["cases"]),
            Measure("penalty points", float(summary["penalty_points"]), str(summary["penalty_points"])),
            Measure("urgent tickets missed", float(summary["urgent_misses"]), str(summary["urgent_misses"])),
            share("malformed replies", 0, summary["cases"]),
        ],
        evidence=run,
    )


def grade(boundary: Any) -> Card:
    """Route every model input through ``boundary``; grade the run unless a reply was malformed."""
    _, sha = _suite()
    replies = RUNS.make_requests(boundary)
    run, malformed = RUNS.routing_run(replies, label=str(boundary.run_id), suite_sha256=sha)
    return _card(run, len(malformed))


def ideal() -> Card:
    """The suite's own labels as a run: what a router that is always right would score."""
    suite, sha = _suite()
    predictions = [{"id": case["id"], "route": case["expected"]} for case in suite["cases"]]
    return _card({"label": "suite labels", "origin": "simulated", "suite_sha256": sha, "predictions": predictions}, 0)


def decide(candidate: Card, baseline: Card) -> Verdict:
    """Run the gate with the baseline's run as baseline and the candidate's as candidate."""
    from labkit.routing.grader import compare

    if candidate.evidence is None:
        return Verdict(False, "the candidate's run has malformed replies, so the gate cannot grade it")
    if baseline.evidence is None:
        return Verdict(False, "the baseline's run has malformed replies, so the gate has nothing to compare with")
    suite, sha = _suite()
    report = compare(suite, sha, baseline.evidence, candidate.evidence)
    return Verdict(report["pass"], "; ".join(report["reasons"]) or "the gate passes the candidate")
