"""What notebook 02 part B shows: the question mix counted from the questions; the page-hit plot holds its table's numbers."""

import matplotlib
import pytest

matplotlib.use("Agg")

from labkit.course.shortcuts import calls_to
from labkit.rag import lesson
from labkit.rag.lesson import page_hit_grid, plot_page_hits, question_mix
from labkit.rag.metrics import Experiment
from labkit.rag.questions import QUESTION_MIX, load_questions


def _filing_question(n, doc, pages):
    """A one-line FinanceBench question ``n`` on filing ``doc`` whose evidence is on the one-based ``pages``."""
    from labkit.rag.questions import adapt

    evidence = [{"evidence_text": "1", "evidence_page_num": p - 1} for p in pages]
    return adapt(
        {
            "financebench_id": f"labkit_filings_{n}",
            "company": "Acme Industrial Tools, Inc.",
            "doc_name": doc,
            "question_type": "metrics-generated",
            "question": n,
            "answer": "1",
            "justification": None,
            "evidence": evidence,
        }
    )


def _experiments():
    hits = {1: [True, False, False, False], 3: [True, True, False, False], 5: [True, True, True, False]}
    return [
        Experiment(
            name="k",
            settings={"k": k, "chunk_size": size, "rerank": rerank},
            hits={f"q{i}": hit if rerank else (hit and i == 0) for i, hit in enumerate(row)},
        )
        for size in (300, 800)
        for rerank in (False, True)
        for k, row in hits.items()
    ]


def test_the_page_hit_plot_draws_one_line_per_setting_with_the_tables_numbers():
    import matplotlib.pyplot as plt

    experiments = _experiments()
    fig = plot_page_hits(experiments)
    grid = page_hit_grid(experiments)
    drawn = {line.get_label(): list(zip(line.get_xdata(), line.get_ydata(), strict=True)) for line in fig.axes[0].lines}
    expected = {
        f"chunk {size}, rerank {'on' if rerank else 'off'}": [(k, grid.loc[(size, rerank), k]) for k in grid.columns]
        for size, rerank in grid.index
    }
    assert drawn == expected
    assert drawn["chunk 800, rerank on"] == [(1, 0.25), (3, 0.5), (5, 0.75)]
    assert drawn["chunk 800, rerank off"] == [(1, 0.25), (3, 0.25), (5, 0.25)]
    plt.close(fig)


def test_the_page_hit_plots_legend_covers_no_point_and_lines_that_share_points_differ_in_style():
    import matplotlib.pyplot as plt

    fig = plot_page_hits(_experiments())
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent()
    for line in ax.lines:
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
            px, py = ax.transData.transform((x, y))
            assert not box.contains(px, py), f"the legend hides {line.get_label()} at k={x}"
    styles = {(line.get_marker(), line.get_linestyle()) for line in ax.lines}
    assert len(styles) == len(ax.lines)
    plt.close(fig)


def test_a_one_variable_difference_inside_the_interval_is_a_tie():
    from labkit.rag.lesson import versus

    def experiment(hits, n=26):
        return Experiment(name="x", settings={}, hits={f"q{i}": i < hits for i in range(n)})

    base = experiment(6)
    assert versus(base, base) == "baseline"
    assert versus(experiment(7), base) == "tie"  # 7/26 against 6/26: one question
    assert versus(experiment(4), base) == "tie"
    assert versus(experiment(20), base) == "higher"
    assert versus(experiment(0, n=26), experiment(20)) == "lower"


def _question(qid, question_type, answer="$10.0 million"):
    from labkit.rag.questions import Evidence, FilingQuestion

    return FilingQuestion(
        financebench_id=f"labkit_filings_{qid}",
        company="Acme",
        doc_name="ACME_2025_10K",
        question_type=question_type,
        question=f"question {qid}",
        answer=answer,
        justification="",
        evidence=(Evidence(doc_name="ACME_2025_10K", evidence_text="x", source_page=3),),
    )


