"""The FinanceBench-schema adapter: zero-based evidence_page_num becomes one-based source_page, once."""

from __future__ import annotations

import json

import pytest
from pypdf import PdfReader

from labkit.rag.filings import filings_dir
from labkit.rag.questions import QuestionSetError, adapt, load_questions

#: A record shaped like one line of FinanceBench's published open-source file (fields as published).
FINANCEBENCH_LINE = {
    "financebench_id": "financebench_id_00001",
    "company": "Acme Industrial Tools, Inc.",
    "doc_name": "ACME_2024_10K",
    "question_type": "metrics-generated",
    "question_reasoning": "Information extraction",
    "domain_question_num": None,
    "question": "What was revenue?",
    "answer": "$2,374.4 million",
    "justification": None,
    "dataset_subset_label": "OPEN_SOURCE",
    "evidence": [
        {
            "evidence_text": "Revenue 2,374.4",
            "doc_name": "ACME_2024_10K",
            "evidence_page_num": 9,
            "evidence_text_full_page": "...",
        }
    ],
    "gics_sector": "Industrials",
    "doc_type": "10k",
    "doc_period": 2024,
    "doc_link": "https://example.invalid/acme.pdf",
}


def test_zero_based_evidence_page_becomes_one_based_source_page():
    question = adapt(FINANCEBENCH_LINE)
    assert question.evidence[0].source_page == 10
    assert question.evidence[0].citation_id == "ACME_2024_10K#p10"
    assert question.evidence_pages == {"ACME_2024_10K#p10"}


def test_every_fixture_evidence_text_is_on_the_zero_based_pdf_page_it_names():
    lines = (filings_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        record = json.loads(line)
        reader = PdfReader(filings_dir() / f"{record['doc_name']}.pdf")
        for item in record["evidence"]:
            page_text = " ".join(reader.pages[item["evidence_page_num"]].extract_text().split())
            assert item["evidence_text"] in page_text, (record["financebench_id"], item)


def test_loaded_questions_cover_the_issue_kinds():
    from labkit.rag.metrics import kind

    questions = load_questions()
    kinds = [kind(q) for q in questions]
    assert len(questions) == 30
    assert kinds.count("unanswerable") >= 3 and kinds.count("two-page") >= 2
    assert len({q.doc_name for q in questions}) == 6


def test_question_kinds_follow_the_stated_financebench_mix():
    from collections import Counter

    from labkit.rag.questions import QUESTION_MIX

    assert set(QUESTION_MIX) == {"metrics-generated", "domain-relevant", "novel-generated"}
    assert Counter(q.question_type for q in load_questions()) == Counter(QUESTION_MIX)


def test_a_plan_off_the_stated_mix_is_refused(monkeypatch):
    from labkit.rag import questions as module

    plan = dict(module.PLAN)
    plan[("ACME", 2024)] = ("capex", "capex_share", "headcount", "q4", "guidance")  # a domain question becomes metrics
    monkeypatch.setattr(module, "PLAN", plan)
    with pytest.raises(QuestionSetError, match="QUESTION_MIX"):
        module.build_question_records(filings_dir())


def test_questions_do_not_repeat_the_printed_line_item_their_answer_is_read_from():
    import re

    for q in load_questions():
        for item in q.evidence[:1]:  # the first item is the statement line; an MD&A may print an analyst's ratio
            label = " ".join(re.sub(r"[\d$(),.%]+", " ", item.evidence_text).split()).lower()
            assert not label or label not in q.question.lower(), (q.financebench_id, label)


def test_every_answerable_reference_answer_states_a_figure():
    from labkit.rag.metrics import figures

    for q in load_questions():
        assert not q.answerable or figures(q.answer), q.financebench_id  # else any answer would grade correct


def test_evidence_covers_every_page_that_prints_the_labelled_text():
    records = [
        json.loads(line) for line in (filings_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    net_income = next(r for r in records if r["question"].startswith("What did Corvid earn after tax"))
    # the income statement, the cash flow statement, selected data and the MD&A overview all print it
    assert len({e["evidence_page_num"] for e in net_income["evidence"]}) == 4


@pytest.mark.parametrize(
    "change, message",
    [
        ({"evidence": [{"evidence_text": "x", "evidence_page_num": -1}]}, "greater than or equal to 0"),
        ({"evidence": [{"evidence_text": "x", "evidence_page_num": True}]}, "evidence_page_num"),
        ({"surprise": 1}, "unknown field"),
        ({"question": None}, "question"),
    ],
)
def test_malformed_records_are_refused_with_a_reason(change, message):
    with pytest.raises(QuestionSetError, match=message):
        adapt(FINANCEBENCH_LINE | change)


def test_evidence_in_another_document_keeps_that_documents_citation():
    other = {"evidence_text": "x", "evidence_page_num": 3, "doc_name": "OTHER_2024_10K"}
    question = adapt(FINANCEBENCH_LINE | {"evidence": [other]})
    assert question.evidence_pages == {"OTHER_2024_10K#p4"}


def test_a_repeated_id_is_refused(tmp_path):
    path = tmp_path / "q.jsonl"
    line = json.dumps(FINANCEBENCH_LINE)
    path.write_text(line + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(QuestionSetError, match="appears twice"):
        load_questions(path)
