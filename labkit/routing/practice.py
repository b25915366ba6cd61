"""Lesson 06's exercises: what-if runs and suites for the checks, and the checks themselves.

`with_routes` and `with_penalties` build in-memory variants of a run or a suite. They keep the
shipped suite's fingerprint: a what-if for an exercise, never a file to grade. A saved run on an
edited suite file would be refused, because the edited bytes hash differently.
`check_release_predictions`, `check_smallest_repair`, `check_passing_trade`, `check_protect_answers` and
`check_reply_predictions` grade a learner's answers to exercises 1 to 5; none of them prints the answer before
it passes.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from labkit.canonical import loads_strict
from labkit.errors import RouteGradeError
from labkit.routing.grader import apply_changes, compare, fixes, own_functions, regressions

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


#: Words in each reason `release_reasons` gives, and the number of the condition it names.
CONDITION_OF_REASON = {
    "correct routes fell": 1,
    "penalty points rose": 2,
    "urgent_support case(s) misrouted": 3,
    "protected case": 4,
}


def failed_conditions(report: Mapping[str, Any]) -> bool | set[int]:
    """Return ``True`` when a `compare` report passes, else the numbers of the release-rule conditions it fails."""
    if report["pass"]:
        return True
    return {number for reason in report["reasons"] for words, number in CONDITION_OF_REASON.items() if words in reason}


def check_release_predictions(
    predicted: Mapping[str, Any], trials: Trials, *, suite_sha256: str, source: str = "", variable: str = "PREDICTED"
) -> None:
    """Grade each prediction against the gate on each trial ``name: (suite, baseline, candidate)``.

    A prediction is ``True`` (the candidate passes) or the set of condition numbers it fails,
    as `failed_conditions` reads them: ``{2, 3}``. Raises `NotImplementedError` while a
    prediction is still ``None``, and `AssertionError` saying only how many predictions are
    wrong: the gate's reasons would give the answers away. ``source`` is the cell that set the
    predictions (`labkit.course.shortcuts.cell_that_set` of ``variable``): they must be typed out,
    not computed by running the gate.
    """
    _refuse_computed(source, variable)  # first, so a computed answer never learns whether it was right
    protected = {name: (suite, base, run, ()) for name, (suite, base, run) in trials.items()}
    _check_verdicts(predicted, protected, suite_sha256, "hint: apply the three conditions; what does a tie do?")


def check_protected_predictions(
    predicted: Mapping[str, Any],
    trials: Mapping[str, tuple[Any, Any, Any, Sequence[str]]],
    *,
    suite_sha256: str,
    source: str = "",
    variable: str = "PREDICTED_PROTECTED",
) -> None:
    """Grade predictions of the gate's verdict on each trial ``name: (suite, baseline, candidate, protected ids)``.

    As `check_release_predictions`, with condition 4, the protected-case rule: a prediction is
    ``True`` or the set of condition numbers the candidate fails, such as ``{3, 4}``. Raises
    `NotImplementedError` while a prediction is ``None``, and `AssertionError` saying only how
    many are wrong; ``source`` as there.
    """
    _refuse_computed(source, variable)
    _check_verdicts(predicted, trials, suite_sha256, "hint: reread which cases the protected-case rule watches")


def check_passing_trade(
    run: Any, *, suite: Any, suite_sha256: str, baseline: Any, shown: Mapping[str, Any] | None = None
) -> str:
    """Grade a learner's candidate that the gate passes against ``baseline`` though it breaks a ticket; say what it traded.

    The run is graded by `compare`, so the grader's own checks refuse a malformed one (a missing
    or extra id, an unknown route): the `AssertionError` quotes the grader. Raises
    `NotImplementedError` while a route is still ``...``, and `AssertionError` when the run is not
    labelled ``simulated`` (the learner wrote it), when the gate fails it (its reasons), when it
    breaks no ticket the baseline routed right, or when it fixes and breaks the same tickets as a run in
    ``shown`` (name -> run: the what-if candidates the notebook defines, such as exercise 1's),
    so that moving a ticket both already miss to another wrong queue is no trade of one's own.
    Returns `trade_summary` of the passing report.
    """
    predictions = run.get("predictions") if isinstance(run, Mapping) else None
    if run is Ellipsis or (
        isinstance(predictions, list)
        and any(isinstance(p, Mapping) and p.get("route") is Ellipsis for p in predictions)
    ):
        raise NotImplementedError("hint: give every ticket a route; conditions 1 and 2 add up: what can a fix pay for?")
    try:
        report = compare(suite, suite_sha256, baseline, run)
    except RouteGradeError as error:
        raise AssertionError(f"the grader refuses your run, as it would refuse a file: {error}") from None
    assert run["origin"] == "simulated", (
        f'your run says origin "{run["origin"]}", but you wrote its routes and no model answered them: '
        'label it "simulated"'
    )
    assert report["pass"], (
        f"the gate fails your run: {'; '.join(report['reasons'])}. Build one that passes all three conditions"
    )
    assert regressions(report["baseline"], report["candidate"]), (
        "the gate passes your run, but it routes wrong no ticket the baseline routed right, so it trades nothing "
        "(a ticket the baseline already missed, sent to another wrong queue, has not regressed)"
    )
    trade = _trade_of(report)
    copied = [
        name for name, other in (shown or {}).items() if _shown_trade(suite, suite_sha256, baseline, other) == trade
    ]
    assert not copied, (
        f"your run fixes and breaks the same tickets as the notebook's {copied[0]!r}, a trade defined above: "
        "build one of your own (which ticket would you least want broken, and what could pay for it?)"
    )
    return trade_summary(report)


def _trade_of(report: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """Return the tickets a `compare` report's candidate fixed and broke: what it traded."""
    old, new = report["baseline"], report["candidate"]
    return frozenset(fixes(old, new)), frozenset(regressions(old, new))


def _shown_trade(
    suite: Any, suite_sha256: str, baseline: Any, run: Any
) -> tuple[frozenset[str], frozenset[str]] | None:
    """Return what a shown run trades against ``baseline`` on ``suite``, or None when the grader refuses it there."""
    try:
        return _trade_of(compare(suite, suite_sha256, baseline, run))
    except RouteGradeError:  # a scenario written for another suite trades nothing on this one
        return None


def trade_summary(report: Mapping[str, Any]) -> str:
    """Return a few lines on what a `compare` report's candidate traded: each ticket fixed and broken, and the totals."""
    old, new = report["baseline"], report["candidate"]
    missed_before = {failure["id"]: failure for failure in old["failures"]}
    missed_now = {failure["id"]: failure for failure in new["failures"]}
    lines = [
        f"fixed {cid}: the baseline sent it to {missed_before[cid]['actual']}, yours to "
        f"{missed_before[cid]['expected']}, as the suite expects"
        for cid in fixes(old, new)
    ]
    lines += [
        f"broke {cid}: the baseline sent it to {missed_now[cid]['expected']}, as the suite expects; yours to "
        f"{missed_now[cid]['actual']}"
        for cid in regressions(old, new)
    ]
    verdict = "the gate passes it" if report["pass"] else "the gate fails it"
    lines.append(
        f"correct routes {old['correct']} -> {new['correct']}, penalty points {old['penalty_points']} -> "
        f"{new['penalty_points']}, urgent misses {old['urgent_misses']} -> {new['urgent_misses']}: {verdict}"
    )
    return "\n".join(lines)


def check_protect_answers(
    answers: Mapping[str, Any], trials: Trials, *, suite_sha256: str, source: str = "", variable: str = "PROTECT"
) -> None:
    """Grade, for each trial ``name: (suite, baseline, candidate)`` that passes, the one id to protect to fail it.

    An answer is a suite id whose protection makes the gate fail the candidate, or ``None`` when
    protecting no single id can (the candidate regressed nothing). Raises `NotImplementedError`
    while an answer is still ``...``, and `AssertionError` saying only how many are wrong;
    ``source`` as in `check_release_predictions`.
    """
    if any(answer is Ellipsis for answer in answers.values()) or set(answers) != set(trials):
        raise NotImplementedError("hint: which ticket did the baseline route right and the candidate wrong?")
    assert typed_out(source, variable), (  # first, so a computed answer never learns whether it was right
        f"type {variable} out (an id such as 't3', or None): computed answers diagnose nothing"
    )
    wrong = []
    for name, (suite, base, run) in trials.items():
        report = compare(suite, suite_sha256, base, run)
        assert report["pass"], f"trial {name} must pass unprotected; it fails: {report['reasons']}"
        answer = answers[name]
        ids = {case["id"] for case in suite["cases"]}
        assert answer is None or answer in ids, f"{name}: answer one suite id, such as 't3', or None, not {answer!r}"
        if answer is None:
            right = not regressions(report["baseline"], report["candidate"])
        else:
            right = not compare(suite, suite_sha256, base, run, protected=[answer])["pass"]
        if not right:
            wrong.append(name)
    assert not wrong, f"{len(wrong)} of your {len(trials)} answers are wrong: compare each ticket in both runs"


def _refuse_computed(source: str, variable: str) -> None:
    assert typed_out(source, variable), (
        f"type {variable} out (True, or a set such as {{2, 3}}): a verdict computed by the gate predicts nothing"
    )


def _check_verdicts(
    predicted: Mapping[str, Any], trials: Mapping[str, tuple[Any, Any, Any, Sequence[str]]], sha: str, hint: str
) -> None:
    if None in predicted.values() or set(predicted) != set(trials):
        raise NotImplementedError(hint)
    wrong = [
        name
        for name, (suite, base, run, protected) in trials.items()
        if failed_conditions(compare(suite, sha, base, run, protected=protected)) != predicted[name]
    ]
    assert not wrong, f"{len(wrong)} of your {len(trials)} predictions are wrong: apply each condition again"


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


#: Where a reply stops, the stages a learner predicts in exercise 5, in the order a reply meets them.
REPLY_STAGES = ("json.loads refuses", "loads_strict refuses", "the contract refuses", "well-formed")

#: One reply for exercise 5: the ticket it answers, and its raw text.
Reply = tuple[str, str]


def _reads(load: Callable[[Any], Any], text: str) -> bool:
    try:
        load(text)
    except ValueError:  # JSONDecodeError and InvalidJSON are both ValueErrors
        return False
    return True


def reply_stage(ticket_id: str, text: str) -> str:
    """Return the first of the `REPLY_STAGES` that refuses a reply to ``ticket_id``, or ``"well-formed"``.

    Plain ``json.loads`` first, then `loads_strict`, then section 10's reply contract,
    `labkit.routing.runs.parse_route_reply` (which keeps an unknown route for the grader to refuse).
    """
    from labkit.routing.runs import parse_route_reply

    if not _reads(json.loads, text):
        return REPLY_STAGES[0]
    if not _reads(loads_strict, text):
        return REPLY_STAGES[1]
    _route, problem = parse_route_reply(ticket_id, text)
    return REPLY_STAGES[2] if problem else REPLY_STAGES[3]


def typed_out(source: str, variable: str) -> bool:
    """Return whether ``source`` last assigns ``variable`` a dict literal of typed-out words, computing nothing.

    ``True`` for an empty ``source`` (no cell to read, as `labkit.course.shortcuts.cell_that_set` returns
    outside IPython). A comprehension, a call or a name anywhere in the value is refused.
    """
    if not source:
        return True
    values = [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)
    ]
    if not values or not isinstance(values[-1], ast.Dict):
        return False
    return all(_typed_value(node) for node in [*values[-1].keys, *values[-1].values])