def test_results_by_kind_totals_each_question_kind_apart():
    from labkit.rag.lesson import results_by_kind
    from labkit.rag.metrics import Retrieval
    from labkit.rag.runs import LessonRun

    questions = [_question("001", "metrics-generated"), _question("002", "novel-generated")]
    answered = {"status": "answered", "answer": "It was $10.0 million.", "cited_pages": [], "retrieved": []}
    run = LessonRun(
        rag={"labkit_filings_001": answered, "labkit_filings_002": None},
        naive={"labkit_filings_001": None, "labkit_filings_002": answered},
        retrieval={
            "labkit_filings_001": Retrieval(ranked=("ACME_2025_10K#p3",), k=5),
            "labkit_filings_002": Retrieval(ranked=("ACME_2025_10K#p9",), k=5),
        },
    )
    table = results_by_kind(questions, run)
    assert list(dict.fromkeys(table.index)) == ["metrics-generated", "novel-generated"]
    rows = {(kind, row.path): row for kind, row in table.iterrows()}
    assert (rows[("metrics-generated", "rag")].correct, rows[("metrics-generated", "rag")].page_hit) == (1, "1/1")
    assert (rows[("novel-generated", "rag")].failed, rows[("novel-generated", "rag")].page_hit) == (1, "0/1")
    assert rows[("novel-generated", "naive")].correct == 1 and rows[("metrics-generated", "naive")].failed == 1


def test_the_question_mix_is_counted_from_the_questions_not_copied_from_the_stated_mix():
    questions = load_questions()
    mix = question_mix(questions)
    assert mix["planned"].to_dict() == dict(QUESTION_MIX)
    assert (mix["questions"] == mix["planned"]).all()
    assert mix["unanswerable"].sum() == sum(not q.answerable for q in questions)
    dropped = next(q for q in questions if not q.answerable)
    fewer = question_mix([q for q in questions if q is not dropped])
    assert fewer.loc[dropped.question_type, "questions"] == QUESTION_MIX[dropped.question_type] - 1
    assert fewer.loc[dropped.question_type, "unanswerable"] == mix.loc[dropped.question_type, "unanswerable"] - 1


def _where_lost(rag, question, *, k):
    candidates, selected = rag.retrieve(question.question, k=k)
    held = {e.citation_id: e.evidence_text for e in question.evidence}
    sent = [s for s in selected if s["citation_id"] in held]
    if sent:
        holds = any(held[s["citation_id"]] in s["chunk_text"] for s in sent)
        return "evidence sent" if holds else "sent without the evidence"
    if not any(c["citation_id"] in held for c in candidates):
        return "not a candidate"
    _, kept = rag.retrieve(question.question, k=12)
    return "ranked below k" if any(s["citation_id"] in held for s in kept) else "dropped by the rerank"


def _selection_only(rag, question, *, k):
    _, selected = rag.retrieve(question.question, k=k)
    sent = any(s["citation_id"] in question.evidence_pages for s in selected)
    return "evidence sent" if sent else "not a candidate"


def _page_is_enough(rag, question, *, k):
    stage = _where_lost(rag, question, k=k)
    return "evidence sent" if stage == "sent without the evidence" else stage


def _never_dropped(rag, question, *, k):
    stage = _where_lost(rag, question, k=k)
    return "ranked below k" if stage == "dropped by the rerank" else stage


def test_exercise_bs_check_passes_the_worked_answer_and_refuses_each_stage_merged_into_another():
    from labkit.rag.index import saved_vectors
    from labkit.rag.lesson import check_where_lost, experiment_grid, open_indexes

    questions = load_questions()
    indexes = open_indexes(questions, saved_vectors())
    experiments = experiment_grid(questions, indexes)
    check_where_lost(_where_lost, questions, indexes, experiments, watch=calls_to)
    with pytest.raises(AssertionError, match="'not a candidate' is wrong"):
        check_where_lost(_selection_only, questions, indexes, experiments, watch=calls_to)
    with pytest.raises(AssertionError, match="gets the wrong stage"):
        check_where_lost(_page_is_enough, questions, indexes, experiments, watch=calls_to)
    with pytest.raises(AssertionError, match="the rerank dropped is not 'ranked below k'"):
        check_where_lost(_never_dropped, questions, indexes, experiments, watch=calls_to)
    with pytest.raises(AssertionError, match=r"where_lost calls labkit.s labkit\.rag\.lesson\._stage"):
        check_where_lost(lesson._stage, questions, indexes, experiments, watch=calls_to)


def test_the_raw_question_keeps_the_files_zero_based_page_and_an_unknown_id_is_refused():
    from labkit.rag.lesson import raw_question

    assert raw_question("004")["evidence"][0]["evidence_page_num"] == 22
    with pytest.raises(KeyError, match="no question '999'"):
        raw_question("999")


