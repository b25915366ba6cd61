"""Per-question correctness, faithfulness and page-hit@k against hand-checked expectations."""

from __future__ import annotations

import pytest

from labkit.rag.metrics import (
    Retrieval,
    correctness,
    evidence_recall,
    faithful,
    figures,
    grade,
    page_hit,
    rate_verdicts,
    reciprocal_rank,
    summary,
    unsupported_figures,
    wilson_interval,
)
from labkit.rag.questions import adapt, load_questions


def _question(short, answer, pages, *, kind="metrics-generated"):
    return adapt(
        {
            "financebench_id": f"labkit_filings_{short}",
            "company": "Acme Industrial Tools, Inc.",
            "doc_name": "ACME_2024_10K",
            "question_type": kind,
            "question": f"question {short}",
            "answer": answer,
            "justification": None,
            "evidence": [{"evidence_text": "printed", "evidence_page_num": page - 1} for page in pages],
        }
    )


@pytest.fixture(scope="module")
def questions():
    """Hand-made questions in FinanceBench's schema, so the expectations do not move with the fixtures."""
    return {
        "001": _question("001", "$2,374.4 million", [10, 7]),
        "004": _question("004", "$105.2 million", [12, 9]),
        "005": _question("005", "$2,374.4 million of revenue and 9,940 employees", [10, 4], kind="domain-relevant"),
        "018": _question("018", "The filing does not contain this information.", [], kind="novel-generated"),
    }


def record(answer, *, status="answered", cited=(), retrieved=(), k=5):
    return {
        "question": "q",
        "answer": answer,
        "cited_pages": list(cited),
        "candidates": [],
        "retrieved": [{"citation_id": c, "chunk_text": t} for c, t in retrieved],
        "model_request": None,
        "k": k,
        "status": status,
    }


def test_figures_ignore_years_and_citation_ids_and_keep_separators_out():
    assert figures("In fiscal 2024 revenue was $2,374.4 million (ACME_2024_10K#p10), up 2.3%.") == [2374.4, 2.3]
    assert figures("Capital expenditures (105.2) (86.0)") == [105.2, 86.0]
    assert figures(None) == []


def test_correctness_by_hand(questions):
    revenue = questions["001"]  # reference: $2,374.4 million
    assert revenue.answer == "$2,374.4 million"
    assert correctness(revenue, record("Revenue was $2,374.4 million.")) == "correct"
    assert correctness(revenue, record("Revenue was $2,380.0 million.")) == "correct"  # within 0.5%
    assert correctness(revenue, record("Revenue was $2,432.1 million.")) == "wrong"  # the prior year
    assert correctness(revenue, record("Revenue was about $2.4 billion.")) == "wrong"  # units are not converted
    assert correctness(revenue, record("n/a", status="refused")) == "refused"
    assert correctness(revenue, None) == "failed"
    two_page = questions["005"]  # revenue and headcount
    assert correctness(two_page, record("Revenue was $2,374.4 million; headcount unknown.")) == "partial"
    assert correctness(two_page, record("$2,374.4 million and 9,940 employees.")) == "correct"


def test_refusing_an_unanswerable_question_is_correct_and_answering_it_is_wrong(questions):
    hockey = questions["018"]
    assert not hockey.answerable
    assert correctness(hockey, record(None, status="insufficient_evidence")) == "correct"
    assert correctness(hockey, record("They scored 212 goals.")) == "wrong"


def test_faithfulness_needs_every_figure_printed_on_a_cited_page():
    page = [("ACME_2024_10K#p12", "Capital expenditures (105.2) (86.0)"), ("ACME_2024_10K#p10", "Revenue 2,374.4")]
    assert faithful(record("Capex was $105.2 million.", cited=["ACME_2024_10K#p12"], retrieved=page)) is True
    # printed in the context, but not on the page the answer cites
    assert faithful(record("Revenue was $2,374.4 million.", cited=["ACME_2024_10K#p12"], retrieved=page)) is False
    # a computed figure is not printed anywhere
    assert faithful(record("Capex rose by 19.2 million.", cited=["ACME_2024_10K#p12"], retrieved=page)) is False
    assert faithful(record(None, status="refused")) is None


def test_an_answer_with_no_figure_is_not_called_faithful():
    page = [("ACME_2024_10K#p12", "Capital expenditures (105.2) (86.0)")]
    words = record("The filing does not say.", cited=["ACME_2024_10K#p12"], retrieved=page)
    assert faithful(words) is None  # nothing to check: all([]) would have said True
    assert faithful(record("Capex was 105.2.", cited=["ACME_2024_10K#p12"], retrieved=page)) is True


