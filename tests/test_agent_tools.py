"""Typed tools: a get_refund filter followed by a row count gives the expected total; bad row refs are refused."""

import re

import pytest
from pydantic import ValidationError

from labkit.agent.dataset import APPROVED_SCOPE, RESTRICTED_SCOPE
from labkit.agent.identity import ScopeRefused, authorize
from labkit.agent.tools import (
    CountRows,
    IntentFilter,
    RowRefRefused,
    SummarizeRequests,
    SupportData,
    SupportTools,
    make_row_ref,
)


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


def test_the_audit_log_records_every_call_with_its_arguments_outcome_and_scope_read(data):
    tools = tools_for(data)
    ref = tools.filter_by_intent(IntentFilter(intent="get_refund", limit=2))["row_ref"]
    tools.count_rows(CountRows(rows=ref))
    with pytest.raises(RowRefRefused):
        tools.count_rows(CountRows(rows="rows-0123456789abcdef"))
    with pytest.raises(ScopeRefused):
        tools.export_rows(IntentFilter(intent="get_refund", limit=1))
    who = {"user_id": "analyst-ana", "caller_scope": APPROVED_SCOPE}
    assert data.audit == [
        {
            "tool": "filter_by_intent",
            **who,
            "scope_read": APPROVED_SCOPE,
            "arguments": {"intent": "get_refund", "limit": 2, "offset": 0},
            "outcome": "ok",
        },
        {"tool": "count_rows", **who, "scope_read": APPROVED_SCOPE, "arguments": {"rows": ref}, "outcome": "ok"},
        {
            "tool": "count_rows",
            **who,
            "scope_read": None,
            "arguments": {"rows": "rows-0123456789abcdef"},
            "outcome": "refused:forged",
        },
        {
            "tool": "export_rows",
            **who,
            "scope_read": None,
            "arguments": {"intent": "get_refund", "limit": 1, "offset": 0},
            "outcome": "refused:tool_not_allowed",
        },
    ]


def test_the_preview_shows_row_flags_and_instruction_of_the_first_matches(data):
    filtered = tools_for(data).filter_by_intent(IntentFilter(intent="get_refund", limit=2))
    rows = data.scopes[APPROVED_SCOPE]
    matches = [n for n, row in enumerate(rows) if row.intent == "get_refund"][:2]
    assert filtered["preview"] == [
        {"row": n, "flags": rows[n].flags, "instruction": rows[n].instruction} for n in matches
    ]


def test_a_row_ref_is_the_hash_of_who_asked_what_and_when():
    import hashlib

    seed = "analyst-ana|approved_support_dataset|v1|get_refund|3"
    assert make_row_ref("analyst-ana", APPROVED_SCOPE, "v1", "get_refund", 3) == (
        "rows-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]
    )


def test_issued_refs_differ_by_user_scope_version_intent_and_number(data):
    lee = authorize("lead-lee", "s1", APPROVED_SCOPE)
    ana = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    issued = data.issue(ana, "get_refund", (1,))
    assert issued.row_ref == make_row_ref("analyst-ana", APPROVED_SCOPE, data.dataset_version, "get_refund", 0)
    assert data.issue(lee, "get_refund", (1,)).row_ref == make_row_ref(
        "lead-lee", APPROVED_SCOPE, data.dataset_version, "get_refund", 1
    )


def test_fresh_data_keeps_rows_folder_and_version_but_no_refs_or_audit(data):
    tools_for(data).filter_by_intent(IntentFilter(intent="get_refund"))
    data.publish("support-2026-09-02")
    fresh = data.fresh()
    assert (fresh.folder, fresh.scopes, fresh.dataset_version) == (data.folder, data.scopes, "support-2026-09-02")
    assert fresh.row_sets == {} and fresh.audit == []
    assert fresh.scopes is not data.scopes


def test_support_data_reads_the_scopes_from_the_given_folder(tmp_path):
    from labkit.agent.dataset import write_support_fixtures

    write_support_fixtures(tmp_path)
    loaded = SupportData(tmp_path)
    assert loaded.folder == tmp_path and set(loaded.scopes) == {APPROVED_SCOPE, RESTRICTED_SCOPE}


