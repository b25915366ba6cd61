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


P1, P2 = ["refund_policy.pdf#p1"], ["refund_policy.pdf#p2"]


def _numbers(text: str) -> set[float]:
    """The figures in ``text`` as values (45 and 45.0 alike)."""
    import re

    return {float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)}


def _evidence(chunks: list[Any]) -> list[dict[str, str]]:
    return [{"citation_id": c.metadata["citation_id"], "text": c.page_content} for c in chunks]


def check_figure_support(
    check_figures: Any,
    *,
    chunks: list[Any],
    index: PolicyIndex,
    authored: Any,
    wrong_but_cited: str,
    trace_dir: Path,
) -> str:
    """Check exercise 2's ``check_figures(result, evidence)`` on answers written for it; return the pass line.

    ``chunks`` are the retrieved policy chunks (the evidence), ``authored`` the authored run's
    boundary, ``wrong_but_cited`` the probe reply `check` let through. Each `AssertionError` names
    the answer that went wrong and what the reason said, never the expected figures.
    """
    import json

    from labkit.system.golden import run_golden

    evidence = _evidence(chunks)
    supported = {
        "status": "answered",
        "text": "Policy version 2026-11 gives 30 days.",
        "citation_ids": P1,
    }
    assert check_figures(supported, evidence) == supported, "figures that page 1 states must pass"
    for text, cites, figures in [  # figures: those no cited passage states
        ("Refunds within 45 days.", P1, ["45"]),
        ("Within 30 days, or 45 for gifts.", P1, ["45"]),  # only the second is unsupported
        ("Within 45 days, or 60 for gifts.", P1, ["45", "60"]),  # both must be named
        ("Within 30 days.", P2, ["30"]),  # 30 is on page 1, not on page 2
        ("Within 20 days.", P1, ["20"]),  # 20 is not 2026
        (json.loads(wrong_but_cited)["text"], P1, ["60"]),  # check let it through
    ]:
        flagged = check_figures(
            {"status": "answered", "text": text, "citation_ids": cites}, evidence
        )
        assert flagged["status"] == "unsupported_figure", f"{text!r} citing {cites}: {flagged}"
        named = _numbers(
            flagged["reason"].replace(text, "")
        )  # quoting the answer is fine; it names nothing
        assert _numbers(" ".join(figures)) <= named, (
            f"{text!r}: name every unsupported figure: {flagged['reason']!r}"
        )
        stated = _numbers(text) - _numbers(" ".join(figures))  # the answer's figures a page states
        assert not named & stated, (
            f"{text!r}: name only the unsupported ones: {flagged['reason']!r}"
        )
        pages = " ".join([*cites, *(e["text"] for e in evidence if e["citation_id"] in cites)])
        count = {float(len(figures))}  # "1 unsupported figure: 30" counts the figures it names
        stray = named - _numbers(" ".join(figures)) - _numbers(pages) - count  # ids, figures: fine
        assert not stray, f"{text!r}: the reason names {sorted(stray)}, in neither answer nor pages"
    counted = {"status": "answered", "text": "2 get_refund tickets", "observation": {"count": 2}}
    assert check_figures(counted, evidence) == counted, "a tool's count cites no passage to check"
    for untouched in (
        {"status": "tool_call", "tool_args": {"intent": "get_refund"}},
        {"status": "invalid_output", "reason": "x"},
    ):
        assert check_figures(untouched, evidence) == untouched, (
            f"leave {untouched['status']} results unchanged"
        )
    no_figures = {
        "status": "answered",
        "text": "Gift cards cannot be refunded.",
        "citation_ids": P2,
    }
    assert check_figures(no_figures, evidence) == no_figures, (
        "an answer with no figure has nothing to flag"
    )
    both_pages = {"status": "answered", "text": "Within 30 days.", "citation_ids": [*P2, *P1]}
    assert check_figures(both_pages, evidence) == both_pages, "read every cited page"
    second_p1 = [
        e for e in evidence if "30 days" not in e["text"]
    ]  # page 1 without its first chunk
    flagged = check_figures(
        {"status": "answered", "text": "Within 30 days.", "citation_ids": P1}, second_p1
    )
    assert flagged["status"] == "unsupported_figure", (
        "read the evidence passed in, not all the chunks"
    )
    wired = dict(
        index=index, trace_path=trace_dir / "wired_traces.jsonl", claim_check=check_figures
    )
    assert all(ok for *_, ok in run_golden(MinimalSystem(authored, **wired))), "authored cases pass"
    sixty = MinimalSystem(ScriptedModel(wrong_but_cited), **wired)
    assert sixty.ask(QUESTION, TEAM, "probe")["status"] == "unsupported_figure", (
        "wire it in: the probe still passes"
    )
    return "ex:figure-support passed"


#: Answers written to show what a digits-only figure check cannot tell, each with the page it cites.
FIGURE_LIMITS = [
    ("Within two days.", P1, "a figure in words"),
    ("Within 30 hours.", P1, "the right number, the wrong unit"),
    ("Within 5 to 10 business days.", P1, "a right answer; page 1 writes it in words"),
    ("Within 5 days.", P2, "a wrong answer; page 2 numbers a section 5"),
]


def figure_limits(check_figures: Any, chunks: list[Any]) -> Any:
    """Return a table of `FIGURE_LIMITS`: each answer, the page it cites, and what ``check_figures`` made of it."""
    import pandas as pd

    evidence = _evidence(chunks)
    rows = [
        {
            "answer (written here)": text,
            "cites": cites[0],
            "the case": case,
            "check_figures": check_figures(
                {"status": "answered", "text": text, "citation_ids": cites}, evidence
            )["status"],
        }
        for text, cites, case in FIGURE_LIMITS
    ]
    return pd.DataFrame(rows).set_index("answer (written here)")
