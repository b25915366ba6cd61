import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from labkit.authored import AUTHORED_MODEL, AuthoringAdapter
from labkit.boundary import connect
from labkit.canonical import canonical_sha256, file_sha256
from labkit.errors import RecordedRunError
from labkit.rag import trace as rag_trace
from labkit.rag.trace import (
    AUTHORED_REPLIES,
    QUESTIONS,
    RUN_AUTHORED,
    SETTINGS,
    ContextSelectionError,
    CorpusError,
    ReplyRejected,
    StaleIndex,
    check_reply,
    chunk_id,
    keep_all,
    load_corpus,
    load_docs_index,
    model_step,
    probe,
    prompt,
    request_key,
    split_corpus,
    trace_request,
)
from labkit.recording import load_run
from labkit.replay import BindingStore, FieldDiff, ReplayRequestMismatch, replay_client
from labkit.traces import Trace

ANSWERED, UNSUPPORTED = QUESTIONS["answered"], QUESTIONS["not_in_docs"]
HAPPY_PATH = [
    "request_accepted",
    "retrieval_completed",
    "context_selected",
    "model_request_ready",
    "model_reply_returned",
    "reply_checked",
    "source_links_resolved",
    "request_completed",
]


class NeverCalled:
    mode = "spy"

    def generate(self, question, messages):
        raise AssertionError("the model adapter must not be called here")


@pytest.fixture
def index():
    # Built per test (about 0.1 s once the vectors are cached): a module-scoped index would be built inside the
    # first test only, and a mutation run would then credit the index's code to that test alone.
    return load_docs_index()


@pytest.fixture
def adapter():
    return connect(RUN_AUTHORED, lesson="02", settings=SETTINGS, mode="replay")


def test_answered_question_follows_the_full_event_order(index, adapter):
    traced = trace_request(ANSWERED, index, adapter)
    assert traced.trace.kinds() == HAPPY_PATH
    assert [e.sequence for e in traced.trace] == list(range(1, 9))
    assert traced.result["status"] == "answered"
    assert traced.result["source_links"] == [
        "https://docs.python.org/3/library/datetime.html#datetime.datetime.fromisoformat"
    ]


def test_emitted_request_is_exactly_the_recorded_request(index, adapter):
    traced = trace_request(ANSWERED, index, adapter)
    sent = traced.trace.first("model_request_ready").data["messages"]
    recorded = next(b for b in load_run(RUN_AUTHORED).bindings if b.question == ANSWERED)
    assert sent == recorded.request["messages"]


def test_each_replayed_result_matches_the_preserved_run(index, adapter):
    for question in QUESTIONS.values():
        reply = trace_request(question, index, adapter).trace.first("model_reply_returned").data["reply"]
        assert reply == AUTHORED_REPLIES[question]


def test_real_ranked_candidates_match_the_index_scores(index, adapter):
    traced = trace_request(ANSWERED, index, adapter)
    ranked = index.store.similarity_search_with_score(ANSWERED, k=rag_trace.K)
    candidates = traced.trace.first("retrieval_completed").data["candidates"]
    assert [(c["rank"], c["source_id"], c["score"]) for c in candidates] == [
        (rank, doc.metadata["id"], round(score, 6)) for rank, (doc, score) in enumerate(ranked, start=1)
    ]
    assert candidates[0]["chunk_id"].startswith("datetime-fromisoformat:")


def test_unsupported_question_still_retrieves_but_returns_no_links(index, adapter):
    traced = trace_request(UNSUPPORTED, index, adapter)
    assert traced.trace.kinds() == HAPPY_PATH
    assert len(traced.trace.first("retrieval_completed").data["candidates"]) == rag_trace.K
    assert traced.result["status"] == "not_in_docs" and traced.result["source_links"] == []


def test_blank_question_stops_before_search_or_model(index):
    traced = trace_request("   ", index, NeverCalled())
    assert traced.trace.kinds() == ["request_rejected"] and traced.outcome == "request_rejected"


def test_unrecorded_question_is_refused_without_fabricating_an_embedding(index):
    traced = trace_request("What does shutil.move do?", index, NeverCalled())
    assert traced.trace.kinds() == ["request_accepted", "retrieval_refused"]
    assert "no recorded embedding" in traced.error


def test_real_empty_index_skips_the_model_and_has_a_distinct_identity(index):
    empty = load_docs_index(empty=True)
    traced = trace_request(ANSWERED, empty, NeverCalled())
    assert "model_skipped" in traced.trace.kinds() and "model_request_ready" not in traced.trace.kinds()
    assert traced.result["status"] == "not_in_docs" and traced.result["source_links"] == []
    assert empty.identity["logical_index_id"] != index.identity["logical_index_id"]


def test_changed_question_cannot_receive_a_saved_reply(index, adapter):
    changed = ANSWERED.replace("parse", "read")  # its embedding is saved, its reply is not
    traced = trace_request(changed, index, adapter)
    assert traced.outcome == "replay_refused"
    paths = [d["path"] for d in traced.trace.first("replay_refused").data["diff"]]
    assert "messages[1].content.question" in paths  # retrieval for the new wording may change passages too


