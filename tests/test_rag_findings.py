"""The sentences lesson 02b renders: each figure comes from its inputs, each verdict from the interval rule."""

from __future__ import annotations

import pytest

from labkit.boundary import connect
from labkit.rag.answer import SETTINGS
from labkit.rag.findings import (
    bench_reading,
    experiments_summary,
    graded_examples,
    separable,
    tie_or_difference,
)
from labkit.rag.index import build_index
from labkit.rag.lesson import page_trap
from labkit.rag.metrics import Experiment
from labkit.rag.questions import adapt, load_questions
from labkit.rag.runs import RUN_AUTHORED, RUN_CAPTURED, make_requests


@pytest.fixture(scope="module")
def questions():
    return load_questions()


@pytest.fixture(scope="module")
def index(questions):
    return build_index({q.doc_name for q in questions})


def test_the_interval_rule_separates_only_counts_outside_the_higher_ones_interval():
    assert tie_or_difference((6, 26), (3, 26)) == "a tie"
    assert tie_or_difference((6, 26), (2, 26)) == "a difference outside the 95% interval"
    assert tie_or_difference((13, 26), (7, 26)) == "a difference outside the 95% interval"
    assert separable(6, 26) == (2, 11)
    assert separable(0, 26)[0] == -1


def _grid(hits_of):
    return [
        Experiment(
            f"k={k}, chunk={size}, rerank={'on' if rerank else 'off'}",
            {"k": k, "chunk_size": size, "rerank": rerank},
            {f"q{i}": i < hits_of(k, size, rerank) for i in range(26)},
        )
        for size in (300, 800)
        for rerank in (True, False)
        for k in (1, 3, 5, 8)
    ]


def test_the_experiments_summary_says_what_n_can_separate_and_names_the_settings_that_differ():
    experiments = _grid(lambda k, size, rerank: 1 if (k, size, rerank) == (1, 300, False) else 6)
    text = experiments_summary(experiments).data
    assert "6/26 [0.11, 0.42]" in text
    assert "2 hits or fewer, or 11 or more, to differ from it: 26 questions can show only a change" in text
    assert "that far, lose 4 or gain 5." in text
    assert "the interval rule reads 1 as apart from the baseline:" in text
    assert "`k=1, chunk=300, rerank=off` (below the baseline's interval)" in text
    assert "(lower)" not in text  # no bare verdict: the interval rule's reading is labelled as such
    assert text.endswith("That is the interval rule's reading, not a test.")
    assert "Every one-variable change above ties with it." in text


def test_a_one_variable_change_outside_the_interval_is_not_called_a_tie():
    experiments = _grid(lambda k, size, rerank: 12 if (k, size, rerank) == (5, 300, True) else 6)
    text = experiments_summary(experiments).data
    assert "The one-variable changes above are `higher`, `tie`." in text
    assert "`k=5, chunk=300, rerank=on` (the baseline below its interval)" in text


class Selecting:
    """A retriever stand-in that selects the given pages for every question."""

    def __init__(self, pages):
        self.pages = pages

    def retrieve(self, question, *, k):
        return [], [{"citation_id": page} for page in self.pages]


def test_the_page_trap_counts_a_hit_on_the_page_before_the_label_as_the_unconverted_hit():
    question = adapt(
        {
            "financebench_id": "labkit_filings_900",
            "company": "Acme Industrial Tools, Inc.",
            "doc_name": "ACME_2024_10K",
            "question_type": "metrics-generated",
            "question": "q",
            "answer": "1",
            "justification": None,
            "evidence": [{"evidence_text": "1", "evidence_page_num": 22}],
        }
    )
    early = page_trap(Selecting(["ACME_2024_10K#p22"]), [question])
    assert early == {"converted": 0, "unconverted": 1, "n": 1, "converted_only": 0, "unconverted_only": 1}
    right = page_trap(Selecting(["ACME_2024_10K#p23"]), [question])
    assert right == {"converted": 1, "unconverted": 0, "n": 1, "converted_only": 1, "unconverted_only": 0}
    both = page_trap(Selecting(["ACME_2024_10K#p22", "ACME_2024_10K#p23"]), [question])
    assert (both["converted_only"], both["unconverted_only"]) == (0, 0)


