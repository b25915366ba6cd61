"""The results file and what a lesson renders from it: page-hit with its interval, ties printed as ties."""

from __future__ import annotations

import json
import re

import pytest

from labkit.rag.financebench.results import (
    FORMAT,
    FinanceBenchResults,
    QuestionResult,
    comparable,
    difference_sentences,
    load_results,
    page_hit_table,
    rows,
    sample_results_path,
    side_by_side,
    winners,
    write_results,
)

#: retriever -> how many of the 10 questions it hits at k=5 (the first ones)
HITS = {"faiss": 8, "faiss+bm25": 4, "hybrid": 7}


def made_results(hits=HITS, n=10):
    questions = []
    for i in range(n):
        hit = {name: {"1": i < count // 2, "5": i < count} for name, count in hits.items()}
        questions.append(
            QuestionResult(
                financebench_id=f"financebench_id_{i:05d}",
                question_type="novel-generated" if i % 2 else "domain-relevant",
                doc_name="BOEING_2022_10K",
                doc_type="10K",
                evidence_pages=[i + 1],
                page_hit={"single-document": hit, "shared": hit},
                reciprocal_rank={
                    s: {name: 1.0 if hit[name]["1"] else 0.0 for name in hits} for s in ("single-document", "shared")
                },
                candidate_hit={s: {"faiss+bm25": hit["faiss+bm25"]["5"]} for s in ("single-document", "shared")},
            )
        )
    return FinanceBenchResults(
        format=FORMAT,
        labkit_commit="0" * 40,
        settings={"ks": [1, 5], "retrievers": list(hits), "chunk_size": 800},
        counts={"questions": n, "measured": n},
        documents={"BOEING_2022_10K": {"pages": 190}},
        absent={"3M_2018_10K": 2},
        names={"unknown": {}, "renamed": {}, "repeated_documents": {}, "unused_pdfs": []},
        questions=questions,
        timings={"parse_s": 1.0},
    )


def test_page_hit_has_its_interval_and_a_difference_inside_it_is_a_tie():
    table = page_hit_table(made_results())
    whole = table.loc["all"]
    assert whole["page_hit@5"].to_dict() == {"faiss": 0.8, "faiss+bm25": 0.4, "hybrid": 0.7}
    assert whole.loc["faiss", "ci95@5"] == "[0.49, 0.94]"  # scipy's Wilson interval for 8 of 10
    assert whole["vs_best@5"].to_dict() == {"faiss": "best", "faiss+bm25": "below", "hybrid": "tie"}
    assert whole["candidate_recall@12"].isna().to_dict() == {"faiss": True, "faiss+bm25": False, "hybrid": True}
    assert set(table.index.get_level_values("kind")) == {"domain-relevant", "novel-generated", "all"}


def test_winners_name_the_best_and_what_the_data_cannot_separate_from_it():
    sentences = winners(page_hit_table(made_results()), k=5)
    assert sentences[-1] == (
        "all (10 questions): faiss 0.800 [0.49, 0.94]; the data cannot separate hybrid from it "
        "(inside that interval); faiss+bm25 below it."
    )


def test_winners_name_no_best_when_every_retriever_ties():
    sentences = winners(page_hit_table(made_results({"faiss": 5, "faiss+bm25": 6, "hybrid": 5})), k=5)
    assert sentences[-1].startswith("all (10 questions): the data cannot separate faiss, faiss+bm25, hybrid")
    assert "best" not in sentences[-1]


def test_side_by_side_sets_two_question_sets_apart_and_says_when_they_tie():
    real = rows(made_results())
    fictional = rows(made_results({"faiss": 2, "faiss+bm25": 4, "hybrid": 6}))
    table = side_by_side({"fictional filings": fictional, "FinanceBench sample": real}, k=5)
    assert table.loc["faiss", ("fictional filings", "hits")] == "2/10"
    assert table.loc["faiss", ("FinanceBench sample", "page_hit@5")] == 0.8
    assert table["difference"].to_dict() == {
        "faiss": "higher on FinanceBench sample",  # 0.2 lies below 8/10's interval [0.49, 0.94]
        "faiss+bm25": "tie",
        "hybrid": "tie",
    }
    sentences = difference_sentences(table, k=5)
    assert sentences[0] == (
        "faiss: page-hit@5 0.20 [0.06, 0.51] on fictional filings, 0.80 [0.49, 0.94] on FinanceBench sample: "
        "higher on FinanceBench sample, outside the other's 95% interval."
    )
    assert sentences[1].endswith("a tie, one lies inside the other's 95% interval.")


def test_a_results_file_round_trips_and_compares_without_commit_and_timings(tmp_path):
    results = made_results()
    path = write_results(results, tmp_path / "r.json")
    assert path.read_text().endswith("}\n") and '\n  "format"' in path.read_text()
    again = load_results(path)
    assert again == results
    other = again.model_copy(update={"labkit_commit": "1" * 40, "timings": {"parse_s": 9.0}})
    assert comparable(other) == comparable(results)
    assert comparable(again.model_copy(update={"absent": {}})) != comparable(results)


def test_a_results_file_of_another_shape_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"format": FORMAT, "questions": []}))
    with pytest.raises(ValueError, match="Field required"):
        load_results(path)


def strings(value):
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_the_committed_results_hold_ids_kinds_names_and_numbers_only():
    data = json.loads(sample_results_path().read_text(encoding="utf-8"))
    allowed = re.compile(r"[A-Za-z0-9_.&@+\-/ ]{1,64}")  # ids, kinds, names, hashes, settings: no sentence
    wordy = [s for s in strings(data) if not allowed.fullmatch(s) or len(s.split()) > 3]
    assert wordy == []
    assert load_results().counts["measured"] == len(load_results().questions)


def test_the_committed_results_quote_nothing_from_the_sample():
    from tests.financebench_folders import sample_folder

    text = sample_results_path().read_text(encoding="utf-8")
    for line in (sample_folder() / "data" / "financebench_open_source.jsonl").read_text().splitlines():
        record = json.loads(line)
        quoted = [record["question"], record["answer"], record["justification"] or ""]
        quoted += [e[field] for e in record["evidence"] for field in ("evidence_text", "evidence_text_full_page")]
        for passage in quoted:
            for sentence in re.split(r"(?<=[.?!])\s+", passage):
                if len(sentence) >= 20:
                    assert sentence not in text, record["financebench_id"]


def test_the_committed_results_sit_beside_the_fictional_filings_as_a_lesson_shows_them():
    from labkit.rag.index import build_index
    from labkit.rag.questions import load_questions
    from labkit.rag.retrievers import RETRIEVERS, question_rows, question_type, retrieve_all

    questions = load_questions()
    own = retrieve_all(questions, build_index({q.doc_name for q in questions}), scope="single-document")
    fictional = question_rows(questions, own, ks=(5,), kind=question_type)
    real = load_results()
    table = side_by_side({"fictional filings": fictional, "FinanceBench sample": rows(real)}, k=5)
    assert list(table.index) == list(RETRIEVERS)
    labelled = sum(q.answerable for q in questions)
    assert all(h.endswith(f"/{labelled}") for h in table[("fictional filings", "hits")])
    assert all(h.endswith(f"/{len(real.questions)}") for h in table[("FinanceBench sample", "hits")])
    faiss = sum(q.page_hit["single-document"]["faiss"]["5"] for q in real.questions)
    assert table.loc["faiss", ("FinanceBench sample", "hits")] == f"{faiss}/{len(real.questions)}"
    assert len(difference_sentences(table, k=5)) == len(RETRIEVERS)
