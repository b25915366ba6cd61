"""What lesson 04's evaluation figures can and cannot show, worded from the figures themselves.

Each function returns a short Markdown text built from a run's results, so a
sentence in the notebook cannot drift from the figure it reads: change a case's
outcome and the sentence changes with it. None of them computes a metric of its
own; they read `labkit.agent.evaluation`'s reports and `labkit.trials`' tables.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from labkit.agent import evaluation as ev
from labkit.agent.runs import SETTINGS, CaseResult
from labkit.errors import LabkitError
from labkit.tables import interval
from labkit.trials import misled_by_one_trace, wilson


def _ids(results: Sequence[CaseResult]) -> str:
    return ", ".join(f"`{r.case.id}`" for r in results) or "none"


def captured_columns(report: dict[str, Any], results: Sequence[CaseResult]) -> str:
    """Say what the captured column of the side-by-side table measured, and which of its rates measured nothing.

    ``report`` is `labkit.agent.evaluation.evaluation_report` of the captured run and
    ``results`` that run's case results. It names the cases correct without reaching
    the model (refused before it), the ones correct after it, the ones that ended
    ``ok`` with a wrong answer, and the safety rates with nothing eligible.
    """
    tools, safe, ops = report["tools"], report["safety"], report["operations"]
    decline = {c["route"]: c for c in report["routing"]["per_class"]}["out_of_scope"]
    correct = [r for r in results if ev.outcome_correct(r)]
    refused = [r for r in correct if r.status == "refused"]
    reached = [r for r in correct if r.status != "refused"]
    unfixed = [r for r in reached if r.case.expected_final is None]
    ok_wrong = [r for r in results if r.status == "ok" and not ev.outcome_correct(r)]
    routes = sorted({r.route or ev.INVALID for r in ok_wrong})
    vacuous = [
        name
        for name, eligible in (
            ("the unauthorized-call rate", safe["tool_calls"]),
            ("the declines with data-tool calls", safe["declines"]),
        )
        if not eligible
    ]
    profile_passes = [r for r in unfixed if r.route == "profile"]
    lines = [
        f"- **Task outcome {len(correct)}/{len(results)}: only {len(reached)} of them reached the model.** "
        f"{len(refused)} ({_ids(refused)}) were refused before any model call. They count as correct in both "
        f"columns. {len(reached)} reached the model ({_ids(reached)})."
        + (
            f" {_ids(unfixed)} {'fixes' if len(unfixed) == 1 else 'fix'} no answer, so the check saw "
            "only status and route."
            if unfixed
            else ""
        )
        + (
            f" {_ids(profile_passes)} passed because the router said `profile`. The profile node's regex "
            "did the rest, with no further model call."
            if profile_passes
            else ""
        ),
        f"- **{'No proposal in this run was a valid tool call' if not tools['valid_arguments'] else 'Tool calls'}.** "
        f"Its arguments passed the tool's schema in {tools['valid_arguments']} of {tools['tool_proposals']} "
        f"proposals; the application ran {safe['tool_calls']} data-tool calls for it and it routed "
        f"{decline['sent']} questions `out_of_scope`."
        + (
            f" So {' and '.join(vacuous)} read `{ev.NOT_APPLICABLE}`: nothing was eligible, they measured "
            "nothing. Exercise 2 counts why."
            if vacuous
            else ""
        ),
    ]
    structured = {c["route"]: c for c in report["routing"]["per_class"]}["structured"]
    bad = _right_tool_bad_arguments(results)
    lines.append(
        f"- **Small n; a tool named is not a tool run.** Tool-name accuracy "
        f"{tools['first_tool_correct']}/{tools['tool_cases']} counts the first tool the model named, whether or "
        f"not it ran: {bad} of its {tools['first_tool_correct']} right first tools had invalid arguments, "
        f"so {'none of those tools ran' if bad == tools['first_tool_correct'] else 'those tools never ran'}. "
        f"Route `structured` precision {structured['correct']}/{structured['sent']} rests on "
        f"{structured['sent']} cases."
    )
    if ok_wrong:
        lines.append(
            f"- **Status `ok` is not correct.** {len(ok_wrong)} cases ended `ok` with a wrong answer, "
            f"routed {', '.join(f'`{r}`' for r in routes)} ({_ids(ok_wrong)}). "
            + (
                "The profile node set that status itself: it answers from the profile, and no validator "
                "runs on that route."
                if routes == ["profile"]
                else "Each route's node sets its own status; only a count's answer meets the validator."
            )
        )
    if ops:
        tail = (
            "; with so few cases, p95 is interpolated between the two slowest: one slow case, not a measured tail"
            if 0.95 * (ops["cases"] - 1) >= ops["cases"] - 2
            else ""
        )
        lines.append(
            f"- **Latency and cost** are over the {ops['cases']} cases that called the model, model time only{tail}."
        )
    return "\n".join(lines)


def _right_tool_bad_arguments(results: Sequence[CaseResult]) -> int:
    """Count tool cases whose first call named the right tool with arguments its schema refused."""
    count = 0
    for r in results:
        calls = [
            e
            for e in (r.state or {}).get("events", [])
            if e["kind"] in ("tool_returned", "tool_refused", "arguments_invalid")
        ]
        first = ev.FIRST_TOOL.get(r.case.kind)
        if calls and r.route == r.case.expected_route and calls[0]["tool"] == first:
            count += calls[0]["kind"] == "arguments_invalid"
    return count


def authored_columns(report: dict[str, Any], results: Sequence[CaseResult]) -> str:
    """Say why the authored column's rates measure no model: the course wrote its replies, its one bad argument too."""
    outcome, tools = report["task_outcome"], report["tools"]
    invalid = [
        (r.case.id, event)
        for r in results
        for event in (r.state or {}).get("events", [])
        if event["kind"] == "arguments_invalid"
    ]
    refused_args = "; ".join(
        f"`{case}` proposed `{event['tool']}` with `{event['arguments']}`, refused before the tool ran"
        for case, event in invalid
    )
    injected = [r for r in results if r.case.kind == "adversarial" and r.status != "refused"]
    injection = (
        f" The adversarial prompt {_ids(injected)} passes because the course wrote replies that ignore its "
        "request for the restricted scope: that shows the validator accepts only the caller's scope, not that "
        "a model resists a prompt injection (text in a question that tries to override the system's rules)."
        if injected
        else ""
    )
    safe = report["safety"]
    by_design = (
        f" Two safety rates are zero by design, for any model: the unauthorized-call rate "
        f"{safe['unauthorized_calls']}/{safe['tool_calls']}, since a tool only reads the caller's own scope, and "
        f"the declines with data-tool calls {safe['declines_with_data_tool_calls']}/{safe['declines']}, since the "
        "graph sends a decline to a node with no tools."
        if safe["tool_calls"] and safe["declines"]
        else ""
    )
    return (
        f"- **Authored: {outcome['correct']}/{outcome['cases']} by construction.** The course wrote these "
        "replies, so every rate in this column tests the application's code, not a model. "
        f"Argument validity {tools['valid_arguments']}/{tools['tool_proposals']}: "
        f"{refused_args or 'none refused'}; the course wrote that proposal to show a refused "
        "argument fed back as an observation." + injection + by_design
    )


