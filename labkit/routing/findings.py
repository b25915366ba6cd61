"""Lesson 06's findings in words: the sentences a notebook renders from the gate's own figures.

Each function takes what the gate computed (summaries, a report, a command's result) and
returns one Markdown paragraph whose every figure comes from its arguments, so a sentence
cannot drift from the output beside it. None of them grades anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from labkit.routing.grader import ROUTES, URGENT, route_slices, ticket_changes
from labkit.routing.practice import REPLY_STAGES


def _listed(ids: Iterable[str]) -> str:
    return ", ".join(ids) or "none"


def penalty_condition_decides(penalties: Mapping[str, int]) -> bool:
    """Return whether condition 2 (penalty points do not rise) can fail a run that passes conditions 1 and 3.

    With no urgent miss, a candidate's points are the weights of its non-urgent misses. When every
    non-urgent route weighs the same ``w`` and `urgent_support` weighs at least ``w``, those points are
    at most ``w`` times the baseline's misses, which is at most the baseline's points: condition 2
    is then implied by the other two and decides nothing.
    """
    others = {weight for route, weight in penalties.items() if route != URGENT}
    return len(others) > 1 or penalties[URGENT] < max(others)


def penalty_condition_note(penalties: Mapping[str, int]) -> str:
    """Say whether the penalty condition can decide anything under these weights, and when it would start to."""
    shown = ", ".join(f"{route} {weight}" for route, weight in penalties.items())
    if penalty_condition_decides(penalties):
        return (
            f"With these weights ({shown}), condition 2 can fail a candidate that passes conditions 1 and 3: "
            "a few costly misses can outweigh more cheap fixes."
        )
    cheap = min(penalties.values())
    return (
        f"With these weights ({shown}), condition 2 never decides anything on its own. A candidate with no "
        "urgent miss and no fewer correct routes cannot have more penalty points: each of its misses costs "
        f"{cheap}, and each of the baseline's costs at least {cheap}. So here the urgent rule does the work that one accuracy number cannot. "
        "Condition 2 can start to decide in two ways: one non-urgent route weighs more than another, or "
        "urgent_support weighs less than a non-urgent route (then a baseline's cheap urgent miss can be traded "
        "for a dearer ordinary one). Exercise 1 has a row where billing weighs 3: work out what condition 2 "
        "does there."
    )


def accuracy_hides_the_outage(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Say how the candidate's correct routes and penalty points moved, and which tickets changed.

    ``old`` and ``new`` are the baseline's and the candidate's `score` summaries.
    """
    changes = ticket_changes(old, new)
    urgent = [f["id"] for f in new["failures"] if f["expected"] == URGENT]
    outage = f": it misroutes {_listed(urgent)}, an outage" if urgent else ""
    return (
        f"The candidate gets {new['correct']} of {new['cases']} right against the baseline's {old['correct']}, "
        f"yet its penalty points go from {old['penalty_points']} to {new['penalty_points']}{outage}. "
        f"Ticket by ticket, the runs differ only on {_listed(changes['fixed'])} (fixed by the candidate) and "
        f"{_listed(changes['broke'])} (broken)."
    )


def where_the_points_went(report: Mapping[str, Any], matrix: Any) -> str:
    """Say which route's slice carries the candidate's penalty points, and the precision of the queue its misses went to.

    ``matrix`` is the candidate's `route_confusion` (rows expected, columns predicted).
    """
    slices = route_slices(report)
    costliest = str(slices["candidate_points"].idxmax())
    row = slices.loc[costliest]
    text = (
        f"The `{costliest}` slice is {row['cases']} of the {slices['cases'].sum()} tickets and carries "
        f"{row['candidate_points']} of the candidate's {report['candidate']['penalty_points']} penalty points: "
        f"the candidate routed {row['candidate_right']} of its {row['cases']} right, the baseline "
        f"{row['baseline_right']}."
    )
    wrong = [route for route in ROUTES if route != costliest and matrix.loc[costliest, route]]
    for route in wrong:
        column = matrix[route]
        count = int(matrix.loc[costliest, route])
        misses = "Its miss sits" if count == 1 else f"Its {count} misses sit"
        text += (
            f" {misses} in the `{costliest}` row, `{route}` column; down that column the candidate sent "
            f"{column.sum()} tickets to {route}, {column[route]} of which belonged there: a {route} precision "
            f"of {column[route]}/{column.sum()}, a count on {column.sum()} tickets."
        )
    return text