def test_the_summary_counts_flags_and_common_words_of_the_retrieved_rows_only(data):
    from collections import Counter

    summary = tools_for(data).summarize_requests(SummarizeRequests(intent="get_refund", limit=20))
    rows = [data.scopes[APPROVED_SCOPE][n] for n in summary["retrieved_rows"]]
    assert len(rows) == 20 and min(summary["polite"], summary["colloquial"], summary["with_typos"]) > 0
    assert len(summary["common_words"]) == 5 and summary["common_words"] != sorted(summary["common_words"])
    flags = Counter(flag for row in rows for flag in row.flags)
    assert (summary["polite"], summary["colloquial"], summary["with_typos"]) == (flags["P"], flags["Q"], flags["Z"])
    words = Counter(
        w.strip("?.,!").lower()
        for row in rows
        for w in re.sub(r"\{\{[A-Za-z ]+\}\}", "", row.instruction).split()
        if len(w.strip("?.,!")) > 4
    )
    assert summary["common_words"] == [w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]
    assert all(w == w.lower() for w in summary["common_words"])


def test_a_lead_exports_full_rows_of_one_intent_from_the_offset(data):
    lee = SupportTools(authorize("lead-lee", "s1", RESTRICTED_SCOPE), data)
    rows = data.scopes[RESTRICTED_SCOPE]
    matches = [n for n, row in enumerate(rows) if row.intent == "get_refund"]
    exported = lee.export_rows(IntentFilter(intent="get_refund", limit=2, offset=1))
    assert exported == {
        "caller_scope": RESTRICTED_SCOPE,
        "rows": [{"row": n, **rows[n].model_dump()} for n in matches[1:3]],
    }
    assert data.audit[-1] == {
        "tool": "export_rows",
        "user_id": "lead-lee",
        "caller_scope": RESTRICTED_SCOPE,
        "scope_read": RESTRICTED_SCOPE,
        "arguments": {"intent": "get_refund", "limit": 2, "offset": 1},
        "outcome": "ok",
    }


def test_call_validates_the_arguments_against_the_tools_model_then_runs_it(data):
    tools = tools_for(data)
    ref = tools.call("filter_by_intent", {"intent": "get_refund", "limit": 1})["row_ref"]
    assert tools.call("count_rows", {"rows": ref})["count"] == 27
    with pytest.raises(ValidationError):
        tools.call("filter_by_intent", {"intent": "get_refund", "limit": 99})


def test_unauthorized_calls_counts_reads_of_scopes_the_user_may_not_read():
    from labkit.agent.tools import unauthorized_calls

    audit = [
        {"user_id": "ana", "scope_read": "open"},
        {"user_id": "ana", "scope_read": "secret"},
        {"user_id": "ana", "scope_read": None},
        {"user_id": "bob", "scope_read": "open"},
    ]
    assert unauthorized_calls(audit, allowed_scopes={"ana": ["open"]}) == 2
    assert unauthorized_calls(audit, allowed_scopes={"ana": ["open", "secret"], "bob": ["open"]}) == 0


def test_the_summary_names_its_intent_category_scope_version_and_rows(data):
    from labkit.agent.dataset import CATEGORY_OF

    summary = tools_for(data).summarize_requests(SummarizeRequests(intent="get_refund", limit=3))
    rows = data.scopes[APPROVED_SCOPE]
    assert {k: summary[k] for k in ("intent", "category", "caller_scope", "dataset_version", "retrieved_rows")} == {
        "intent": "get_refund",
        "category": CATEGORY_OF["get_refund"],
        "caller_scope": APPROVED_SCOPE,
        "dataset_version": "support-2026-09-01",
        "retrieved_rows": [n for n, row in enumerate(rows) if row.intent == "get_refund"][:3],
    }
    assert set(summary) == {
        "intent",
        "category",
        "caller_scope",
        "dataset_version",
        "retrieved_rows",
        "polite",
        "colloquial",
        "with_typos",
        "common_words",
    }
    assert data.audit[-1]["tool"] == "summarize_requests" and data.audit[-1]["scope_read"] == APPROVED_SCOPE