def test_the_chunk_lengths_count_short_chunks_and_footer_only_chunks_apart():
    from types import SimpleNamespace

    from labkit.rag.lesson import chunk_lengths

    def chunk(text, page):
        return SimpleNamespace(page_content=text, metadata={"doc_name": "D", "source_page": page})

    footer = "Acme Industrial Tools, Inc. | ACME_2024_10K | page 3"
    index = SimpleNamespace(chunks=[chunk("x" * 700, 1), chunk("y" * 150, 1), chunk(footer, 3)])
    assert chunk_lengths(index) == (
        "3 chunks over 2 pages; median length 150 characters, shortest 52; 2 chunks under 200 characters,"
        " 1 of them only a page footer"
    )


def test_versus_counts_calls_a_rate_inside_the_interval_a_tie_and_names_the_side_outside_it():
    from labkit.rag.lesson import versus_counts

    assert versus_counts((4, 26), (7, 26)) == "tie"
    assert versus_counts((2, 26), (11, 26)) == "lower"
    assert versus_counts((11, 26), (2, 26)) == "higher"


def test_a_refusal_is_shown_with_its_class_and_a_relative_path():
    from labkit.paths import scratch_dir
    from labkit.rag.lesson import refusal

    text = refusal(ValueError(f"bad file {scratch_dir() / 'x.json'}"))
    assert text.startswith("ValueError: bad file ")
    assert str(scratch_dir()) not in text


def test_a_figure_on_a_selected_page_can_be_missing_from_the_chunk_sent():
    from types import SimpleNamespace

    from labkit.rag.lesson import figure_on_page

    meta = {"doc_name": "D", "source_page": 4}
    chunks = [SimpleNamespace(page_content=t, metadata=meta) for t in ("intro text", "Q4 660.7")]
    store = SimpleNamespace(similarity_search_with_score=lambda question, k: [(chunks[0], 0.5)])
    index = SimpleNamespace(chunks=chunks, store=store)
    record = {"question": "Q4 sales?", "retrieved": [{"citation_id": "D#p4", "chunk_text": "intro text"}]}
    assert figure_on_page(index, record, "D#p4", "660.7") == (
        "D#p4: 2 chunks; 660.7 printed in a chunk sent: False | in a candidate chunk: False"
        " | in a chunk of the page: True"
    )
    record["retrieved"][0]["chunk_text"] = "Q4 660.7"
    assert "printed in a chunk sent: True" in figure_on_page(index, record, "D#p4", "660.7")


def _paired_answer(a, b):
    from labkit.rag.metrics import paired_p

    wins = sum(hit and not b.hits[q] for q, hit in a.hits.items())
    losses = sum(b.hits[q] and not hit for q, hit in a.hits.items())
    if paired_p(wins, losses) >= 0.05:
        return "tie"
    return "higher" if wins > losses else "lower"


def _two_of_six():
    few = Experiment("few", {}, {f"q{i}": i < 2 for i in range(26)})
    more = Experiment("more", {}, {f"q{i}": i < 6 for i in range(26)})
    return [few, more]


def test_the_paired_reading_says_pairs_differing_only_in_k_measure_no_chance():
    from labkit.rag.lesson import paired_reading

    base = {"k": 5, "chunk_size": 800, "rerank": False}
    k3 = Experiment("k=3", {**base, "k": 3}, {f"q{i}": i < 2 for i in range(26)})
    k5 = Experiment("k=5", base, {f"q{i}": i < 6 for i in range(26)})
    small = Experiment("chunk 300", {**base, "chunk_size": 300}, {f"q{i}": i < 4 for i in range(26)})
    text = paired_reading([k3, k5, small])
    assert " 1 of the pairs differs only in k, so one selection holds the other" in text
    assert "only in k" not in paired_reading([k5, small])
    k1 = Experiment("k=1", {**base, "k": 1}, {f"q{i}": False for i in range(26)})
    wide = paired_reading([k1, k5, small])  # 6 to 0 apart: the paired test calls the k pair a difference
    assert "(1 of the paired test's 1 differences are such pairs)." in wide


