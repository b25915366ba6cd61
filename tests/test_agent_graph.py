"""The LangGraph agent: allowed nodes only, the iteration cap with a recorded fallback, budget, and trace."""

import pytest

from labkit.agent import runs
from labkit.agent.dataset import APPROVED_SCOPE
from labkit.agent.graph import ALLOWED_NODES, ScriptedModel, SupportAgent, agent_trace, trajectory
from labkit.agent.identity import authorize
from labkit.agent.tools import SupportData, SupportTools
from labkit.agent.trace import BudgetError
from labkit.boundary import connect

ROUTE = '{"route":"structured"}'
LOOP = '{"decision":"filter_by_intent","arguments":{"intent":"get_refund","limit":3}}'


def agent(model, **options):
    caller = authorize("analyst-ana", "s1", APPROVED_SCOPE)
    data = SupportData()
    return SupportAgent(caller, SupportTools(caller, data), model, **options), data


def test_compiled_graph_has_only_the_allowed_nodes():
    built, _ = agent(ScriptedModel({"route:": ROUTE, "agent:": LOOP}))
    assert set(built.graph.get_graph().nodes) - {"__start__", "__end__"} == set(ALLOWED_NODES)


@pytest.mark.parametrize("cap", [1, 3, 6])
def test_forced_loop_stops_at_the_iteration_cap_and_records_a_fallback(cap):
    model = ScriptedModel({"route:": ROUTE, "agent:": LOOP})
    built, _data = agent(model, max_iterations=cap)
    state = built.run("How many refund requests are in the dataset?", steps_left=20)
    assert (state["status"], state["stop_reason"], state["iterations"]) == ("fallback", "iteration_cap", cap)
    assert len([k for k in model.keys if k.startswith("agent:")]) == cap
    assert state["events"][-1]["kind"] == "fallback" and state["events"][-1]["reason"] == "iteration_cap"


def test_budget_runs_out_before_the_cap_and_is_recorded():
    built, data = agent(ScriptedModel({"route:": ROUTE, "agent:": LOOP}), max_iterations=10)
    state = built.run("How many refund requests are in the dataset?", steps_left=3)
    assert (state["status"], state["stop_reason"], state["steps_left"]) == ("fallback", "budget_exhausted", 0)
    assert len(data.audit) == 2


@pytest.mark.parametrize("steps", [0, -2, 2.5])
def test_invalid_budget_is_refused(steps):
    built, _ = agent(ScriptedModel({"route:": ROUTE, "agent:": LOOP}))
    with pytest.raises(BudgetError):
        built.run("How many refund requests?", steps_left=steps)


def test_malformed_proposals_are_recorded_and_bounded_by_the_cap():
    built, data = agent(ScriptedModel({"route:": ROUTE, "agent:": "not json"}), max_iterations=2)
    state = built.run("How many refund requests are in the dataset?")
    assert state["stop_reason"] == "iteration_cap" and data.audit == []
    assert [e["kind"] for e in state["events"]].count("proposal_invalid") == 2


def test_refund_question_replays_through_the_two_tool_path_to_a_validated_state():
    boundary = connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS)
    built, _data = agent(boundary)
    state = built.run("How many refund requests are in the dataset?")
    assert state["final"] == "27 refund requests in approved_support_dataset" and state["status"] == "ok"
    assert trajectory(state) == [
        "route=structured",
        "filter_by_intent:tool_returned",
        "count_rows:tool_returned",
        "stop=answered",
    ]
    verified = state["events"][-1]
    assert (verified["kind"], verified["count"], verified["intent"]) == ("answer_verified", 27, "get_refund")


def test_trace_records_routes_calls_observations_budget_and_stop_reason():
    boundary = connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS)
    built, _ = agent(boundary)
    trace = agent_trace(built.run("How many refund requests are in the dataset?"))
    assert trace.kinds() == [
        "request_accepted",
        "route_chosen",
        "tool_proposed",
        "tool_returned",
        "tool_proposed",
        "tool_returned",
        "answer_proposed",
        "answer_verified",
    ]
    budgets = [e.data["steps_left"] for e in trace if "steps_left" in e.data]
    assert budgets == sorted(budgets, reverse=True) and budgets[-1] == 3
    count = [e for e in trace if e.kind == "tool_returned"][-1]
    assert count.data["observation"]["count"] == 27


def test_wrong_final_count_from_the_model_is_rejected():
    replies = iter(['{"decision":"filter_by_intent","arguments":{"intent":"get_refund","limit":3}}'])

    class Model(ScriptedModel):
        def generate(self, key, messages):
            if key.startswith("agent:") and key.endswith(":2"):
                import json

                ref = json.loads(messages[-1]["content"])["observation"]["row_ref"]
                self.replies["agent:"] = f'{{"decision":"count_rows","arguments":{{"rows":"{ref}"}}}}'
            if key.endswith(":3"):
                self.replies["agent:"] = (
                    '{"decision":"final_answer","arguments":{"answer":"20 refund requests in approved_support_dataset"}}'
                )
            return super().generate(key, messages)

    built, _ = agent(Model({"route:": ROUTE, "agent:": next(replies)}))
    state = built.run("How many refund requests are in the dataset?")
    assert (state["status"], state["final"]) == ("answer_rejected", None)
    assert state["events"][-1]["reason"] == "wrong_count"


