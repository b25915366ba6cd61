import json
import socket

import httpx2
import openai
import pytest

from labkit.errors import LabkitError, RecordedRunError
from labkit.recording import Binding, StreamingNotRecorded, binding_key
from labkit.refusal import EXPLORE_HINT
from labkit.replay import (
    REPLAY_BASE_URL,
    SAME_JSON,
    BindingStore,
    BoundReplay,
    FieldDiff,
    ReplayRequestMismatch,
    ReplayTransport,
    ReplayUnsupported,
    as_sent,
    describe_diff,
    diff_table,
    excerpt_pair,
    explain_difference,
    question_of,
    replay_client,
    request_diff,
    text_diff,
    unicode_note,
)

MODEL = "authored-by-course"
SYSTEM = {"role": "system", "content": "Answer only from the passages. Say not_in_docs when they do not answer."}


def _messages(question, passages=("Refunds are accepted within 30 days.", "Shipping takes 5 days.")):
    return [dict(SYSTEM), {"role": "user", "content": json.dumps({"question": question, "passages": list(passages)})}]


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
    assert "a new run of lesson 03" in str(caught.value)


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


def test_streaming_in_replay_is_the_binding_refusal_whose_diff_names_stream(store):
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(**_request(QUESTIONS[0]), stream=True)
    assert not isinstance(caught.value, StreamingNotRecorded)
    assert [(d.path, d.recorded, d.actual) for d in caught.value.diff] == [("stream", None, True)]
    message = str(caught.value)
    assert "  stream: '(absent)' -> 'true'" in message
    assert "Call without stream=True: streaming is never recorded, so no binding can answer it." in message
    assert "LABKIT_MODE=record" not in message  # recording it again would not help


def test_a_setting_sent_as_null_is_shown_as_null_not_as_absent(store):
    with pytest.raises(ReplayRequestMismatch) as caught:
        replay_client(store).chat.completions.create(**_request(QUESTIONS[0]), top_p=None)
    [field] = caught.value.diff
    assert (field.path, field.recorded, field.actual) == ("top_p", None, None)
    assert "  top_p: '(absent)' -> 'null'  [absent from the recorded request; null in this one]" in str(caught.value)
    assert diff_table(caught.value.diff).iloc[0][["recorded", "this request"]].tolist() == ["(absent)", "null"]


def test_a_recorded_null_that_is_left_out_is_shown_as_null_then_absent():
    [field] = request_diff({"top_p": None, "seed": 7}, {"seed": 7})
    assert (
        describe_diff([field]) == "  top_p: 'null' -> '(absent)'  [null in the recorded request; absent from this one]"
    )
    assert request_diff({"seed": 7}, {"seed": 7, "top_p": 1})[0].note == ""


def test_a_dict_request_is_bound_in_the_order_the_client_sends_it():
    request = _request(QUESTIONS[0])  # model, messages, temperature, seed
    assert list(as_sent(request)) == ["model", "messages", "seed", "temperature"]
    assert as_sent(request) == request


# --- the diff a refusal shows, field by field ---------------------------------------------------


def test_request_diff_names_every_added_removed_changed_and_resized_field():
    recorded = {"model": "m", "temperature": 0, "stop": ["\n", "x"], "messages": [{"role": "user", "content": "a"}]}
    actual = {"model": "m", "seed": 7, "stop": ["END", "x", "."], "messages": [{"role": "user", "content": "b"}]}
    assert request_diff(recorded, actual) == [
        FieldDiff("messages[0].content", "a", "b"),
        FieldDiff("seed", None, 7),
        FieldDiff("stop (length)", 2, 3),
        FieldDiff("stop[0]", "\n", "END"),
        FieldDiff("temperature", 0, None),
    ]


def test_request_diff_reports_a_changed_type_as_one_field_with_both_values():
    assert request_diff({"stop": {"a": 1}}, {"stop": "a"}) == [FieldDiff("stop", {"a": 1}, "a")]
    assert request_diff({"stop": ["a"]}, {"stop": "a"}) == [FieldDiff("stop", ["a"], "a")]
    assert request_diff("a", "b") == [FieldDiff("request", "a", "b")]