def why_no_valid_call(results: Sequence[CaseResult], run: Any, report: dict[str, Any]) -> str:
    """Count what each failed model reply shows: cut off, parsed with the wrong arguments, or a wrong route.

    ``run`` is the recorded run (for each reply's ``finish_reason``) and ``report``
    its `labkit.agent.evaluation.evaluation_report`. Each count says whose doing it
    shows: a reply (agent or router) cut off at ``max_tokens``; arguments holding an ``answer`` where
    the tool needs an ``intent`` or ``rows``, let through by a shared schema that
    requires no field; a wrong route in valid JSON; an unparsed reply holding a raw
    control character (the symptom; the run does not show its source). It does not split the
    blame between the model, the cap, the grammar and the schema: the run does not measure that.
    """
    refused = Counter(
        (event["tool"], json.dumps(event["arguments"]))
        for result in results
        for event in (result.state or {}).get("events", [])
        if event["kind"] == "arguments_invalid"
    )
    unparsed = ev.unparsed_replies(list(results), run)
    agent_cut = sum(row["step"] == "agent" and row["finish_reason"] == "length" for row in unparsed)
    router_bad = sum(row["step"] == "route" for row in unparsed)
    router_cut = sum(row["step"] == "route" and row["finish_reason"] == "length" for row in unparsed)
    control = sum(row["strict JSON parser"].startswith("Invalid control character") for row in unparsed)
    labels, matrix = report["routing"]["labels"], report["routing"]["matrix"]
    routes = [i for i, label in enumerate(labels) if label != ev.INVALID]
    misrouted = sum(matrix[i][j] for i in routes for j in routes if i != j)
    common = "; ".join(f"`{tool}` with `{args}` ({n} times)" for (tool, args), n in refused.most_common(2))
    with_answer = sum(n for (_, args), n in refused.items() if "answer" in json.loads(args))
    tools = report["tools"]
    return (
        f"**Why {tools['valid_arguments']} of {tools['tool_proposals']} proposals were valid.** "
        f"{agent_cut} agent {'reply was' if agent_cut == 1 else 'replies were'} cut off at the cap of "
        f"`max_tokens={SETTINGS['max_tokens']}` tokens. "
        f"{sum(refused.values())} parsed as JSON but failed the tool's schema. The most frequent: {common or 'none'}. "
        f"{with_answer} of them put an `answer` where the tool's arguments go. The shared schema requires no field, "
        "so the server let that through. "
        f"Routing went wrong too. {misrouted} questions got a wrong route in valid JSON. "
        f"{router_bad} router replies did not parse at all. "
        + (f"{router_cut} of them were cut off at the same cap. " if router_bad else "")
        + (
            f"{'All' if control == len(unparsed) else f'{control} of the'} {len(unparsed)} unparsed replies hold a "
            "raw control character, which the strict "
            "JSON parser refuses. That is the symptom; the run does not show whether the model or the server's "
            "grammar put it there. "
            if control
            else ""
        )
        + "The token cap, the shared schema and the pinned server are the course's choices. This run cannot say how "
        "much of the failure is the model's and how much the cap's, the grammar's or the schema's."
    )


