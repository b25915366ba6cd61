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
    "user,scope", [("analyst-ana", RESTRICTED_SCOPE), ("visitor-vic", APPROVED_SCOPE), ("nobody", APPROVED_SCOPE)]
)
def test_unauthorized_scope_is_refused(user, scope):
    with pytest.raises(ScopeRefused):
        authorize(user, "s1", scope)


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
