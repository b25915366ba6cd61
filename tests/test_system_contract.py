"""The reply contract's field-combination rules, and `call_model`'s raw text and record."""

import json

import pytest
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from labkit.boundary import connect
from labkit.recording import load_run
from labkit.system.contract import (
    SETTINGS,
    ModelReply,
    ModelReplyMissing,
    ScriptedModel,
    UnscriptedRequest,
    call_model,
)
from labkit.system.golden import GOLDEN
from labkit.system.runs import RUN_AUTHORED, RUN_CAPTURED
from labkit.system.workflow import build_messages

VALID = [
    {"kind": "answer", "text": "Within 30 days.", "citation_ids": ["refund_policy.pdf#p1"]},
    {"kind": "tool_call", "tool_args": {"intent": "get_refund"}},
    {"kind": "insufficient_evidence"},
]
INVALID = [
    ({"kind": "answer", "text": "Within 30 days."}, "a reply of kind answer needs citation_ids"),
    (
        {"kind": "answer", "text": "  ", "citation_ids": ["refund_policy.pdf#p1"]},
        "a reply of kind answer needs text",
    ),
    (
        {
            "kind": "answer",
            "text": "x",
            "citation_ids": ["refund_policy.pdf#p1"],
            "tool_args": {"intent": "get_refund"},
        },
        "a reply of kind answer must leave tool_args empty",
    ),
    ({"kind": "tool_call"}, "a reply of kind tool_call needs tool_args"),
    (
        {"kind": "tool_call", "text": "2", "tool_args": {"intent": "get_refund"}},
        "a reply of kind tool_call must leave text empty",
    ),
    (
        {"kind": "tool_call", "text": " ", "tool_args": {"intent": "get_refund"}},
        "a reply of kind tool_call must leave text empty",
    ),
    (
        {"kind": "tool_call", "citation_ids": ["refund_policy.pdf#p1"], "tool_args": {"intent": "get_refund"}},
        "a reply of kind tool_call must leave citation_ids empty",
    ),
    (
        {"kind": "tool_call", "text": "t", "citation_ids": ["p"]},
        "tool_call needs tool_args, and must leave text and citation_ids empty",
    ),
    ({"kind": "insufficient_evidence", "text": "I do not know."}, "insufficient_evidence must leave text empty"),
    (
        {"kind": "insufficient_evidence", "tool_args": {"intent": "get_refund"}},
        "insufficient_evidence must leave tool_args empty",
    ),
    ({"kind": "answer", "text": "x", "citation_ids": ["p1"], "confidence": 0.9}, "Extra inputs"),
    ({"kind": "refuse"}, "Input should be"),
]


@pytest.mark.parametrize("reply", VALID, ids=[r["kind"] for r in VALID])
def test_each_kind_with_only_its_fields_is_valid(reply):
    assert ModelReply.model_validate_json(json.dumps(reply)).kind == reply["kind"]


@pytest.mark.parametrize("reply,message", INVALID, ids=[m.split()[0] + str(i) for i, (_, m) in enumerate(INVALID)])
def test_a_wrong_field_combination_is_rejected(reply, message):
    with pytest.raises(ValidationError, match=message):
        ModelReply.model_validate_json(json.dumps(reply))


def test_settings_send_the_contract_schema_in_the_local_servers_form():
    assert SETTINGS["temperature"] == 0 and isinstance(SETTINGS["seed"], int)
    assert SETTINGS["response_format"] == {"type": "json_object", "schema": ModelReply.model_json_schema()}


class _Live:
    """An adapter in live mode whose endpoint reported usage."""

    mode, model = "live", "some-model"

    def generate(self, key, messages):
        return ChatCompletion.model_validate(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "served-name",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{}"}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
            }
        )


def test_call_model_returns_the_raw_text_and_a_record_of_model_tokens_and_latency():
    text, record = call_model(_Live(), "q", [{"role": "user", "content": "q"}])
    assert text == "{}"
    assert (record.model, record.input_tokens, record.output_tokens) == ("some-model", 11, 3)
    assert record.latency_source == "measured" and record.latency_ms is not None and record.latency_ms >= 0


def test_call_model_in_replay_reports_the_latency_recorded_with_the_captured_run():
    question = GOLDEN[0].question
    run = load_run(RUN_CAPTURED)
    binding = next(b for b in run.bindings if b.question == question)
    adapter = connect(RUN_CAPTURED, lesson="05", settings=SETTINGS)
    text, record = call_model(adapter, question, binding.request["messages"])
    assert text == binding.response["choices"][0]["message"]["content"]
    assert record.latency_source == "recorded" and record.latency_ms == round(1000 * binding.latency_s)
    assert record.input_tokens == binding.usage.prompt_tokens


def test_call_model_replaying_an_authored_run_claims_no_tokens_and_no_latency():
    question = GOLDEN[2].question
    binding = next(b for b in load_run(RUN_AUTHORED).bindings if b.question == question)
    adapter = connect(RUN_AUTHORED, lesson="05", settings=SETTINGS)
    _, record = call_model(adapter, question, binding.request["messages"])
    assert (record.model, record.input_tokens, record.output_tokens, record.latency_ms, record.latency_source) == (
        "authored-by-course",
        None,
        None,
        None,
        "none",
    )