def repeated_trials(passes: Mapping[str, Sequence[bool]]) -> str:
    """Say what the repeated trials show per verdict, with the Wilson interval each verdict's n allows."""
    never = [case for case, seen in passes.items() if not any(seen)]
    always = [case for case, seen in passes.items() if all(seen)]
    misled = misled_by_one_trace(passes)
    parts = []
    for cases, failed in ((never, True), (always, False)):
        if cases:
            n = len(passes[cases[0]])
            low, high = wilson(0 if failed else n, n)
            allows = f"a pass rate up to {high:.2f}" if failed else f"a pass rate as low as {low:.2f}"
            lean = (high < 0.5) if failed else (low > 0.5)
            reading = (
                f"at 95% confidence each {'fails' if failed else 'passes'} more often than not at this setting, "
                "and may still "
                f"{'pass' if failed else 'fail'} sometimes"
                if lean
                else "n is too small to say even which verdict is the more frequent"
            )
            parts.append(
                f"{', '.join(f'`{c}`' for c in cases)} {'failed' if failed else 'passed'} all {n} trials: "
                f"with n = {n} the Wilson interval {interval(low, high)} still allows {allows}, so {reading}."
            )
    if misled:
        shown = ", ".join(f"`{c}` ({sum(passes[c])}/{len(passes[c])})" for c in misled)
        chances = ", ".join(
            f"{min(sum(passes[c]), len(passes[c]) - sum(passes[c])) / len(passes[c]):.0%}" for c in misled
        )
        parts.append(
            f"The trials disagree on {shown}. A single trace hides that. One trace picked at random would "
            f"have shown the rarer verdict with chance {chances} here."
        )
    return " ".join(parts) or "No case was repeated."


LAYER_ROWS = {
    "identity": "the task-outcome row (a refusal expected or not)",
    "route": "the route rows and the confusion matrix below",
    "tool call": "argument validity and the `arguments_invalid` events in the trace",
    "answer": "grounding, and the validator's `answer_rejected` event",
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


def where_it_broke(results: Sequence[CaseResult]) -> str:
    """Say, for each layer, how many failing cases broke there first and which row of the report shows it."""
    broke: dict[str, list[CaseResult]] = {}
    for r in results:
        layer = first_failed_layer(r)
        if layer is not None:
            broke.setdefault(layer, []).append(r)
    if not broke:
        return "- **Where it broke first:** no case failed."
    parts = [
        f"{len(broke[layer])} at the {layer} ({_ids(broke[layer])}), shown by {LAYER_ROWS[layer]}"
        for layer in LAYER_ROWS
        if layer in broke
    ]
    total = sum(len(v) for v in broke.values())
    return (
        f"- **What this evaluation can tell: where each failing case broke first.** Of {total} failing cases, "
        + "; ".join(parts)
        + ". Every failure is flagged by the task-outcome row and by the row of its layer; a rate over a layer "
        "that no case reached measures nothing."
    )


def what_the_columns_show(reports: Sequence[dict[str, Any]], results: Mapping[str, Sequence[CaseResult]]) -> str:
    """Return the notes on the side-by-side table: each captured column's, then each authored column's.

    ``reports`` are `labkit.agent.evaluation.evaluation_report` results and ``results``
    the case results of each run, keyed by run id.
    """
    notes = ["**What the columns can and cannot show.**"]
    notes += [where_it_broke(results[report["run"]]) for report in reports if report["origin"] == "captured"]
    for origin, note in (("captured", captured_columns), ("authored", authored_columns)):
        notes += [note(report, results[report["run"]]) for report in reports if report["origin"] == origin]
    return "\n".join(notes)


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
