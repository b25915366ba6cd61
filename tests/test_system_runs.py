"""What notebook 05 shows of its runs: golden tables that say why, a trace's text beside its viewer, token costs."""

import json

import pytest

from labkit.boundary import connect
from labkit.recording import load_run
from labkit.system.contract import SETTINGS, ScriptedModel
from labkit.system.golden import GOLDEN, run_golden
from labkit.system.policy import load_policy_index, load_policy_pages, split_policy
from labkit.system.runs import (
    RUN_AUTHORED,
    RUN_CAPTURED,
    GraphDiagram,
    chunk_table,
    evidence_sentences,
    evidence_share,
    golden_table,
    lesson_folder,
    model_request,
    reply_table,
    request_viewer,
    run_table,
    same_model_request,
    server_of,
    viewer_text,
)
from labkit.system.workflow import MinimalSystem, read_trace_lines, request_trace
from labkit.widgets import viewer_html


@pytest.fixture(scope="module")
def index():
    return load_policy_index()


@pytest.fixture
def captured(index, tmp_path):
    system = MinimalSystem(
        connect(RUN_CAPTURED, lesson="05", settings=SETTINGS), index=index, trace_path=tmp_path / "t.jsonl"
    )
    return system, run_golden(system)


def test_the_golden_table_names_the_broken_rule_of_each_failed_case_and_none_of_a_pass(captured):
    _, rows = captured
    table = golden_table(rows)
    for case, _, _, ok in rows:
        why = table.loc[case.question, "why not passed"]
        assert (why == "") is ok
    assert table.loc[GOLDEN[2].question, "why not passed"] == "status answered, expected insufficient_evidence"


@pytest.mark.parametrize("passed", [True, False, None])
def test_the_viewers_text_says_what_its_heading_says(captured, passed):
    system, _ = captured
    line = next(x for x in read_trace_lines(system.trace_path) if x["question"] == GOLDEN[2].question)
    trace = request_trace(line)
    text = viewer_text(trace, passed=passed, reason="status answered, expected insufficient_evidence")
    last = text.splitlines()[-1]
    heading = viewer_html(trace, "t", passed=passed)
    if passed is False:
        assert last.startswith("6 events (5 ok, 1 wrong); judged wrong: status answered")
        assert "6 events (5 ok, 1 wrong)" in heading and "judged wrong" in heading
        assert text.splitlines()[5].split()[:3] == ["#6", "result", "wrong"]
    elif passed:
        assert last.startswith("6 events (6 ok); judged right") and "judged right" in heading
    else:
        assert last.startswith("6 events (6 ok):") and "judged" not in last and "judged" not in heading
    assert [row.split()[1] for row in text.splitlines()[:-1]] == trace.kinds()


def test_evidence_share_counts_the_evidence_texts_against_everything_sent():
    evidence = [{"citation_id": "a", "text": "x" * 300}]
    messages = [
        {"role": "system", "content": "s" * 100},
        {"role": "user", "content": json.dumps({"question": "q", "evidence": evidence})},
    ]
    sent = 100 + len(messages[1]["content"])
    assert evidence_share(messages) == pytest.approx(302 / sent)  # the text as JSON, with its quotes
    assert evidence_share([messages[0], {"role": "user", "content": '{"question": "q", "evidence": []}'}]) == 0


def test_evidence_sentences_keep_whole_sentences_and_their_section_numbers():
    chunks = split_policy(load_policy_pages())
    found = evidence_sentences(chunks, "business days after", "Exchanges I")
    assert found == [
        "refund_policy.pdf#p1: Card refunds appear within five to ten business days after the "
        "returned item is checked.",
        "refund_policy.pdf#p2: 5. Exchanges Instead of a refund, a customer may ask to exchange an "
        "item for another size or colour of the same product.",
    ]
    with pytest.raises(ValueError, match="at least one phrase"):
        evidence_sentences(chunks)


def test_a_scripted_probe_shows_in_the_golden_table_with_its_broken_rule(index, tmp_path):
    wrong = '{"kind": "answer", "text": "Within 60 days.", "citation_ids": ["refund_policy.pdf#p1"]}'
    system = MinimalSystem(ScriptedModel(wrong), index=index, trace_path=tmp_path / "t.jsonl")
    rows = run_golden(system)
    assert golden_table(rows).loc[GOLDEN[0].question, "why not passed"] == (
        f"text 'Within 60 days.' is not exactly {GOLDEN[0].text!r}"
    )


def test_chunk_table_shows_the_zero_based_loader_page_beside_the_one_based_citation_id(index):
    table = chunk_table(index.chunks)
    assert list(table["loader page"]) == [c.metadata["page"] for c in index.chunks]
    assert all(
        cid.endswith(f"#p{page + 1}") for page, cid in zip(table["loader page"], table["citation_id"], strict=True)
    )
    assert "squared L2 distance" not in table.columns


def test_chunk_table_ranks_a_search_from_one_and_refuses_a_distance_per_document_missing(index):
    found = index.store.similarity_search_with_score(GOLDEN[0].question, k=3)
    docs, distances = [d for d, _ in found], [s for _, s in found]
    table = chunk_table(docs, distances=distances)
    assert list(table.index) == [1, 2, 3] and list(table["squared L2 distance"]) == sorted(table["squared L2 distance"])
    with pytest.raises(ValueError, match="one per document"):
        chunk_table(docs, distances=distances[:2])


