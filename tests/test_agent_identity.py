"""Caller identity and scope come from the application; an unauthorized scope is refused before any tool runs."""

import pytest

from labkit.agent.dataset import APPROVED_SCOPE, RESTRICTED_SCOPE
from labkit.agent.graph import ScriptedModel
from labkit.agent.identity import ScopeRefused, authorize
from labkit.agent.profile import ProfileMemory
from labkit.agent.runs import CASES, run_case
from labkit.agent.tools import SupportData


def test_analyst_gets_a_caller_bound_to_the_approved_scope():
    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    assert (caller.user_id, caller.session_id, caller.caller_scope) == ("analyst-ana", "s1", APPROVED_SCOPE)
    assert caller.dataset_version == "support-2026-09-01"


@pytest.mark.parametrize(
    "user,scope,reason",
    [
        ("analyst-ana", RESTRICTED_SCOPE, rf"may not read scope '{RESTRICTED_SCOPE}' \(allowed: {APPROVED_SCOPE}\)"),
        ("visitor-vic", APPROVED_SCOPE, r"may not read scope .* \(allowed: none\)"),
        ("nobody", APPROVED_SCOPE, "unknown user 'nobody'"),
    ],
)
def test_unauthorized_scope_is_refused(user, scope, reason):
    with pytest.raises(ScopeRefused, match=reason):
        authorize(user, "s1", scope)


@pytest.mark.parametrize("session", ["", "   "])
def test_request_without_a_session_is_refused(session):
    with pytest.raises(ScopeRefused, match="needs a session id"):
        authorize("analyst-ana", session, APPROVED_SCOPE)


def test_caller_carries_the_users_tools():
    assert authorize("lead-lee", "s1", RESTRICTED_SCOPE).tools == (
        "filter_by_intent",
        "count_rows",
        "summarize_requests",
        "export_rows",
    )


@pytest.mark.parametrize(
    "text",
    ['["not", "an", "object"]', '{"dataset_version": "x"}', '{"dataset_version": "x", "callers": [], "extra": 1}'],
)
def test_callers_file_with_the_wrong_shape_is_refused(tmp_path, text):
    from labkit.agent.dataset import DatasetError

    (tmp_path / "callers.json").write_text(text)
    with pytest.raises(DatasetError, match="expected an object with dataset_version and callers"):
        authorize("ana", "s1", APPROVED_SCOPE, folder=tmp_path)


def test_refused_case_runs_no_tool_and_asks_no_model():
    model = ScriptedModel({"route:": '{"route":"structured"}', "agent:": "{}"})
    case = next(c for c in CASES if c.id == "c09")
    result = run_case(case, model, data=SupportData(), profile=ProfileMemory())
    assert result.status == "refused" and result.audit == [] and model.keys == []


def test_malformed_callers_file_is_refused(tmp_path):
    from labkit.agent.dataset import DatasetError

    (tmp_path / "callers.json").write_text('{"dataset_version": "x", "callers": {"ana": {"scopes": []}}}')
    with pytest.raises(DatasetError, match="scopes' and 'tools'"):
        authorize("ana", "s1", APPROVED_SCOPE, folder=tmp_path)


def test_refusal_messages_say_what_is_wrong_and_what_to_do(tmp_path):
    from labkit.agent.dataset import DatasetError

    with pytest.raises(ScopeRefused) as info:
        authorize("lead-lee", "s1", "billing")
    assert str(info.value) == (
        f"user 'lead-lee' may not read scope 'billing' (allowed: {APPROVED_SCOPE}, {RESTRICTED_SCOPE}); "
        "no tool was run. Ask for access or choose an allowed scope."
    )
    with pytest.raises(ScopeRefused) as info:
        authorize("analyst-ana", "", APPROVED_SCOPE)
    assert str(info.value) == "a request needs a session id from the application; start a session first"
    (tmp_path / "callers.json").write_text('{"dataset_version": "x"}')
    with pytest.raises(DatasetError) as info:
        authorize("ana", "s1", APPROVED_SCOPE, folder=tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'callers.json'}: expected an object with dataset_version and callers; "
        "regenerate it with `python -m labkit.agent.dataset`"
    )
