"""The LangGraph workflow and `ask`: statuses from the check node, the guarded tool edge, threads and trace lines."""

import json

import pytest

from labkit.errors import InvalidJSON
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


@pytest.mark.parametrize(
    "raw,reason",
    [
        (
            '{"kind": "answer", "text": "t", "citation_ids": ["a.pdf#p1"], "confidence": 1}',
            "confidence: Extra inputs are not permitted",
        ),
        (
            '{"kind": "tool_call", "tool_args": {"intent": "refund_all"}}',
            "tool_args.intent: Input should be 'get_refund', 'track_order' or 'cancel_order'",
        ),
        ('{"kind": "answer", "text": "t"}', "Value error, a reply of kind answer needs citation_ids"),
        (
            '{"kind": "insufficient_evidence", "kind": "insufficient_evidence"}',
            "model reply: repeated JSON key 'kind': keep exactly one value for it",
        ),
    ],
)
def test_an_invalid_reply_says_which_field_is_wrong_and_why(raw, reason):
    evidence = [{"citation_id": "a.pdf#p1", "text": "x"}]
    assert check({"reply": raw, "evidence": evidence}) == {
        "result": {"status": "invalid_output", "reason": reason},
        "trace": [{"step": "check", "status": "invalid_output", "reason": reason}],
    }


def test_a_validated_reply_is_traced_with_its_status_and_no_reason():
    evidence = [{"citation_id": "a.pdf#p1", "text": "x"}]
    answer = json.dumps({"kind": "answer", "text": "t", "citation_ids": ["a.pdf#p1"]})
    assert check({"reply": answer, "evidence": evidence})["trace"] == [{"step": "check", "status": "answered"}]
    assert check({"reply": tool_call("track_order"), "evidence": evidence}) == {
        "result": {"status": "tool_call", "tool_args": {"intent": "track_order"}},
        "trace": [{"step": "check", "status": "tool_call"}],
    }


def test_the_model_request_sends_the_question_and_evidence_as_json_data_with_text_as_written():
    evidence = [{"citation_id": "a.pdf#p1", "text": "délai de 30 jours"}]
    assert workflow.build_messages("Où est ma commande ?", evidence) == [
        {"role": "system", "content": workflow.SYSTEM},
        {
            "role": "user",
            "content": '{"question": "Où est ma commande ?", "evidence": '
            '[{"citation_id": "a.pdf#p1", "text": "délai de 30 jours"}]}',
        },
    ]


def test_retrieve_gives_the_k_nearest_chunks_as_evidence_and_traces_their_ids_and_distances(index):
    found = index.store.similarity_search_with_score(POLICY_Q, k=3)
    update = workflow.retrieve_node(index)({"question": POLICY_Q})
    assert update["evidence"] == [{"citation_id": d.metadata["citation_id"], "text": d.page_content} for d, _ in found]
    (record,) = update["trace"]
    assert record["step"] == "retrieve"
    assert record["ids"] == [d.metadata["citation_id"] for d, _ in found]
    assert record["distances"] == [round(float(s), 4) for _, s in found]
    assert all(isinstance(x, float) and x == round(x, 4) for x in record["distances"])
    assert len(workflow.retrieve_node(index, k=2)({"question": POLICY_Q})["evidence"]) == 2


def test_generate_keeps_the_request_sent_the_raw_reply_and_the_call_record():
    model = ScriptedModel(ANSWER)
    evidence = [{"citation_id": "refund_policy.pdf#p1", "text": "..."}]
    update = workflow.generate_node(model)({"question": POLICY_Q, "evidence": evidence})
    messages = workflow.build_messages(POLICY_Q, evidence)
    assert model.requests == [(POLICY_Q, messages)]
    assert update == {
        "reply": ANSWER,
        "trace": [
            {
                "step": "generate",
                "model_request": messages,
                "raw_reply": ANSWER,
                "model": "scripted-by-caller",
                "input_tokens": None,
                "output_tokens": None,
                "latency_ms": None,
                "latency_source": "none",
            }
        ],
    }


def test_a_fresh_system_numbers_its_sessions_from_one(make_system):
    system = make_system(ANSWER)
    assert system.new_session() == "session-1"
    assert make_system(ANSWER).new_session("golden") == "golden-1"


