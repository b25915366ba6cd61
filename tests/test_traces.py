import pytest

from labkit.traces import Trace, TraceFormatError


def test_each_event_gets_the_next_sequence_number():
    trace = Trace()
    trace.emit("request_accepted", question="q")
    trace.emit("model_skipped", reason="empty_context")
    assert [(e.sequence, e.kind) for e in trace] == [(1, "request_accepted"), (2, "model_skipped")]


def test_event_data_is_copied_so_later_changes_do_not_leak_in():
    data = {"ids": ["a"]}
    trace = Trace()
    trace.emit("context_selected", **data)
    data["ids"].append("b")
    assert trace.events[0].data == {"ids": ["a"]}


def test_json_lines_round_trip(tmp_path):
    trace = Trace()
    trace.emit("request_accepted", question="é")
    trace.emit("request_completed", status="answered")
    path = trace.write_jsonl(tmp_path / "t.jsonl")
    assert path.read_text(encoding="utf-8").count("\n") == 2
    assert Trace.from_jsonl(path.read_text(encoding="utf-8")).kinds() == ["request_accepted", "request_completed"]


def test_a_gap_in_sequence_numbers_is_refused():
    with pytest.raises(TraceFormatError, match="sequence 3 where 2"):
        Trace.from_jsonl('{"sequence":1,"kind":"a"}\n{"sequence":3,"kind":"b"}\n')


def test_a_line_without_a_kind_is_refused():
    with pytest.raises(TraceFormatError, match="'kind'"):
        Trace.from_jsonl('{"sequence":1}\n')


def test_summary_names_status_and_reasons():
    trace = Trace()
    trace.emit("model_skipped", reason="empty_context")
    trace.emit("request_completed", status="not_in_docs")
    assert trace.summary() == "#1 model_skipped reason=empty_context\n#2 request_completed status=not_in_docs"


def test_json_held_in_strings_is_expanded_at_any_depth_and_other_text_is_kept():
    from labkit.traces import expand_json_strings

    value = {"reply": '{"a": ["[1, 2]", "x"]}', "note": "[not json", "n": "42", "list": ['{"b": null}']}
    assert expand_json_strings(value) == {
        "reply": {"a": [[1, 2], "x"]},
        "note": "[not json",
        "n": "42",
        "list": [{"b": None}],
    }


def test_event_data_dump_has_no_escaped_quotes_for_nested_json():
    from labkit.traces import dumps_event_data

    event = Trace().emit("generate", raw='{"kind": "answer"}')
    assert dumps_event_data(event) == '{\n  "raw": {\n    "kind": "answer"\n  }\n}'


def test_strings_with_line_breaks_are_shown_on_several_lines_and_escaped_backslashes_kept():
    from labkit.traces import display_json

    event = Trace().emit("model_request_ready", prompt="first line\nsecond line", path="C:\\new")
    shown = display_json(event)
    assert '"prompt": "first line\n    second line"' in shown
    assert "\\n" not in shown.replace("C:\\\\new", ""), "no literal \\n is left in a string"
    assert '"path": "C:\\\\new"' in shown, "an escaped backslash before n is not a line break"


def _summaries(*events):
    from labkit.traces import event_summary

    trace = Trace()
    for kind, data in events:
        trace.emit(kind, **data)
    return [event_summary(e) for e in trace]


def test_summary_names_the_tool_and_its_arguments_of_a_proposal_and_the_count_of_a_result():
    raw = '{"decision": "filter_by_intent", "arguments": {"intent": "get_refund", "limit": 5}}'
    proposal, returned, counted, refused = _summaries(
        ("tool_proposed", {"raw": raw}),
        (
            "tool_returned",
            {
                "tool": "filter_by_intent",
                "arguments": {"intent": "get_refund"},
                "observation": {"row_ref": "rows-1", "preview": [{}, {}]},
            },
        ),
        ("tool_returned", {"tool": "count_rows", "arguments": {"rows": "rows-1"}, "observation": {"count": 27}}),
        ("tool_refused", {"tool": "count_rows", "arguments": {"rows": "rows-0"}, "observation": {"error": "stale"}}),
    )
    assert proposal == "filter_by_intent(intent=get_refund, limit=5)"
    assert returned == "filter_by_intent(intent=get_refund) → row_ref rows-1, 2 preview"
    assert counted == "count_rows(rows=rows-1) → count 27"
    assert refused == "count_rows(rows=rows-0) → error: stale"


