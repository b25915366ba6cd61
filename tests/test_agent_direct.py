"""Two paths to a known count: the direct count tool (no agent loop, no model) against the agent's two-tool path."""

import pytest

from labkit.agent import runs
from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.direct import COST, direct_case, direct_count, path_costs
from labkit.agent.identity import authorize
from labkit.agent.tools import SupportData, SupportTools
from labkit.boundary import connect
from labkit.recording import load_run

REFUND = runs.CASES[0]  # "How many refund requests are in the dataset?"


def test_direct_count_answers_the_refund_count_with_one_tool_call_and_no_model():
    data = SupportData()
    verified = direct_count(SupportTools(authorize("analyst-ana", "d1", APPROVED_SCOPE), data), "get_refund")
    assert verified.answer == "27 refund requests in approved_support_dataset" and verified.count == 27
    assert [e["tool"] for e in data.audit] == ["count_by_intent"] and data.row_sets == {}


def test_the_direct_path_spends_no_model_request_and_stores_no_result_set():
    row = path_costs("direct", direct_case(REFUND, "get_refund", data=SupportData()))
    assert (row["model requests"], row["tokens"], row[COST]) == (0, "0", "0.000")
    assert row["latency (s)"] == "no model call; tool time not measured", "no zero for a time nobody measured"
    assert row["path"] == "direct"
    assert (row["tool calls"], row["result sets stored"], row["status"]) == (1, 0, "ok")


def test_the_agents_path_costs_model_requests_an_extra_call_and_a_stored_set():
    run = load_run(runs.RUN_AUTHORED)
    result = runs.run_case(
        REFUND, connect(run.run_id, lesson="04", settings=runs.SETTINGS), data=SupportData(), profile=None
    )
    row = path_costs("agent", result, run)
    assert (row["model requests"], row["tool calls"], row["result sets stored"]) == (4, 2, 1)
    assert row["tokens"] == "not measured (authored)" and row["answer"] == REFUND.expected_final


def test_a_path_whose_run_failed_is_labelled_a_failed_run():
    run = load_run(runs.RUN_CAPTURED)
    result = runs.run_case(
        REFUND, connect(run.run_id, lesson="04", settings=runs.SETTINGS), data=SupportData(), profile=None
    )
    assert path_costs("agent", result, run)["path"] == "agent, failed (fallback)"


class UnitPrices:
    def cost(self, model_id, *, prompt_tokens, completion_tokens):
        return (prompt_tokens + completion_tokens) / 1000


def test_a_captured_path_is_priced_from_its_recorded_tokens():
    run = load_run(runs.RUN_CAPTURED)
    result = runs.run_case(
        REFUND, connect(run.run_id, lesson="04", settings=runs.SETTINGS), data=SupportData(), profile=None
    )
    tokens = sum(run.binding_for(q).usage.total_tokens for q in result.requests)
    row = path_costs("agent", result, run, prices=UnitPrices())
    assert row["tokens"] == f"{tokens:,}" and row[COST] == f"{tokens:.3f}"
    assert path_costs("agent", result, run)[COST] == "no price table"
    assert row["model requests"] == len(result.requests) > 0


def test_the_direct_path_is_refused_for_a_user_without_the_scope():
    from labkit.agent.identity import ScopeRefused

    with pytest.raises(ScopeRefused):
        direct_case(runs.CASES[7], "get_refund", data=SupportData())  # c08: visitor-vic may read nothing