def test_changed_policy_cannot_receive_a_saved_reply(index, adapter, monkeypatch):
    monkeypatch.setattr(rag_trace, "SYSTEM_POLICY", rag_trace.SYSTEM_POLICY + " Be brief.")
    traced = trace_request(ANSWERED, index, adapter)
    assert traced.outcome == "replay_refused"
    assert [d.path for d in traced.extra["diff"]] == ["messages[0].content"]


def test_mismatched_replay_emits_refusal_without_a_returned_reply(index, adapter, monkeypatch):
    monkeypatch.setattr(rag_trace, "SYSTEM_POLICY", "Answer freely.")
    kinds = trace_request(ANSWERED, index, adapter).trace.kinds()
    assert kinds[-1] == "replay_refused" and "model_reply_returned" not in kinds


def test_missing_reply_binding_is_refused(index):
    class EmptyStore:
        mode = "replay"
        client = replay_client(BindingStore([]))

        def generate(self, question, messages):
            return self.client.chat.completions.create(model="m", messages=messages, **SETTINGS)

    assert trace_request(ANSWERED, index, EmptyStore()).outcome == "replay_refused"


def test_bad_reply_shape_stops_before_link_resolution(index, adapter):
    traced = trace_request(ANSWERED, index, adapter, reply_override='{"status": "maybe"}')
    assert traced.trace.kinds()[-1] == "reply_rejected" and "source_links_resolved" not in traced.trace.kinds()
    assert traced.trace.first("reply_rejected").data["reason"] == "invalid_shape"
    assert traced.trace.first("model_reply_returned").data["supplied_by"] == "driver (controlled probe)"


def test_source_outside_selected_context_is_rejected_even_when_in_corpus(index, adapter):
    probe = json.dumps({"status": "answered", "answer": "Use json.dumps.", "source_ids": ["json-dumps"]})
    traced = trace_request(ANSWERED, index, adapter, reply_override=probe)
    assert traced.outcome == "reply_rejected" and "json-dumps" in traced.error
    assert "json-dumps" in {d.metadata["id"] for d in load_corpus()}


def test_not_in_docs_cannot_attach_a_retrieved_but_unrelated_source(index, adapter):
    probe = json.dumps({"status": "not_in_docs", "answer": "Not covered.", "source_ids": ["shutil-copy2"]})
    assert trace_request(UNSUPPORTED, index, adapter, reply_override=probe).outcome == "reply_rejected"


def test_answered_reply_without_sources_is_rejected(index, adapter):
    probe = json.dumps({"status": "answered", "answer": "Use fromisoformat.", "source_ids": []})
    assert trace_request(ANSWERED, index, adapter, reply_override=probe).outcome == "reply_rejected"


def test_link_membership_does_not_check_answer_truth(index, adapter):
    false = json.dumps(
        {
            "status": "answered",
            "answer": "fromisoformat rejects every string that ends in Z.",
            "source_ids": ["datetime-fromisoformat"],
        }
    )
    traced = trace_request(ANSWERED, index, adapter, reply_override=false)
    assert traced.outcome == "completed" and traced.result["answer"].startswith("fromisoformat rejects")


def test_replay_is_bound_to_question_not_iteration_order(index, adapter):
    forward = [trace_request(q, index, adapter).result for q in QUESTIONS.values()]
    backward = [trace_request(q, index, adapter).result for q in reversed(list(QUESTIONS.values()))]
    assert backward == list(reversed(forward))


def test_saved_binding_is_not_changed_by_the_callers_objects(index, adapter):
    first = trace_request(ANSWERED, index, adapter)
    first.result["answer"] = "tampered"
    first.trace.events[4].data["reply"] = "tampered"
    assert trace_request(ANSWERED, index, adapter).result["answer"] != "tampered"


def test_request_key_varies_by_question_and_logical_index(index):
    empty = load_docs_index(empty=True)
    assert request_key(ANSWERED, index.identity) == request_key(ANSWERED, index.identity)
    assert request_key(ANSWERED, index.identity) != request_key(UNSUPPORTED, index.identity)
    assert request_key(ANSWERED, index.identity) != request_key(ANSWERED, empty.identity)


def test_changed_corpus_refuses_to_load_against_old_vectors(tmp_path):
    edited = tmp_path / "api_summaries.json"
    shutil.copyfile(rag_trace.corpus_path(), edited)
    data = json.loads(edited.read_text(encoding="utf-8"))
    data[5]["text"] = data[5]["text"].replace("Since Python 3.11", "Since Python 3.12")
    edited.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StaleIndex, match="labkit embed rag-docs"):
        load_docs_index(corpus_file=edited)


def test_changed_splitter_settings_refuse_to_load_against_old_vectors():
    with pytest.raises(StaleIndex):
        load_docs_index(chunk_size=150)


def test_corpus_with_a_repeated_source_id_is_refused(tmp_path):
    data = json.loads(rag_trace.corpus_path().read_text(encoding="utf-8"))
    data.append(dict(data[0]))
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CorpusError, match="appears twice"):
        load_corpus(path)


def test_corpus_summary_missing_a_link_is_refused(tmp_path):
    data = json.loads(rag_trace.corpus_path().read_text(encoding="utf-8"))
    del data[0]["url"]
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CorpusError, match="summary 0: url"):
        load_corpus(path)