def test_text_diff_never_calls_different_values_the_same_json():
    # text_diff explains equal values written differently; values that differ are request_diff's to report.
    assert text_diff({"c": '{"a": 1}'}, {"c": "not json"}) == []
    assert text_diff({"a": 1}, "a") == []
    assert text_diff(['{"a":1}'], {'{"a": 1}': 0}) == []
    assert text_diff([1], [1, 2]) == []


def test_text_diff_names_key_order_at_the_top_and_keeps_both_json_texts():
    assert text_diff({"a": 1, "b": 2}, {"b": 2, "a": 1}) == [
        FieldDiff("(key order)", ["a", "b"], ["b", "a"], SAME_JSON)
    ]
    assert text_diff({"c": '{"a": 1}'}, {"c": '{"a":1}'}) == [
        FieldDiff("c (JSON text)", '{"a": 1}', '{"a":1}', SAME_JSON)
    ]


@pytest.mark.parametrize(
    ("recorded", "actual", "note"),
    [
        (
            "café!",
            "cafe\u0301!",
            "same text in another Unicode form (NFC recorded, NFD here): at character 3, recorded 'é' is U+00E9, "
            "this request has 'e\u0301' = U+0065 U+0301",
        ),
        (  # the mark ends the text: the sequence runs to the last character
            "café",
            "cafe\u0301",
            "same text in another Unicode form (NFC recorded, NFD here): at character 3, recorded 'é' is U+00E9, "
            "this request has 'e\u0301' = U+0065 U+0301",
        ),
        (  # marks in another order: the first difference is a mark, so the note starts at its base letter
            "xa\u0323\u0302",
            "xa\u0302\u0323",
            "same text in another Unicode form (NFD recorded, mixed here): at character 1, recorded 'a\u0323\u0302' is "
            "U+0061 U+0323 U+0302, this request has 'a\u0302\u0323' = U+0061 U+0302 U+0323",
        ),
        (  # the first difference is the first mark: back to the base letter at the very start
            "a\u0323\u0302",
            "a\u0302\u0323",
            "same text in another Unicode form (NFD recorded, mixed here): at character 0, recorded 'a\u0323\u0302' is "
            "U+0061 U+0323 U+0302, this request has 'a\u0302\u0323' = U+0061 U+0302 U+0323",
        ),
        (  # the base letter sits after three other letters
            "xyza\u0323\u0302",
            "xyza\u0302\u0323",
            "same text in another Unicode form (NFD recorded, mixed here): at character 3, recorded 'a\u0323\u0302' is "
            "U+0061 U+0323 U+0302, this request has 'a\u0302\u0323' = U+0061 U+0302 U+0323",
        ),
        (  # decomposed recorded, composed here, then an ordinary letter: neither sequence takes the letter
            "e\u0301x",
            "\u00e9x",
            "same text in another Unicode form (NFD recorded, NFC here): at character 0, recorded 'e\u0301' is "
            "U+0065 U+0301, this request has '\u00e9' = U+00E9",
        ),
        (  # marks with no base letter at all
            "\u0323\u0302",
            "\u0302\u0323",
            "same text in another Unicode form (NFC recorded, mixed here): at character 0, recorded '\u0323\u0302' is "
            "U+0323 U+0302, this request has '\u0302\u0323' = U+0302 U+0323",
        ),
        (
            "\u1ec7",
            "\u00ea\u0323",
            "same text in another Unicode form (NFC recorded, mixed here): at character 0, recorded '\u1ec7' is "
            "U+1EC7, this request has '\u00ea\u0323' = U+00EA U+0323",
        ),
    ],
)
def test_unicode_note_shows_the_code_points_of_the_differing_sequence(recorded, actual, note):
    assert unicode_note(recorded, actual) == note


def test_unicode_note_is_empty_unless_two_texts_differ_only_in_unicode_form():
    assert unicode_note("café", "café") == ""
    assert unicode_note("café", "cafe") == ""
    assert unicode_note(1, 2) == ""


