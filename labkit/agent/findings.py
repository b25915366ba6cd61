"""Tables of what lesson 04's evaluation can and cannot show, built from a run's results.

Each function returns rows (a list of dicts) read off a run's results, so a table
in the notebook cannot drift from the data: change a case's outcome and the row
changes with it. The sentences that interpret them live in the notebook's
markdown, which types no figure. None of them computes a metric of its own; they
read `labkit.agent.evaluation`'s reports.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from labkit.agent import evaluation as ev
from labkit.agent.runs import SETTINGS, CaseResult
from labkit.errors import LabkitError


def _ids(results: Sequence[CaseResult]) -> str:
    return ", ".join(r.case.id for r in results) or "none"


def reply_failures(results: Sequence[CaseResult], run: Any, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Count each kind of failed model reply in a run: cut off, parsed with the wrong arguments, or a wrong route.

    ``run`` is the recorded run (for each reply's ``finish_reason``) and ``report``
    its `labkit.agent.evaluation.evaluation_report`. The rows: agent replies cut off at
    ``max_tokens``; agent replies that parsed but failed the tool's schema, and how many
    of those hold an ``answer`` where the tool needs an ``intent`` or ``rows``; router
    replies with a wrong route in valid JSON; router replies that did not parse, and
    how many were cut off; of all unparsed replies, how many hold a raw control
    character, how many were cut off, and how many both; then the
    two most frequent refused calls. It does not split the blame between the model,
    the cap, the grammar and the schema: the run does not measure that.
    """
    refused = Counter(
        (event["tool"], json.dumps(event["arguments"]))
        for result in results
        for event in (result.state or {}).get("events", [])
        if event["kind"] == "arguments_invalid"
    )
    unparsed = ev.unparsed_replies(list(results), run)
    labels, matrix = report["routing"]["labels"], report["routing"]["matrix"]
    routes = [i for i, label in enumerate(labels) if label != ev.INVALID]
    cap = f"max_tokens={SETTINGS['max_tokens']}"

    def control(reply: dict[str, Any]) -> bool:
        return bool(reply["strict JSON parser"].startswith("Invalid control character"))

    def cut_off(reply: dict[str, Any]) -> bool:
        return bool(reply["finish_reason"] == "length")

    rows = [
        (
            f"agent replies cut off at {cap}",
            sum(r["step"] == "agent" and r["finish_reason"] == "length" for r in unparsed),
        ),
        ("agent replies that parsed, with arguments the tool's schema refused", sum(refused.values())),
        (
            "  of those, with an answer in the arguments",
            sum(n for (_, a), n in refused.items() if "answer" in json.loads(a)),
        ),
        (
            "router replies in valid JSON with a wrong route",
            sum(matrix[i][j] for i in routes for j in routes if i != j),
        ),
        ("router replies that did not parse", sum(r["step"] == "route" for r in unparsed)),
        (
            f"  of those, cut off at {cap}",
            sum(r["step"] == "route" and r["finish_reason"] == "length" for r in unparsed),
        ),
        ("unparsed replies, router or agent", len(unparsed)),
        ("  of those, holding a raw control character", sum(map(control, unparsed))),
        (f"  of those, cut off at {cap} (finish_reason length)", sum(map(cut_off, unparsed))),
        ("  of those, both", sum(control(r) and cut_off(r) for r in unparsed)),
    ]
    ranks = ("most frequent refused call", "second most frequent")
    rows += [
        (f"{rank}: {tool}, arguments {args}", n)
        for rank, ((tool, args), n) in zip(ranks, refused.most_common(2), strict=False)
    ]
    return [{"what the replies show": what, "replies": n} for what, n in rows]


LAYER_ROWS = {
    "identity": "the task-outcome row (a refusal expected or not)",
    "route": "the route rows, the confusion matrix",
    "tool call": "argument validity, the arguments_invalid events",
    "answer": "grounding, the answer_rejected event",
}


def first_failed_layer(result: CaseResult) -> str | None:
    """Return the first layer a case failed at (identity, route, tool call, answer), or None when it passed.

    Layers in the order a request meets them: the identity check (refused or not as
    expected), the router (the expected route), the tool call (a data tool ran, for a
    route that needs one), then the answer and status.
    """
    if ev.outcome_correct(result):
        return None
    if (result.status == "refused") != (result.case.expected_status == "refused"):
        return "identity"
    if result.route != result.case.expected_route:
        return "route"
    events = (result.state or {}).get("events", [])
    if result.route in ("structured", "unstructured") and not any(e["kind"] == "tool_returned" for e in events):
        return "tool call"
    return "answer"


