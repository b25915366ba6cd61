"""Typed tools: a get_refund filter followed by a row count gives the expected total; bad row refs are refused."""

import pytest
from pydantic import ValidationError

from labkit.agent.dataset import APPROVED_SCOPE, RESTRICTED_SCOPE
from labkit.agent.identity import ScopeRefused, authorize
from labkit.agent.tools import CountRows, IntentFilter, RowRefRefused, SummarizeRequests, SupportData, SupportTools


@pytest.fixture()
def data():
    return SupportData()


def tools_for(data, user="analyst-ana", session="s1"):
    return SupportTools(authorize(user, session, APPROVED_SCOPE), data)


def test_get_refund_filter_then_count_gives_27(data):
    tools = tools_for(data)
    filtered = tools.filter_by_intent(IntentFilter(intent="get_refund", limit=20))
    counted = tools.count_rows(CountRows(rows=filtered["row_ref"]))
    assert counted == {
        "count": 27,
        "dataset_version": "support-2026-09-01",
        "caller_scope": APPROVED_SCOPE,
        "intent": "get_refund",
    }


def test_preview_is_capped_while_the_row_ref_covers_the_complete_set(data):
    tools = tools_for(data)
    filtered = tools.filter_by_intent(IntentFilter(intent="get_refund", limit=3))
    assert len(filtered["preview"]) == 3
    assert len(data.row_sets[filtered["row_ref"]].row_ids) == 27


@pytest.mark.parametrize(
    "arguments",
    [
        {"intent": "refunds", "limit": 5},
        {"intent": "get_refund", "limit": 21},
        {"intent": "get_refund", "limit": 5, "scope": "escalations_restricted"},
    ],
)
def test_invalid_filter_arguments_are_refused(arguments):
    with pytest.raises(ValidationError):
        IntentFilter.model_validate(arguments)


def test_forged_row_ref_is_refused(data):
    with pytest.raises(RowRefRefused) as info:
        tools_for(data).count_rows(CountRows(rows="rows-0123456789abcdef"))
    assert info.value.reason == "forged"


def test_foreign_row_ref_is_refused(data):
    lee = SupportTools(authorize("lead-lee", "s9", APPROVED_SCOPE), data)
    ref = lee.filter_by_intent(IntentFilter(intent="get_refund"))["row_ref"]
    with pytest.raises(RowRefRefused) as info:
        tools_for(data).count_rows(CountRows(rows=ref))
    assert info.value.reason == "foreign"


def test_stale_row_ref_is_refused_after_a_new_dataset_version(data):
    tools = tools_for(data)
    ref = tools.filter_by_intent(IntentFilter(intent="get_refund"))["row_ref"]
    data.publish("support-2026-09-02")
    with pytest.raises(RowRefRefused) as info:
        tools.count_rows(CountRows(rows=ref))
    assert info.value.reason == "stale"
    assert data.audit[-1]["outcome"] == "refused:stale"


def test_row_ref_from_the_same_user_in_another_scope_is_refused(data):
    # lead-lee may read both scopes: a ref filtered in the restricted scope must not be counted while working
    # in the approved one (the user matches, only the scope differs).
    restricted = SupportTools(authorize("lead-lee", "s9", RESTRICTED_SCOPE), data)
    ref = restricted.filter_by_intent(IntentFilter(intent="get_refund"))["row_ref"]
    approved = SupportTools(authorize("lead-lee", "s9", APPROVED_SCOPE), data)
    with pytest.raises(RowRefRefused, match="another caller or scope") as info:
        approved.count_rows(CountRows(rows=ref))
    assert info.value.reason == "foreign"
    assert data.audit[-1]["outcome"] == "refused:foreign" and data.audit[-1]["scope_read"] is None


def test_row_ref_counts_in_its_own_scope_for_a_user_of_two_scopes(data):
    restricted = SupportTools(authorize("lead-lee", "s9", RESTRICTED_SCOPE), data)
    ref = restricted.filter_by_intent(IntentFilter(intent="get_refund"))["row_ref"]
    assert restricted.count_rows(CountRows(rows=ref))["count"] == 11
    assert data.audit[-1]["scope_read"] == RESTRICTED_SCOPE


def test_tool_outside_the_callers_permissions_is_refused(data):
    with pytest.raises(ScopeRefused, match="may not call export_rows"):
        tools_for(data).export_rows(IntentFilter(intent="get_refund"))
    assert data.audit[-1]["outcome"] == "refused:tool_not_allowed" and data.audit[-1]["scope_read"] is None


def test_unknown_tool_name_is_refused(data):
    with pytest.raises(ScopeRefused, match="not one of the agent's tools"):
        tools_for(data).call("delete_rows", {})


def test_summary_uses_only_retrieved_requests(data):
    summary = tools_for(data).summarize_requests(SummarizeRequests(intent="get_refund", limit=4))
    rows = data.scopes[APPROVED_SCOPE]
    assert len(summary["retrieved_rows"]) == 4 and all(
        rows[n].intent == "get_refund" for n in summary["retrieved_rows"]
    )