def test_changed_corpus_refuses_the_recorded_run(tmp_path, monkeypatch):
    shutil.copytree(rag_trace.corpus_path().parent, tmp_path / "fixtures" / "docs")
    shutil.copytree(
        rag_trace.corpus_path().parents[2] / "recorded_runs" / RUN_AUTHORED, tmp_path / "recorded_runs" / RUN_AUTHORED
    )
    corpus = tmp_path / "fixtures" / "docs" / "api_summaries.json"
    corpus.write_text(corpus.read_text(encoding="utf-8").replace("30", "31"), encoding="utf-8")
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    with pytest.raises(RecordedRunError, match=r"api_summaries\.json"):
        load_run(RUN_AUTHORED)


def test_trace_round_trips_through_json_lines(index, adapter):
    trace = trace_request(ANSWERED, index, adapter).trace
    again = Trace.from_jsonl(trace.to_jsonl())
    assert [e.to_json() for e in again] == [e.to_json() for e in trace]


def test_edited_corpus_differs_in_one_passage_and_is_refused_against_old_vectors(tmp_path):
    from labkit.rag.trace import write_edited_corpus

    path = write_edited_corpus(tmp_path / "corpus.json", source_id="zoneinfo", old="IANA", new="Olson")
    before = {d.metadata["id"]: d.page_content for d in load_corpus()}
    after = {d.metadata["id"]: d.page_content for d in load_corpus(path)}
    assert [key for key in before if before[key] != after[key]] == ["zoneinfo"]
    with pytest.raises(StaleIndex, match="zoneinfo:"):
        load_docs_index(corpus_file=path)


def test_edited_corpus_refuses_an_unknown_id_or_missing_words(tmp_path):
    from labkit.rag.trace import write_edited_corpus

    with pytest.raises(CorpusError, match="no summary 'nope'"):
        write_edited_corpus(tmp_path / "c.json", source_id="nope", old="a", new="b")
    with pytest.raises(CorpusError, match="does not contain"):
        write_edited_corpus(tmp_path / "c.json", source_id="zoneinfo", old="not in the text", new="b")
    assert not (tmp_path / "c.json").exists()


def test_every_trace_names_the_run_id_and_the_run_files_sha256(index, adapter):
    from labkit.recording import read_manifest

    expected = {"run_id": RUN_AUTHORED, "run_sha256": read_manifest()[RUN_AUTHORED]["sha256"]}
    for question in [ANSWERED, "   "]:
        first = trace_request(question, index, adapter).trace.events[0]
        assert {k: first.data[k] for k in expected} == expected


# --- what each step records, and the errors a learner reads ------------------------------------------------------


def test_every_step_of_an_answered_request_records_what_it_decided(index, adapter):
    traced = trace_request(ANSWERED, index, adapter)
    key = request_key(ANSWERED, index.identity)
    assert (traced.question, traced.request_key, traced.status) == (ANSWERED, key, "answered")
    accepted = traced.trace.first("request_accepted").data
    assert accepted["question"] == ANSWERED and accepted["request_key"] == key
    assert accepted["logical_index_id"] == index.identity["logical_index_id"]
    ranked = index.store.similarity_search_with_score(ANSWERED, k=rag_trace.K)
    retrieval = traced.trace.first("retrieval_completed").data
    assert retrieval["score_kind"] == "cosine similarity (InMemoryVectorStore)"
    assert [(c["chunk_id"], c["text"], c["url"]) for c in retrieval["candidates"]] == [
        (chunk_id(doc), doc.page_content, doc.metadata["url"]) for doc, _ in ranked
    ]
    assert traced.trace.first("context_selected").data == {
        "chunk_ids": [chunk_id(doc) for doc, _ in ranked],
        "source_ids": [doc.metadata["id"] for doc, _ in ranked],
    }
    messages = prompt(ANSWERED, [doc for doc, _ in ranked])
    assert traced.trace.first("model_request_ready").data == {
        "messages": messages,
        "mode": "replay",
    }
    assert traced.trace.first("reply_checked").data == {
        "status": "answered",
        "source_ids": ["datetime-fromisoformat"],
        "checks": ["reply_shape", "source_membership", "status_source_consistency"],
    }
    link = "https://docs.python.org/3/library/datetime.html#datetime.datetime.fromisoformat"
    assert traced.trace.first("source_links_resolved").data == {"source_links": [link]}
    assert traced.trace.first("request_completed").data == {"status": "answered"}
    assert traced.result == {
        "question": ANSWERED,
        "context_ids": [doc.metadata["id"] for doc, _ in ranked],
        **json.loads(AUTHORED_REPLIES[ANSWERED]),
        "source_links": [link],
    }


def test_the_model_is_asked_the_question_itself_with_k_passages():
    index = load_docs_index()
    reply = AUTHORED_REPLIES[ANSWERED]
    traced = trace_request(ANSWERED, index, AuthoringAdapter({ANSWERED: reply}, settings=SETTINGS), k=1)
    assert traced.outcome == "completed" and traced.request_key == request_key(ANSWERED, index.identity)
    assert len(traced.trace.first("retrieval_completed").data["candidates"]) == 1
    returned = traced.trace.first("model_reply_returned").data
    assert (returned["supplied_by"], returned["model"]) == ("authoring", AUTHORED_MODEL)