def _typed_value(node: ast.expr | None) -> bool:
    """Whether a dict key or value is typed out: a constant, or a set of constants such as ``{2, 3}``."""
    if isinstance(node, ast.Set):
        return all(isinstance(element, ast.Constant) for element in node.elts)
    return isinstance(node, ast.Constant)


def check_reply_predictions(
    predicted: Mapping[str, Any], inputs: Mapping[str, Reply], *, source: str, variable: str
) -> dict[str, str]:
    """Grade a prediction of `reply_stage` for each named ``(ticket id, reply)``; return the stages once all are right.

    ``source`` is the cell that set the predictions (the course's `cell_that_set` of ``variable``):
    they must be typed out, not computed by running the loaders. Raises `NotImplementedError` while a
    prediction is still ``None``, and `AssertionError` saying only how many are wrong.
    """
    if None in predicted.values() or set(predicted) != set(inputs):
        raise NotImplementedError("hint: what does each of json.loads, loads_strict and parse_route_reply refuse?")
    unknown = sorted({str(v) for v in predicted.values()} - set(REPLY_STAGES))
    assert not unknown, f"predict one of {list(REPLY_STAGES)} for each reply, not {unknown}"
    assert typed_out(source, variable), f"type {variable} out as words: a stage computed by a loader predicts nothing"
    stages = {name: reply_stage(ticket_id, text) for name, (ticket_id, text) in inputs.items()}
    wrong = [name for name in inputs if predicted[name] != stages[name]]
    assert not wrong, (
        f"{len(wrong)} of your {len(inputs)} predictions are wrong: reread loads_strict's hooks and parse_route_reply"
    )
    return stages
