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