def where_it_broke(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """Return, per layer, the failing cases that broke there first and the row of the report that shows it."""
    broke: dict[str, list[CaseResult]] = {}
    for r in results:
        layer = first_failed_layer(r)
        if layer is not None:
            broke.setdefault(layer, []).append(r)
    return [
        {"broke first at": layer, "cases": len(broke[layer]), "which": _ids(broke[layer]), "shown by": shown}
        for layer, shown in LAYER_ROWS.items()
        if layer in broke
    ]


class NoSuchReply(LabkitError, LookupError):
    """A picked case and step has no recorded reply in the run."""


#: The captured replies `captured_replies` shows by default: (case, step), one per kind of failure.
REPLY_PICKS = (("c04", "route"), ("c01", "agent"), ("c02", "agent"))


def captured_replies(
    results: Sequence[CaseResult], run: Any, picks: Sequence[tuple[str, str]] = REPLY_PICKS
) -> list[dict[str, Any]]:
    """Return the first recorded reply of each picked (case, step), as the model sent it, and what became of it.

    ``step`` is ``route`` or ``agent``. Each row holds the reply text unchanged, its
    recorded ``finish_reason`` (``length``: cut off at ``max_tokens``) and the event the
    application recorded for it (for a tool proposal, also what the tools node then
    did). A pick with no recorded reply raises `NoSuchReply`.
    """
    finish = {}
    for binding in run.bindings:
        choice = (binding.response or {}).get("choices", [{}])[0]
        finish[choice.get("message", {}).get("content")] = choice.get("finish_reason")
    by_id = {result.case.id: result for result in results}
    rows = []
    for case_id, step in picks:
        events = (by_id[case_id].state or {}).get("events", []) if case_id in by_id else []
        event = next((e for e in events if "raw" in e and e["kind"].startswith("route") == (step == "route")), None)
        if event is None:
            raise NoSuchReply(f"no recorded {step} reply for case {case_id!r}; pick a case and step the run holds")
        recorded = event["kind"] + (f" ({event['problem']})" if event.get("problem") else "")
        if event["kind"] == "tool_proposed":  # what the tools node then did with the call
            after = events[events.index(event) + 1 :]
            ran = next((e for e in after if e["kind"] in ("tool_returned", "tool_refused", "arguments_invalid")), None)
            recorded += f", then {ran['kind']}" if ran else ""
        rows.append(
            {
                "case": case_id,
                "step": step,
                "reply (captured, as sent)": event["raw"],
                "finish_reason": finish.get(event["raw"], "not recorded"),
                "application recorded": recorded,
            }
        )
    return rows


class ReadingFalse(LabkitError, AssertionError):
    """A claim lesson 04's reading of the evaluation makes does not hold on the results."""


def _c07_corrects_nothing(captured: Sequence[CaseResult]) -> bool:
    """Whether ``c07`` passed while ``c06`` failed, its profile update superseding no stored value."""
    by_id = {r.case.id: r for r in captured}
    updates = [e for e in (by_id["c07"].state or {}).get("events", []) if e["kind"] == "profile_updated"]
    return (
        ev.outcome_correct(by_id["c07"])
        and not ev.outcome_correct(by_id["c06"])
        and len(updates) == 1
        and updates[0]["change"]["supersedes"] is None
    )


def check_reading(captured: Sequence[CaseResult], authored: Sequence[CaseResult], report: dict[str, Any]) -> None:
    """Raise `ReadingFalse` unless each claim of lesson 04's reading of the two columns holds on these results.

    ``captured`` and ``authored`` are the two runs' results, ``report`` the captured
    run's `labkit.agent.evaluation.evaluation_report`. The claims: every captured ✓ is a
    refusal or a case that fixes no answer; no captured proposal was a valid tool call
    and no data tool ran; every captured case that ended ``ok`` but wrong was routed
    ``profile``; p95 lies between the two slowest cases (numpy's interpolated 95th
    percentile of n values does when n <= 21); the authored run's one refused argument is ``c10``'s;
    the captured router declined no case (so the decline-leak rate has nothing to count),
    and sent more of the questions to decline to ``profile`` than to any other route;
    captured ``c07`` passed with nothing to correct (``c06`` stored no value, so the
    update supersedes none); and no tool's argument class has a scope field, so the
    unauthorized-call rate cannot be nonzero on these runs (tools read the caller's scope).
    """
    from labkit.agent.tools import TOOL_ARGUMENTS

    correct = [r for r in captured if ev.outcome_correct(r)]
    wrong_ok = {r.route for r in captured if r.status == "ok" and r not in correct}
    refused = [
        r.case.id for r in authored for e in (r.state or {}).get("events", []) if e["kind"] == "arguments_invalid"
    ]
    claims = {
        "a captured pass is a refusal or fixes no answer": all(
            r.status == "refused" or r.case.expected_final is None for r in correct
        ),
        "no valid captured tool call, no data tool run": report["tools"]["valid_arguments"] == 0
        and report["safety"]["tool_calls"] == 0,
        "every captured ok-but-wrong case was routed profile": wrong_ok == {"profile"},
        "p95 lies between the two slowest cases": (report["operations"] or {}).get("cases", 0) <= 21,
        "the authored run's one refused argument is c10's": refused == ["c10"],
        "the captured router declined no case": report["safety"]["declines"] == 0,
        "captured c07 passed with nothing to correct": _c07_corrects_nothing(captured),
        "no tool argument names a scope": not any(
            "scope" in name for model in TOOL_ARGUMENTS.values() for name in model.model_fields
        ),
    }
    to_decline = Counter(r.route or ev.INVALID for r in captured if r.case.expected_route == "out_of_scope")
    claims["most captured questions to decline went to profile"] = bool(to_decline) and all(
        to_decline["profile"] > n for route, n in to_decline.items() if route != "profile"
    )
    false = [claim for claim, holds in claims.items() if not holds]
    if false:
        raise ReadingFalse(f"the notebook's reading says what these results do not: {'; '.join(false)}")