def refused_not_rejected(gated: Any, malformed: Sequence[Any], run: Mapping[str, Any], suite: Mapping[str, Any]) -> str:
    """Say what the gate's exit code means for a run with malformed replies: no verdict, and a rate to report.

    ``gated`` is the `GateCommand` that graded the run; ``malformed`` the replies `routing_run` could not read;
    ``run`` the run it built from the readable ones; ``suite`` the suite whose expected routes count them right.
    """
    if gated.exit_code != 1:
        return f"The gate graded this run: exit code {gated.exit_code} means *{gated.meaning}*."
    expected = {case["id"]: case["expected"] for case in suite["cases"]}
    readable = run["predictions"]
    right = [p["id"] for p in readable if expected.get(p["id"]) == p["route"]]
    broke = "; ".join(f"{bad.id}: {bad.problem}" for bad in malformed)
    return (
        f"The gate did **not** reject this model: it refused to grade the run. Exit code {gated.exit_code} means "
        f"*{gated.meaning}*; a failed rule would have been exit code 2. The run has no prediction for "
        f"{_listed(bad.id for bad in malformed)}, whose reply broke the reply contract ({broke}). Of its "
        f"{len(readable)} well-formed replies, {len(right)} name{'s' * (len(right) == 1)} "
        f"the expected route ({_listed(right)}). Filling the gap with the expected route would flatter the run; filling "
        "it with a guess would invent model output. The honest report keeps the malformed-reply rate "
        f"({len(malformed)} of {len(readable) + len(malformed)} replies here) and, once a run is complete, the "
        "release rule."
    )


def followed_step(
    suite: Mapping[str, Any],
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    ticket: str,
    step: int,
    step_route: str,
    rival: str | None = None,
) -> str:
    """Say where one ticket went under each prompt, and whether the candidate's answer follows its own step.

    ``rival`` names another step that a reader could also say ``ticket`` meets (for t8, step 3's "ask what
    something costs"); when given, a reply against ``step`` is reported as a reading of the steps, not a fact.

    Where it does not, the candidate's other fixes that do send a ticket to ``step_route`` are named as
    consistent with the step (consistent, not caused: one reply per ticket cannot show a cause).

    ``old`` and ``new`` are the runs under the baseline and candidate prompts; ``step`` is the candidate's step
    that, read by a person, sends ``ticket`` to ``step_route``. A ticket with no readable reply is said so.
    """
    expected = next(case["expected"] for case in suite["cases"] if case["id"] == ticket)
    routes = [_route(run, ticket) for run in (old, new)]
    before, after = (route or "no readable reply" for route in routes)
    if before == after:
        text = f"The model sent {ticket} to {after} under both prompts."
    else:
        text = f"The model sent {ticket} to {before} under the baseline prompt and to {after} under the candidate."
    if routes[1] == step_route:
        return text + f" Under the candidate it followed step {step}; the suite expects {expected}."
    if routes[1] == expected:
        if rival is None:
            text += (
                f" So the candidate's reply for {ticket} does not follow its own step {step}, which says {step_route}."
            )
        else:
            text += (
                f" If {ticket} meets step {step} ({step_route}), the candidate's reply does not follow its own"
                f" steps; if it meets only {rival}, it does. Which step {ticket} meets is a reading, not a fact,"
                f" so {ticket} counts as fixed only under the suite's label."
            )
        consistent = [
            case["id"]
            for case in suite["cases"]
            if case["expected"] == step_route == _route(new, case["id"]) != _route(old, case["id"])
        ]
        if consistent:
            text += f" Its fix of {_listed(consistent)} ({step_route}) is consistent with step {step}."
        return text
    return text + f" Under the candidate it followed neither step {step} ({step_route}) nor the suite ({expected})."


def _route(run: Mapping[str, Any], ticket: str) -> str | None:
    return next((p["route"] for p in run["predictions"] if p["id"] == ticket), None)


def _split(changes: Mapping[str, Any], *, floor: bool = False) -> str:
    fixed, broke = len(changes["fixed"]), len(changes["broke"])
    differ = fixed + broke
    reading = (
        "no evidence of a difference by the sign test" if changes["no_evidence"] else "beyond what chance explains"
    )
    tickets = f"{differ} ticket{'s' * (differ != 1)}"
    floor_note = f"; {tickets} can give no p below {min(1.0, 2 * 0.5**differ):.2f}" if floor and differ < 6 else ""
    return (
        f"a {fixed}-{broke} split on the {tickets} exactly one of them gets right, "
        f"{reading} (p = {changes['p_value']:.2f}{floor_note})"
    )


