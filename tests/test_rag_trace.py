import json
import shutil

import pytest

from labkit.boundary import connect
from labkit.errors import RecordedRunError
from labkit.rag import trace as rag_trace
from labkit.rag.trace import (
    AUTHORED_REPLIES,
    QUESTIONS,
    RUN_AUTHORED,
    SETTINGS,
    CorpusError,
    StaleIndex,
    load_corpus,
    load_docs_index,
    request_key,
    trace_request,
)
from labkit.recording import load_run
from labkit.replay import BindingStore, replay_client
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


@pytest.fixture(scope="module")
def index():
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
