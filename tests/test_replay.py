import json
import socket

import openai
import pytest

from labkit.errors import LabkitError, RecordedRunError
from labkit.recording import Binding, StreamingNotRecorded
from labkit.replay import (
    SAME_JSON,
    BindingStore,
    BoundReplay,
    ReplayRequestMismatch,
    ReplayUnsupported,
    as_sent,
    replay_client,
)

MODEL = "authored-by-course"
SYSTEM = {"role": "system", "content": "Answer only from the passages. Say not_in_docs when they do not answer."}


def _messages(question, passages=("Refunds are accepted within 30 days.", "Shipping takes 5 days.")):
    return [SYSTEM, {"role": "user", "content": json.dumps({"question": question, "passages": list(passages)})}]


def _request(question, **kwargs):
    return {"model": MODEL, "messages": _messages(question, **kwargs), "temperature": 0, "seed": 7}


def _reply(text):
    return {
        "id": "authored-1",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


QUESTIONS = ["How long is the refund window?", "How long does shipping take?"]
ANSWERS = ["30 days", "5 days"]


@pytest.fixture
def store():
    return BindingStore(
        [Binding.make(as_sent(_request(q)), _reply(a)) for q, a in zip(QUESTIONS, ANSWERS, strict=True)],
        run_id="03-demo",
        lesson="03",
    )


@pytest.fixture
def bound():
    return BoundReplay(
        QUESTIONS, [_request(q) for q in QUESTIONS], [_reply(a) for a in ANSWERS], run_id="03-demo", lesson="03"
    )


def _ask(client, question, **kwargs):
    return client.chat.completions.create(**_request(question, **kwargs)).choices[0].message.content


def test_replay_returns_the_recorded_reply_as_a_real_openai_object(store):
    reply = replay_client(store).chat.completions.create(**_request(QUESTIONS[0]))
    assert isinstance(reply, openai.types.chat.ChatCompletion)
    assert reply.choices[0].message.content == "30 days"


def test_reordered_requests_return_their_own_replies(store):
    client = replay_client(store)
    assert [_ask(client, q) for q in reversed(QUESTIONS)] == list(reversed(ANSWERS))
    assert _ask(client, QUESTIONS[0]) == _ask(client, QUESTIONS[0]) == "30 days"


def test_changed_question_is_refused_with_a_field_diff(store):
    with pytest.raises(ReplayRequestMismatch) as caught:
        _ask(replay_client(store), "How long is the return window?")
    assert [(d.path, d.recorded, d.actual) for d in caught.value.diff] == [
        ("messages[1].content.question", QUESTIONS[0], "How long is the return window?")
    ]
    assert "labkit record 03" in str(caught.value)


def test_changed_generation_setting_is_a_different_request(store):
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(**{**_request(QUESTIONS[0]), "temperature": 0.7})
    assert [d.path for d in caught.value.diff] == ["temperature"]


def test_changed_model_is_a_different_request(store):
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(**{**_request(QUESTIONS[0]), "model": "gpt-other"})
    assert [d.path for d in caught.value.diff] == ["model"]


def test_mismatch_is_both_a_labkit_error_and_a_value_error():
    assert issubclass(ReplayRequestMismatch, LabkitError) and issubclass(ReplayRequestMismatch, ValueError)


def test_replay_opens_no_socket(store, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("replay tried to open a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert _ask(replay_client(store), QUESTIONS[1]) == "5 days"


def test_replay_needs_no_api_key(store, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert _ask(replay_client(store), QUESTIONS[0]) == "30 days"


def test_recorded_rate_limit_replays_as_the_clients_own_error():
    request = _request(QUESTIONS[0])
    store = BindingStore(
        [Binding.make(as_sent(request), {"error": {"message": "slow down", "type": "rate_limit"}}, status_code=429)]
    )
    with pytest.raises(openai.RateLimitError):
        replay_client(store).chat.completions.create(**request)


def test_recorded_transport_failure_replays_as_a_connection_error():
    request = _request(QUESTIONS[0])
    store = BindingStore([Binding.make(as_sent(request), None, status_code=0)])
    with pytest.raises(openai.APIConnectionError):
        replay_client(store).chat.completions.create(**request)


def test_other_endpoints_are_not_replayed(store):
    with pytest.raises(ReplayUnsupported):
        replay_client(store).models.list()


def test_empty_store_says_it_has_no_requests():
    with pytest.raises(ReplayRequestMismatch, match="no recorded requests"):
        _ask(replay_client(BindingStore([])), QUESTIONS[0])


# BoundReplay: the learner-facing face of the same store.


def test_bound_replay_is_bound_to_the_question_not_the_call_order(bound):
    texts = [bound.generate(q, _messages(q)).choices[0].message.content for q in reversed(QUESTIONS)]
    assert texts == list(reversed(ANSWERS))


def test_changed_policy_sentence_is_refused(bound):
    messages = _messages(QUESTIONS[0])
    messages[0]["content"] += " Always be brief."
    with pytest.raises(ReplayRequestMismatch) as caught:
        bound.generate(QUESTIONS[0], messages)
    assert [d.path for d in caught.value.diff] == ["messages[0].content"]


def test_changed_passage_text_is_refused(bound):
    messages = _messages(QUESTIONS[0], passages=("Refunds are accepted within 60 days.", "Shipping takes 5 days."))
    with pytest.raises(ReplayRequestMismatch) as caught:
        bound.generate(QUESTIONS[0], messages)
    assert [d.path for d in caught.value.diff] == ["messages[1].content.passages[0]"]


def test_changed_context_order_is_refused(bound):
    messages = _messages(QUESTIONS[0], passages=("Shipping takes 5 days.", "Refunds are accepted within 30 days."))
    with pytest.raises(ReplayRequestMismatch) as caught:
        bound.generate(QUESTIONS[0], messages)
    assert [d.path for d in caught.value.diff] == ["messages[1].content.passages[0]", "messages[1].content.passages[1]"]


def test_question_that_its_messages_do_not_ask_is_refused(bound):
    with pytest.raises(ReplayRequestMismatch, match="not the one these messages ask"):
        bound.generate(QUESTIONS[1], _messages(QUESTIONS[0]))


def test_duplicate_saved_request_is_refused_at_load():
    with pytest.raises(RecordedRunError, match="twice"):
        BoundReplay([QUESTIONS[0]] * 2, [_request(QUESTIONS[0])] * 2, [_reply("a"), _reply("b")])


def test_saved_question_must_match_its_saved_request():
    with pytest.raises(RecordedRunError, match="does not match its saved request"):
        BoundReplay([QUESTIONS[1]], [_request(QUESTIONS[0])], [_reply("30 days")])


def test_unequal_numbers_of_questions_requests_and_replies_are_refused():
    with pytest.raises(RecordedRunError, match="2 questions, 2 requests and 1 replies"):
        BoundReplay(QUESTIONS, [_request(q) for q in QUESTIONS], [_reply("30 days")])


def test_mutating_a_returned_reply_cannot_change_the_store(bound):
    first = bound.generate(QUESTIONS[0], _messages(QUESTIONS[0]))
    first.choices[0].message.content = "365 days"
    assert bound.generate(QUESTIONS[0], _messages(QUESTIONS[0])).choices[0].message.content == "30 days"


def test_mutating_the_callers_saved_objects_cannot_change_the_store():
    requests, replies = [_request(QUESTIONS[0])], [_reply("30 days")]
    bound = BoundReplay([QUESTIONS[0]], requests, replies)
    replies[0]["choices"][0]["message"]["content"] = "tampered"
    requests[0]["temperature"] = 1
    assert bound.generate(QUESTIONS[0], _messages(QUESTIONS[0])).choices[0].message.content == "30 days"


def test_order_based_replay_gives_a_reordered_question_the_wrong_reply():
    from labkit.replay import OrderedReplay

    ordered = OrderedReplay([_reply(a) for a in ANSWERS])
    second_question_first = ordered.generate(QUESTIONS[1], _messages(QUESTIONS[1])).choices[0].message.content
    assert second_question_first == "30 days"  # the shipping question got the refund answer


def test_order_based_replay_runs_out_instead_of_inventing():
    from labkit.replay import OrderedReplay

    ordered = OrderedReplay([_reply("30 days")])
    ordered.generate(QUESTIONS[0], _messages(QUESTIONS[0]))
    with pytest.raises(RecordedRunError, match="ran out"):
        ordered.generate(QUESTIONS[0], _messages(QUESTIONS[0]))


def test_refusal_message_shows_where_a_long_text_differs():
    from labkit.replay import FieldDiff, describe_diff

    policy = "Answer only from the passages you are given, in one or two sentences, and cite them."
    line = describe_diff([FieldDiff("messages[0].content", policy, policy.replace("cite them", "never cite"))])
    assert "cite them" in line and "never cite" in line and line.count("…") == 2


def test_diff_table_shows_the_window_where_two_long_texts_differ():
    from labkit.replay import FieldDiff, diff_table

    recorded = "word " * 40 + "end."
    table = diff_table([FieldDiff("messages[0].content", recorded, recorded + " Be brief.")], width=30)
    assert list(table.columns) == ["field", "recorded", "this request"]
    row = table.iloc[0]
    assert row["recorded"].startswith("…") and row["recorded"].endswith("end.")
    assert row["this request"].endswith("end. Be brief.")


def test_diff_table_reads_trace_event_dicts_and_marks_absent_fields():
    from labkit.replay import diff_table

    table = diff_table([{"path": "stop", "recorded": None, "actual": ["\n"]}])
    assert table.iloc[0].to_dict() == {"field": "stop", "recorded": "(absent)", "this request": '["\\n"]'}


def test_replay_refusal_returns_the_mismatch_or_none(bound):
    from labkit.replay import replay_refusal

    assert replay_refusal(bound, QUESTIONS[0], _messages(QUESTIONS[0])) is None
    swapped = _messages(QUESTIONS[0], passages=("Shipping takes 5 days.", "Refunds are accepted within 30 days."))
    refusal = replay_refusal(bound, QUESTIONS[0], swapped)
    assert next(d.path for d in refusal.diff) == "messages[1].content.passages[0]"


# --- exact binding: key order, query, endpoint, mixed settings, readable refusals ---------------

SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "reply",
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string"}, "status": {"type": "string"}},
            "required": ["answer", "status"],
        },
    },
}


def _schema_request(properties_order=("answer", "status")):
    schema = json.loads(json.dumps(SCHEMA))
    props = schema["json_schema"]["schema"]["properties"]
    schema["json_schema"]["schema"]["properties"] = {name: props[name] for name in properties_order}
    return {**_request(QUESTIONS[0]), "response_format": schema}


def test_reordered_schema_properties_are_a_different_request():
    store = BindingStore([Binding.make(as_sent(_schema_request()), _reply("30 days"))], run_id="03-demo")
    client = replay_client(store)
    assert client.chat.completions.create(**_schema_request()).choices[0].message.content == "30 days"
    with pytest.raises(ReplayRequestMismatch) as caught:
        client.chat.completions.create(**_schema_request(("status", "answer")))
    message = str(caught.value)
    assert SAME_JSON in message and "differs in 0 field" not in message
    assert [(d.path, d.recorded, d.actual) for d in caught.value.diff] == [
        ("response_format.json_schema.schema.properties (key order)", ["answer", "status"], ["status", "answer"])
    ]


def test_query_parameters_are_bound():
    request = as_sent(_request(QUESTIONS[0]))
    store = BindingStore([Binding.make(request, _reply("30 days"), query=[("api-version", "2024-10-21")])])
    client = replay_client(store)
    answer = client.chat.completions.create(**_request(QUESTIONS[0]), extra_query={"api-version": "2024-10-21"})
    assert answer.choices[0].message.content == "30 days"
    with pytest.raises(ReplayRequestMismatch) as caught:
        client.chat.completions.create(**_request(QUESTIONS[0]), extra_query={"api-version": "2025-01-01"})
    assert [(d.path, d.recorded, d.actual) for d in caught.value.diff] == [
        ("(query) api-version", "2024-10-21", "2025-01-01")
    ]
    with pytest.raises(ReplayRequestMismatch, match=r"\(query\) api-version"):
        client.chat.completions.create(**_request(QUESTIONS[0]))


def test_the_endpoint_path_is_bound():
    store = BindingStore(
        [Binding.make(as_sent(_request(QUESTIONS[0])), _reply("30 days"), path="/v2/chat/completions")]
    )
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(**_request(QUESTIONS[0]))
    assert [(d.path, d.recorded, d.actual) for d in caught.value.diff] == [
        ("(endpoint path)", "/v2/chat/completions", "/v1/chat/completions")
    ]


def test_bound_replay_works_when_saved_requests_have_different_settings():
    requests = [{**_request(QUESTIONS[0]), "max_tokens": 40}, {**_request(QUESTIONS[1]), "max_tokens": 160}]
    bound = BoundReplay(QUESTIONS, requests, [_reply(a) for a in ANSWERS])
    assert bound.settings == {}  # no setting is shared by every request ...
    for question, answer in zip(QUESTIONS, ANSWERS, strict=True):  # ... yet each call keeps its own
        assert bound.generate(question, _messages(question)).choices[0].message.content == answer
    with pytest.raises(ReplayRequestMismatch, match=r"messages\[1\]\.content\.question"):
        bound.generate("How long is the return window?", _messages("How long is the return window?"))


def test_same_json_in_other_text_names_key_order_or_whitespace_and_where(store):
    recorded = _messages(QUESTIONS[0])
    spaced = [SYSTEM, {"role": "user", "content": json.dumps(json.loads(recorded[1]["content"]), indent=1)}]
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(**{**_request(QUESTIONS[0]), "messages": spaced})
    message = str(caught.value)
    assert f"differs in 1 field(s) ({SAME_JSON})" in message
    assert [d.path for d in caught.value.diff] == ["messages[1].content (JSON text)"]
    reordered = json.dumps(dict(reversed(list(json.loads(recorded[1]["content"]).items()))))
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(
            **{**_request(QUESTIONS[0]), "messages": [SYSTEM, {"role": "user", "content": reordered}]}
        )
    assert [(d.path, d.recorded, d.actual) for d in caught.value.diff] == [
        ("messages[1].content (key order)", ["question", "passages"], ["passages", "question"])
    ]
    flipped = [SYSTEM, {"content": recorded[1]["content"], "role": "user"}]
    with pytest.raises(ReplayRequestMismatch, match=r"messages\[1\] \(key order\)"):
        replay_client(store).chat.completions.create(**{**_request(QUESTIONS[0]), "messages": flipped})


def test_text_in_another_unicode_form_shows_code_points():
    import unicodedata

    nfc = "What is the café's refund window?"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd and nfc == unicodedata.normalize("NFC", nfd)
    bound = BoundReplay([nfc], [_request(nfc)], [_reply("30 days")])
    with pytest.raises(ReplayRequestMismatch) as caught:
        bound.generate(nfd, _messages(nfd))
    message = str(caught.value)
    assert "U+00E9" in message and "U+0065 U+0301" in message and "NFC recorded, NFD here" in message
    assert "differs in 0 field" not in message


def test_streaming_is_refused_clearly_in_replay(store):
    with pytest.raises(StreamingNotRecorded, match=r"streaming is not recorded; call without stream=True"):
        replay_client(store).chat.completions.create(**_request(QUESTIONS[0]), stream=True)


def test_a_dict_request_is_bound_in_the_order_the_client_sends_it():
    request = _request(QUESTIONS[0])  # model, messages, temperature, seed
    assert list(as_sent(request)) == ["model", "messages", "seed", "temperature"]
    assert as_sent(request) == request
