"""A folder laid out as FinanceBench's repository: read whole, odd names reported, never refused for one name."""

from __future__ import annotations

import pytest

from labkit.rag.financebench.folder import FinanceBenchError, open_folder
from labkit.rag.questions import QuestionSetError
from tests.financebench_folders import ABSENT, DOCUMENTS, OUTSIDE_RULE, QUESTIONS, RENAMED, write_financebench_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_financebench_folder(tmp_path_factory.mktemp("financebench"))


def test_questions_whose_pdf_is_absent_are_counted_per_document(folder):
    found = open_folder(folder)
    assert len(found.questions) == len(QUESTIONS)
    assert found.absent() == {ABSENT: 2}
    assert [q.financebench_id for q in found.present()] == [q[0] for q in QUESTIONS if q[1] != ABSENT]


def test_a_name_outside_the_rule_is_reported_and_its_pdf_still_used(folder):
    found = open_folder(folder)
    assert found.unknown_names() == {
        "questions": [OUTSIDE_RULE],
        "documents": [],
        "pdfs": [OUTSIDE_RULE, "analyst notes"],
    }
    assert found.pdfs[OUTSIDE_RULE].name == f"{OUTSIDE_RULE}.pdf"
    assert found.metadata(OUTSIDE_RULE)["company"] == "Amcor-Board-Minutes"  # the asking question's company


def test_a_pdf_spelling_its_document_another_way_is_used_and_named(folder):
    found = open_folder(folder)
    assert found.renamed == {RENAMED[0]: RENAMED[1]}
    assert found.pdfs[RENAMED[0]].stem == RENAMED[1]
    assert found.unused_pdfs() == ["analyst notes"]  # MCDONALDS_... is a listed document, just not asked about
    assert "MCDONALDS_8K_dated-2023-01-06" in found.pdfs


def test_a_pdf_named_exactly_is_not_taken_by_another_spelling(tmp_path):
    root = write_financebench_folder(tmp_path)
    (root / "pdfs" / f"{RENAMED[0]}.pdf").write_bytes((root / "pdfs" / f"{RENAMED[1]}.pdf").read_bytes())
    found = open_folder(root)
    assert found.renamed == {}
    assert found.pdfs[RENAMED[0]].stem == RENAMED[0]
    assert RENAMED[1] in found.unused_pdfs()


def test_a_document_listed_twice_is_reported_and_its_period_comes_from_its_name(folder):
    found = open_folder(folder)
    assert found.repeated_documents() == {"3M_2018_10K": [2022, 2017]}
    assert found.metadata("3M_2018_10K") == {
        "doc_name": "3M_2018_10K",
        "company": "3M",
        "period": 2018,
        "doc_type": "10K",
    }


def test_metadata_comes_from_the_document_list_else_from_the_name(folder):
    found = open_folder(folder)
    assert found.metadata("JOHNSON_JOHNSON_2022_10K")["company"] == "Johnson Johnson"  # from the document list
    assert found.metadata("Pfizer_2023Q2_10Q") == {
        "doc_name": "Pfizer_2023Q2_10Q",
        "company": "Pfizer",
        "period": 2023,
        "doc_type": "10Q",
    }  # not in the list: from the name
    assert found.metadata("MCDONALDS_8K_dated-2023-01-06")["doc_type"] == "8K"


def test_a_folder_without_the_questions_file_is_refused_naming_the_layout(tmp_path):
    with pytest.raises(FinanceBenchError, match=r"data/financebench_open_source\.jsonl.*patronus-ai/financebench"):
        open_folder(tmp_path)


def test_a_malformed_document_line_is_refused_with_its_line_number(tmp_path):
    root = write_financebench_folder(tmp_path)
    path = root / "data" / "financebench_document_information.jsonl"
    path.write_text(path.read_text() + '{"company": "no name"}\n')
    with pytest.raises(FinanceBenchError, match=r"jsonl:\d+: every line must be an object with a doc_name"):
        open_folder(root)


def test_a_malformed_question_is_refused_not_skipped(tmp_path):
    root = write_financebench_folder(tmp_path)
    path = root / "data" / "financebench_open_source.jsonl"
    path.write_text(path.read_text().replace('"evidence_page_num": 1', '"evidence_page_num": "1"', 1))
    with pytest.raises(QuestionSetError, match="evidence_page_num"):
        open_folder(root)


def test_every_measured_document_is_in_the_synthetic_folder():
    assert {q[1] for q in QUESTIONS} - set(DOCUMENTS) == {ABSENT, RENAMED[0], OUTSIDE_RULE}