def test_exercise_as_check_passes_the_paired_test_and_refuses_the_interval_rule_and_the_totals():
    from labkit.rag.lesson import check_paired_verdict, versus
    from labkit.rag.metrics import paired_p

    def totals(a, b):
        wins, losses = sum(a.hits.values()), sum(b.hits.values())
        return "tie" if paired_p(wins, losses) >= 0.05 else "higher" if wins > losses else "lower"

    check_paired_verdict(_paired_answer, _two_of_six(), watch=calls_to)
    for wrong in (versus, totals, lambda a, b: "tie"):
        with pytest.raises(AssertionError, match="not the paired test's verdict"):
            check_paired_verdict(wrong, _two_of_six(), watch=calls_to)
    with pytest.raises(AssertionError, match="returns 'higher', 'lower' or 'tie'"):
        check_paired_verdict(lambda a, b: None, _two_of_six(), watch=calls_to)
    with pytest.raises(AssertionError, match=r"paired_verdict calls labkit.s labkit\.rag\.lesson\._paired"):
        check_paired_verdict(lesson._paired, _two_of_six(), watch=calls_to)


def test_the_paired_reading_counts_the_pairs_each_rule_calls_a_difference():
    from labkit.rag.lesson import paired_reading

    # 2 against 6 of 26: outside the interval, yet 4 disagreements all one way give p = 0.125
    assert paired_reading(_two_of_six()) == (
        "Of 1 pairs of settings, the interval rule calls 1 a difference and the paired test 0."
        " 1 of the interval rule's differences the paired test cannot tell from chance."
        " These 1 p-values are uncorrected for multiple testing: even if no setting differed, up to about 5% of them"
        " (here about 0) could fall below 0.05 by chance."
        " The test's power (here, how many questions must disagree before it can call any difference): it can call"
        " a difference only when at least 6 questions disagree, all one way (p = 0.031; 5 against 0 gives 0.062), and more when some go the other way."
        " A tie says the test cannot tell, not that the settings are equal."
    )
    assert paired_reading(_two_of_six()[:1]) == (
        "Of 0 pairs of settings, the interval rule calls 0 a difference and the paired test 0."
    )


def test_the_paired_reading_compares_sets_of_pairs_not_counts():
    from labkit.rag.lesson import paired_reading

    # over 100 questions, 50 against 56 is a tie by the interval rule, yet 6 disagreements all one way give
    # p = 0.031: the paired test's difference is not among the interval rule's, and a subtraction would hide it
    half = Experiment("half", {}, {f"q{i}": i < 50 for i in range(100)})
    more = Experiment("more", {}, {f"q{i}": i < 56 for i in range(100)})
    text = paired_reading([half, more])
    assert text.startswith("Of 1 pairs of settings, the interval rule calls 0 a difference and the paired test 1.")
    assert " 1 the paired test calls a difference are ties by the interval rule: `half` against `more`." in text
    assert "cannot tell from chance" not in text
    # one pair in each rule's set only: equal counts, which a subtraction would read as the same pairs
    few = Experiment("few", {}, {f"q{i}": i < 2 for i in range(100)})
    many = Experiment("many", {}, {f"q{i}": i < 6 for i in range(100)})
    one_each = paired_reading([few, many, half, more])
    assert "the interval rule calls 5 a difference and the paired test 5." in one_each
    assert "1 of the interval rule's differences the paired test cannot tell from chance." in one_each
    assert "ties by the interval rule: `half` against `more`." in one_each


def test_the_year_twin_count_takes_misses_whose_top_candidate_is_the_same_companys_other_filing():
    from labkit.rag.lesson import year_twin_misses

    def question(n, doc):
        return _filing_question(n, doc, [3])

    top = {"901": "ACME_2025_10K#p3", "902": "ACME_2024_10K#p9", "903": "CORVID_2024_10K#p3", "904": "x#p1"}

    class Fixed:
        def retrieve(self, question, *, k):
            sent = "ACME_2024_10K#p3" if question == "904" else "ACME_2024_10K#p9"
            return [{"citation_id": top[question]}], [{"citation_id": sent}]

    asked = [question(n, "ACME_2024_10K") for n in ("901", "902", "903", "904")]
    # 904 is a hit (its labelled page 3 is sent); 902's top candidate is its own filing; 903's another company
    assert year_twin_misses(Fixed(), asked) == (["901", "902", "903"], ["901"])