def test_question_018_is_unfaithful_because_the_only_equity_sent_gives_another_ratio(questions, index):
    run = make_requests(connect(RUN_AUTHORED, lesson="02", settings=SETTINGS), questions=questions, index=index)
    text = graded_examples(questions, run).data
    line = next(line for line in text.splitlines() if line.startswith("- **018**"))
    assert "No cited passage prints 0.36." in line
    assert (
        "The only equity figure sent is FY2024's 3,772.0, on BRIGHTWAVE_2024_10K#p16: 1,435.6/3,772.0 = 0.38." in line
    )
    assert "The equity of the year asked is on BRIGHTWAVE_2025_10K#p16, which was not sent." in line
    assert "faithful is `False`; for this computed ratio it would be `False` for a right reply too" in line
    assert "Its authored reply: *Long-term debt" in line
    assert "5 correct = 2 right refusals (020, 025) + 3 right answers" in text


def test_the_captured_run_is_a_tie_at_zero_over_the_trials_sent_to_the_model(questions, index):
    from labkit.rag.lesson import correct_rates

    run = make_requests(connect(RUN_CAPTURED, lesson="02", settings=SETTINGS), questions=questions, index=index)
    table = correct_rates(questions, run)
    # 015, declined by the application itself, is no trial of the model's: RAG sent 29, not 30
    assert table["sent to the model"].tolist() == [30, 29]
    assert table["failed"].tolist() == [20, 9]
    assert table["correct"].tolist() == ["0/30", "0/29"]
    assert table["ci95"].tolist() == ["[0.00, 0.11]", "[0.00, 0.12]"]
    assert table["vs_baseline"].tolist() == ["baseline", "tie"]
    authored = correct_rates(questions, _authored(questions, index))
    assert authored["correct"].tolist() == ["2/30", "5/29"]  # the authored rag row beats naive by construction


@pytest.fixture(scope="module")
def stores(questions, index):
    from labkit.rag.retrievers import retrieve_all

    return retrieve_all(questions, index, scope="shared"), retrieve_all(questions, index, scope="single-document")


def test_the_bench_compares_each_retriever_with_faiss_bm25_in_one_vocabulary(questions, stores):
    from labkit.rag.financebench.results import load_results
    from labkit.rag.lesson import bench_table

    table = bench_table(questions, *stores, load_results())
    verdicts = {v for column in table.columns if column[1].startswith("vs ") for v in table[column]}
    assert verdicts <= {"tie", "higher", "lower", "(reference)"}
    assert table.loc["faiss", ("single-document store", "vs faiss+bm25")] == "lower"
    assert table.loc["faiss", ("single-document store", "page-hit@5")] == "7/26 [0.14, 0.46]"
    assert (
        table.loc["hybrid", ("FinanceBench sample, single-document (committed)", "page-hit@5")] == "24/40 [0.45, 0.74]"
    )


def test_the_bench_reading_gives_the_rerank_ceiling_and_keeps_the_sample_apart(questions, stores):
    from labkit.rag.financebench.results import load_results

    text = bench_reading(questions, *stores, load_results()).data
    assert "- **shared store**: every retriever ties with `faiss+bm25`." in text
    assert (
        "- **single-document store**: `faiss` is lower than `faiss+bm25` by the interval rule, which exercise A" in text
    )
    assert "its candidate recall@12, is 9/26: no reordering" in text
    assert "experiments' baseline" not in text and "coincidence" not in text
    assert "40 of FinanceBench's 150 questions" in text and "26 of the 40 are novel-generated" in text
    assert "not representative" in text
    assert "its chunking differs from ours: a context line added to each of its chunks" in text
    assert "read its column on its own" in text
    assert "best" not in text and "below" not in text


def test_the_answers_shown_as_returned_skip_failed_trials_and_the_apps_own_refusals(questions, index):
    from labkit.rag.lesson import answers_as_returned

    run = make_requests(connect(RUN_CAPTURED, lesson="02", settings=SETTINGS), questions=questions, index=index)
    shown = answers_as_returned(questions, run, origin="captured", per_path=30)
    failed = {(path, qid[-3:]) for path, errors in run.errors.items() for qid in errors}
    declined = {("rag", qid[-3:]) for qid, r in run.rag.items() if r and r["status"] == "insufficient_evidence"}
    assert failed and declined
    assert not (set(shown.index) & (failed | declined))
    assert len(shown) == 2 * len(questions) - len(failed) - len(declined)
    assert (
        shown.loc[("naive", "004"), "answer (captured, as it came back)"] == run.naive["labkit_filings_004"]["answer"]
    )