def test_summary_counts_answers_without_a_figure_apart(questions):
    chosen = [questions["001"], questions["004"]]
    page = [("ACME_2024_10K#p10", "Revenue 2,374.4 2,432.1")]
    records = {
        chosen[0].financebench_id: record("Revenue was $2,374.4 million.", cited=["ACME_2024_10K#p10"], retrieved=page),
        chosen[1].financebench_id: record("It rose.", cited=["ACME_2024_10K#p10"], retrieved=page),
    }
    row = summary(grade(chosen, records, path="rag")).iloc[0]
    assert (row["faithful"], row["no_figure"]) == ("1/1", 1)


def test_faithfulness_on_a_path_that_sends_no_passage_has_no_eligible_answer(questions):
    chosen = [questions["001"]]
    records = {chosen[0].financebench_id: record("Revenue was $2,374.4 million.", cited=[], retrieved=[])}
    row = summary(grade(chosen, records, path="naive")).iloc[0]
    assert row["faithful"] == "n/a (0 eligible)"


def test_a_wilson_interval_is_scipys():
    from scipy.stats import binomtest

    ci = binomtest(22, 40).proportion_ci(method="wilson")
    assert wilson_interval(22, 40) == (round(ci.low, 3), round(ci.high, 3)) == (0.398, 0.693)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_a_rate_inside_the_best_ones_interval_is_printed_as_a_tie():
    # 26/40 = 0.65 has the interval [0.495, 0.779]: 20/40 is inside it, 19/40 below it
    verdicts = rate_verdicts({"hybrid": (26, 40), "faiss": (20, 40), "rerank": (19, 40), "again": (26, 40)})
    assert verdicts == {"hybrid": "best", "faiss": "tie", "rerank": "below", "again": "best"}
    assert rate_verdicts({}) == {}


def test_no_rate_is_called_best_when_every_rate_ties():
    # 6/26 has the interval [0.11, 0.42]: 5/26 and 4/26 lie inside it
    assert rate_verdicts({"faiss": (5, 26), "rerank": (6, 26), "hybrid": (4, 26)}) == dict.fromkeys(
        ("faiss", "rerank", "hybrid"), "tie"
    )
    assert rate_verdicts({"a": (1, 10), "b": (1, 10)}) == {"a": "tie", "b": "tie"}


def test_page_hit_at_k_counts_only_the_first_k_and_only_labelled_pages(questions):
    capex = questions["004"]  # labelled pages: ACME_2024_10K#p12 and #p9
    ranked = ["ACME_2025_10K#p9", "ACME_2024_10K#p4", "ACME_2024_10K#p9"]
    assert page_hit(capex, ranked, 3) is True
    assert page_hit(capex, ranked, 2) is False
    assert page_hit(capex, ["ACME_2024_10K#p8"], 1) is False  # zero-based 8 would be a different page
    assert page_hit(questions["018"], ranked, 3) is None


def test_grade_reports_each_question_before_the_summary(questions):
    chosen = [questions["001"], questions["018"]]
    records = {
        chosen[0].financebench_id: record(
            "Revenue was $2,374.4 million.",
            cited=["ACME_2024_10K#p10"],
            retrieved=[("ACME_2024_10K#p10", "Revenue 2,374.4 2,432.1")],
        ),
        chosen[1].financebench_id: record(None, status="insufficient_evidence"),
    }
    retrieval = {q.financebench_id: Retrieval(ranked=("ACME_2024_10K#p10",), k=5) for q in chosen}
    table = grade(chosen, records, path="rag", retrieval=retrieval)
    assert table[["correctness", "faithful", "page_hit"]].values.tolist() == [
        ["correct", True, True],
        ["correct", None, None],
    ]
    assert summary(table).iloc[0][["correct", "faithful", "page_hit", "mrr"]].tolist() == [1, "1/1", "1/1", 1.0]


def test_an_app_refusal_is_counted_apart_and_never_credited_to_the_model(questions):
    unanswerable = questions["018"]  # declining is the right reply here, but the app declined, not the model
    table = grade(
        [unanswerable], {unanswerable.financebench_id: record(None, status="insufficient_evidence")}, path="rag"
    )
    assert table.iloc[0]["correctness"] == "correct"  # the per-question grade still says the reply was right
    row = summary(table).iloc[0]
    assert row["app_refused"] == 1
    assert row["faithful"] == "n/a (0 eligible)"  # no answer stated a figure: not 0/0
    assert row[["correct", "partial", "wrong", "refused", "failed"]].sum() == 0