def test_a_refused_tool_call_is_logged_with_its_arguments(data):
    from labkit.agent.identity import Caller

    nobody = SupportTools(Caller("ana", "s1", APPROVED_SCOPE, data.dataset_version, ()), data)
    calls = [
        (nobody.filter_by_intent, IntentFilter(intent="get_refund", limit=2)),
        (nobody.count_rows, CountRows(rows="rows-0123456789abcdef")),
        (nobody.summarize_requests, SummarizeRequests(intent="get_refund", limit=2)),
    ]
    for method, args in calls:
        with pytest.raises(ScopeRefused, match=f"may not call {method.__name__}"):
            method(args)
        assert data.audit[-1]["arguments"] == args.model_dump()
        assert data.audit[-1]["outcome"] == "refused:tool_not_allowed"


def test_the_summary_never_counts_a_template_slot_as_a_customers_word():
    from labkit.agent.dataset import CATEGORY_OF, SupportRow

    def row(instruction):
        return SupportRow(
            flags="B",
            instruction=instruction,
            category=CATEGORY_OF["cancel_order"],
            intent="cancel_order",
            response="Done.",
        )

    rows = [
        row("Cancel order {{Order Number}} please"),
        row("please? cancel {{Order Number}} now"),
        row("cancel the {{Account Type}} account"),
    ]
    data = SupportData(scopes={APPROVED_SCOPE: rows, RESTRICTED_SCOPE: []}, dataset_version="support-2026-09-01")
    summary = tools_for(data).summarize_requests(SummarizeRequests(intent="cancel_order", limit=3))
    # By hand: cancel 3, please 2, account 1, order 1; "Number}}" and "Type}}" are halves of a slot, not words.
    assert summary["common_words"] == ["cancel", "please", "account", "order"]
    assert (summary["polite"], summary["colloquial"], summary["with_typos"]) == (0, 0, 0)  # every row is flagged B only
    assert data.audit[-1] == {
        "tool": "summarize_requests",
        "user_id": "analyst-ana",
        "caller_scope": APPROVED_SCOPE,
        "scope_read": APPROVED_SCOPE,
        "arguments": {"intent": "cancel_order", "limit": 3},
        "outcome": "ok",
    }


def test_no_summary_of_the_support_data_lists_a_template_slot(data):
    from labkit.agent.dataset import CATEGORY_OF

    tools = tools_for(data)
    words = {
        w
        for intent in CATEGORY_OF
        for w in tools.summarize_requests(SummarizeRequests(intent=intent, limit=20))["common_words"]
    }
    assert words and not [w for w in words if "{" in w or "}" in w]


def test_the_direct_count_tool_counts_in_one_call_and_stores_no_result_set(data):
    from labkit.agent.tools import IntentCount

    tools = tools_for(data)
    filtered = tools.filter_by_intent(IntentFilter(intent="get_refund", limit=3))
    by_reference = tools.count_rows(CountRows(rows=filtered["row_ref"]))
    stored = len(data.row_sets)
    assert tools.count_by_intent(IntentCount(intent="get_refund")) == by_reference
    assert len(data.row_sets) == stored and data.audit[-1]["tool"] == "count_by_intent"
    with pytest.raises(ValidationError):
        IntentCount.model_validate({"intent": "get_refund", "scope": RESTRICTED_SCOPE})


def test_the_direct_count_tool_needs_the_callers_permission_to_count(data):
    from labkit.agent.identity import Caller
    from labkit.agent.tools import IntentCount

    ana = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    no_count = Caller(ana.user_id, ana.session_id, ana.caller_scope, ana.dataset_version, ("filter_by_intent",))
    with pytest.raises(ScopeRefused, match="may not call count_by_intent"):
        SupportTools(no_count, data).count_by_intent(IntentCount(intent="get_refund"))
    assert data.audit[-1]["outcome"] == "refused:tool_not_allowed"


def test_tampered_row_refs_are_each_refused_for_their_own_reason():
    from labkit.agent.dataset import APPROVED_SCOPE
    from labkit.agent.identity import authorize
    from labkit.agent.tools import CountRows, RowRefRefused, SupportData, SupportTools, tampered_row_refs

    tools = SupportTools(authorize("analyst-ana", "s1", APPROVED_SCOPE), SupportData())
    reasons = {}
    for label, row_ref in tampered_row_refs(tools).items():
        with pytest.raises(RowRefRefused) as refused:
            tools.count_rows(CountRows(rows=row_ref))
        reasons[label] = refused.value.reason
    assert reasons == {"forged": "forged", "foreign": "foreign", "stale": "stale"}
    assert tools.data.dataset_version.endswith("-refreshed")