def test_the_passages_sent_are_read_back_from_the_request_in_its_order():
    from labkit.rag.answer import render_grounded_prompt
    from labkit.rag.lesson import passages_sent

    evidence = [{"citation_id": f"D#p{n}", "chunk_text": "x" * n} for n in (3, 1, 2)]
    table = passages_sent(render_grounded_prompt(question="q", evidence=evidence))
    assert list(table["citation_id"]) == ["D#p3", "D#p1", "D#p2"]
    assert list(table["characters"]) == [3, 1, 2]


def test_exercise_b_table_counts_each_stage_and_says_when_the_search_lost_the_evidence_of_a_page_it_sent(
    questions, index
):
    from labkit.rag.lesson import STAGE_FIXES, STAGES, stage_table

    ids = {q.financebench_id[-3:]: q.financebench_id for q in questions}
    stages = {ids["001"]: "not a candidate", ids["002"]: "not a candidate", ids["006"]: "ranked below k"}
    stages |= {ids["028"]: "ranked below k"}  # the rerank ranks 006's page 10th, 028's 9th
    stages |= {ids["017"]: "evidence sent", ids["004"]: "sent without the evidence"}
    stages |= {ids["018"]: "sent without the evidence"}  # its evidence's chunk on page 20 is a candidate
    table = stage_table(stages, index, questions)
    assert list(table.index) == list(STAGES)  # every stage, even one no question reached, in pipeline order
    assert table["questions"].tolist() == [1, 2, 2, 0, 2]
    assert table.loc["sent without the evidence", "ids"] == "004, 018"
    assert table.loc["dropped by the rerank", "ids"] == "-"
    assert table.loc["sent without the evidence", "evidence chunk a candidate"] == "1 of 2"  # 004's was not
    assert table.loc["not a candidate", "evidence chunk a candidate"] == "-"
    fixes = table["what could fix it"].tolist()
    assert fixes[:2] + fixes[3:] == list(STAGE_FIXES[:2] + STAGE_FIXES[3:])
    # the k that would send them is the highest rank, not any larger k (k=8 would send neither)
    assert fixes[2] == "k up to 10 (the rerank ranks their pages 9, 10), or a rerank that ranks them higher"
    assert "no rerank" in table.loc["not a candidate", "what could fix it"]


def _authored(questions, index):
    return make_requests(connect(RUN_AUTHORED, lesson="02", settings=SETTINGS), questions=questions, index=index)


def test_a_graded_example_the_run_no_longer_supports_is_refused_not_printed(questions, index):
    import copy

    from labkit.errors import ReadingOutdated

    run = _authored(questions, index)
    graded_examples(questions, run)  # the recorded run supports every sentence
    ids = {q.financebench_id[-3:]: q.financebench_id for q in questions}

    failed_017 = copy.deepcopy(run)
    failed_017.rag[ids["017"]] = None
    with pytest.raises(ReadingOutdated, match="017 is correct, faithful and a page hit"):
        graded_examples(questions, failed_017)

    unfaithful_017 = copy.deepcopy(run)
    unfaithful_017.rag[ids["017"]]["cited_pages"] = []  # still correct, but no cited passage prints its figure
    with pytest.raises(ReadingOutdated, match="017 is correct, faithful and a page hit"):
        graded_examples(questions, unfaithful_017)

    own_company = copy.deepcopy(run)
    own_company.rag[ids["030"]]["cited_pages"] = ["CORVID_2025_10K#p20"]
    with pytest.raises(ReadingOutdated, match="030 cites only another company's pages"):
        graded_examples(questions, own_company)

    two_equities = copy.deepcopy(run)
    sent = two_equities.rag[ids["018"]]["retrieved"]
    sent.append(
        {**sent[0], "citation_id": "BRIGHTWAVE_2025_10K#p16", "chunk_text": "Total shareholders' equity 4,000.0"}
    )
    with pytest.raises(ReadingOutdated, match="print one equity figure"):
        graded_examples(questions, two_equities)


def test_a_reference_figure_no_page_of_its_own_filing_prints_is_counted_as_never_faithful(questions, index):
    from labkit.rag.findings import unprinted_reading
    from labkit.rag.lesson import unprinted_references

    missing = unprinted_references(questions, index)
    assert missing["018"] == [0.36]  # leverage, computed from two lines
    assert "017" not in missing  # $304.2 million is printed on its letter to shareholders
    assert len(missing) == 8
    by_id = {q.financebench_id[-3:]: q for q in questions}
    printed_elsewhere = by_id["017"].model_copy(update={"doc_name": "ACME_2024_10K"})  # another filing's page
    assert unprinted_references([printed_elsewhere], index) == {"017": [304.2]}
    assert unprinted_references([q for q in questions if not q.answerable], index) == {}
    text = unprinted_reading(questions, index).data
    assert text.startswith("For 8 of the 26 answerable questions (")
    assert "018" in text and "is never faithful, even when it is correct" in text


