"""Lesson 05's route-prediction exercise: replies written for it, and the check of a learner's predictions.

`ROUTE_REPLIES` are raw replies written by the course, never a model's. `route_taken` sends one
of them through the lesson's graph in place of the model and returns where the request ended.
`check_route_predictions` grades a learner's predictions without printing the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from labkit.system.contract import ScriptedModel
from labkit.system.golden import GOLDEN
from labkit.system.policy import PolicyIndex
from labkit.system.workflow import MinimalSystem, read_trace_lines

#: The question every reply answers, and the team that asks it.
QUESTION, TEAM = GOLDEN[0].question, GOLDEN[0].team
#: Raw replies written for the exercise (not by a model), each named as the exercise names it.
ROUTE_REPLIES = {
    "another intent": '{"kind": "tool_call", "tool_args": {"intent": "track_order"}}',
    "a team in the arguments": (
        '{"kind": "tool_call", "tool_args": {"intent": "get_refund", "team": "team-b"}}'
    ),
    "cites page 2": (
        '{"kind": "answer", "text": "Within 30 days.", "citation_ids": ["refund_policy.pdf#p2"]}'
    ),
    "a decline with a count": '{"kind": "insufficient_evidence", "tool_args": {"intent": "get_refund"}}',
    "an empty list": (
        '{"kind": "tool_call", "citation_ids": [], "tool_args": {"intent": "cancel_order"}}'
    ),
}


def route_taken(raw: str, index: PolicyIndex, trace_path: str | Path) -> tuple[str, str]:
    """Send the raw reply ``raw`` through the graph for `QUESTION`; return (final status, last node).

    The last node is the trace line's last step: ``"check"`` when the request ended there,
    ``"tool"`` when the count tool ran.
    """
    system = MinimalSystem(ScriptedModel(raw), index=index, trace_path=trace_path)
    result = system.ask(QUESTION, TEAM, system.new_session("route"))
    last = read_trace_lines(system.trace_path)[-1]["trace"][-1]["step"]
    return str(result["status"]), str(last)


def check_route_predictions(
    predicted: Mapping[str, Any], index: PolicyIndex, trace_path: str | Path
) -> None:
    """Grade predictions ``{reply name: (final status, last node)}`` for every `ROUTE_REPLIES` reply.

    Raises `NotImplementedError` while a prediction is ``None`` or a reply is left out, and
    `AssertionError` saying only how many predictions are wrong: the statuses would give the
    answers away.
    """
    if set(predicted) != set(ROUTE_REPLIES) or None in predicted.values():
        raise NotImplementedError("hint: predict a (status, last node) pair for every reply")
    wrong = sum(
        tuple(predicted[name]) != route_taken(raw, index, trace_path)
        for name, raw in ROUTE_REPLIES.items()
    )
    assert not wrong, (
        f"{wrong} of your {len(ROUTE_REPLIES)} predictions are wrong: "
        "reread check, ModelReply and after_check"
    )
