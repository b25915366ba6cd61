"""The MCP boundary: a real client over stdio lists and calls the caller's tools; other tools are not there."""

import asyncio

import pytest

from labkit.agent.dataset import APPROVED_SCOPE, RESTRICTED_SCOPE
from labkit.agent.mcp_server import ToolCallFailed, client_session_demo, count_over_mcp
from labkit.agent.tools import make_row_ref


def test_client_lists_and_invokes_an_allowed_tool_over_stdio():
    result = asyncio.run(
        client_session_demo(
            "analyst-ana",
            [
                ("filter_by_intent", {"intent": "get_refund", "limit": 2}),
                ("count_rows", {"rows": "$row_ref"}),
                ("filter_by_intent", {"intent": "refunds"}),
            ],
        )
    )
    assert result["tools"] == ["count_rows", "filter_by_intent", "summarize_requests"]
    assert "filter_by_intent, then pass its row_ref to count_rows" in result["instructions"]
    assert result["schemas"]["filter_by_intent"]["properties"]["limit"]["maximum"] == 20
    assert "get_refund" in result["schemas"]["filter_by_intent"]["properties"]["intent"]["enum"]
    filtered, counted, invalid = result["calls"]
    assert invalid["is_error"]
    assert not filtered["is_error"] and len(filtered["content"]["preview"]) == 2
    assert counted["content"] == {
        "count": 27,
        "dataset_version": "support-2026-09-01",
        "caller_scope": "approved_support_dataset",
        "intent": "get_refund",
    }


def test_tool_outside_the_callers_permissions_is_neither_listed_nor_callable():
    result = asyncio.run(client_session_demo("analyst-ana", [("export_rows", {"intent": "get_refund"})]))
    assert "export_rows" not in result["tools"]
    assert result["calls"][0]["is_error"]


def test_a_lead_is_served_the_export_tool():
    result = asyncio.run(client_session_demo("lead-lee", [("export_rows", {"intent": "get_refund", "limit": 1})]))
    assert "export_rows" in result["tools"] and set(result["calls"][0]["content"]["rows"][0]) >= {"flags", "intent"}


def test_count_over_mcp_lists_the_tools_and_counts_through_a_real_client():
    assert count_over_mcp("analyst-ana", "get_refund") == {
        "tools_listed": ["count_rows", "filter_by_intent", "summarize_requests"],
        "row_ref": make_row_ref("analyst-ana", APPROVED_SCOPE, "support-2026-09-01", "get_refund", 0),
        "count": 27,
        "dataset_version": "support-2026-09-01",
        "caller_scope": APPROVED_SCOPE,
        "intent": "get_refund",
    }


def test_count_over_mcp_works_where_an_event_loop_is_already_running():
    async def inside_a_running_loop():
        return count_over_mcp("lead-lee", "get_refund", scope=RESTRICTED_SCOPE)

    assert asyncio.run(inside_a_running_loop())["count"] == 11


def test_count_over_mcp_reports_a_refused_tool_call():
    with pytest.raises(ToolCallFailed, match="filter_by_intent failed over MCP"):
        count_over_mcp("analyst-ana", "not_an_intent")


def test_call_over_mcp_returns_an_error_for_a_tool_the_caller_is_not_served():
    from labkit.agent.mcp_server import call_over_mcp

    session = call_over_mcp("analyst-ana", [("export_rows", {"intent": "get_refund", "limit": 1})])
    (call,) = session["calls"]
    assert "export_rows" not in session["tools"]
    assert call["is_error"] and "export_rows" in str(call["content"])


def test_the_served_schemas_are_the_tools_own_argument_classes():
    """MCP serves each tool's arguments as its Pydantic class declares them: one declaration, not a second copy."""
    from labkit.agent.mcp_server import call_over_mcp
    from labkit.agent.tools import TOOL_ARGUMENTS

    served = call_over_mcp("analyst-ana", [])["schemas"]
    for tool, model in TOOL_ARGUMENTS.items():
        declared = model.model_json_schema()
        assert served[tool]["properties"] == declared["properties"], tool
        assert sorted(served[tool].get("required", [])) == sorted(declared.get("required", [])), tool
