"""Bring your own filings: a small folder laid out as FinanceBench's repository, measured end to end."""

from __future__ import annotations

import importlib.util
import json

import pytest

from labkit.errors import MissingExtra
from labkit.rag.financebench.command import main
from labkit.rag.financebench.measure import measure, terminal_bar
from labkit.rag.financebench.results import load_results
from labkit.rag.retrievers import RETRIEVERS
from tests.financebench_folders import (
    ABSENT,
    OUTSIDE_RULE,
    QUESTIONS,
    RENAMED,
    HashingEmbeddings,
    write_financebench_folder,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_financebench_folder(tmp_path_factory.mktemp("financebench"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def results(folder, cache):
    return measure(folder, ks=(1, 3, 12), embeddings=HashingEmbeddings(), cache=cache)


def test_every_present_question_is_measured_by_every_retriever_in_both_stores(results):
    measured = [q[0] for q in QUESTIONS if q[1] != ABSENT]
    assert [q.financebench_id for q in results.questions] == measured
    assert results.counts == {
        "questions": len(QUESTIONS),
        "measured": len(measured),
        "skipped_no_pdf": 2,
        "skipped_no_evidence": 0,
        "documents_measured": len(measured),
    }
    assert results.absent == {ABSENT: 2}
    for q in results.questions:
        for scope in ("single-document", "shared"):
            assert list(q.page_hit[scope]) == list(RETRIEVERS)
            assert all(list(hits) == ["1", "3", "12"] for hits in q.page_hit[scope].values())
            assert set(q.candidate_hit[scope]) == {"faiss+bm25"}  # the only retriever with a candidate stage
            assert q.page_hit["single-document"]["faiss"]["12"]  # a store of one or three pages holds it


def test_the_zero_based_evidence_page_is_read_as_page_plus_one(results):
    first = next(q for q in results.questions if q.financebench_id == "financebench_id_00001")
    assert first.evidence_pages == [2]  # evidence_page_num 1
    # each fact is stated on one page only and the question reuses its words: the hybrid's first page is it
    shared = [q.page_hit["shared"]["hybrid"]["1"] for q in results.questions]
    assert sum(shared) >= len(shared) - 2


def test_the_odd_names_are_measured_and_reported(results):
    assert {RENAMED[0], OUTSIDE_RULE} <= set(results.documents)
    assert results.documents[RENAMED[0]]["pdf"] == f"{RENAMED[1]}.pdf"
    assert results.names["renamed"] == {RENAMED[0]: RENAMED[1]}
    assert results.names["unknown"]["pdfs"] == [OUTSIDE_RULE, "analyst notes"]
    assert results.names["repeated_documents"] == {"3M_2018_10K": [2022, 2017]}


def test_the_results_hold_no_text_of_the_benchmark(results, folder):
    dumped = json.dumps(results.model_dump())
    for line in (folder / "data" / "financebench_open_source.jsonl").read_text().splitlines():
        record = json.loads(line)
        for text in [record["question"], *(e["evidence_text"] for e in record["evidence"])]:
            assert text not in dumped
    assert "FILLER" not in dumped and "general business conditions" not in dumped


def test_a_warm_run_embeds_nothing_and_gives_the_same_results(folder, tmp_path):
    from labkit.rag.financebench.results import comparable

    live = HashingEmbeddings()
    first = measure(folder, embeddings=live, cache=tmp_path)
    calls = live.calls
    again = measure(folder, embeddings=live, cache=tmp_path)
    assert first.timings["texts_embedded_now"] > 0 and again.timings["texts_embedded_now"] == 0
    assert live.calls == calls
    assert comparable(again) == comparable(first)


def test_the_command_prints_one_summary_line_the_absent_documents_and_the_tables(folder, cache, tmp_path, capsys):
    path = tmp_path / "results.json"
    code = main(
        [str(folder), "--k", "1", "3", "5", "12", "--cache", str(cache), "--results", str(path), "--quiet"],
        embeddings=HashingEmbeddings(),
    )
    out = capsys.readouterr().out
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("9 of 11 questions measured over 9 documents") and "parse " in first and "embed " in first
    assert f"{ABSENT} (2)" in out and "1 documents asked about have no PDF; their 2 questions are skipped" in out
    assert f"{RENAMED[1]}.pdf is used for {RENAMED[0]}" in out
    assert "outside FinanceBench's naming rule" in out and "analyst notes" in out
    assert "single-document store: page-hit@k per retriever and question kind" in out
    assert "shared store: page-hit@k per retriever and document kind" in out
    assert "] best" in out and "candidate_recall@12" in out
    assert "best at page-hit@5 per question kind" in out
    assert load_results(path).counts["measured"] == 9


def test_nothing_measurable_exits_1_with_what_to_do(tmp_path, capsys):
    root = write_financebench_folder(tmp_path / "fb")
    for pdf in (root / "pdfs").glob("*.pdf"):
        pdf.unlink()
    assert main([str(root), "--cache", str(tmp_path), "--quiet"], embeddings=HashingEmbeddings()) == 1
    assert "put the filings there as <doc_name>.pdf" in capsys.readouterr().err
    assert main([str(root), "--k", "0"], embeddings=HashingEmbeddings()) == 1


def test_progress_bars_stay_off_when_the_output_is_not_a_terminal(capsys):
    bar = terminal_bar(range(3), desc="embed", unit="batch")
    assert list(bar) == [0, 1, 2]
    assert bar.disable  # tqdm's disable=None: off where stderr is not a terminal
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None, reason="the embed extra is installed"
)
def test_new_text_without_the_embed_extra_is_refused_naming_it(folder, tmp_path, capsys):
    with pytest.raises(MissingExtra, match=r"Embedding new text.*optional extra 'embed'"):
        measure(folder, cache=tmp_path)
    assert not list(tmp_path.iterdir())  # refused before any parsing
    assert main([str(folder), "--cache", str(tmp_path), "--quiet"]) == 1
    assert "optional extra 'embed'" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None, reason="needs the embed extra")
def test_the_real_model_measures_the_folder(folder, tmp_path):
    results = measure(folder, ks=(1, 12), cache=tmp_path)
    assert results.settings["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert all(q.page_hit["single-document"]["faiss"]["12"] for q in results.questions)