def test_failed_trials_are_counted_per_cause_and_path_with_an_unknown_cause_named_by_its_class():
    from types import SimpleNamespace

    from labkit.rag.lesson import failure_causes

    run = SimpleNamespace(
        errors={
            "rag": {
                "a": "InvalidReply: ... (Invalid JSON: control character (\\u0000-\\u001F) found while parsing",
                "b": "InvalidReply: ... (Invalid JSON: EOF while parsing a string at line 1 column 404)",
                "c": "InvalidCitation: Answer cited evidence outside the supplied context: ['']",
            },
            "naive": {"a": "InvalidCitation: outside", "b": "InvalidCitation: outside", "c": "InvalidReply: no"},
        }
    )
    table = failure_causes(run)
    assert list(table.columns) == ["naive", "rag"]
    assert table.loc["cites outside the context"].tolist() == [2, 1]
    assert table.loc["raw line break inside a string"].tolist() == [0, 1]
    assert table.loc["reply cut off (max_tokens)"].tolist() == [0, 1]
    assert table.loc["InvalidReply"].tolist() == [1, 0]
    assert table.loc["total"].tolist() == [3, 3]


def test_the_fewest_disagreements_are_those_whose_one_way_split_falls_below_alpha():
    from labkit.rag.lesson import fewest_disagreements
    from labkit.rag.metrics import paired_p

    assert fewest_disagreements() == 6
    assert paired_p(6, 0) < 0.05 <= paired_p(5, 0)
    assert fewest_disagreements(0.01) == 8


def test_failed_trials_name_how_many_of_each_cause_max_tokens_cut():
    from types import SimpleNamespace

    from labkit.rag.lesson import failure_causes

    run = SimpleNamespace(
        errors={
            "rag": {
                "a": "InvalidReply: (Invalid JSON: control character (\\u0000-\\u001F)",
                "b": "InvalidReply: EOF while parsing",
            },
            "naive": {"a": "InvalidCitation: outside"},
        }
    )
    table = failure_causes(run, cut={("rag", "a"), ("rag", "b")})
    assert list(table.columns) == [
        ("naive", "failed"),
        ("naive", "cut"),
        ("rag", "failed"),
        ("rag", "cut"),
    ]
    assert table.loc["raw line break inside a string"].tolist() == [0, 0, 1, 1]
    assert table.loc["cites outside the context"].tolist() == [1, 0, 0, 0]
    assert table.loc["total"].tolist() == [1, 0, 2, 2]


def test_every_cut_reply_of_the_captured_run_is_a_failed_trial():
    from labkit.rag.lesson import cut_trials, measured
    from labkit.rag.questions import load_questions
    from labkit.rag.runs import RUN_CAPTURED

    cut = cut_trials(RUN_CAPTURED, load_questions())
    counts = measured(RUN_CAPTURED)["cut_by_max_tokens"]
    assert {path: sum(p == path for p, _ in cut) for path in ("naive", "rag")} == counts.to_dict()


def test_question_moves_lists_the_questions_each_one_variable_change_won_and_lost():
    from labkit.rag.lesson import question_moves

    def exp(name, k, size, rerank, hits):
        settings = {"k": k, "chunk_size": size, "rerank": rerank}
        return Experiment(name, settings, {f"labkit_filings_00{i}": h for i, h in enumerate(hits)})

    experiments = [
        exp("base", 5, 800, True, [True, True, False, False]),
        exp("k8", 8, 800, True, [True, True, True, False]),
        exp("off", 5, 800, False, [False, True, False, True]),
        exp("two", 8, 300, True, [True, True, True, True]),  # changes two settings: not listed
    ]
    table = question_moves(experiments)
    assert table.experiment.tolist() == ["k8", "off"]
    assert table.set_index("experiment").loc["k8"].tolist() == ["k", "002", "-", 1]
    assert table.set_index("experiment").loc["off"].tolist() == ["rerank", "003", "000", 0]


def test_a_bench_retriever_becomes_an_experiment_of_its_page_hits_per_answerable_question():
    from labkit.rag.lesson import bench_experiment
    from labkit.rag.metrics import Retrieval

    questions = load_questions()[:6]
    labelled = [q for q in questions if q.answerable]
    first = labelled[0]
    results = {
        "faiss": {
            q.financebench_id: Retrieval(ranked=(min(first.evidence_pages),) if q is first else ("X#p1",), k=5)
            for q in questions
        }
    }
    experiment = bench_experiment(questions, results, "faiss")
    assert set(experiment.hits) == {q.financebench_id for q in labelled}
    assert experiment.hits[first.financebench_id] is True
    assert sum(experiment.hits.values()) == 1


