"""Lesson 06's report card: route the suite's tickets under both prompt versions and let the regression gate decide.

RULE: the gate itself (`labkit.routing.grader.compare`): the candidate model passes
when the three-condition release rule passes for its run under the candidate prompt,
with the baseline model's run under the same prompt as the baseline. A run with a
malformed reply cannot be graded, so it cannot pass.
"""

from __future__ import annotations

from typing import Any

from labkit.routing import prompts as RUNS
from labkit.scorecard import Card, Measure, Verdict, share

LESSON = "06"
TITLE = "routing gate"
RULE = "the regression gate's three-condition release rule, both models under the candidate prompt"
GATED = "candidate"


def _suite() -> tuple[Any, str]:
    from labkit.paths import fixtures_dir
    from labkit.routing.grader import load

    return load(fixtures_dir() / "routing" / "suite.json")


def _measures(version: str, run: dict[str, Any], malformed: int) -> list[Measure]:
    from labkit.routing.grader import score, validate_suite

    suite, sha = _suite()
    if malformed:
        return [
            Measure(f"routes correct, {version} prompt", None, "not gradable"),
            Measure(f"penalty points, {version} prompt", None, "not gradable", lower_is_better=True),
            Measure(f"urgent tickets missed, {version} prompt", None, "not gradable", lower_is_better=True),
            share(f"malformed replies, {version} prompt", malformed, len(suite["cases"]), lower_is_better=True),
        ]
    summary = score(suite, validate_suite(suite), sha, run)
    return [
        share(f"routes correct, {version} prompt", summary["correct"], summary["cases"]),
        Measure(
            f"penalty points, {version} prompt",
            float(summary["penalty_points"]),
            str(summary["penalty_points"]),
            lower_is_better=True,
        ),
        Measure(
            f"urgent tickets missed, {version} prompt",
            float(summary["urgent_misses"]),
            str(summary["urgent_misses"]),
            lower_is_better=True,
        ),
        share(f"malformed replies, {version} prompt", 0, summary["cases"], lower_is_better=True),
    ]


def _card(runs: dict[str, tuple[dict[str, Any], int]]) -> Card:
    measures = [m for version, (run, malformed) in runs.items() for m in _measures(version, run, malformed)]
    gated, malformed = runs[GATED]
    return Card(measures, evidence=None if malformed else gated)


def grade(boundary: Any) -> Card:
    """Route every model input under each prompt version through ``boundary``; grade each gradable run."""
    _, sha = _suite()
    replies = RUNS.make_requests(boundary)
    runs = {}
    for version in RUNS.PROMPTS:
        run, malformed = RUNS.gate_run(replies[version], label=f"{boundary.model}-{version}-prompt", suite_sha256=sha)
        runs[version] = (run, len(malformed))
    return _card(runs)


def ideal() -> Card:
    """The suite's own labels as a run under each prompt: what a router that is always right would score."""
    suite, sha = _suite()
    predictions = [{"id": case["id"], "route": case["expected"]} for case in suite["cases"]]
    run = {"label": "suite labels", "origin": "simulated", "suite_sha256": sha, "predictions": predictions}
    return _card({version: (run, 0) for version in RUNS.PROMPTS})


def decide(candidate: Card, baseline: Card) -> Verdict:
    """Run the gate with the baseline's run as baseline and the candidate's as candidate (candidate prompt)."""
    from labkit.routing.grader import compare

    if candidate.evidence is None:
        return Verdict(
            False, f"the candidate's run under the {GATED} prompt has malformed replies; the gate refuses it"
        )
    if baseline.evidence is None:
        return Verdict(False, f"the baseline's run under the {GATED} prompt has malformed replies; nothing to compare")
    suite, sha = _suite()
    report = compare(suite, sha, baseline.evidence, candidate.evidence)
    return Verdict(report["pass"], "; ".join(report["reasons"]) or "the gate passes the candidate")