def test_partial_is_said_to_need_a_reference_of_two_figures_and_counts_a_planted_half_answer(questions, index):
    from types import SimpleNamespace

    from labkit.rag.findings import partial_reading

    run = make_requests(connect(RUN_AUTHORED, lesson="02", settings=SETTINGS), questions=questions, index=index)
    text = partial_reading(questions, {"authored": run}).data
    assert "5 of the 26 answerable references (003, 009, 013, 014, 023)" in text
    assert "Their 10 trials in these runs were:" in text
    assert text.endswith("None states one figure without the other, hence the 0.")
    half = {"status": "answered", "answer": "10,230 employees at year end"}  # 003's reference holds two figures
    planted = SimpleNamespace(naive={"labkit_filings_003": half}, rag={})
    other = partial_reading(questions, {"planted": planted}).data
    assert "failed 9; partial 1." in other
    assert "hence the 0" not in other


def test_the_captured_rag_replies_are_unfaithful_because_they_cite_nothing(questions, index):
    from labkit.rag.findings import uncited_reading

    run = make_requests(connect(RUN_CAPTURED, lesson="02", settings=SETTINGS), questions=questions, index=index)
    text = uncited_reading(run).data
    assert "`faithful` could check 11 captured RAG replies" in text
    assert "calls 11 of them False. 11 of the 11 cite no page at all" in text


def test_uncited_reading_counts_only_replies_that_cite_nothing():
    from types import SimpleNamespace

    from labkit.rag.findings import uncited_reading

    def reply(cited: list[str]) -> dict:
        passage = {"citation_id": "A#p1", "chunk_text": "Revenue was 10.0."}
        return {"status": "answered", "answer": "It was 10.0.", "cited_pages": cited, "retrieved": [passage]}

    run = SimpleNamespace(rag={"x-001": reply([]), "x-002": reply(["A#p1"]), "x-003": None})
    text = uncited_reading(run).data
    assert "could check 2 captured RAG replies" in text and "calls 1 of them False" in text
    assert "1 of the 2 cite no page at all (001)" in text


def test_candidate_recall_is_the_share_with_a_labelled_page_among_the_candidates(questions, index):
    from labkit.rag.answer import FilingsRAG
    from labkit.rag.lesson import candidate_recall

    rag = FilingsRAG(index, model=None)
    hits, n = candidate_recall(rag, questions)
    assert n == sum(q.answerable for q in questions)
    assert hits == sum(
        any(c["citation_id"] in q.evidence_pages for c in rag.retrieve(q.question, k=12)[0])
        for q in questions
        if q.answerable
    )
    assert 0 < hits < n


def test_short_share_counts_short_chunks_in_the_index_and_among_the_passages_sent_apart():
    from types import SimpleNamespace

    from labkit.rag.lesson import short_share

    index = SimpleNamespace(chunks=[SimpleNamespace(page_content=t) for t in ("x" * 700, "y" * 199, "z" * 200)])
    sent = {"q1": {"retrieved": [{"chunk_text": "y" * 199}, {"chunk_text": "x" * 700}]}, "q2": None}
    sent["q3"] = {"retrieved": [{"chunk_text": "y" * 199}]}  # the same short chunk again counts again
    assert short_share(index, SimpleNamespace(rag=sent)) == (1, 3, 2, 3)


def test_the_retrieval_reading_splits_mrr_by_rank_and_names_the_hits_recall_counts_short(questions, index):
    from labkit.rag.findings import retrieval_reading
    from labkit.rag.lesson import short_share
    from labkit.rag.metrics import retrieval_scores

    run = _authored(questions, index)
    text = retrieval_reading(questions, run, index).data
    scores = [retrieval_scores(q, run.retrieval[q.financebench_id]) for q in questions if q.answerable]
    first = sum(s["reciprocal_rank"] == 1 for s in scores)
    assert f"{first} have a labelled page first" in text
    # the MRR split adds up to the mean the summary prints
    mrr = sum(s["reciprocal_rank"] for s in scores) / len(scores)
    assert 0 < first / len(scores) <= mrr
    short, chunks, short_sent, sent = short_share(index, run)
    assert f"{short / chunks:.0%} of the index's chunks" in text and f"{short_sent / sent:.0%} of the passages" in text
    assert short / chunks < short_sent / sent  # the sentence says "but": sent passages are shorter more often
    assert "A hypothesis, not tested here" in text