def test_a_reply_of_the_wrong_shape_says_what_is_wrong_with_it(index, adapter):
    traced = trace_request(ANSWERED, index, adapter, reply_override='{"status": "maybe"}')
    assert traced.error.startswith("invalid shape: ") and "'answered' or 'not_in_docs'" in traced.error
    assert traced.trace.first("reply_rejected").data["error"] == traced.error
    assert (traced.question, traced.request_key) == (ANSWERED, request_key(ANSWERED, index.identity))
    assert traced.status == "reply_rejected"


def test_a_blank_question_is_rejected_with_its_reason_and_what_to_do(index):
    traced = trace_request("   ", index, NeverCalled())
    assert traced.trace.first("request_rejected").data["reason"] == "blank_question"
    assert (traced.question, traced.request_key, traced.status) == ("   ", None, "request_rejected")
    assert traced.error == "Ask a question that is not blank."


def test_an_unrecorded_question_says_why_retrieval_was_refused(index):
    question = "What does shutil.move do?"
    traced = trace_request(question, index, NeverCalled())
    assert traced.trace.first("retrieval_refused").data == {
        "reason": "unrecorded_query_embedding",
        "error": traced.error,
    }
    assert (traced.question, traced.request_key) == (question, request_key(question, index.identity))
    assert traced.status == "retrieval_refused" and "no recorded embedding" in traced.error


def test_an_empty_index_is_searched_finds_nothing_and_says_no_documentation_was_found():
    empty = load_docs_index(empty=True)
    searched = []
    search = empty.store.similarity_search_with_score

    def spy(question, k):
        searched.append(question)
        return search(question, k=k)

    empty.store.similarity_search_with_score = spy
    traced = trace_request(ANSWERED, empty, NeverCalled())
    assert searched == [ANSWERED]  # the real store ran the search the event records
    assert traced.trace.first("retrieval_completed").data["candidates"] == []
    assert traced.trace.first("model_skipped").data == {"reason": "empty_context"}
    assert traced.result["answer"] == "No documentation was found for this question."
    assert traced.request_key == request_key(ANSWERED, empty.identity) and traced.result["question"] == ANSWERED


def test_reply_checked_lists_only_the_checks_that_ran():
    # The app's own reply on the model_skipped branch was never parsed, so no shape check is listed.
    skipped = trace_request(ANSWERED, load_docs_index(empty=True), NeverCalled())
    assert skipped.trace.first("reply_checked").data["checks"] == ["source_membership", "status_source_consistency"]
    parsed = probe(ANSWERED, load_docs_index(), ["datetime-fromisoformat"])
    assert parsed.trace.first("reply_checked").data["checks"][0] == "reply_shape"


def test_an_extra_check_runs_after_check_reply_and_its_refusal_is_recorded(index):
    seen = []

    def strict(reply, selected):
        seen.append((reply.source_ids, [d.metadata["id"] for d in selected]))
        if "zoneinfo" in reply.source_ids:
            raise ReplyRejected("strict: zoneinfo refused")

    kept = probe(ANSWERED, index, ["datetime-fromisoformat"], extra_check=strict)
    assert kept.outcome == "completed"
    assert kept.trace.first("reply_checked").data["checks"][-1] == "strict"
    assert seen == [(["datetime-fromisoformat"], ["datetime-fromisoformat", "datetime-fromisoformat", "zoneinfo"])]
    refused = probe(ANSWERED, index, ["zoneinfo"], extra_check=strict)
    assert refused.outcome == "reply_rejected" and refused.error == "strict: zoneinfo refused"
    assert refused.trace.kinds()[-1] == "reply_rejected"
    assert refused.trace.first("reply_rejected").data["reason"] == "extra_check"
    assert refused.trace.first("source_links_resolved") is None
    outside = probe(ANSWERED, index, ["json-dumps"], extra_check=strict)  # check_reply refuses it first
    assert outside.trace.first("reply_rejected").data["reason"] == "source_contract" and len(seen) == 2


def test_an_unrecorded_question_on_an_empty_index_is_refused_like_on_the_full_one():
    traced = trace_request("What does shutil.move do?", load_docs_index(empty=True), NeverCalled())
    assert traced.trace.kinds() == ["request_accepted", "retrieval_refused"]


def test_a_refused_replay_records_each_differing_field_with_its_note_when_it_has_one(index):
    diff = [FieldDiff("messages[0].content", "caf\u00e9", "cafe\u0301", "NFC vs NFD"), FieldDiff("seed", 7, 8)]

    class Mismatched:
        mode = "replay"

        def generate(self, question, messages):
            raise ReplayRequestMismatch(
                "no reply is recorded for this exact request\n  seed: 7 -> 8", diff=diff, nearest_key=None, run_id=None
            )

    traced = trace_request(ANSWERED, index, Mismatched())
    assert traced.trace.first("replay_refused").data["diff"] == [
        {"path": "messages[0].content", "recorded": "caf\u00e9", "actual": "cafe\u0301", "note": "NFC vs NFD"},
        {"path": "seed", "recorded": 7, "actual": 8},
    ]
    assert traced.extra["diff"] == diff
    assert traced.trace.first("replay_refused").data["error"] == "no reply is recorded for this exact request"
    assert traced.error == "no reply is recorded for this exact request\n  seed: 7 -> 8"
    assert (traced.question, traced.request_key) == (ANSWERED, request_key(ANSWERED, index.identity))