def test_a_response_without_text_is_an_error_not_an_empty_reply():
    class _Empty(_Live):
        def generate(self, key, messages):
            completion = super().generate(key, messages)
            completion.choices[0].message.content = None
            return completion

    with pytest.raises(ModelReplyMissing, match="no reply text"):
        call_model(_Empty(), "q", [])


@pytest.mark.parametrize("mode", ["live", "record"])
def test_a_live_reply_without_usage_is_refused_not_recorded_as_unknown_tokens(mode):
    from labkit.errors import LabkitError
    from labkit.system.contract import ModelUsageMissing

    class _NoUsage(_Live):
        def generate(self, key, messages):
            completion = super().generate(key, messages)
            completion.usage = None
            return completion

    adapter = _NoUsage()
    adapter.mode = mode
    with pytest.raises(ModelUsageMissing, match="reported no token usage") as info:
        call_model(adapter, "q", [{"role": "user", "content": "q"}])
    assert isinstance(info.value, LabkitError) and isinstance(info.value, ValueError)
    assert "'some-model'" in str(info.value)


def test_a_scripted_reply_without_usage_records_none_tokens_saying_nothing_measured_them():
    _, record = call_model(ScriptedModel("{}"), "q", build_messages("q", []))
    assert (record.input_tokens, record.output_tokens, record.latency_source) == (None, None, "none")


def test_a_scripted_model_says_so_and_answers_only_what_was_scripted():
    scripted = ScriptedModel({"q": "{}"})
    text, record = call_model(scripted, "q", build_messages("q", []))
    assert text == "{}" and record.model == "scripted-by-caller" and record.latency_source == "none"
    with pytest.raises(UnscriptedRequest):
        scripted.generate("other", [])


def test_scripted_model_answers_with_the_callers_text_as_a_chat_completion_and_keeps_the_request():
    from labkit.system.contract import ScriptedModel, UnscriptedRequest

    single = ScriptedModel("the one reply")
    messages = [{"role": "user", "content": "q"}]
    completion = single.generate("k1", messages)
    assert completion.model_dump(exclude_none=True, include={"id", "created", "model", "choices"}) == {
        "id": "scripted-1",
        "created": 0,
        "model": "scripted-by-caller",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "the one reply"}}
        ],
    }
    assert single.requests == [("k1", messages)]
    keyed = ScriptedModel({"k1": "one"})
    assert keyed.generate("k1", messages).choices[0].message.content == "one"
    with pytest.raises(UnscriptedRequest) as info:
        keyed.generate("k2", messages)
    assert str(info.value) == "no scripted reply for 'k2'; script one or use a recorded run"
    assert keyed.requests == [("k1", messages)]


def _completion(choices):
    return ChatCompletion.model_validate(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "served-name", "choices": choices}
    )


class _Bare:
    """An adapter with neither a mode nor a model id: only ``generate``."""

    def generate(self, key, messages):
        return _completion([{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{}"}}])


def test_an_adapter_without_a_mode_or_model_gets_the_served_model_and_claims_no_latency():
    text, record = call_model(_Bare(), "q", [])
    assert text == "{}"
    assert (record.model, record.input_tokens, record.latency_ms, record.latency_source) == (
        "served-name",
        None,
        None,
        "none",
    )


@pytest.mark.parametrize("mode", ["live", "record"])
def test_live_and_record_calls_measure_the_latency_of_the_call_in_milliseconds(monkeypatch, mode):
    import types

    from labkit.system import contract

    clock = iter([10.0, 11.5])
    monkeypatch.setattr(contract, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    adapter = _Live()
    adapter.mode = mode
    _, record = call_model(adapter, "q", [])
    assert (record.latency_ms, record.latency_source) == (1500, "measured")


def test_a_response_without_choices_says_there_is_no_finish_reason():
    class _NoChoices(_Live):
        def generate(self, key, messages):
            return _completion([])

    with pytest.raises(ModelReplyMissing) as info:
        call_model(_NoChoices(), "q", [])
    assert str(info.value) == "the response to 'q' holds no reply text (finish reason none); check the endpoint's log"


def test_a_choice_without_text_names_its_finish_reason():
    class _Cut(_Live):
        def generate(self, key, messages):
            return _completion([{"index": 0, "finish_reason": "length", "message": {"role": "assistant"}}])

    with pytest.raises(ModelReplyMissing, match=r"^the response to 'q' holds no reply text \(finish reason length\)"):
        call_model(_Cut(), "q", [])


def test_a_run_file_rewritten_on_disk_is_read_again(tmp_path, monkeypatch):
    import os

    from labkit import recording
    from labkit.system.contract import recorded_binding

    path = tmp_path / "run.json"
    path.write_text("{}", encoding="utf-8")
    loads = []

    class _Run:
        def __init__(self, number):
            self.number = number

        def binding_for(self, request):
            return self.number, request["q"]

    def load_run(p):
        loads.append(p)
        return _Run(len(loads))

    monkeypatch.setattr(recording, "load_run", load_run)
    assert recorded_binding(str(path), {"q": 1}) == (1, 1)
    assert recorded_binding(str(path), {"q": 2}) == (1, 2)  # the same file: read once
    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    assert recorded_binding(str(path), {"q": 3}) == (2, 3)
    assert loads == [path, path]