def test_the_run_table_reads_each_runs_origin_and_model_from_its_own_header():
    table = run_table([RUN_AUTHORED, RUN_CAPTURED])
    for run_id in (RUN_AUTHORED, RUN_CAPTURED):
        run = load_run(run_id)
        row = table.loc[run_id]
        assert (row["origin"], row["model"], row["requests"]) == (run.origin, run.model.id, len(run.bindings))
        assert row["recorded"] == run.created_at[:10]
    assert list(table["origin"]) == ["authored", "captured"]


def test_the_run_table_tells_the_servers_apart_by_the_shape_of_their_replies():
    table = run_table([RUN_AUTHORED, RUN_CAPTURED, "05-system-smollm2-xllamacpp"])
    runs = [load_run(run_id) for run_id in (RUN_CAPTURED, "05-system-smollm2-xllamacpp")]
    assert {run.model.endpoint_kind for run in runs} == {"local-llama-cpp"}  # cannot tell them apart
    assert list(table["server"]) == ["none (authored)", "llama-cpp-python", "xllamacpp"]


def test_server_of_calls_a_run_mixed_when_only_some_replies_carry_timings():
    run = load_run("05-system-smollm2-xllamacpp")
    first = run.bindings[0].model_copy(update={"response": {"choices": []}})
    assert server_of(run.model_copy(update={"bindings": [first, *run.bindings[1:]]})).startswith("mixed")


def test_the_request_viewer_shows_a_threads_last_request_without_a_verdict(captured):
    system, rows = captured
    text, viewer = request_viewer(system.trace_path, rows[1][1], origin="captured")
    assert viewer.title == GOLDEN[1].question and len(viewer.trace) == 6
    assert GOLDEN[1].question in text.splitlines()[0] and "judged" not in text
    with pytest.raises(LookupError, match="no trace line"):
        request_viewer(system.trace_path, "no-such-thread", origin="captured")


def test_model_request_reads_the_messages_the_generate_step_sent(captured):
    system, _ = captured
    line = read_trace_lines(system.trace_path)[0]
    generate = next(step for step in line["trace"] if step["step"] == "generate")
    assert model_request(line) == generate["model_request"] and model_request(line)[0]["role"] == "system"


def test_the_graph_diagram_is_mermaid_in_markdown_and_the_same_text_in_plain_view(index):
    diagram = GraphDiagram(MinimalSystem(ScriptedModel("{}"), index=index).graph)
    assert diagram._repr_markdown_() == f"```mermaid\n{diagram.mermaid}\n```"
    assert repr(diagram) == diagram.mermaid and "retrieve --> generate" in diagram.mermaid


def test_the_reply_table_shows_each_requests_raw_reply_as_the_model_sent_it(captured):
    system, _ = captured
    lines = read_trace_lines(system.trace_path)
    table = reply_table(lines)
    assert list(table.index) == [case.question for case in GOLDEN]
    for line in lines:
        generate = next(s for s in line["trace"] if s["step"] == "generate")
        assert table.loc[line["question"], "raw reply"] == generate["raw_reply"]
        assert table.loc[line["question"], "status"] == line["result"]["status"]
    assert all(json.loads(raw)["tool_args"] == {"intent": "get_refund"} for raw in table["raw reply"])
    refused = table.loc[GOLDEN[0].question, "check's reason"]
    assert refused == next(s for s in lines[0]["trace"] if s["step"] == "check")["reason"] and refused
    assert table.loc[GOLDEN[1].question, "check's reason"] == ""  # a valid tool call: nothing refused
    assert "prompt tokens" not in table.columns


def test_the_reply_tables_costs_are_each_requests_recorded_tokens_and_latency(captured, index, tmp_path):
    system, _ = captured
    table = reply_table(read_trace_lines(system.trace_path), costs=True)
    recorded = {b.question: b for b in load_run(RUN_CAPTURED).bindings}
    for question, row in table.iterrows():
        binding = recorded[question]
        assert row["prompt tokens"] == binding.usage.prompt_tokens
        assert row["reply tokens"] == binding.usage.completion_tokens
        assert row["model call, recorded (s)"] == round(binding.latency_s)
    scripted = MinimalSystem(ScriptedModel("{}"), index=index, trace_path=tmp_path / "s.jsonl")
    scripted.ask(GOLDEN[0].question, "team-a", "s")
    with pytest.raises(ValueError, match="no tokens or latency"):
        reply_table(read_trace_lines(scripted.trace_path), costs=True)


def test_same_model_request_compares_the_messages_sent_not_the_team_or_the_result(captured):
    system, _ = captured
    lines = read_trace_lines(system.trace_path)
    other_team = {**lines[1], "team": "team-b", "result": {"status": "answered"}}
    assert same_model_request(lines[1], other_team)
    assert not same_model_request(lines[0], lines[1])  # two questions, two requests


def test_the_lesson_folder_starts_with_no_trace_lines_and_keeps_other_files(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_SCRATCH", str(tmp_path))
    folder = lesson_folder()
    (folder / "captured_traces.jsonl").write_text('{"old": 1}\n', encoding="utf-8")
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    assert lesson_folder() == tmp_path / "05_minimal_system"
    assert not (folder / "captured_traces.jsonl").exists()
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"
