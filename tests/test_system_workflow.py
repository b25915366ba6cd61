"""The LangGraph workflow and `ask`: statuses from the check node, the guarded tool edge, threads and trace lines."""

import json

import pytest

from labkit.system import workflow
from labkit.system.contract import ScriptedModel
from labkit.system.policy import load_policy_index
from labkit.system.workflow import (
    InvalidRequest,
    MinimalSystem,
    SessionTeamMismatch,
    after_check,
    check,
    read_trace_lines,
    request_trace,
    run_tool,
)
from labkit.traces import TraceFormatError

POLICY_Q = "How many days do customers have to request a refund?"
COUNT_Q = "How many refund tickets does my team have?"
EMPTY_Q = "How many order cancellation tickets does my team have?"
ANSWER = json.dumps(
    {
        "kind": "answer",
        "text": "Customers can request a refund within 30 days.",
        "citation_ids": ["refund_policy.pdf#p1"],
    }
)


def tool_call(intent):
    return json.dumps({"kind": "tool_call", "tool_args": {"intent": intent}})


@pytest.fixture(scope="module")
def index():
    return load_policy_index()


@pytest.fixture
def make_system(index, tmp_path):
    def make(replies):
        return MinimalSystem(ScriptedModel(replies), index=index, trace_path=tmp_path / "traces.jsonl")

    return make


def steps(system, session_id):
    return [s["step"] for s in system.saved_state(session_id)["trace"]]


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        '{"kind": "answer"}',
        '{"kind": "answer", "text": "30 days"}',
        '[{"kind": "insufficient_evidence"}]',
        "",
    ],
)
def test_malformed_reply_gives_invalid_output(make_system, raw):
    result = make_system(raw).ask(POLICY_Q, "team-a", "s1")
    assert result["status"] == "invalid_output" and result["reason"]


def test_unknown_citation_gives_invalid_citation(make_system):
    raw = json.dumps({"kind": "answer", "text": "Within 30 days.", "citation_ids": ["refund_policy.pdf#p9"]})
    result = make_system(raw).ask(POLICY_Q, "team-a", "s1")
    assert result["status"] == "invalid_citation" and "refund_policy.pdf#p9" in result["reason"]


def test_every_cited_page_must_be_in_the_evidence_not_just_one(make_system):
    # One retrieved page and one that was never retrieved: the answer is refused, naming only the unknown page.
    raw = json.dumps(
        {
            "kind": "answer",
            "text": "Within 30 days.",
            "citation_ids": ["refund_policy.pdf#p1", "refund_policy.pdf#p9"],
        }
    )
    result = make_system(raw).ask(POLICY_Q, "team-a", "s1")
    assert result["status"] == "invalid_citation"
    assert result["reason"].startswith("cites ['refund_policy.pdf#p9'], not among the evidence [")


def test_check_judges_citations_against_this_requests_evidence_only():
    evidence = [{"citation_id": "a.pdf#p1", "text": "x"}, {"citation_id": "a.pdf#p2", "text": "y"}]
    both = json.dumps({"kind": "answer", "text": "t", "citation_ids": ["a.pdf#p2", "a.pdf#p1"]})
    mixed = json.dumps({"kind": "answer", "text": "t", "citation_ids": ["a.pdf#p1", "b.pdf#p1"]})
    assert check({"reply": both, "evidence": evidence})["result"] == {
        "status": "answered",
        "text": "t",
        "citation_ids": ["a.pdf#p2", "a.pdf#p1"],
    }
    refused = check({"reply": mixed, "evidence": evidence})
    assert refused["result"] == {
        "status": "invalid_citation",
        "reason": "cites ['b.pdf#p1'], not among the evidence ['a.pdf#p1', 'a.pdf#p2']",
    }
    assert refused["trace"] == [{"step": "check", "status": "invalid_citation", "reason": refused["result"]["reason"]}]


def test_a_valid_answer_citing_retrieved_pages_is_answered(make_system):
    result = make_system(ANSWER).ask(POLICY_Q, "team-a", "s1")
    assert result == {
        "status": "answered",
        "text": "Customers can request a refund within 30 days.",
        "citation_ids": ["refund_policy.pdf#p1"],
    }