def test_excerpts_cut_two_texts_to_one_window_around_their_first_difference():
    recorded, actual = "a" * 100 + "X" + "b" * 100, "a" * 100 + "Y" + "b" * 100
    assert excerpt_pair(recorded, actual) == (
        "…" + "a" * 20 + "X" + "b" * 39 + "…",
        "…" + "a" * 20 + "Y" + "b" * 39 + "…",
    )
    assert excerpt_pair("X" + "b" * 59, "Y" + "b" * 59) == ("X" + "b" * 59, "Y" + "b" * 59)  # fits: no ellipsis


def test_excerpts_of_other_values_are_json_cut_at_the_width():
    assert excerpt_pair(None, "stop") == ("(absent)", "stop")
    assert excerpt_pair(list(range(30)), None, width=10) == ("[0,1,2,3,…", "(absent)")
    assert excerpt_pair("a" * 10, 7, width=10) == ("a" * 10, "7")


def test_a_described_diff_shows_six_fields_then_how_many_more():
    diff = [FieldDiff(f"f{i}", i, i + 1, "why" if i == 0 else "") for i in range(7)]
    lines = [f"  f{i}: '{i}' -> '{i + 1}'" for i in range(6)]
    lines[0] += "  [why]"
    assert describe_diff(diff) == "\n".join([*lines, "  ... and 1 more (see .diff)"])
    assert describe_diff(diff[:6]) == "\n".join(lines)


def test_diff_table_cuts_to_its_width_and_adds_a_note_column_only_when_needed():
    recorded = "a" * 100 + "X" + "b" * 100
    table = diff_table([FieldDiff("p", recorded, recorded.replace("X", "Y"), "why")])
    assert list(table.columns) == ["field", "recorded", "this request", "note"]
    assert table.iloc[0]["recorded"] == "…" + "a" * 20 + "X" + "b" * 39 + "…"
    narrow = diff_table([FieldDiff("p", recorded, recorded.replace("X", "Y"))], width=9)
    assert list(narrow.columns) == ["field", "recorded", "this request"]
    assert narrow.iloc[0]["recorded"] == "…aaaX" + "bbbbb" + "…"


def test_explain_difference_is_never_empty():
    binding = Binding.make(as_sent(_request(QUESTIONS[0])), _reply("30 days"))
    assert explain_difference(binding, binding.request) == [
        FieldDiff("request", binding.key, binding.key, "same values; the key differs")
    ]
    path, query = "/v2/chat/completions", [("api-version", "1")]
    elsewhere = Binding.make(as_sent(_request(QUESTIONS[0])), _reply("30 days"), path=path, query=query)
    assert explain_difference(elsewhere, elsewhere.request, path=path, query=query) == [
        FieldDiff("request", elsewhere.key, elsewhere.key, "same values; the key differs")
    ]


# --- the store, the transport and the client ---------------------------------------------------


def test_a_refusal_names_the_nearest_request_and_says_what_to_do():
    bindings = [Binding.make(as_sent(_request(q)), _reply(a)) for q, a in zip(QUESTIONS, ANSWERS, strict=True)]
    store = BindingStore(bindings, run_id="03-demo", lesson="03", run_sha256="f" * 64)
    assert (store.run_id, store.lesson, store.run_sha256) == ("03-demo", "03", "f" * 64)
    request = as_sent({**_request(QUESTIONS[1]), "temperature": 1})
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(request)
    refusal = caught.value
    assert (refusal.nearest_key, refusal.run_id) == (bindings[1].key, "03-demo")  # the second is the nearest
    assert refusal.diff == [FieldDiff("temperature", 0, 1)]
    assert str(refusal) == (
        "no reply is recorded for this exact request in run '03-demo': no binding key is the SHA-256 of its "
        f"request ({binding_key(request)[:12]}…); the nearest recorded request (binding key {bindings[1].key[:12]}…) "
        "differs in 1 field(s):\n"
        "  temperature: '0' -> '1'\n"
        "Restore the original request, or send it to a model with LABKIT_MODE=record, which saves the reply "
        "in a new run of lesson 03. An old reply is never returned for a request that was not made."
        f"\n{EXPLORE_HINT}"
    )


