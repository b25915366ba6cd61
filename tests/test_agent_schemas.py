"""The per-step schemas require what each tool requires, and refuse the replies the shared schema let through."""

import json

import pytest

from labkit.agent import runs
from labkit.agent.schemas import fixed_schema_verdicts, proposal_branches, verdict
from labkit.agent.tools import TOOL_ARGUMENTS


def test_each_tool_branch_requires_the_fields_its_argument_class_requires():
    branches = {row["decision"]: row for row in proposal_branches()}
    assert set(branches) == {*TOOL_ARGUMENTS, "final_answer"}
    for tool, model in TOOL_ARGUMENTS.items():
        required = [name for name, field in model.model_fields.items() if field.is_required()]
        assert branches[tool]["required arguments"] == ", ".join(required)
    assert branches["final_answer"]["required arguments"] == "answer"


@pytest.mark.parametrize(
    ("raw", "step", "expected"),
    [
        ('{"route": "structured"}', "route", "fits"),
        ('{"route": "structured", "decision": "count_rows"}', "route", "decision: extra_forbidden"),
        ('{"decision": "filter_by_intent", "arguments": {"intent": "get_refund"}}', "agent", "fits"),
        ('{"decision": "filter_by_intent", "arguments": {"answer": "10"}}', "agent", "arguments.intent: missing"),
        ('{"decision": "count_rows", "arguments": {}}', "agent", "arguments.rows: missing"),
        ('{"decision": "final_answer", "arguments": {}}', "agent", "arguments.answer: missing"),
        (
            '{"decision": "filter_by_intent", "arguments": {"intent": "get_refund", "limit": 500}}',
            "agent",
            "arguments.limit: less_than_equal",
        ),
        ('{"decision": "filter', "agent", "reply: json_invalid"),
    ],
)
def test_a_reply_fits_its_step_schema_or_names_its_first_error(raw, step, expected):
    assert verdict(raw, step=step) == expected


def _verdicts(run_id):
    rows = fixed_schema_verdicts(runs.make_requests(runs.replay(run_id)))
    return {(row["step"], row["verdict"]): row["replies"] for row in rows}


def test_no_captured_reply_fits_the_per_step_schemas_and_every_authored_one_but_the_planted_limit_does():
    captured = _verdicts(runs.RUN_CAPTURED)
    assert not any(verdict == "fits" for _, verdict in captured)
    assert captured[("agent", "arguments.intent: missing")] > 0 and captured[("agent", "arguments.rows: missing")] > 0
    assert captured[("route", "decision: extra_forbidden")] > 0
    authored = _verdicts(runs.RUN_AUTHORED)
    assert {key for key in authored if key[1] != "fits"} == {("agent", "arguments.limit: less_than_equal")}
    assert authored[("agent", "arguments.limit: less_than_equal")] == 1


def test_the_per_step_schema_is_plain_json_a_request_could_carry():
    from labkit.agent.schemas import PROPOSAL, ROUTE_REPLY

    for adapter in (PROPOSAL, ROUTE_REPLY):
        assert json.loads(json.dumps(adapter.json_schema())) == adapter.json_schema()