def test_a_reply_with_no_content_is_recorded_as_empty_and_rejected(index):
    class Silent:
        mode = "replay"

        def generate(self, question, messages):
            from openai.types.chat import ChatCompletion

            message = {"role": "assistant", "content": None}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return ChatCompletion.model_validate(
                {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
            )

    traced = trace_request(ANSWERED, index, Silent())
    assert traced.trace.first("model_reply_returned").data["reply"] == ""
    assert traced.outcome == "reply_rejected"


def test_the_source_contract_errors_say_what_the_reply_must_do():
    [doc] = [d for d in load_corpus() if d.metadata["id"] == "zoneinfo"]
    answered = rag_trace.Reply(status="answered", answer="Use ZoneInfo.", source_ids=[])
    with pytest.raises(rag_trace.ReplyRejected, match=r"^an answered reply must cite at least one selected source$"):
        check_reply(answered, [doc])
    unsupported = rag_trace.Reply(status="not_in_docs", answer="Not covered.", source_ids=["zoneinfo"])
    with pytest.raises(rag_trace.ReplyRejected, match=r"may not attach sources, but cites \['zoneinfo'\]"):
        check_reply(unsupported, [doc])


def test_the_prompt_sends_passages_as_written_not_escaped():
    [doc] = [d for d in load_corpus() if d.metadata["id"] == "zoneinfo"]
    question = "Which zone is Zürich in?"
    [system, user] = prompt(question, [doc])
    assert system == {"role": "system", "content": rag_trace.SYSTEM_POLICY}
    assert user["content"] == json.dumps(
        {"question": question, "passages": [{"source_id": "zoneinfo", "text": doc.page_content}]}, ensure_ascii=False
    )
    assert "Zürich" in user["content"]


def test_the_request_key_is_the_hash_of_the_question_and_the_logical_index_id(index):
    expected = canonical_sha256({"question": ANSWERED, "index": index.identity["logical_index_id"]})
    assert request_key(ANSWERED, index.identity) == expected


def test_corpus_that_is_not_a_non_empty_list_is_refused(tmp_path):
    for text in ("[]", "{}", '{"id": "x"}'):
        path = tmp_path / "corpus.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(CorpusError, match="the corpus must be a non-empty JSON list of summaries"):
            load_corpus(path)


def test_each_passage_keeps_its_summarys_id_title_and_link():
    data = json.loads(rag_trace.corpus_path().read_text(encoding="utf-8"))
    docs = load_corpus()
    assert [d.metadata for d in docs] == [{"id": s["id"], "title": s["title"], "url": s["url"]} for s in data]
    assert [d.page_content for d in docs] == [s["text"] for s in data]


def test_a_chunk_id_is_the_source_id_and_a_hash_of_the_passage_text_and_link():
    [doc] = [d for d in load_corpus() if d.metadata["id"] == "zoneinfo"]
    digest = canonical_sha256({"text": doc.page_content, "url": doc.metadata["url"]})
    assert chunk_id(doc) == f"zoneinfo:{digest[:16]}"


def test_the_logical_index_identity_hashes_corpus_vectors_splitter_and_ordered_chunk_ids():
    index = load_docs_index()
    chunks = split_corpus(load_corpus())
    vectors = rag_trace.SavedEmbeddings.from_set(rag_trace.EMBEDDING_SET)
    descriptor = {
        "corpus_sha256": file_sha256(rag_trace.corpus_path()),
        "embedding_model": vectors.model,
        "saved_vectors_sha256": canonical_sha256({c.page_content: vectors.vector(c.page_content) for c in chunks}),
        "splitter": {"name": "RecursiveCharacterTextSplitter", "chunk_size": 220, "chunk_overlap": 40},
        "chunk_ids": [chunk_id(c) for c in chunks],
    }
    assert index.identity == {"logical_index_id": canonical_sha256(descriptor), "index_descriptor": descriptor}
    assert [d.id for d in index.store.get_by_ids(descriptor["chunk_ids"])] == descriptor["chunk_ids"]


def test_a_changed_chunk_overlap_refuses_to_load_against_old_vectors():
    with pytest.raises(StaleIndex):
        load_docs_index(chunk_overlap=0)


def test_a_stale_corpus_names_three_of_its_unrecorded_passages(tmp_path):
    data = json.loads(rag_trace.corpus_path().read_text(encoding="utf-8"))
    for summary in data[:5]:
        summary["text"] += " Edited."
    edited = tmp_path / "api_summaries.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StaleIndex) as info:
        load_docs_index(corpus_file=edited)
    listed = str(info.value).split("have no saved vector (")[1].split(")")[0]
    assert len(listed.split(", ")) == 3
    assert all(re.fullmatch(r"[a-z0-9-]+:[0-9a-f]{16}", item) for item in listed.split(", ")), listed


def test_a_source_outside_the_context_is_rejected_in_the_trace_with_the_contract_as_reason(index, adapter):
    probe = json.dumps({"status": "answered", "answer": "Use json.dumps.", "source_ids": ["json-dumps"]})
    traced = trace_request(ANSWERED, index, adapter, reply_override=probe)
    assert traced.trace.kinds()[-1] == "reply_rejected"
    assert traced.trace.first("reply_rejected").data == {"reason": "source_contract", "error": traced.error}
    assert traced.error.startswith("reply cites ['json-dumps'], outside this request's selected context")
    assert (traced.question, traced.request_key) == (ANSWERED, request_key(ANSWERED, index.identity))


def test_the_lessons_requests_ask_each_recorded_question_in_order(adapter):
    requests = rag_trace.make_requests(adapter)
    assert [r.question for r in requests] == list(QUESTIONS.values())
    assert [r.status for r in requests] == ["answered", "not_in_docs"]
    assert all(r.outcome == "completed" for r in requests)


def test_an_edited_corpus_changes_only_the_first_occurrence_of_the_words(tmp_path):
    from labkit.rag.trace import write_edited_corpus

    path = write_edited_corpus(tmp_path / "corpus.json", source_id="zoneinfo", old="datetime", new="DT")
    [text] = [d.page_content for d in load_corpus(path) if d.metadata["id"] == "zoneinfo"]
    assert text.count("DT") == 1 and text.count("datetime") == 1
    assert text.index("DT") < text.index("datetime")


def test_an_unknown_summary_id_lists_the_ids_to_choose_from(tmp_path):
    from labkit.rag.trace import write_edited_corpus

    ids = ", ".join(sorted(d.metadata["id"] for d in load_corpus()))
    with pytest.raises(CorpusError) as info:
        write_edited_corpus(tmp_path / "c.json", source_id="nope", old="a", new="b")
    assert str(info.value).endswith(f"its ids are {ids}")


def test_an_edited_corpus_is_the_same_utf8_file_whatever_the_locale(tmp_path):
    from labkit.rag.trace import write_edited_corpus

    edit = {"source_id": "zoneinfo", "old": "IANA", "new": "IANA (Z\u00fcrich)"}
    here = write_edited_corpus(tmp_path / "here.json", **edit)
    script = "import sys, json; from labkit.rag.trace import write_edited_corpus; "
    script += "write_edited_corpus(sys.argv[1], **json.loads(sys.argv[2]))"
    # An ASCII locale with neither UTF-8 mode nor locale coercion: the platform default would fail on the umlaut.
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)  # the labkit this test imports, not another installed one
    ascii_locale = tmp_path / "ascii-locale.json"
    subprocess.run([sys.executable, "-c", script, str(ascii_locale), json.dumps(edit)], env=env, check=True)
    assert ascii_locale.read_bytes() == here.read_bytes()
    [text] = [d.page_content for d in load_corpus(here) if d.metadata["id"] == "zoneinfo"]
    assert "IANA (Z\u00fcrich)" in text


