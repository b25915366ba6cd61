"""`refund_count_trace`: the refund-count request as explicit state transitions with a step budget.

Each route or tool call spends one step from ``steps_left``. The router's
label decides the branch: ``structured`` runs the two-tool path (filter, then
count by reference) and the final-answer check; ``out_of_scope`` stops with
status ``out_of_scope``; another known route stops with ``not_handled`` (this
function only counts); an unknown route is an error. So are an invalid or
exhausted budget, a stale or mismatched count result, an invalid count and any
helper error: they propagate to the application. ``calls`` keeps each call and observation in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labkit.agent.router import ROUTES, route_question
from labkit.agent.validator import format_answer
from labkit.errors import LabkitError

REFUND_QUESTION = "How many refund requests are in the dataset?"


class BudgetError(LabkitError, ValueError):
    """The step budget is not a nonnegative integer."""


class BudgetExhausted(LabkitError, RuntimeError):
    """A step was needed but the budget had none left."""


class StaleResult(LabkitError, RuntimeError):
    """A count result does not belong to this request's dataset version, scope or intent."""


class InvalidCount(LabkitError, ValueError):
    """A count tool returned something other than a nonnegative integer."""


class UnknownRoute(LabkitError, ValueError):
    """The router returned a label outside the four routes."""


def spend_step(state: dict[str, Any], what: str) -> dict[str, Any]:
    """Return ``state`` with one step fewer, or raise `BudgetExhausted` naming what could not run."""
    if state["steps_left"] <= 0:
        raise BudgetExhausted(f"step budget exhausted before {what}; raise steps_left or simplify the request")
    return {**state, "steps_left": state["steps_left"] - 1}


def refund_count_trace(
    state0: dict[str, Any],
    *,
    route: Callable[[dict[str, Any]], str],
    filter_by_intent: Callable[[Any], dict[str, Any]],
    count_rows: Callable[[Any], dict[str, Any]],
    verify_final: Callable[..., Any],
    IntentFilter: type,
    CountRows: type,
) -> dict[str, Any]:
    """Run the refund count from ``state0`` (question, user, session, caller_scope, dataset_version, steps_left)."""
    budget = state0.get("steps_left")
    if type(budget) is not int or budget < 0:
        raise BudgetError(f"steps_left must be a nonnegative integer, not {budget!r}")
    state = {**spend_step(state0, "routing"), "calls": []}
    state["route"] = route(state)
    state["calls"] = [{"step": "route", "observation": state["route"]}]
    if state["route"] not in ROUTES:
        raise UnknownRoute(f"the router returned {state['route']!r}; expected one of {', '.join(ROUTES)}")
    if state["route"] != "structured":
        return {**state, "status": "out_of_scope" if state["route"] == "out_of_scope" else "not_handled"}

    state = filter_step(spend_step(state, "filter_by_intent"), filter_by_intent, IntentFilter)
    state = count_step(spend_step(state, "count_rows"), count_rows, CountRows)
    check_count_result(state, state0)
    final = verify_final(
        format_answer(state["count"], "get_refund", state0["caller_scope"]),
        result=state["calls"][-1]["observation"],
        expected_intent="get_refund",
    )
    return {**state, "final": final, "status": "ok"}


def filter_step(state: dict[str, Any], filter_by_intent: Callable[[Any], dict[str, Any]], IntentFilter: type) -> dict:
    """Filter to ``get_refund``; keep the ``row_ref`` and preview, and log the call with only the preview's size."""
    arguments = IntentFilter(intent="get_refund", limit=20)
    filtered = filter_by_intent(arguments)
    call = {
        "step": "filter_by_intent",
        "arguments": arguments.model_dump(),
        "observation": {"row_ref": filtered["row_ref"], "preview_rows": len(filtered["preview"])},
    }
    return {**state, **filtered, "calls": [*state["calls"], call]}


def count_step(state: dict[str, Any], count_rows: Callable[[Any], dict[str, Any]], CountRows: type) -> dict:
    """Count the complete set by its ``row_ref``; refuse a count that is not a nonnegative integer."""
    arguments = CountRows(rows=state["row_ref"])
    counted = count_rows(arguments)
    if type(counted.get("count")) is not int or counted["count"] < 0:
        raise InvalidCount(f"count_rows returned {counted.get('count')!r}; a count must be a nonnegative integer")
    call = {"step": "count_rows", "arguments": arguments.model_dump(), "observation": counted}
    return {**state, **counted, "calls": [*state["calls"], call]}


def check_count_result(state: dict[str, Any], state0: dict[str, Any]) -> None:
    """Raise `StaleResult` unless the count is for ``get_refund`` in the request's scope and dataset version."""
    if (
        state["dataset_version"] != state0["dataset_version"]
        or state["caller_scope"] != state0["caller_scope"]
        or state["intent"] != "get_refund"
    ):
        raise StaleResult(
            f"the count is for {state['intent']} in {state['caller_scope']} at {state['dataset_version']}, but the request "
            f"is get_refund in {state0['caller_scope']} at {state0['dataset_version']}; filter and count again"
        )


def run_refund_count(caller: Any, tools: Any, adapter: Any, *, steps_left: int = 3) -> dict[str, Any]:
    """Run `refund_count_trace` for ``caller`` with the book's question, its route asked of ``adapter``.

    ``state0`` is built from the caller (user, session, scope, dataset version)
    and ``steps_left``; the route comes from `labkit.agent.router.route_question`
    (a reply that is no route raises `UnknownRoute`), the tools are ``tools``' own,
    and the answer is checked by `verify_final`.
    """
    from labkit.agent.tools import CountRows, IntentFilter
    from labkit.agent.validator import verify_final

    state0 = {
        "question": REFUND_QUESTION,
        "user_id": caller.user_id,
        "session_id": caller.session_id,
        "caller_scope": caller.caller_scope,
        "dataset_version": caller.dataset_version,
        "steps_left": steps_left,
    }

    def route(state: dict[str, Any]) -> str:
        result = route_question(state["question"], caller, adapter)
        if result.route is None:
            raise UnknownRoute(f"the router's reply {result.raw!r} is no route: {result.problem}")
        return result.route

    return refund_count_trace(
        state0,
        route=route,
        filter_by_intent=tools.filter_by_intent,
        count_rows=tools.count_rows,
        verify_final=verify_final,
        IntentFilter=IntentFilter,
        CountRows=CountRows,
    )