def test_the_paired_verdict_on_the_bench_stands_beside_the_interval_rule_and_an_unfinished_one_is_said():
    from labkit.rag.lesson import paired_on_bench
    from labkit.rag.metrics import Retrieval

    questions = [q for q in load_questions() if q.answerable][:10]
    hit = {q.financebench_id: Retrieval(ranked=(min(q.evidence_pages),), k=5) for q in questions}
    miss = {q.financebench_id: Retrieval(ranked=("X#p1",), k=5) for q in questions}
    results = {"few": {**hit, **dict(list(miss.items())[:8])}, "all": hit}

    def unfinished(a, b):
        raise NotImplementedError("hint")

    text = paired_on_bench(lambda a, b: "tie", questions, results, "few", "all")
    assert text.startswith("`few` against `all`: the interval rule says lower; your paired_verdict says tie.")
    assert "`few` alone hits 0 question(s), `all` alone 8: p = 0.008." in text
    assert "not yet computed (finish exercise A)" in paired_on_bench(unfinished, questions, results, "few", "all")


def test_each_rag_trial_is_counted_at_the_first_stage_where_its_answer_went_wrong():
    from types import SimpleNamespace

    from labkit.rag.lesson import ANSWER_STAGES, answer_stages
    from labkit.rag.metrics import Retrieval

    real = {q.financebench_id[-3:]: q for q in load_questions()}
    one, none = real["001"], real["005"]  # $128.1 million on ACME_2024_10K#p13 and #p17; unanswerable
    page, other = "ACME_2024_10K#p13", "ACME_2024_10K#p2"
    cases = {  # id -> (pages sent, record or error)
        "a01": ([other], {"status": "answered", "answer": "$128.1 million", "cited_pages": [other]}),
        "a02": ([page], "InvalidReply: EOF while parsing"),
        "a03": ([page], "InvalidCitation: outside"),
        "a04": ([page], {"status": "refused", "answer": "none", "cited_pages": []}),
        "a05": ([page], {"status": "answered", "answer": "$128.1 million", "cited_pages": []}),
        "a06": ([page], {"status": "answered", "answer": "$12.0 million", "cited_pages": [page]}),
        "a07": ([page], {"status": "answered", "answer": "$128.1 million", "cited_pages": [page]}),
        "a08": ([], {"status": "insufficient_evidence", "answer": None, "cited_pages": []}),
        "u09": ([other], {"status": "answered", "answer": "$5 million", "cited_pages": [other]}),
        "u10": ([other], {"status": "refused", "answer": "none", "cited_pages": []}),
    }
    questions, run = [], SimpleNamespace(rag={}, errors={"rag": {}}, retrieval={})
    for qid, (sent, outcome) in cases.items():
        q = (one if qid.startswith("a") else none).model_copy(update={"financebench_id": f"x_{qid}"})
        questions.append(q)
        run.retrieval[q.financebench_id] = Retrieval(ranked=tuple(sent), k=5)
        if isinstance(outcome, str):
            run.rag[q.financebench_id], run.errors["rag"][q.financebench_id] = None, outcome
        else:
            run.rag[q.financebench_id] = outcome
    table = answer_stages(questions, run)
    assert list(table.index) == list(ANSWER_STAGES)
    assert table.questions.to_dict() == {
        "declined by the application": "a08",
        "retrieval: no labelled page sent": "a01",  # a right figure from a page not labelled is still a retrieval miss
        "reply broke the schema": "a02",
        "citation: cited a page not sent": "a03",
        "refused, a labelled page sent": "a04",
        "citation: no labelled page cited": "a05",
        "number: a reference figure missing": "a06",
        "unanswerable, answered anyway": "u09",
        "correct": "a07, u10",
    }
    assert table.trials.sum() == len(cases)