def test_a_score_floor_that_keeps_nothing_skips_the_model_but_keeps_the_candidates(index):
    def floor(ranked):
        return [doc for doc, score in ranked if score >= 0.99]

    traced = trace_request(UNSUPPORTED, index, NeverCalled(), select=floor)
    assert len(traced.trace.first("retrieval_completed").data["candidates"]) == 3
    assert traced.trace.first("context_selected").data == {"chunk_ids": [], "source_ids": []}
    assert traced.trace.first("model_skipped").data == {"reason": "empty_context"}
    assert traced.result["status"] == "not_in_docs"


def test_a_selection_sends_only_the_passages_it_keeps_in_the_order_it_returns(index, adapter):
    traced = trace_request(ANSWERED, index, adapter, select=lambda ranked: [ranked[2][0], ranked[0][0]])
    sent = json.loads(traced.trace.first("model_request_ready").data["messages"][1]["content"])["passages"]
    assert [p["source_id"] for p in sent] == ["zoneinfo", "datetime-fromisoformat"]
    assert traced.outcome == "replay_refused"  # a different context is a different request: no recorded reply


def test_the_default_selection_keeps_every_candidate_in_rank_order(index):
    ranked = index.store.similarity_search_with_score(ANSWERED, k=3)
    assert keep_all(ranked) == [doc for doc, _ in ranked]


def test_a_selection_that_returns_a_passage_outside_the_candidates_is_refused(index):
    outsider = next(c for c in index.chunks if c.metadata["id"] == "json-dumps")

    def smuggle(ranked):
        return [doc for doc, _ in ranked] + [outsider]

    with pytest.raises(ContextSelectionError, match=r"smuggle returned 1 item\(s\) that are not this request's"):
        trace_request(ANSWERED, index, NeverCalled(), select=smuggle)


def test_an_unchanged_corpus_copy_is_the_committed_file_byte_for_byte(tmp_path):
    from labkit.rag.trace import corpus_path, write_edited_corpus

    same = write_edited_corpus(tmp_path / "same.json", source_id="zoneinfo", old="IANA", new="IANA")
    assert same.read_bytes() == corpus_path().read_bytes()


def test_an_edited_link_changes_that_link_only(tmp_path):
    from labkit.rag.trace import corpus_path, write_edited_corpus

    path = write_edited_corpus(tmp_path / "c.json", source_id="zoneinfo", old=".html", new=".html?edited", field="url")
    before, after = (
        corpus_path().read_text(encoding="utf-8").splitlines(),
        path.read_text(encoding="utf-8").splitlines(),
    )
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert len(changed) == 1 and changed[0][1] == changed[0][0].replace(".html", ".html?edited", 1)
    with pytest.raises(CorpusError, match="no field 'link'"):
        write_edited_corpus(tmp_path / "d.json", source_id="zoneinfo", old="a", new="b", field="link")