def test_by_default_the_policy_index_is_loaded_and_trace_lines_go_to_the_scratch_folder(
    index, monkeypatch, scratch_in_tmp
):
    monkeypatch.setattr(workflow, "load_policy_index", lambda: index)
    system = MinimalSystem(ScriptedModel(ANSWER))
    assert system.index is index
    system.ask(POLICY_Q, "team-a", "s1")
    assert system.trace_path == scratch_in_tmp / "05_minimal_system" / "traces.jsonl"
    assert [line["session_id"] for line in read_trace_lines()] == ["s1"]


def test_the_trace_file_may_go_in_a_folder_that_does_not_exist_yet(index, tmp_path):
    system = MinimalSystem(ScriptedModel(ANSWER), index=index, trace_path=str(tmp_path / "a" / "b" / "t.jsonl"))
    system.ask(POLICY_Q, "team-a", "s1")
    assert [line["question"] for line in read_trace_lines(tmp_path / "a" / "b" / "t.jsonl")] == [POLICY_Q]


@pytest.mark.parametrize(
    "question,team,session_id,message",
    [
        ("", "team-a", "s", "question must be non-empty text, not ''"),
        ("q", "  ", "s", "team must be non-empty text, not '  '"),
        ("q", "team-a", 7, "session_id must be non-empty text, not 7"),
    ],
)
def test_a_blank_argument_is_named_in_the_error(make_system, question, team, session_id, message):
    with pytest.raises(InvalidRequest, match=f"^{message}$"):
        make_system(ANSWER).ask(question, team, session_id)


def test_cross_team_reuse_says_whose_session_it_is_and_what_to_do(make_system):
    system = make_system(ANSWER)
    system.ask(POLICY_Q, "team-a", "s1")
    with pytest.raises(SessionTeamMismatch) as info:
        system.ask(POLICY_Q, "team-b", "s1")
    assert str(info.value) == "session 's1' belongs to 'team-a', not 'team-b'; start a new session for this team"