def test_exercise_a_prediction_must_be_made_and_is_graded_against_the_pair_counts():
    from labkit.rag.lesson import paired_prediction

    with pytest.raises(AssertionError, match="set it to one of"):
        paired_prediction(None, _two_of_six())  # the stub's value: no prediction made
    # 2 against 6 of 26: the interval rule calls it a difference, the paired test does not
    assert paired_prediction("fewer", _two_of_six()).endswith("fewer. Your prediction is right.")
    assert paired_prediction("more", _two_of_six()).endswith("fewer. Your prediction is wrong.")
    assert "the paired test calls 0 pairs a difference, the interval rule 1" in paired_prediction("more", _two_of_six())


def test_exercise_b_prediction_must_be_a_count_and_is_graded_against_the_evidence_sent():
    from labkit.rag.lesson import reach_prediction

    stages = {"a": "evidence sent", "b": "ranked below k", "c": "evidence sent", "d": "not a candidate"}
    for unmade in (None, True, 2.0, -1, 4):
        with pytest.raises(AssertionError, match="whole number from 0 to 3"):
            reach_prediction(unmade, stages, 3)
    assert reach_prediction(2, stages, 3).endswith("2 reached the model with their evidence text: right.")
    assert reach_prediction(0, stages, 3).endswith("with their evidence text (off by 2).")


def test_chance_hits_equal_a_brute_force_average_over_every_pick_of_k_chunks():
    from itertools import combinations
    from types import SimpleNamespace

    from labkit.rag.lesson import chance_hits

    question = _filing_question

    def chunk(doc, page):
        return SimpleNamespace(page_content="x", metadata={"doc_name": doc, "source_page": page})

    # page 2 of A has two chunks; B's chunks are never labelled for A's questions
    chunks = [chunk("A", 1), chunk("A", 2), chunk("A", 2), chunk("A", 3), chunk("B", 2), chunk("B", 4)]
    index = SimpleNamespace(chunks=chunks)
    asked = [question("901", "A", [2]), question("902", "A", [1, 3]), question("903", "B", [4])]

    def brute(k, own):
        total = 0.0
        for q in asked:
            pool = [c for c in chunks if not own or c.metadata["doc_name"] == q.doc_name]
            picks = list(combinations(pool, min(k, len(pool))))
            hit = [
                any(f"{c.metadata['doc_name']}#p{c.metadata['source_page']}" in q.evidence_pages for c in p)
                for p in picks
            ]
            total += sum(hit) / len(picks)
        return total

    for k in (1, 2, 3, 5):
        for own in (False, True):
            assert chance_hits(asked, index, k, own_filing=own) == pytest.approx(brute(k, own))
    # the pool matters: over the whole index a pick is diluted by B's chunks
    assert chance_hits(asked, index, 1, own_filing=False) == pytest.approx(4 / 6 + 1 / 6)
    assert chance_hits(asked, index, 1, own_filing=True) == pytest.approx(2 / 4 + 2 / 4 + 1 / 2)


def test_versus_exact_calls_an_exact_rate_inside_the_interval_a_tie_and_names_the_side_outside_it():
    from labkit.rag.lesson import versus_exact

    assert versus_exact((6, 26), 1.4 / 26) == "higher"  # below [0.11, 0.42]
    assert versus_exact((6, 26), 7.2 / 26) == "tie"
    assert versus_exact((6, 26), 0.5) == "lower"
    assert versus_exact((6, 26), 0.11) == "tie"  # the interval's own end is inside it


def test_a_search_filtered_to_the_questions_filing_sends_only_that_filings_pages():
    from labkit.rag.answer import FilingsRAG
    from labkit.rag.index import saved_vectors
    from labkit.rag.lesson import filing_filter_hits, open_indexes

    questions = load_questions()
    rag = FilingsRAG(open_indexes(questions, saved_vectors())[800], model=None)
    crowded = next(q for q in questions if q.financebench_id.endswith("004"))
    _, shared = rag.retrieve(crowded.question, k=5)
    assert any(s["doc_name"] != crowded.doc_name for s in shared)  # the year twin takes places unfiltered
    sent = {
        q.financebench_id: [s["citation_id"] for s in rag.retrieve(q.question, k=5, doc_name=q.doc_name)[1]]
        for q in questions
    }
    assert all(sent[q.financebench_id] for q in questions if q.answerable)
    assert all(page.split("#p")[0] == q.doc_name for q in questions for page in sent[q.financebench_id])
    table = filing_filter_hits(rag, questions, k=5)
    assert len(table) == sum(q.answerable for q in questions)
    assert not table.loc["001", "shared store"] and table.loc["001", "its filing only"]