def test_an_empty_count_answers_zero(make_system):
    system = make_system(tool_call("cancel_order"))
    result = system.ask(EMPTY_Q, "team-b", "s1")
    assert result["status"] == "answered" and result["observation"]["count"] == 0
    assert result["text"] == "0 cancel_order tickets"
    assert steps(system, "s1") == ["retrieve", "generate", "check", "tool"]


def test_the_tool_counts_for_the_callers_team_whatever_the_model_says(make_system):
    system = make_system(tool_call("get_refund"))
    assert system.ask(COUNT_Q, "team-a", "a")["observation"] == {"intent": "get_refund", "team": "team-a", "count": 2}
    assert system.ask(COUNT_Q, "team-b", "b")["observation"] == {"intent": "get_refund", "team": "team-b", "count": 1}


def test_insufficient_evidence_ends_without_the_tool(make_system):
    system = make_system('{"kind": "insufficient_evidence"}')
    assert system.ask(POLICY_Q, "team-a", "s1") == {"status": "insufficient_evidence"}
    assert steps(system, "s1") == ["retrieve", "generate", "check"]


@pytest.mark.parametrize(
    "raw",
    [
        '{"kind": "tool_call", "tool_args": {"intent": "delete_everything"}}',
        '{"kind": "tool_call", "text": "2 tickets", "tool_args": {"intent": "get_refund"}}',
        '{"kind": "tool_call", "tool_args": {"intent": "get_refund", "team": "team-b"}}',
        '{"kind": "answer", "text": "x", "citation_ids": ["refund_policy.pdf#p1"], "tool_args": {"intent": "get_refund"}}',
        '{"kind": "tool_call"}',
    ],
)
def test_the_tool_never_runs_on_an_unvalidated_reply(make_system, monkeypatch, raw):
    def forbidden(*args, **kwargs):
        raise AssertionError("count_tickets ran on an unvalidated reply")

    monkeypatch.setattr(workflow, "count_tickets", forbidden)
    system = make_system(raw)
    assert system.ask(COUNT_Q, "team-a", "s1")["status"] == "invalid_output"
    assert "tool" not in steps(system, "s1")


def test_only_a_validated_tool_call_is_routed_to_the_tool():
    from langgraph.graph import END

    assert after_check({"result": {"status": "tool_call", "tool_args": {"intent": "get_refund"}}}) == "tool"
    for status in ("answered", "invalid_output", "invalid_citation", "insufficient_evidence"):
        assert after_check({"result": {"status": status}}) == END


def test_each_node_returns_only_the_fields_it_changes(index):
    state = {
        "question": POLICY_Q,
        "team": "team-a",
        "trace": [{"step": "earlier"}],
        "evidence": [{"citation_id": "refund_policy.pdf#p1", "text": "..."}],
        "reply": ANSWER,
    }
    assert set(check(state)) == {"result", "trace"} and len(check(state)["trace"]) == 1
    tool_state = {**state, "result": {"status": "tool_call", "tool_args": {"intent": "get_refund"}}}
    assert set(run_tool(tool_state)) == {"result", "trace"}
    assert set(workflow.retrieve_node(index)(state)) == {"evidence", "trace"}
    assert set(workflow.generate_node(ScriptedModel(ANSWER))(state)) == {"reply", "trace"}


def test_state_accumulates_across_requests_on_one_thread(make_system):
    system = make_system({POLICY_Q: ANSWER, COUNT_Q: tool_call("get_refund")})
    system.ask(POLICY_Q, "team-a", "s1")
    second = system.ask(COUNT_Q, "team-a", "s1")
    saved = system.saved_state("s1")
    assert steps(system, "s1") == ["retrieve", "generate", "check", "retrieve", "generate", "check", "tool"]
    assert saved["question"] == COUNT_Q and saved["result"] == second
    lines = read_trace_lines(system.trace_path)
    assert [len(line["trace"]) for line in lines] == [3, 4]  # each line keeps only its own request's steps