def test_evidence_recall_and_reciprocal_rank_by_hand(questions):
    capex = questions["004"]  # labelled pages: ACME_2024_10K#p12 and #p9
    ranked = ["ACME_2025_10K#p9", "ACME_2024_10K#p9", "ACME_2024_10K#p4", "ACME_2024_10K#p12"]
    assert evidence_recall(capex, ranked, 2) == 0.5
    assert evidence_recall(capex, ranked, 4) == 1.0
    assert reciprocal_rank(capex, ranked) == 0.5
    assert reciprocal_rank(capex, ["ACME_2024_10K#p4"]) == 0.0
    assert evidence_recall(questions["018"], ranked, 4) is None and reciprocal_rank(questions["018"], ranked) is None


def test_a_failed_trial_still_has_its_retrieval_graded(questions):
    revenue = questions["001"]
    retrieval = {revenue.financebench_id: Retrieval(ranked=("ACME_2024_10K#p4", "ACME_2024_10K#p10"), k=5)}
    table = grade(
        [revenue],
        {revenue.financebench_id: None},
        path="rag",
        retrieval=retrieval,
        errors={revenue.financebench_id: "InvalidReply: not JSON"},
    )
    row = table.iloc[0]
    assert (row["status"], row["correctness"], row["faithful"]) == ("failed", "failed", None)
    assert (row["page_hit"], row["evidence_recall"], row["reciprocal_rank"]) == (
        True,
        0.5,
        0.5,
    )  # p10 is one of its two labelled pages (p7, p10)
    assert row["note"] == "InvalidReply: not JSON"
    assert summary(table).iloc[0][["failed", "page_hit"]].tolist() == [1, "1/1"]


def test_experiments_keep_their_settings_and_hits_grow_with_k(tmp_path):
    import json

    from labkit.rag.index import build_index
    from labkit.rag.lesson import experiment_grid, one_variable, save_experiments

    questions = load_questions()
    indexes = {800: build_index({q.doc_name for q in questions})}
    experiments = experiment_grid(questions, indexes, ks=(1, 3, 5))
    assert [(e.settings["k"], e.settings["rerank"]) for e in experiments] == [
        (1, True),
        (3, True),
        (5, True),
        (1, False),
        (3, False),
        (5, False),
    ]
    for rerank in (True, False):
        rates = [e.page_hit_rate for e in experiments if e.settings["rerank"] is rerank]
        assert rates == sorted(rates)
    assert all(len(e.hits) == sum(q.answerable for q in questions) for e in experiments)
    table = one_variable(experiments)
    assert set(table["varies"]) == {"baseline", "k", "rerank"}
    saved = json.loads(save_experiments(experiments, tmp_path / "e.json").read_text())
    assert saved[0]["settings"]["chunk_size"] == 800 and "reranker" in saved[0]["settings"]


def _record(answer, cited, passages):
    return {
        "status": "answered",
        "answer": answer,
        "cited_pages": cited,
        "retrieved": [{"citation_id": cid, "chunk_text": text} for cid, text in passages.items()],
    }


def test_a_computed_ratio_is_the_figure_no_cited_passage_prints():
    record = _record(
        "Debt of $1,435.6 million against equity gives 0.36.",
        ["D#p20"],
        {"D#p20": "Long-term debt 1,435.6", "D#p16": "0.36 is printed here, but this page is not cited"},
    )
    assert unsupported_figures(record) == [0.36]


def test_a_faithful_or_figureless_answer_has_no_unsupported_figure():
    assert unsupported_figures(_record("Debt was $1,435.6 million.", ["D#p20"], {"D#p20": "1,435.6"})) == []
    assert unsupported_figures(_record("The passages do not say.", [], {})) == []
    assert unsupported_figures(None) == []


def test_the_paired_test_counts_only_the_questions_two_settings_disagree_on():
    from labkit.rag.metrics import paired_p

    assert paired_p(6, 0) == pytest.approx(0.03125)
    assert paired_p(1, 4) == pytest.approx(0.375)
    assert paired_p(0, 0) == 1.0


def test_a_figure_is_close_enough_within_half_a_percent_or_five_thousandths():
    from labkit.rag.metrics import close_enough

    assert close_enough(128.7, 128.1) and not close_enough(128.8, 128.1)  # 0.5% of 128.1 is 0.64
    assert close_enough(0.364, 0.36) and not close_enough(0.366, 0.36)  # the 0.005 floor
    assert not close_enough(0.38, 0.36)  # 018's ratio with the wrong year's equity
