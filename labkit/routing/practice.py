"""Lesson 06's exercises: what-if runs and suites for the checks, and the check of the smallest-repair exercise.

`with_routes` and `with_penalties` build in-memory variants of a run or a suite. They keep the
shipped suite's fingerprint: a what-if for an exercise, never a file to grade. A saved run on an
edited suite file would be refused, because the edited bytes hash differently.
`check_smallest_repair` grades a learner's ``smallest_repair`` on a set of trials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from labkit.errors import RouteGradeError
from labkit.routing.grader import apply_changes, compare, own_functions

#: The summary fields a learner's ``smallest_repair`` receives.
REPAIR_KEYS = ("correct", "penalty_points", "urgent_misses", "failures")

Trials = Mapping[str, tuple[Any, Any, Any]]


def with_routes(run: Mapping[str, Any], **routes: str) -> dict[str, Any]:
    """Return a copy of ``run`` with some cases sent elsewhere: ``with_routes(baseline, t7="sales")``."""
    return apply_changes(run, [{"id": cid, "route": route} for cid, route in routes.items()])


def with_penalties(suite: Mapping[str, Any], **weights: int) -> dict[str, Any]:
    """Return a copy of ``suite`` with some routes' penalty weights changed: ``with_penalties(suite, billing=3)``."""
    unknown = set(weights) - set(suite["penalties"])
    if unknown:
        raise RouteGradeError(f"no route {', '.join(sorted(unknown))} in the suite; change the weight of a known route")
    return {**suite, "penalties": {**suite["penalties"], **weights}}


def check_smallest_repair(
    smallest_repair: Callable[[dict[str, Any], dict[str, Any]], list[str]],
    trials: Trials,
    *,
    suite_sha256: str,
    watch: Callable[..., AbstractContextManager[list[str]]],
) -> None:
    """Grade ``smallest_repair(old, new)`` on each trial ``name: (suite, baseline, candidate)``; raise on a wrong one.

    The learner's function sees only the `REPAIR_KEYS` of each run's summary, and may not call
    any function of labkit's grader: ``watch`` (the course's `calls_to`) lists the ones it called.
    Its ids, routed right, must make the candidate pass, and no shorter repair may exist.
    Raises `AssertionError` naming the trial, without the answer.
    """
    for name, (suite, baseline, candidate) in trials.items():
        result = compare(suite, suite_sha256, baseline, candidate)
        old, new = ({key: result[side][key] for key in REPAIR_KEYS} for side in ("baseline", "candidate"))
        with watch(*own_functions()) as called:
            mine = smallest_repair(old, new)
        assert not called, f"smallest_repair calls labkit's {called[0]}: find the repair yourself"
        wrong = {failure["id"]: failure["expected"] for failure in new["failures"]}
        assert isinstance(mine, list) and set(mine) <= set(wrong) and len(set(mine)) == len(mine), (
            f"{name}: return a list naming each id at most once, only ids the candidate got wrong: {mine!r}"
        )
        after = compare(suite, suite_sha256, baseline, with_routes(candidate, **{cid: wrong[cid] for cid in mine}))
        assert after["pass"], f"{name}: with {mine} routed right it still fails: {after['reasons']}"
        fewest = 0 if result["pass"] else len(result["explanation"]["smallest_flip"])
        assert len(mine) <= fewest, f"{name}: your repair changes {len(mine)} predictions; fewer are enough"
