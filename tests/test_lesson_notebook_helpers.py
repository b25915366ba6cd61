import json
import uuid

import ipywidgets
import pytest

from labkit import rag_trace
from labkit.paths import project_root, scratch_dir
from labkit.rag_trace import (
    QUESTIONS,
    RUN_AUTHORED,
    RUN_CAPTURED,
    CorpusError,
    StaleIndex,
    bindings_table,
    diff_table,
    load_corpus,
    load_docs_index,
    portable_message,
    prompt,
    replay_refusal,
    stable_trace_viewer,
    write_edited_corpus,
)
from labkit.recording import load_run
from labkit.replay import BoundReplay, FieldDiff
from labkit.traces import Trace

ANSWERED = QUESTIONS["answered"]


@pytest.fixture(scope="module")
def index():
    return load_docs_index()


@pytest.fixture(scope="module")
def replay():
    return BoundReplay.from_run(load_run(RUN_AUTHORED))


def _selected(index, question):
    return [doc for doc, _ in index.store.similarity_search_with_score(question, k=rag_trace.K)]


def test_portable_message_writes_project_and_scratch_paths_relative():
    text = f"see {project_root() / 'fixtures' / 'a.json'} and {scratch_dir() / 'x' / 'b.json'}"
    assert portable_message(text) == "see fixtures/a.json and scratch/x/b.json"


def test_diff_table_shows_the_window_where_two_long_texts_differ():
    recorded = "word " * 40 + "end."
    table = diff_table([FieldDiff("messages[0].content", recorded, recorded + " Be brief.")], width=30)
    assert list(table.columns) == ["field", "recorded", "this request"]
    row = table.iloc[0]
    assert row["recorded"].startswith("…") and row["recorded"].endswith("end.")
    assert row["this request"].endswith("end. Be brief.")


def test_diff_table_reads_trace_event_dicts_and_marks_absent_fields():
    table = diff_table([{"path": "stop", "recorded": None, "actual": ["\n"]}])
    assert table.iloc[0].to_dict() == {"field": "stop", "recorded": "(absent)", "this request": '["\\n"]'}


def test_replay_refusal_returns_the_mismatch_or_none(index, replay):
    selected = _selected(index, ANSWERED)
    assert replay_refusal(replay, ANSWERED, prompt(ANSWERED, selected)) is None
    refusal = replay_refusal(replay, ANSWERED, prompt(ANSWERED, selected[::-1]))
    assert any(d.path.startswith("messages[1].content.passages[0]") for d in refusal.diff)


def test_edited_corpus_differs_in_one_passage_and_is_refused_against_old_vectors(tmp_path):
    path = write_edited_corpus(tmp_path / "corpus.json", source_id="zoneinfo", old="IANA", new="Olson")
    before = {d.metadata["id"]: d.page_content for d in load_corpus()}
    after = {d.metadata["id"]: d.page_content for d in load_corpus(path)}
    assert [key for key in before if before[key] != after[key]] == ["zoneinfo"]
    with pytest.raises(StaleIndex, match="zoneinfo:"):
        load_docs_index(corpus_file=path)


def test_edited_corpus_refuses_an_unknown_id_or_missing_words(tmp_path):
    with pytest.raises(CorpusError, match="no summary 'nope'"):
        write_edited_corpus(tmp_path / "c.json", source_id="nope", old="a", new="b")
    with pytest.raises(CorpusError, match="does not contain"):
        write_edited_corpus(tmp_path / "c.json", source_id="zoneinfo", old="not in the text", new="b")
    assert not (tmp_path / "c.json").exists()


def test_bindings_table_shows_measurements_of_captured_runs_only():
    captured = bindings_table(load_run(RUN_CAPTURED))
    assert captured["finish_reason"].tolist() == ["stop", "length"]
    assert captured["completion_tokens"].tolist()[1] == json.loads(
        (project_root() / "recorded_runs" / RUN_CAPTURED / "run.json").read_text(encoding="utf-8")
    )["bindings"][1]["usage"]["completion_tokens"]
    authored = bindings_table(load_run(RUN_AUTHORED))
    assert authored["latency_s"].isna().all() and authored["prompt_tokens"].isna().all()


def _tree_ids(widget):
    ids = [widget.model_id]
    for part in ("layout", "style"):
        if getattr(widget, part, None) is not None:
            ids.append(getattr(widget, part).model_id)
    for child in getattr(widget, "children", ()):
        ids.extend(_tree_ids(child))
    return ids


def _viewer(monkeypatch=None, start=None):
    if monkeypatch is not None:
        monkeypatch.setattr(rag_trace, "_widget_numbers", iter(range(start, start + 1000)))
    trace = Trace()
    trace.emit("request_accepted", question="q")
    trace.emit("request_completed", status="answered")
    return stable_trace_viewer(trace)


def test_stable_trace_viewer_numbers_its_widgets_from_the_counter(monkeypatch):
    start = 10**9  # far from the numbers the other tests draw, so no id is opened twice
    ids = _tree_ids(_viewer(monkeypatch, start).widget)
    end = next(rag_trace._widget_numbers)
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, rag_trace._WIDGET_NAMESPACE)
    assert sorted(ids) == sorted(uuid.uuid5(namespace, str(n)).hex for n in range(start, end))
    assert len(set(ids)) == len(ids) > 5


def test_stable_trace_viewer_ids_do_not_repeat_within_a_kernel():
    one, two = _tree_ids(_viewer().widget), _tree_ids(_viewer().widget)
    assert not set(one) & set(two)


def test_stable_trace_viewer_restores_the_construction_callback():
    seen = []
    ipywidgets.Widget.on_widget_constructed(seen.append)
    try:
        viewer = _viewer()
        assert ipywidgets.Widget._widget_construction_callback == seen.append
    finally:
        ipywidgets.Widget.on_widget_constructed(None)
    assert seen and repr(viewer) == "TraceViewer(2 events)"
