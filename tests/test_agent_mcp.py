"""The MCP boundary: a real client over stdio lists and calls the caller's tools; other tools are not there."""

import asyncio

import pytest

pytest.importorskip("mcp")

from labkit.agent.mcp_server import client_session_demo


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