def test_cross_team_reuse_of_a_thread_raises(make_system):
    system = make_system(ANSWER)
    system.ask(POLICY_Q, "team-a", "s1")
    with pytest.raises(SessionTeamMismatch, match="belongs to 'team-a'"):
        system.ask(POLICY_Q, "team-b", "s1")
    assert steps(system, "s1") == ["retrieve", "generate", "check"]  # nothing ran for team-b
    assert len(read_trace_lines(system.trace_path)) == 1


@pytest.mark.parametrize(
    "question,team,session_id", [("", "team-a", "s"), ("q", "  ", "s"), ("q", "team-a", ""), (None, "team-a", "s")]
)
def test_blank_arguments_are_rejected_before_anything_runs(make_system, question, team, session_id):
    system = make_system(ANSWER)
    with pytest.raises(InvalidRequest):
        system.ask(question, team, session_id)
    assert system.adapter.requests == [] and not system.trace_path.exists()


def test_each_request_appends_one_trace_line_with_session_question_team_result_and_latency(make_system):
    system = make_system({POLICY_Q: ANSWER, COUNT_Q: tool_call("get_refund")})
    system.ask(POLICY_Q, "team-a", "s1")
    system.ask(COUNT_Q, "team-b", "s2")
    lines = read_trace_lines(system.trace_path)
    assert [(line["session_id"], line["team"], line["result"]["status"]) for line in lines] == [
        ("s1", "team-a", "answered"),
        ("s2", "team-b", "answered"),
    ]
    assert all(isinstance(line["latency_ms"], float) for line in lines)
    generate = lines[0]["trace"][1]
    assert generate["raw_reply"] == ANSWER and generate["model_request"][0]["role"] == "system"
    assert request_trace(lines[1]).kinds() == ["request", "retrieve", "generate", "check", "tool", "result"]


def test_new_session_returns_a_thread_with_no_saved_state(make_system):
    system = make_system(ANSWER)
    system.ask(POLICY_Q, "team-a", "golden-1")
    session_id = system.new_session("golden")
    assert session_id == "golden-2" and system.saved_state(session_id) == {}


def test_a_malformed_trace_line_is_refused(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text('{"session_id": "s1"}\n', encoding="utf-8")
    with pytest.raises(TraceFormatError, match="line 1"):
        read_trace_lines(path)


def test_each_trace_line_names_the_replayed_run_and_its_file_sha256(index, tmp_path):
    from labkit.boundary import connect
    from labkit.recording import read_manifest
    from labkit.system.runs import RUN_AUTHORED, SETTINGS

    boundary = connect(RUN_AUTHORED, lesson="05", settings=SETTINGS, mode="replay")
    system = MinimalSystem(boundary, index=index, trace_path=tmp_path / "traces.jsonl")
    system.ask(POLICY_Q, "team-a", "s1")
    (line,) = read_trace_lines(system.trace_path)
    assert line["run"] == {"run_id": RUN_AUTHORED, "run_sha256": read_manifest()[RUN_AUTHORED]["sha256"]}
    assert request_trace(line).events[0].data["run_sha256"] == line["run"]["run_sha256"]


def test_an_unknown_team_is_refused_before_anything_runs(make_system):
    from labkit.system.tickets import UnknownTeam

    system = make_system(tool_call("get_refund"))
    with pytest.raises(UnknownTeam, match="unknown team 'team-zz': the known teams are team-a, team-b"):
        system.ask(COUNT_Q, "team-zz", "s1")
    assert system.saved_state("s1") == {}


def test_a_reply_with_a_repeated_key_is_invalid_output_and_the_tool_never_runs(make_system):
    raw = '{"kind": "insufficient_evidence", "kind": "tool_call", "tool_args": {"intent": "get_refund"}}'
    system = make_system(raw)
    result = system.ask(COUNT_Q, "team-a", "s1")
    assert result["status"] == "invalid_output" and "repeated JSON key 'kind'" in result["reason"]
    assert "tool" not in steps(system, "s1")