def test_the_trace_names_the_replayed_run_and_its_file_sha256():
    from labkit.recording import read_manifest

    boundary = connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS)
    built, _data = agent(boundary)
    first = built.run("How many refund requests are in the dataset?")["events"][0]
    assert first["kind"] == "request_accepted" and first["run_id"] == runs.RUN_AUTHORED
    assert first["run_sha256"] == read_manifest()[runs.RUN_AUTHORED]["sha256"]


def test_same_filter_forever_proposes_one_filter_until_the_cap_stops_it():
    from labkit.agent.graph import same_filter_forever

    built, data = agent(same_filter_forever())
    state = built.run("How many refund requests are in the dataset?", steps_left=20)
    assert state["stop_reason"] == "iteration_cap" and state["steps_left"] > 0
    assert {(e["tool"], e["arguments"]["intent"]) for e in data.audit} == {("filter_by_intent", "get_refund")}


def test_a_proposal_with_a_problem_feeds_its_error_back_and_is_recorded_invalid():
    from labkit.agent.graph import proposal_record

    state = {"history": [{"role": "user", "content": "q"}], "steps_left": 4}
    bad = proposal_record(state, "count please", problem="not JSON", ignored=[], iteration=2)
    assert bad["history"][1:] == [
        {"role": "assistant", "content": "count please"},
        {"role": "user", "content": '{"error": "not JSON"}'},
    ]
    assert bad["events"][0]["kind"] == "proposal_invalid" and bad["events"][0]["iteration"] == 2
    good = proposal_record(state, '{"decision": "count_rows"}', problem=None, ignored=["x"], iteration=1)
    assert good["history"][1:] == [{"role": "assistant", "content": '{"decision": "count_rows"}'}]
    assert good["events"][0]["kind"] == "tool_proposed" and good["events"][0]["ignored_fields"] == ["x"]
    assert state["history"] == [{"role": "user", "content": "q"}], "the state passed in is not changed"


def test_a_final_answer_proposal_is_recorded_as_answer_proposed_not_as_a_tool_call():
    from labkit.agent.graph import proposal_record

    state = {"history": [{"role": "user", "content": "q"}], "steps_left": 2}
    raw = '{"decision": "final_answer", "arguments": {"answer": "27 refund requests in approved_support_dataset"}}'
    event = proposal_record(state, raw, problem=None, ignored=[], iteration=3, final=True)["events"][0]
    assert event["kind"] == "answer_proposed" and event["raw"] == raw


def test_finalize_passes_a_wrong_intent_and_an_outdated_count_that_the_plain_trace_refuses():
    from labkit.agent.graph import finalize_gap

    rows = finalize_gap(authorize("analyst-ana", "gap", APPROVED_SCOPE))
    assert [row["last_result counted"].split(",")[0] for row in rows] == ["get_refund", "track_refund"]
    assert all(row["finalize_node"] == "ok" for row in rows), "the gap: finalize checks neither intent nor version"
    # each row has one problem only: the outdated count has the right intent, the wrong intent is current
    assert [row["check_count_result"] for row in rows] == ["refused: dataset_version", "refused: intent"]
    assert "exercise 1's rule" not in rows[0], "what exercise 1's rule says is the learner's prediction (exercise 2)"
    assert rows[0]["answer proposed"] == "27 refund requests in approved_support_dataset"
    assert rows[1]["answer proposed"].endswith("track refund requests in approved_support_dataset")


def test_the_gap_counts_are_each_the_latest_in_their_log_each_with_one_problem():
    from labkit.agent.graph import gap_counts

    counts, request, _ = gap_counts(authorize("analyst-ana", "gap", APPROVED_SCOPE))
    outdated, wrong_intent = counts.values()
    assert outdated["intent"] == "get_refund" and outdated["dataset_version"] != request["dataset_version"]
    assert wrong_intent["intent"] == "track_refund" and wrong_intent["dataset_version"] == request["dataset_version"]


def test_the_question_s_expected_intent_is_kept_in_the_state_and_never_sent_to_the_model():
    from labkit.agent.graph import ScriptedModel, SupportAgent
    from labkit.agent.tools import SupportData, SupportTools

    caller = authorize("analyst-ana", "expected", APPROVED_SCOPE)
    model = ScriptedModel({"route:": '{"route": "out_of_scope"}'})
    state = SupportAgent(caller, SupportTools(caller, SupportData()), model).run("q?", expected_intent="get_refund")
    assert state["expected_intent"] == "get_refund" and state["status"] == "out_of_scope"
    unset = SupportAgent(caller, SupportTools(caller, SupportData()), model).run("q?")
    assert unset["expected_intent"] is None


def test_a_subclass_s_finalize_node_is_the_one_its_graph_runs():
    from labkit.agent.graph import ScriptedModel, SupportAgent, answer_rejected
    from labkit.agent.tools import SupportData, SupportTools
    from labkit.agent.validator import AnswerRejected

    class Refusing(SupportAgent):
        def finalize_node(self, state):
            return answer_rejected("any", AnswerRejected("stale", "refused by the subclass"))

    caller = authorize("analyst-ana", "subclass", APPROVED_SCOPE)
    answer = '{"decision": "final_answer", "arguments": {"answer": "27 refund requests in approved_support_dataset"}}'
    model = ScriptedModel({"route:": '{"route": "structured"}', "agent:": answer})
    state = Refusing(caller, SupportTools(caller, SupportData()), model).run("How many refund requests?")
    assert state["status"] == "answer_rejected" and state["events"][-1]["reason"] == "stale"
    assert state["events"][-1] == {
        "kind": "answer_rejected",
        "answer": "any",
        "reason": "stale",
        "problem": "refused by the subclass",
        "status": "answer_rejected",
    }