def test_model_step_names_a_refused_request_refused_not_answered(index, adapter, monkeypatch):
    assert model_step(trace_request(ANSWERED, index, adapter)) == "model_reply_returned"
    assert model_step(trace_request(ANSWERED, load_docs_index(empty=True), NeverCalled())) == "model_skipped"
    assert model_step(trace_request("  ", index, adapter)) is None
    assert model_step(trace_request("What does shutil.move do?", index, adapter)) is None
    monkeypatch.setattr(rag_trace, "SYSTEM_POLICY", rag_trace.SYSTEM_POLICY + " Be brief.")
    refused = trace_request(ANSWERED, index, adapter)
    assert "model_request_ready" in refused.trace.kinds()  # built, and still never seen by a model
    assert model_step(refused) == "replay_refused"


def test_a_probe_asks_no_model_and_works_for_a_context_no_run_holds(index):
    drop_top = lambda ranked: [doc for doc, _ in ranked[1:]]  # noqa: E731 - a one-line selection
    probed = rag_trace.probe(ANSWERED, index, ["zoneinfo"], select=drop_top)
    assert probed.outcome == "completed"
    assert probed.result["source_ids"] == ["zoneinfo"]
    assert probed.trace.first("model_reply_returned").data["supplied_by"] == "driver (controlled probe)"
    assert probed.trace.first("request_accepted").data["run_id"] is None
    assert rag_trace.reply_from(probed) == "a probe (no model)"


def test_a_policy_line_changes_only_the_system_message_and_is_refused(index, adapter):
    changed = trace_request(ANSWERED, index, adapter, edit=rag_trace.policy_line_added("Be brief."))
    sent = changed.trace.first("model_request_ready").data["messages"]
    assert sent[0]["content"] == rag_trace.SYSTEM_POLICY + " Be brief."
    assert model_step(changed) == "replay_refused"
    assert [d.path for d in changed.extra["diff"]] == ["messages[0].content"]


def test_an_edited_passage_is_refused_and_an_edit_that_changes_nothing_raises(index, adapter):
    edited = trace_request(ANSWERED, index, adapter, edit=rag_trace.passage_edited("Python 3.11", "Python 3.12"))
    assert model_step(edited) == "replay_refused"
    assert "Python 3.12" in edited.trace.first("model_request_ready").data["messages"][1]["content"]
    with pytest.raises(rag_trace.MessageEditError, match="not in the passages sent"):
        trace_request(ANSWERED, index, adapter, edit=rag_trace.passage_edited("Python 9.99", "x"))


def test_the_branch_table_names_who_replied_for_each_branch(index, adapter):
    cases = {
        "answered": trace_request(ANSWERED, index, adapter),
        "skipped": trace_request(ANSWERED, index, adapter, select=lambda ranked: []),
        "refused": trace_request(ANSWERED, index, adapter, edit=rag_trace.policy_line_added("Be brief.")),
        "probe": rag_trace.probe(ANSWERED, index, ["datetime-fromisoformat"]),
    }
    table = rag_trace.branch_table(cases)
    assert table["reply from"].tolist() == [
        "run 02-rag-authored (authored)",
        "the app (no model asked)",
        "none (no model saw the request)",
        "a probe (no model)",
    ]
    assert table["passages kept"].tolist() == [3, 0, 3, 3]
    assert table["ended as"].tolist() == ["answered", "not_in_docs", "replay_refused", "answered"]
    assert "status" not in table.columns  # replay_refused is an outcome, not a reply's status


def test_the_candidates_table_marks_the_passages_of_cited_sources_in_rank_order(index, adapter):
    traced = trace_request(ANSWERED, index, adapter)
    table = rag_trace.candidates_table(traced)
    assert table.index.tolist() == [1, 2, 3]
    assert table["cited source"].tolist() == [True, True, False]
    assert table["chunk_id"].iloc[0].startswith("datetime-fromisoformat:")


def test_the_passages_table_lists_one_summarys_passages_and_refuses_an_unknown_id():
    chunks = split_corpus(load_corpus())
    table = rag_trace.passages_table(chunks, "datetime-fromisoformat")
    assert len(table) == 2 and table["chars"].iloc[0] == rag_trace.CHUNK_SIZE
    with pytest.raises(CorpusError, match="no passage has the source id"):
        rag_trace.passages_table(chunks, "no-such-id")


def test_the_utf8_sentence_of_the_write_text_summary_ranks_just_below_the_cut(index):
    rank, score, text = rag_trace.passage_rank(rag_trace.RANKING_QUESTION, index, "encoding='utf-8' to choose")
    assert rank == rag_trace.K + 1
    assert text.startswith("name is replaced") and 0 < score < 0.5
    with pytest.raises(CorpusError, match="no passage holds"):
        rag_trace.passage_rank(rag_trace.RANKING_QUESTION, index, "no such words")