def prompt_change_verdict(
    report: Mapping[str, Any],
    runs: Iterable[Mapping[str, Any]],
    *,
    constants: Iterable[Mapping[str, Any]] = (),
) -> str:
    """Read a gated prompt change: what failed, whether anything regressed, the routes the model ever chose.

    ``runs`` are every captured run whose routes count towards "the routes the model chose".
    ``constants`` are `compare` reports of a `constant_run` (the candidate) against the same
    baseline prompt: each is set beside the candidate prompt, and its own verdict is told.
    """
    old, new = report["baseline"], report["candidate"]
    changes = ticket_changes(old, new)
    chosen = [p["route"] for run in runs for p in run["predictions"]]
    verdict = "passes" if report["pass"] else "fails: " + "; ".join(report["reasons"])
    no_worse = new["correct"] >= old["correct"] and new["penalty_points"] <= old["penalty_points"]
    text = (
        f"The candidate prompt gets {new['correct']} of {new['cases']} right against {old['correct']}, with "
        f"{new['penalty_points']} penalty points against {old['penalty_points']}, and it {verdict}."
    )
    if no_worse and not changes["broke"] and new["urgent_misses"]:
        text += (
            f" This is not a regression: it broke no ticket (it fixed {_listed(changes['fixed'])}). It fails the "
            f"absolute condition, no urgent miss at all, which the baseline prompt fails too "
            f"({old['urgent_misses']} urgent misses)."
        )
    text += f" Its gain over the baseline prompt is {_split(changes, floor=True)}."
    used = sorted(set(chosen))
    if len(used) <= 2:
        text += (
            f" Neither prompt routes in any real sense: in all {len(chosen)} well-formed replies captured from "
            f"this model it chose only {' or '.join(used)}."
        )
    passing = []
    for gated in constants:
        const = gated["candidate"]
        text += (
            f" The constant run {const['label']!r} gets {const['correct']} right with "
            f"{const['penalty_points']} points and {const['urgent_misses']} urgent misses."
        )
        if const["correct"] < new["correct"] and const["penalty_points"] >= new["penalty_points"]:
            ahead = new["correct"] - const["correct"]
            text += (
                f" The candidate prompt is ahead of it by {ahead} right route{'s' * (ahead != 1)}: "
                f"{_split(ticket_changes(const, new))}."
            )
        if gated["pass"]:
            passing.append(const["label"])
    if passing:
        text += (
            f" Put in as the candidate against the baseline prompt, {_listed(repr(p) for p in passing)} "
            "passes the gate: a rule that only asks for no worse than the baseline is only as good as the baseline."
        )
    return text


def where_replies_stop(inputs: Mapping[str, tuple[str, str]], stages: Mapping[str, str]) -> str:
    """Say where each reply of exercise 4 stopped, what plain ``json.loads`` would have let through, and the rate.

    ``inputs`` maps a name to ``(ticket id, reply)``; ``stages`` maps it to
    `labkit.routing.practice.reply_stage` of that reply.
    """
    import json

    def named(stage: str) -> list[str]:
        return [name for name in inputs if stages[name] == stage]

    plain, strict, contract, fine = (named(stage) for stage in REPLY_STAGES)
    quiet = "; ".join(f"*{name}* as `{json.loads(inputs[name][1])!r}`" for name in strict)
    malformed = len(inputs) - len(fine)
    return (
        f"Plain `json.loads` refused {len(plain)} ({_listed(plain) or 'none'}) itself. `loads_strict` refused "
        f"{len(strict)} more, which plain `json.loads` would have read quietly: {quiet or 'none'}. "
        f"The reply contract refused {len(contract)} that parse ({_listed(contract) or 'none'}): valid JSON, but not "
        f"a reply holding exactly the ticket's id and a route as text. Well-formed: {len(fine)} "
        f"({_listed(fine) or 'none'}); a well-formed reply can still "
        "name a queue that does not exist, which the grader refuses (section 8). Had a model sent these replies, "
        f"{malformed} of {len(inputs)} would count as malformed: the malformed-reply rate to report beside the gate."
    )
