"""The router: model-proposed labels validated against the four routes; declines run no data tool."""

import pytest

from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.graph import ScriptedModel, SupportAgent
from labkit.agent.identity import authorize
from labkit.agent.router import parse_route, router_messages
from labkit.agent.tools import SupportData, SupportTools

AGENT_WOULD_COUNT = '{"decision":"filter_by_intent","arguments":{"intent":"get_refund","limit":5}}'


@pytest.mark.parametrize(
    "raw,route", [('{"route":"structured"}', "structured"), ('{"route":"out_of_scope"}', "out_of_scope")]
)
def test_known_route_is_accepted(raw, route):
    assert parse_route(raw).route == route


@pytest.mark.parametrize("raw", ["structured", '{"decision":"count_rows","arguments":{}}', '{"route":"weather"}', "[]"])
def test_reply_outside_the_route_enum_is_invalid_not_guessed(raw):
    result = parse_route(raw)
    assert result.route is None and result.problem


def test_fields_besides_the_route_are_named_as_ignored():
    result = parse_route('{"route":"structured","decision":"count_rows"}')
    assert result.route == "structured" and result.ignored == ("decision",)


def test_router_sees_the_callers_scope_and_the_question_only():
    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    messages = router_messages("How many refund requests are in the dataset?", caller)
    assert APPROVED_SCOPE in messages[-1]["content"] and "get_refund" not in messages[-1]["content"]


@pytest.mark.parametrize(
    "question",
    ["Who won the football match last night?", "Update the CRM record for the lead Acme Corp to closed-won."],
)
def test_sports_and_crm_questions_decline_without_data_tool_calls(question):
    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    data = SupportData()
    model = ScriptedModel({"route:": '{"route":"out_of_scope"}', "agent:": AGENT_WOULD_COUNT})
    state = SupportAgent(caller, SupportTools(caller, data), model).run(question)
    assert state["status"] == "out_of_scope" and data.audit == []
    assert [k.split(":")[0] for k in model.keys] == ["route"]


def test_invalid_route_ends_in_a_recorded_fallback_without_tools():
    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    data = SupportData()
    model = ScriptedModel({"route:": '{"decision":"count_rows","arguments":{}}', "agent:": AGENT_WOULD_COUNT})
    state = SupportAgent(caller, SupportTools(caller, data), model).run("How many refund requests?")
    assert (state["status"], state["stop_reason"]) == ("fallback", "invalid_route") and data.audit == []


def test_the_schema_as_shown_abbreviates_only_the_intent_names_and_leaves_the_schema_sent_unchanged():
    import json

    from labkit.agent.router import DECISION_SCHEMA, schema_as_shown

    sent = json.dumps(DECISION_SCHEMA)
    shown = schema_as_shown()
    assert shown["properties"]["arguments"]["properties"]["intent"]["enum"] == ["<27 intents>"]
    assert json.dumps(DECISION_SCHEMA) == sent, "the schema the requests send is not changed"
    shown["properties"]["arguments"]["properties"]["intent"] = DECISION_SCHEMA["properties"]["arguments"]["properties"][
        "intent"
    ]
    assert shown == DECISION_SCHEMA