def test_the_trace_line_keeps_the_whole_requests_latency_in_milliseconds(make_system, monkeypatch):
    import types

    clock = iter([100.0, 100.0123456])
    monkeypatch.setattr(workflow, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    system = make_system(ANSWER)
    system.ask(POLICY_Q, "team-a", "s1")
    assert read_trace_lines(system.trace_path)[0]["latency_ms"] == 12.346


@pytest.mark.parametrize(
    "bad_line",
    [
        '["run", "session_id", "question", "team", "result", "latency_ms", "trace"]',
        '{"run": {}, "session_id": "s", "question": "q", "team": "t", "result": {}, "latency_ms": 1.0, "trace": {}}',
        '{"run": {}, "session_id": "s", "question": "q", "team": "t", "result": {}, "latency_ms": 1.0, "trace": [],'
        ' "note": "x"}',
    ],
)
def test_a_trace_line_not_written_by_ask_is_refused_with_its_number(make_system, bad_line):
    system = make_system(ANSWER)
    system.ask(POLICY_Q, "team-a", "s1")
    with system.trace_path.open("a", encoding="utf-8") as log:
        log.write(bad_line + "\n")
    with pytest.raises(TraceFormatError, match=r"^traces\.jsonl line 2: a request line has exactly the keys") as info:
        read_trace_lines(system.trace_path)
    assert str(info.value).endswith("this file was not written by MinimalSystem.ask: delete it and ask again")


def test_a_trace_line_that_is_not_json_is_refused_with_its_number(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text("{}\n{oops\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"^traces\.jsonl line 1: a request line"):
        read_trace_lines(path)
    path.write_text("{oops\n", encoding="utf-8")
    with pytest.raises(InvalidJSON, match=r"^traces\.jsonl line 1: malformed JSON"):
        read_trace_lines(path)


def test_request_trace_gives_one_event_per_step_with_the_steps_own_fields(make_system):
    system = make_system(tool_call("get_refund"))
    system.ask(COUNT_Q, "team-a", "s1")
    (line,) = read_trace_lines(system.trace_path)
    events = request_trace(line).events
    assert events[0].data == {
        "run_id": None,
        "run_sha256": None,
        "session_id": "s1",
        "question": COUNT_Q,
        "team": "team-a",
    }
    assert [event.data for event in events[1:-1]] == [
        {k: v for k, v in step.items() if k != "step"} for step in line["trace"]
    ]
    assert events[-2].data == {"intent": "get_refund", "team": "team-a", "count": 2}
    assert events[-1].kind == "result" and events[-1].data == line["result"]


def test_trace_lines_are_written_and_read_as_utf8_whatever_the_locale(make_system, monkeypatch):
    import io

    # As on a machine whose locale encoding is Latin-1: only an explicit encoding keeps the text intact.
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: encoding or "latin-1")
    reply = json.dumps(
        {"kind": "answer", "text": "Sous 30 jours, après réception.", "citation_ids": ["refund_policy.pdf#p1"]}
    )
    system = make_system(reply)
    system.ask(POLICY_Q, "team-a", "séance-1")
    (line,) = read_trace_lines(system.trace_path)
    assert (line["session_id"], line["result"]["text"]) == ("séance-1", "Sous 30 jours, après réception.")
    assert "séance-1".encode() in system.trace_path.read_bytes()


def test_the_compiled_graph_has_the_lessons_shape_with_only_check_branching(index):
    graph = workflow.build_graph(index, ScriptedModel(ANSWER))
    edges = sorted((e.source, e.target, e.conditional) for e in graph.get_graph().edges)
    assert edges == [
        ("__start__", "retrieve", False),
        ("check", "__end__", True),
        ("check", "tool", True),
        ("generate", "check", False),
        ("retrieve", "generate", False),
        ("tool", "__end__", False),
    ]


def test_a_checkpointer_passed_in_is_the_one_that_keeps_the_thread(index):
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    graph = workflow.build_graph(index, ScriptedModel(ANSWER), checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"question": POLICY_Q, "team": "team-a"}, config=config)
    saved = saver.get_tuple(config)
    assert saved is not None and saved.checkpoint["channel_values"]["result"]["status"] == "answered"


def test_a_system_given_an_index_never_loads_another(index, monkeypatch, tmp_path):
    def forbidden():
        raise AssertionError("load_policy_index ran although an index was given")

    monkeypatch.setattr(workflow, "load_policy_index", forbidden)
    system = MinimalSystem(ScriptedModel(ANSWER), index=index, trace_path=tmp_path / "t.jsonl")
    assert system.index is index


def test_a_system_built_with_another_prompt_sends_it_and_nothing_else_changes(index, tmp_path):
    other = "Reply with JSON."
    plain, changed = ScriptedModel(ANSWER), ScriptedModel(ANSWER)
    MinimalSystem(plain, index=index, trace_path=tmp_path / "a.jsonl").ask(POLICY_Q, "team-a", "s")
    MinimalSystem(changed, index=index, trace_path=tmp_path / "b.jsonl", system=other).ask(POLICY_Q, "team-a", "s")
    (_, sent), (_, sent_changed) = plain.requests[0], changed.requests[0]
    assert sent[0]["content"] == workflow.SYSTEM and sent_changed[0]["content"] == other
    assert sent[1:] == sent_changed[1:]


def test_session_numbers_are_counted_per_prefix(make_system):
    system = make_system(ANSWER)
    assert [system.new_session("golden") for _ in range(2)] == ["golden-1", "golden-2"]
    assert system.new_session("thread") == "thread-1"


def test_a_claim_check_runs_as_a_node_after_check_and_its_status_ends_the_request(index, tmp_path):
    def no_answers(result, evidence):
        assert evidence  # the node hands it this request's evidence
        return {"status": "unsupported_figure"} if result["status"] == "answered" else result

    system = MinimalSystem(ScriptedModel(ANSWER), index=index, trace_path=tmp_path / "t.jsonl", claim_check=no_answers)
    assert system.ask(POLICY_Q, "team-a", "s")["status"] == "unsupported_figure"
    steps = [step["step"] for step in read_trace_lines(tmp_path / "t.jsonl")[0]["trace"]]
    assert steps == ["retrieve", "generate", "check", "check_claims"]
    counted = MinimalSystem(
        ScriptedModel(tool_call("get_refund")), index=index, trace_path=tmp_path / "c.jsonl", claim_check=no_answers
    )
    assert counted.ask(POLICY_Q, "team-a", "s")["observation"]["count"] == 2  # a tool call still reaches the tool
    assert "check_claims" not in MinimalSystem(ScriptedModel(ANSWER), index=index).graph.get_graph().nodes