def test_a_refusal_uses_the_words_of_the_recording_docs():
    from labkit.paths import project_root

    docs = " ".join((project_root() / "docs" / "recording.md").read_text(encoding="utf-8").split())
    with pytest.raises(ReplayRequestMismatch) as caught:
        BindingStore([Binding.make(as_sent(_request(QUESTIONS[0])), _reply("30 days"))]).lookup(
            as_sent(_request(QUESTIONS[1]))
        )
    for words in ("binding key", "SHA-256 of its request"):
        assert words in str(caught.value) and words in docs


def test_a_store_without_run_or_lesson_says_so_in_its_refusal():
    store = BindingStore([Binding.make(as_sent(_request(QUESTIONS[0])), _reply("30 days"))])
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(as_sent(_request(QUESTIONS[1])))
    message = str(caught.value)
    assert "in this store:" in message and "a new run of lesson LESSON" in message and SAME_JSON not in message
    with pytest.raises(ReplayRequestMismatch) as caught:
        BindingStore([]).lookup(as_sent(_request(QUESTIONS[0])))
    assert (caught.value.diff, caught.value.nearest_key, caught.value.run_id) == ([], None, None)


def test_a_request_to_another_path_is_found_only_at_that_path():
    request = as_sent(_request(QUESTIONS[0]))
    other = Binding.make(request, _reply("30 days"), path="/v2/chat/completions")
    assert BindingStore([other]).lookup(request, path="/v2/chat/completions") is other
    usual = Binding.make(request, _reply("30 days"))
    with pytest.raises(ReplayRequestMismatch) as caught:
        BindingStore([usual]).lookup(request, path="/v2/chat/completions")
    assert caught.value.diff == [FieldDiff("(endpoint path)", "/v1/chat/completions", "/v2/chat/completions")]


def test_a_client_under_another_base_path_is_answered_from_that_path():
    request = _request(QUESTIONS[0])
    store = BindingStore([Binding.make(as_sent(request), _reply("30 days"), path="/v2/chat/completions")])
    client = openai.OpenAI(
        api_key="unused",
        base_url="http://replay.labkit.invalid/v2",
        max_retries=0,
        http_client=httpx2.Client(transport=ReplayTransport(store)),
    )
    assert client.chat.completions.create(**request).choices[0].message.content == "30 days"


def test_query_parameters_in_another_order_or_repeated_are_named():
    request = as_sent(_request(QUESTIONS[0]))
    store = BindingStore(
        [Binding.make(request, _reply("30 days"), query=[("a", "1"), ("b", "2"), ("t", "x"), ("t", "y")])]
    )
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(request, query=[("b", "2"), ("a", "1"), ("t", "x"), ("t", "y")])
    assert caught.value.diff == [
        FieldDiff(
            "(query order)",
            [["a", "1"], ["b", "2"], ["t", "x"], ["t", "y"]],
            [["b", "2"], ["a", "1"], ["t", "x"], ["t", "y"]],
            "same parameters, in another order",
        )
    ]
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(request, query=[("a", "1"), ("b", "2"), ("t", "x"), ("v", "1")])
    assert caught.value.diff == [FieldDiff("(query) t", ["x", "y"], "x"), FieldDiff("(query) v", None, "1")]
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(request, query=[("a", "1"), ("b", "2")])
    assert caught.value.diff == [FieldDiff("(query) t", ["x", "y"], None)]


def _http_request(body: bytes, path: str = "/v1/chat/completions", method: str = "POST") -> httpx2.Request:
    return httpx2.Request(method, "http://replay.labkit.invalid" + path, content=body)


def test_the_transport_serves_the_recorded_reply_as_utf8_json():
    request = as_sent(_request(QUESTIONS[0]))
    store = BindingStore([Binding.make(request, _reply("30 jours, café compris"))])
    sent = _http_request(json.dumps(request).encode())
    response = ReplayTransport(store).handle_request(sent)
    assert response.headers["content-type"] == "application/json"
    assert response.request is sent
    assert "café".encode() in response.content and json.loads(response.content) == _reply("30 jours, café compris")


