"""`refund_count_trace`: explicit transitions, one step per route or tool call, the book's statuses and errors."""

import pytest

from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.identity import authorize
from labkit.agent.tools import CountRows, IntentFilter, SupportData, SupportTools
from labkit.agent.trace import (
    BudgetError,
    BudgetExhausted,
    InvalidCount,
    StaleResult,
    UnknownRoute,
    refund_count_trace,
)
from labkit.agent.validator import verify_final


def setup(route="structured", steps_left=3):
    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    data = SupportData()
    tools = SupportTools(caller, data)
    state0 = {
        "question": "How many refund requests are in the dataset?",
        "user_id": caller.user_id,
        "session_id": caller.session_id,
        "caller_scope": caller.caller_scope,
        "dataset_version": caller.dataset_version,
        "steps_left": steps_left,
    }
    helpers = {
        "route": lambda state: route,
        "filter_by_intent": tools.filter_by_intent,
        "count_rows": tools.count_rows,
        "verify_final": verify_final,
        "IntentFilter": IntentFilter,
        "CountRows": CountRows,
    }
    return state0, helpers, data, tools


def run(state0, helpers, **override):
    return refund_count_trace(state0, **{**helpers, **override})


def test_refund_count_takes_the_two_tool_path_to_a_validated_answer():
    state0, helpers, _, _ = setup()
    final = run(state0, helpers)
    assert final["status"] == "ok" and final["final"].answer == "27 refund requests in approved_support_dataset"
    assert [c["step"] for c in final["calls"]] == ["route", "filter_by_intent", "count_rows"]
    assert final["steps_left"] == 0


@pytest.mark.parametrize(
    "route,status", [("out_of_scope", "out_of_scope"), ("unstructured", "not_handled"), ("profile", "not_handled")]
)
def test_other_routes_stop_without_tool_calls(route, status):
    state0, helpers, data, _ = setup(route)
    final = run(state0, helpers)
    assert final["status"] == status and data.audit == [] and final["steps_left"] == 2


def test_unknown_route_fails():
    state0, helpers, _, _ = setup("weather")
    with pytest.raises(UnknownRoute):
        run(state0, helpers)


@pytest.mark.parametrize("budget", [-1, 1.5, "3", True])
def test_invalid_budget_is_refused(budget):
    state0, helpers, _, _ = setup(steps_left=budget)
    with pytest.raises(BudgetError):
        run(state0, helpers)


@pytest.mark.parametrize("budget", [0, 1, 2])
def test_budget_too_small_for_route_filter_and_count_is_exhausted(budget):
    state0, helpers, _, _ = setup(steps_left=budget)
    with pytest.raises(BudgetExhausted):
        run(state0, helpers)


def test_count_for_another_version_is_a_stale_result():
    state0, helpers, _data, _tools = setup()
    state0 = {**state0, "dataset_version": "support-2026-08-01"}
    with pytest.raises(StaleResult):
        run(state0, helpers)


def test_count_that_is_not_a_nonnegative_integer_is_refused():
    state0, helpers, _, _ = setup()
    with pytest.raises(InvalidCount):
        run(
            state0,
            helpers,
            count_rows=lambda args: {"count": -1, "dataset_version": "x", "caller_scope": "y", "intent": "get_refund"},
        )


def test_run_refund_count_asks_the_router_and_counts_by_reference_within_the_budget():
    from labkit.agent.graph import ScriptedModel
    from labkit.agent.trace import run_refund_count

    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    model = ScriptedModel({"route:": '{"route": "structured"}'})
    state = run_refund_count(caller, SupportTools(caller, SupportData()), model)
    assert [call["step"] for call in state["calls"]] == ["route", "filter_by_intent", "count_rows"]
    assert state["final"].count == 27 and state["steps_left"] == 0 and len(model.keys) == 1
    with pytest.raises(BudgetExhausted, match="before count_rows"):
        run_refund_count(caller, SupportTools(caller, SupportData()), model, steps_left=2)
    declined = ScriptedModel({"route:": '{"route": "out_of_scope"}'})
    assert run_refund_count(caller, SupportTools(caller, SupportData()), declined)["status"] == "out_of_scope"


def test_run_refund_count_refuses_a_router_reply_that_is_no_route():
    from labkit.agent.graph import ScriptedModel
    from labkit.agent.trace import run_refund_count

    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    with pytest.raises(UnknownRoute, match="is no route"):
        run_refund_count(caller, SupportTools(caller, SupportData()), ScriptedModel({"route:": "sports"}))