def test_sent_holding_names_only_sent_passages_that_hold_the_words(index, adapter):
    question = rag_trace.RANKING_QUESTION
    every = rag_trace.probe(question, index)
    assert rag_trace.sent_holding(every, "'utf-8'") == [(2, "path-read-text")]
    assert rag_trace.sent_holding(every, "no such words") == []
    top_only = rag_trace.probe(question, index, select=lambda ranked: [ranked[0][0]])
    assert rag_trace.sent_holding(top_only, "'utf-8'") == []  # rank 2 was a candidate, not sent
    with pytest.raises(ValueError, match="before context_selected"):
        rag_trace.sent_holding(trace_request(" ", index, adapter), "'utf-8'")


def test_the_candidates_table_of_a_request_stopped_before_search_says_so(index, adapter):
    with pytest.raises(ValueError, match="ended request_rejected before search"):
        rag_trace.candidates_table(trace_request(" ", index, adapter))


def test_the_context_branch_tells_no_context_the_same_request_and_a_new_one(index, adapter):
    baseline = trace_request(ANSWERED, index, adapter)
    top_only = trace_request(ANSWERED, index, adapter, select=lambda ranked: [ranked[0][0]])
    reordered = trace_request(ANSWERED, index, adapter, select=lambda ranked: [d for d, _ in reversed(ranked)])
    none_kept = trace_request(ANSWERED, index, adapter, select=lambda ranked: [])
    assert rag_trace.context_branch(baseline, baseline) == "same request"
    assert (
        rag_trace.context_branch(trace_request(ANSWERED, index, adapter, select=keep_all), baseline) == "same request"
    )
    assert rag_trace.context_branch(top_only, baseline) == "new request"
    assert rag_trace.context_branch(reordered, baseline) == "new request"  # same passages, another order
    assert rag_trace.context_branch(none_kept, baseline) == "app answers"
    assert rag_trace.context_branch(trace_request(" ", index, adapter), baseline) is None
    with pytest.raises(ValueError, match="baseline built no request"):
        rag_trace.context_branch(top_only, none_kept)


def test_request_settings_name_the_model_and_settings_and_the_schema_fields(adapter):
    lines = rag_trace.request_settings(adapter).splitlines()
    assert lines[0] == f"model: {adapter.model}"
    assert lines[1] == "settings: {'temperature': 0, 'seed': 7, 'max_tokens': 160}"
    assert lines[2] == (
        "response_format: type json_object, schema Reply: status ('answered' or 'not_in_docs'), answer (string), "
        "source_ids (array of string); all required, no other fields"
    )
    assert (
        SETTINGS["response_format"]["schema"] == rag_trace.Reply.model_json_schema()
    )  # the request sends the real schema


def test_schema_fields_follow_the_schema_they_are_given():
    schema = {
        "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
        "required": ["n"],
    }
    assert (
        rag_trace.schema_fields(schema)
        == "n (integer), tags (array of 'a' or 'b'); required: ['n'], other fields allowed"
    )


def test_the_captured_run_header_and_finish_lines_come_from_its_file():
    run = load_run(rag_trace.RUN_CAPTURED)
    header = rag_trace.run_header(rag_trace.RUN_CAPTURED)
    assert header.startswith(f"run {rag_trace.RUN_CAPTURED} (captured): model {run.model.id}, ")
    assert header.endswith(f"server kind {run.model.endpoint_kind}, created {run.created_at[:10]}")
    for binding in run.bindings:
        line = rag_trace.finish_line(rag_trace.RUN_CAPTURED, binding.question)
        finish = binding.response["choices"][0]["finish_reason"]
        assert line == (
            f"finish_reason {finish}, {binding.usage.completion_tokens} reply tokens of max_tokens "
            f"{run.settings['max_tokens']}"
        )
    assert rag_trace.finish_line(rag_trace.RUN_CAPTURED, UNSUPPORTED).startswith("finish_reason length, 160 ")
    with pytest.raises(CorpusError, match="holds no reply"):
        rag_trace.finish_line(rag_trace.RUN_CAPTURED, "What does shutil.move do?")
    table = rag_trace.calls_table(rag_trace.RUN_CAPTURED)
    assert list(table["question"]) == [b.question for b in run.bindings]


def test_event_fields_print_every_field_and_cut_only_the_hashes(index, adapter):
    first = trace_request(ANSWERED, index, adapter).trace.events[0]
    lines = rag_trace.event_fields(first).splitlines()
    assert lines[0] == "event #1 request_accepted, every field (hashes cut to 16 characters):"
    assert [line.split(":")[0].strip() for line in lines[1:]] == list(first.data)
    assert f"   question: {ANSWERED}" in lines
    assert f"   request_key: {first.data['request_key'][:16]}…" in lines
    assert f"   run_id: {first.data['run_id']}" in lines  # not a hash: shown whole


def test_best_scores_are_each_requests_rank_one_score(index, adapter):
    asked = {"timestamp": trace_request(ANSWERED, index, adapter), "backup": trace_request(UNSUPPORTED, index, adapter)}
    best = rag_trace.best_scores(asked)
    for name, traced in asked.items():
        scores = [c["score"] for c in traced.trace.first("retrieval_completed").data["candidates"]]
        assert best[name] == round(max(scores), 3)
    assert best["backup"] < best["timestamp"]