def test_the_transport_refuses_other_endpoints_and_bodies_that_are_not_objects():
    transport = ReplayTransport(BindingStore([]))
    with pytest.raises(ReplayUnsupported, match=r"replay answers POST /chat/completions only, not POST /v1/embeddings"):
        transport.handle_request(_http_request(b"{}", path="/v1/embeddings"))
    with pytest.raises(RecordedRunError, match=r"request body to http://replay\.labkit\.invalid/v1/chat/completions"):
        transport.handle_request(_http_request(b"[1]"))


def test_a_recorded_transport_failure_names_the_last_error():
    request = as_sent(_request(QUESTIONS[0]))
    from labkit.recording import TransportFailure

    failures = [TransportFailure(attempt=n, error=f"ConnectError: try {n}", at="2026-11-30T00:00:00Z") for n in (1, 2)]
    store = BindingStore([Binding.make(request, None, status_code=0, transport_errors=failures)])
    sent = _http_request(json.dumps(request).encode())
    with pytest.raises(
        httpx2.ConnectError, match=r"^recorded transport failure, replayed: ConnectError: try 2$"
    ) as caught:
        ReplayTransport(store).handle_request(sent)
    assert caught.value.request is sent  # the client's error handling reads which request failed
    bare = BindingStore([Binding.make(request, None, status_code=0)])
    with pytest.raises(httpx2.ConnectError, match=r"^recorded transport failure, replayed: no response$"):
        ReplayTransport(bare).handle_request(_http_request(json.dumps(request).encode()))