def test_summary_of_a_proposed_final_answer_shows_the_answer_as_a_call():
    raw = '{"decision": "final_answer", "arguments": {"answer": "27 refund requests"}}'
    assert _summaries(("answer_proposed", {"raw": raw, "iteration": 3})) == ["final_answer(answer=27 refund requests)"]


def test_summary_of_a_retrieval_gives_k_and_the_top_chunk():
    candidates = [{"chunk_id": "doc:c1", "score": 0.81}, {"chunk_id": "doc:c2", "score": 0.5}]
    assert _summaries(
        ("retrieval_completed", {"candidates": candidates}),
        ("retrieve", {"ids": ["policy.pdf#p1", "policy.pdf#p2"], "distances": [1.15, 1.2]}),
        ("retrieval_completed", {"candidates": []}),
    ) == ["k=2, top doc:c1 (score 0.81)", "k=2, top policy.pdf#p1 (distance 1.15)", "k=0: nothing retrieved"]


def test_summary_of_a_check_gives_its_verdict_and_reason():
    assert _summaries(
        ("reply_checked", {"status": "answered", "source_ids": ["a"], "checks": ["shape", "membership"]}),
        ("check", {"status": "invalid_output", "reason": "answer needs text"}),
        ("reply_rejected", {"reason": "source_contract", "error": "cites b"}),
        ("result", {"status": "answered", "text": "2 get_refund tickets"}),
        ("answer_rejected", {"answer": "12", "reason": "wrong_count", "problem": "the tool counted 27"}),
    ) == [
        "answered, a; 2 checks passed",
        "invalid_output, answer needs text",
        "source_contract: cites b",
        "answered: “2 get_refund tickets”",
        "“12”: wrong_count",
    ]


def test_summary_of_requests_and_replies_says_who_asked_what_and_what_came_back():
    reply = '{"kind": "tool_call", "text": "", "tool_args": {"intent": "get_refund"}}'
    assert _summaries(
        ("request_accepted", {"question": "How many?", "user_id": "ana"}),
        ("request", {"question": "Why?", "team": "team-a"}),
        ("model_request_ready", {"messages": [{}, {}], "request_sha256": "ab" * 32, "mode": "replay"}),
        ("model_request_ready", {"messages": [{}], "mode": "replay"}),
        ("model_reply_returned", {"model": "m", "reply": '{"status": "answered", "answer": "Use it."}'}),
        ("generate", {"model": "m", "raw_reply": reply}),
        ("route_chosen", {"route": "structured"}),
        ("replay_refused", {"diff": [{}, {}]}),
    ) == [
        "“How many?” from ana",
        "“Why?” from team-a",
        "2 messages, sha256 abababababab…, replay",
        "1 messages, replay",
        "m: answered: Use it.",
        "m: tool_call(intent=get_refund)",
        "route structured",
        "2 fields differ from the nearest recorded request",
    ]


def test_summary_of_any_other_kind_shows_its_status_reason_or_first_fields_within_the_limit():
    from labkit.traces import SUMMARY_LIMIT

    other, plain, long = _summaries(
        ("fallback", {"reason": "budget_exhausted", "iterations": 5}),
        ("custom", {"a": 1, "b": "two"}),
        ("request_accepted", {"question": "word " * 100}),
    )
    assert other == "budget_exhausted" and plain == "a=1, b=two"
    assert len(long) <= SUMMARY_LIMIT and long.endswith("…”")
