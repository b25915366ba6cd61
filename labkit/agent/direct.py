"""Two ways to answer a known count: the direct count tool, or the agent's two-tool path.

Book 12.4: a direct count tool answers a known count request without an agent
loop. `direct_count` is that path: the application already knows the question
is "how many <intent> requests", so it calls `count_by_intent` once and checks
the answer; no router, no model, no stored result set. The agent's path (route,
then `filter_by_intent`, then `count_rows` by ``row_ref``) reaches the same
count from any wording, at the cost of model calls, an extra tool call and a
result set the application keeps for the reference. `path_costs` puts a number
on each path from what one run of it did.
"""

from __future__ import annotations

from typing import Any

from labkit.agent.evaluation import Prices
from labkit.agent.runs import AgentCase, CaseResult
from labkit.agent.tools import IntentCount, SupportData, SupportTools
from labkit.agent.validator import VerifiedAnswer, format_answer, verify_final

#: The cost column: tokens times lesson 01's illustrative prices, not a bill for the local model.
COST = "cost per 1,000 (USD, illustrative prices)"


def direct_count(tools: SupportTools, intent: str) -> VerifiedAnswer:
    """Answer "how many ``intent`` requests" with one call to the direct count tool, checked by `verify_final`."""
    counted = tools.count_by_intent(IntentCount(intent=intent))
    answer = format_answer(counted["count"], intent, counted["caller_scope"])
    return verify_final(answer, result=counted, expected_intent=intent)


def direct_case(case: AgentCase, intent: str, *, data: SupportData) -> CaseResult:
    """Run ``case`` on the direct path, as a `CaseResult` the evaluation can read beside the agent's."""
    from labkit.agent.identity import authorize

    data = data.fresh()
    caller = authorize(case.user_id, f"direct-{case.id}", case.scope)
    verified = direct_count(SupportTools(caller, data), intent)
    return CaseResult(case, "ok", verified.answer, None, None, list(data.audit))


NO_MODEL_TIME = "no model call; tool time not measured"


def path_costs(path: str, result: CaseResult, run: Any = None, *, prices: Prices | None = None) -> dict[str, Any]:
    """Return what one run of a path spent, as a table row: model requests, tokens, latency, cost, tool calls.

    Tokens, latency and cost come from ``run``'s recorded bindings when it is a
    captured run; an authored run measured nothing and says so, and a path with
    no model request spends none. Latency is model time only: the tools' own time
    is not measured. Cost is tokens times ``prices``, per 1,000 runs. A run that
    did not end ``ok`` is labelled a failed run in its ``path``.
    """
    requests = len(result.requests)
    label = path if result.status == "ok" else f"{path}, failed ({result.status})"
    row: dict[str, Any] = {"path": label, "model requests": requests}
    if requests and (run is None or run.origin != "captured"):
        unmeasured = f"not measured ({getattr(run, 'origin', 'no run')})"
        row.update({"tokens": unmeasured, "latency (s)": unmeasured, COST: unmeasured})
    else:
        bindings = [b for b in (run.binding_for(q) for q in result.requests) if b is not None] if requests else []
        used = [(b.usage.prompt_tokens, b.usage.completion_tokens) for b in bindings if b.usage]
        cost = None if prices is None and used else 0.0
        if prices is not None and used:
            cost = sum(prices.cost(run.model.id, prompt_tokens=p, completion_tokens=c) for p, c in used)
        row.update(
            {
                "tokens": f"{sum(p + c for p, c in used):,}",
                "latency (s)": f"{sum(b.latency_s or 0.0 for b in bindings):.2f}" if requests else NO_MODEL_TIME,
                COST: "no price table" if cost is None else f"{1000 * cost:.3f}",
            }
        )
    row.update(
        {
            "tool calls": len(result.audit),
            "result sets stored": sum(e["tool"] == "filter_by_intent" and e["outcome"] == "ok" for e in result.audit),
            "status": result.status,
            "answer": result.final,
        }
    )
    return row