def test_the_replay_client_never_carries_a_real_key_and_never_retries(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key-but-the-learners")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    client = replay_client(BindingStore([]))
    assert client.api_key == "replay-needs-no-key"
    assert str(client.base_url) == REPLAY_BASE_URL + "/"
    assert client.max_retries == 0


def test_a_setting_the_client_does_not_know_is_sent_in_the_body():
    request = {**_request(QUESTIONS[0]), "top_k": 40}
    assert as_sent(request)["top_k"] == 40


# --- the question a request asks ------------------------------------------------------------------


def test_question_of_reads_the_last_user_message_or_its_question_field():
    assert question_of({"model": "m"}) is None
    assert question_of({"messages": [SYSTEM]}) is None
    assert question_of({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}) is None
    user = {"role": "user", "content": "What is the refund window?"}
    assert question_of({"messages": [user, {"role": "assistant", "content": "30 days"}]}) == user["content"]
    assert question_of({"messages": [{"role": "user", "content": '{"passages": []}'}]}) == '{"passages": []}'
    assert question_of({"messages": _messages(QUESTIONS[0])}) == QUESTIONS[0]


# --- BoundReplay: what it keeps and which settings a call takes -----------------------------------


def test_bound_replay_keeps_its_run_model_and_shared_settings():
    stop = {**_request(QUESTIONS[0]), "stop": ["\n"]}
    requests = [stop]
    bound = BoundReplay([QUESTIONS[0]], requests, [_reply("30 days")], run_id="r", lesson="03", run_sha256="f" * 64)
    assert (bound.run_id, bound.run_sha256, bound.store.lesson) == ("r", "f" * 64, "03")
    assert bound.model == MODEL
    assert bound.settings == {"temperature": 0, "seed": 7, "stop": ["\n"]}
    requests[0]["stop"].append("tampered")
    assert bound.settings["stop"] == ["\n"]
    mixed = BoundReplay(
        QUESTIONS, [_request(QUESTIONS[0]), {**_request(QUESTIONS[1]), "model": "other"}], [_reply(a) for a in ANSWERS]
    )
    assert mixed.model is None


def test_a_call_takes_the_settings_saved_with_its_own_messages():
    first = _messages(QUESTIONS[0])
    second = _messages(QUESTIONS[0], passages=("Refunds take 30 days.",))
    requests = [
        {**_request(QUESTIONS[0]), "max_tokens": 40},
        {**_request(QUESTIONS[0]), "messages": second, "max_tokens": 160},
    ]
    bound = BoundReplay([QUESTIONS[0]] * 2, requests, [_reply("a"), _reply("b")])
    assert bound.request_for(second, question=QUESTIONS[0])["max_tokens"] == 160
    assert bound.request_for(first, question=QUESTIONS[0])["max_tokens"] == 40
    assert bound.generate(QUESTIONS[0], second).choices[0].message.content == "b"


def test_a_built_request_shares_nothing_with_the_caller_or_the_store():
    bound = BoundReplay([QUESTIONS[0]], [{**_request(QUESTIONS[0]), "stop": ["\n"]}], [_reply("30 days")])
    messages = _messages(QUESTIONS[0])  # the caller's own objects
    policy = messages[0]["content"]
    built = bound.request_for(messages, question=QUESTIONS[0])
    built["messages"][0]["content"] = "changed"
    built["stop"].append("changed")
    assert messages[0]["content"] == policy
    assert bound.request_for(messages, question=QUESTIONS[0])["stop"] == ["\n"]


def test_an_empty_bound_replay_says_to_bind_a_request():
    with pytest.raises(RecordedRunError, match=r"^this BoundReplay holds no saved requests; bind at least one$"):
        BoundReplay([], [], []).generate(QUESTIONS[0], _messages(QUESTIONS[0]))


def test_a_question_its_messages_do_not_ask_is_refused_with_a_diff(bound):
    with pytest.raises(ReplayRequestMismatch, match=r"\); build the messages from the question you pass$") as caught:
        bound.generate(QUESTIONS[1], _messages(QUESTIONS[0]))
    assert caught.value.diff == [FieldDiff("question", QUESTIONS[0], QUESTIONS[1])]
    assert caught.value.run_id == "03-demo"


def _sealed_run(questions):
    from labkit.recording import seal_run

    return seal_run(
        run_id="03-demo",
        origin="authored",
        created_at="2026-11-30T00:00:00Z",
        lesson="03",
        description="Two authored replies.",
        model={"id": MODEL, "endpoint_kind": "authored"},
        settings={"temperature": 0, "seed": 7},
        fixtures={},
        bindings=[
            Binding.make(as_sent(_request(q)), _reply(a), question=asked)
            for q, a, asked in zip(QUESTIONS, ANSWERS, questions, strict=True)
        ],
    )


def test_a_bound_replay_and_a_store_come_from_a_saved_run(tmp_path):
    from labkit.recording import load_run, save_run

    save_run(_sealed_run(QUESTIONS), runs_dir=tmp_path)
    run = load_run(tmp_path / "03-demo")
    bound = BoundReplay.from_run(run)
    assert (bound.run_id, bound.run_sha256, bound.store.lesson) == ("03-demo", run.file_sha256, "03")
    assert [bound.generate(q, _messages(q)).choices[0].message.content for q in QUESTIONS] == ANSWERS
    store = BindingStore.from_run(run)
    assert (len(store), store.run_id, store.lesson, store.run_sha256) == (2, "03-demo", "03", run.file_sha256)
    assert _ask(replay_client(store), QUESTIONS[1]) == "5 days"


def test_a_run_whose_bindings_record_no_question_cannot_be_bound():
    run = _sealed_run([QUESTIONS[0], None])
    with pytest.raises(RecordedRunError, match=rf"bindings \['{run.bindings[1].key[:12]}'\] record no question"):
        BoundReplay.from_run(run)


def test_a_store_refuses_a_request_bound_twice_naming_its_key():
    binding = Binding.make(as_sent(_request(QUESTIONS[0])), _reply("30 days"))
    with pytest.raises(RecordedRunError, match=rf"run 'r' binds one request twice \({binding.key[:12]}…\)"):
        BindingStore([binding, binding], run_id="r")


def test_order_based_replay_hands_back_copies_in_recording_order():
    from labkit.replay import OrderedReplay

    replies = [_reply(a) for a in ("one", "two", "three")]
    ordered = OrderedReplay(replies)
    replies[0]["choices"][0]["message"]["content"] = "tampered"
    texts = [ordered.generate(QUESTIONS[0], _messages(QUESTIONS[0])).choices[0].message.content for _ in range(3)]
    assert texts == ["one", "two", "three"]


# The parts lesson 03 shows: a few short public steps, each the code that runs.


def test_the_lookup_lesson_03_shows_is_a_few_short_public_steps():
    """Build the key from the whole request, look it up, refuse with a diff: each a short listing of its own."""
    from labkit.listing import show_source
    from labkit.recording import check_fixtures
    from labkit.replay import saved_binding

    steps = {
        BoundReplay.generate: 6,
        BindingStore.lookup: 8,
        BindingStore.nearest: 9,
        BindingStore.refusal: 12,
        BindingStore.add: 8,
        saved_binding: 10,
        Binding.hashes_match: 22,  # the load-time checks: every binding's hashes, then the fixtures
        check_fixtures: 18,
    }
    lengths = {step.__qualname__: show_source(step).lines for step in steps}
    assert lengths == {step.__qualname__: most for step, most in steps.items()}
    assert not any(part.startswith("_") for name in lengths for part in name.split("."))


def test_lookup_raises_the_refusal_the_store_builds(store):
    changed = as_sent({**_request(QUESTIONS[0]), "temperature": 0.5})
    refusal = store.refusal(changed)
    assert isinstance(refusal, ReplayRequestMismatch)
    with pytest.raises(ReplayRequestMismatch) as caught:
        store.lookup(changed)
    assert str(caught.value) == str(refusal) and caught.value.diff == refusal.diff
    assert refusal.nearest_key == store.nearest(changed).key == binding_key(as_sent(_request(QUESTIONS[0])))


def test_the_nearest_recorded_request_differs_in_the_fewest_fields_and_the_first_wins_a_tie(store):
    first, second = (as_sent(_request(q)) for q in QUESTIONS)
    assert store.nearest({**second, "seed": 8}).key == binding_key(second)
    both = {**first, "messages": [first["messages"][0], {"role": "user", "content": "neither"}]}
    assert store.nearest(both).key == binding_key(first)  # one field from each: the first recorded wins
    assert store.nearest(first, path="/other/chat/completions").key == binding_key(first)
    assert BindingStore([]).nearest(first) is None


def test_a_store_binds_one_more_request_and_refuses_one_it_holds():
    one, two = (Binding.make(as_sent(_request(q)), _reply(a)) for q, a in zip(QUESTIONS, ANSWERS, strict=True))
    store = BindingStore([one], run_id="r")
    store.add(two)
    assert len(store) == 2 and store.lookup(two.request) is two
    with pytest.raises(RecordedRunError, match=r"run 'r' binds one request twice"):
        store.add(Binding.make(two.request, _reply("another reply")))
    assert store.lookup(two.request).response == _reply(ANSWERS[1])  # the first binding stays


def test_a_saved_binding_is_the_request_as_sent_and_refuses_a_question_it_does_not_ask():
    from labkit.replay import saved_binding

    reply = _reply("30 days")
    binding = saved_binding(QUESTIONS[0], _request(QUESTIONS[0]), reply)
    assert binding.key == binding_key(as_sent(_request(QUESTIONS[0])))
    reply["choices"][0]["message"]["content"] = "tampered"
    assert binding.response["choices"][0]["message"]["content"] == "30 days"
    with pytest.raises(RecordedRunError, match=r"saved question 'How long does shipping take\?' does not match"):
        saved_binding(QUESTIONS[1], _request(QUESTIONS[0]), reply)


def test_the_binding_key_is_the_sha256_of_path_query_and_body_in_the_order_sent():
    import hashlib

    request = {"model": MODEL, "messages": [{"role": "user", "content": "¿Dónde?"}], "temperature": 0}
    query = [("api-version", "2024-06-01")]
    text = json.dumps(
        {"path": "/v1/chat/completions", "query": [["api-version", "2024-06-01"]], "body": request},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert binding_key(request, query=query) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert binding_key(dict(reversed(request.items())), query=query) != binding_key(request, query=query)
