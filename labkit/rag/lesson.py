"""What notebook 02b calls: open both indexes, replay a run on both paths, run the experiments, plot.

Each function is a few lines over `labkit.rag`'s parts, so that a notebook cell reads as the lesson's
steps (``answer_with_rag``, grade, experiment) and the logic stays tested here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from labkit.canonical import pretty_json
from labkit.paths import scratch_dir
from labkit.rag.answer import CANDIDATES
from labkit.rag.index import (
    ALT_CHUNKING,
    CHUNKING,
    FilingsIndex,
    cached_index_is_current,
    expected_settings,
    index_folder,
    load_filings,
    open_index,
)
from labkit.rag.metrics import Experiment, grade, page_hit, paired_p, summary
from labkit.rag.questions import FilingQuestion
from labkit.tables import text_table

#: A chunk that is nothing but a page footer ("Company | DOC_NAME | page 7").
FOOTER_ONLY = re.compile(r"[^\n]+ \| \w+ \| page \d+")
#: A passage shorter than this many characters is counted as a fragment (a page's short remainder).
SHORT_PASSAGE = 200

#: The k values of the k experiment.
KS = (1, 3, 5, 8)


def open_indexes(questions: list[FilingQuestion], embeddings: Any) -> dict[int, FilingsIndex]:
    """Open (or build once and save) the index for each chunk size; the PDFs are parsed at most once."""
    docs = {q.doc_name for q in questions}
    pages = None
    indexes = {}
    for size, overlap in (CHUNKING, ALT_CHUNKING):
        expected = expected_settings(docs, chunk_size=size, chunk_overlap=overlap, embedding_model=embeddings.model)
        if pages is None and not cached_index_is_current(index_folder(size, overlap), expected):
            pages = load_filings(docs)
        indexes[size] = open_index(docs, chunk_size=size, chunk_overlap=overlap, embeddings=embeddings, pages=pages)
    return indexes


def question_mix(questions: list[FilingQuestion]) -> Any:
    """Count the questions per FinanceBench question type beside the counts the question generator was told to write (`QUESTION_MIX`).

    Columns: ``questions`` (counted from ``questions``), ``planned`` (`QUESTION_MIX`) and ``unanswerable`` (how many of
    that type have no labelled evidence, so that their right reply is a refusal).
    """
    import pandas as pd

    from labkit.rag.questions import QUESTION_MIX

    asked = pd.Series([q.question_type for q in questions], dtype=object)
    unanswerable = pd.Series([q.question_type for q in questions if not q.answerable], dtype=object)
    table = pd.DataFrame(
        {
            "questions": asked.value_counts().reindex(list(QUESTION_MIX)),
            "planned": pd.Series(QUESTION_MIX),
            "unanswerable": unanswerable.value_counts(),
        }
    )
    return table.fillna(0).astype(int).rename_axis("question_type")


def candidates_table(record: dict[str, Any]) -> Any:
    """Return the 12 candidates in search order, with the reranker's score and rank for those it selected."""
    import pandas as pd

    chosen = {item["citation_id"]: (rank, item["reranker_score"]) for rank, item in enumerate(record["retrieved"], 1)}
    frame = pd.DataFrame(
        [
            {
                "search_rank": n,
                "citation_id": c["citation_id"],
                "faiss_distance": round(c["faiss_distance"], 4),
                "selected_rank": chosen.get(c["citation_id"], (None, None))[0],
                "reranker_score": chosen.get(c["citation_id"], (None, None))[1],
            }
            for n, c in enumerate(record["candidates"], 1)
        ]
    ).astype({"selected_rank": "Int64"})
    return text_table(frame)


def compare_paths(questions: list[FilingQuestion], run: Any) -> Any:
    """Return one row per question with the baseline's and the RAG path's grades side by side."""
    naive = grade(questions, run.naive, path="naive", errors=run.errors["naive"]).set_index("id")
    rag = grade(questions, run.rag, path="rag", retrieval=run.retrieval, errors=run.errors["rag"]).set_index("id")
    table = rag[["doc_name", "kind"]].copy()
    table["naive"] = naive["correctness"]
    table["rag"] = rag["correctness"]
    table["rag_status"] = rag["status"]
    table["faithful"] = rag["faithful"]
    table["page_hit@5"] = rag["page_hit"]
    table["evidence_recall@5"] = rag["evidence_recall"]
    return table


def path_summary(questions: list[FilingQuestion], run: Any) -> Any:
    """Aggregate each path after the per-question table: outcome counts, faithful share, page-hit rate."""
    import pandas as pd

    naive = grade(questions, run.naive, path="naive")
    return summary(pd.concat([naive, grade(questions, run.rag, path="rag", retrieval=run.retrieval)]))


def correct_rates(questions: list[FilingQuestion], run: Any) -> Any:
    """Return, per path, the trials sent to the model (the application's own refusals left out), the failed ones, and
    the correct answers over the trials sent with their 95% Wilson interval (``ci95``); ``vs_baseline`` is the
    interval rule's verdict on the RAG rate against the baseline's (`versus_counts`)."""
    import pandas as pd

    from labkit.rag.metrics import wilson_interval
    from labkit.tables import interval

    totals = path_summary(questions, run).set_index("path")
    counts = {
        path: (int(totals.loc[path, "correct"]), len(questions) - int(totals.loc[path, "app_refused"]))
        for path in ("naive", "rag")
    }
    rows = [
        {
            "path": path,
            "sent to the model": sent,
            "failed": int(totals.loc[path, "failed"]),
            "correct": f"{hits}/{sent}",
            "ci95": interval(*wilson_interval(hits, sent)),
            "vs_baseline": "baseline" if path == "naive" else versus_counts(counts["rag"], counts["naive"]),
        }
        for path, (hits, sent) in counts.items()
    ]
    return text_table(pd.DataFrame(rows).set_index("path"))


def results_by_kind(questions: list[FilingQuestion], run: Any) -> Any:
    """Return `path_summary`'s totals for each FinanceBench question kind (``question_type``), kinds in file order."""
    import pandas as pd

    naive = grade(questions, run.naive, path="naive")
    table = pd.concat([naive, grade(questions, run.rag, path="rag", retrieval=run.retrieval)])
    parts = {kind: summary(part) for kind, part in table.groupby("question_type", sort=False)}
    return text_table(pd.concat(parts, names=["question_type", "row"]).droplevel("row"))


def failures(run: Any) -> Any:
    """Return the failed trials of a run (path, question id, the whole error, which wraps in the table), sorted."""
    import pandas as pd

    rows = [
        {"path": path, "id": qid.removeprefix("labkit_filings_"), "error": error}
        for path, errors in run.errors.items()
        for qid, error in sorted(errors.items())
    ]
    return text_table(pd.DataFrame(rows, columns=["path", "id", "error"]))


#: The failure causes `failure_causes` names, by the text of the error that a failed trial kept.
FAILURE_CAUSES = {
    "raw line break inside a string": "control character",
    "reply cut off (max_tokens)": "EOF while parsing",
    "cites outside the context": "InvalidCitation",
}


def failure_cause(error: str) -> str:
    """Name the cause of one failed trial from its kept error (`FAILURE_CAUSES`); else the error's class name."""
    return next((cause for cause, text in FAILURE_CAUSES.items() if text in error), error.split(":")[0])


def cut_trials(run_id: str, questions: list[FilingQuestion]) -> set[tuple[str, str]]:
    """Return the (path, financebench_id) of every trial of a captured run whose reply ``max_tokens`` stopped."""
    from labkit.recording import load_run

    by_text = {q.question: q.financebench_id for q in questions}
    cut = set()
    for binding in load_run(run_id).bindings:
        question = binding.question or ""
        if ((binding.response or {}).get("choices") or [{}])[0].get("finish_reason") == "length":
            path = "naive" if question.startswith("naive: ") else "rag"
            cut.add((path, by_text[question.removeprefix("naive: ")]))
    return cut


def failure_causes(run: Any, *, cut: set[tuple[str, str]] | None = None) -> Any:
    """Return the count of failed trials per cause (`failure_cause`) and path, one row per cause, a total row last.

    With ``cut`` (`cut_trials`), each path gets a second column: how many of those trials ``max_tokens`` cut. A
    cut reply is counted under the first fault the parser meets, which can be a raw line break before the cut.
    """
    import pandas as pd

    rows = [
        {"path": path, "cause": failure_cause(error), "cut": (path, qid) in (cut or set())}
        for path, errors in run.errors.items()
        for qid, error in errors.items()
    ]
    frame = pd.DataFrame(rows, columns=["path", "cause", "cut"])
    paths = sorted(run.errors)
    table = pd.crosstab(frame["cause"], frame["path"]).reindex(columns=paths, fill_value=0)
    if cut is not None:
        cuts = pd.crosstab(frame["cause"], frame["path"], values=frame["cut"], aggfunc="sum")
        cuts = cuts.reindex(index=table.index, columns=paths).fillna(0).astype(int)
        table = pd.concat({"failed": table, "cut": cuts}, axis=1).swaplevel(axis=1)
        table = table[[(path, part) for path in paths for part in ("failed", "cut")]]
    table.loc["total"] = table.sum()
    table.columns.names = [None] * table.columns.nlevels
    return table


#: A watcher of calls (the course's `labkit.course.shortcuts.calls_to`): run a block, list the watched functions it called.
Watch = Callable[..., AbstractContextManager[list[str]]]

#: Where a RAG trial first went wrong (`answer_stages`), in pipeline order: retrieval, the reply, citation, number.
ANSWER_STAGES = (
    "declined by the application",
    "retrieval: no labelled page sent",
    "reply broke the schema",
    "citation: cited a page not sent",
    "refused, a labelled page sent",
    "citation: no labelled page cited",
    "number: a reference figure missing",
    "unanswerable, answered anyway",
    "correct",
)


def answer_stages(questions: list[FilingQuestion], run: Any) -> Any:
    """Return where each RAG trial of a run first went wrong: one row per stage (`ANSWER_STAGES`), its trials and ids.

    An answerable question fails at retrieval when no labelled page was sent (whatever the model then did); else at
    the reply (schema broken, a citation outside the passages sent, a refusal), else at citation (no labelled page
    among those it cites), else at the number (`correctness` is not ``correct``). An unanswerable question is
    ``correct`` when refused. A correct figure cited to the wrong page counts under citation.
    """
    import pandas as pd

    from labkit.rag.metrics import correctness

    stages: dict[str, list[str]] = {stage: [] for stage in ANSWER_STAGES}
    for q in questions:
        qid, record, error = q.financebench_id, run.rag.get(q.financebench_id), run.errors["rag"].get(q.financebench_id)
        sent = set(run.retrieval[qid].ranked[: run.retrieval[qid].k])
        if record is not None and record["status"] == "insufficient_evidence":
            stage = ANSWER_STAGES[0]
        elif q.answerable and not sent & set(q.evidence_pages):
            stage = ANSWER_STAGES[1]
        elif error is not None:
            stage = ANSWER_STAGES[3] if failure_cause(error) == "cites outside the context" else ANSWER_STAGES[2]
        elif not q.answerable:
            stage = ANSWER_STAGES[8] if correctness(q, record) == "correct" else ANSWER_STAGES[7]
        elif record["status"] == "refused":
            stage = ANSWER_STAGES[4]
        elif not set(record["cited_pages"]) & set(q.evidence_pages):
            stage = ANSWER_STAGES[5]
        else:
            stage = ANSWER_STAGES[8] if correctness(q, record) == "correct" else ANSWER_STAGES[6]
        stages[stage].append(qid[-3:])
    return text_table(
        pd.DataFrame(
            [{"stage": s, "trials": len(ids), "questions": ", ".join(ids) or "-"} for s, ids in stages.items()]
        ).set_index("stage")
    )


def experiment_grid(
    questions: list[FilingQuestion], indexes: dict[int, FilingsIndex], *, ks: tuple[int, ...] = KS
) -> list[Experiment]:
    """Measure page-hit@k for every k, chunk size and reranking switch; each result keeps its settings.

    The selection for a smaller k is a prefix of the selection for the largest, so each question is
    searched once per chunk size and reranking switch.
    """
    from labkit.rag.answer import RERANKER_NAME, FilingsRAG

    experiments = []
    for size, index in indexes.items():
        for rerank in (True, False):
            rag = FilingsRAG(index, model=None, rerank=rerank)
            ranked = {
                q.financebench_id: [s["citation_id"] for s in rag.retrieve(q.question, k=max(ks))[1]]
                for q in questions
                if q.answerable
            }
            for k in ks:
                settings = {
                    "k": k,
                    "chunk_size": size,
                    "chunk_overlap": index.descriptor.chunk_overlap,
                    "rerank": rerank,
                    "reranker": RERANKER_NAME if rerank else "none (search order)",
                    "embedding_model": index.descriptor.embedding_model,
                }
                hits = {
                    q.financebench_id: bool(page_hit(q, ranked[q.financebench_id], k))
                    for q in questions
                    if q.answerable
                }
                experiments.append(
                    Experiment(f"k={k}, chunk={size}, rerank={'on' if rerank else 'off'}", settings, hits)
                )
    return experiments


def versus(experiment: Experiment, baseline: Experiment) -> str:
    """Say how ``experiment``'s page-hit rate compares with ``baseline``'s: ``tie``, ``higher`` or ``lower``.

    A tie is a difference the data cannot show: the lower rate lies inside the higher one's 95% Wilson
    interval (`rate_verdicts`). Only a rate outside that interval is called higher or lower.
    """
    if experiment is baseline:
        return "baseline"
    return versus_counts(
        (sum(experiment.hits.values()), len(experiment.hits)), (sum(baseline.hits.values()), len(baseline.hits))
    )


def chance_hits(questions: list[FilingQuestion], index: FilingsIndex, k: int, *, own_filing: bool) -> float:
    """Return the expected page hits of a retriever that picks ``k`` chunks at random, summed over the questions.

    For each answerable question, the pool is every chunk of the index (``own_filing=False``, what FAISS searches)
    or only the chunks of the question's filing (``own_filing=True``). With N chunks in the pool, M of them on a
    labelled page, a random pick of k misses them all with probability C(N-M, k)/C(N, k) (hypergeometric), so
    it hits with 1 minus that; the sum over questions is the expected number of hits. Computed exactly, no draw.
    """
    from math import comb

    from labkit.rag.index import citation_id

    expected = 0.0
    for q in questions:
        if not q.answerable:
            continue
        pool = [c for c in index.chunks if not own_filing or c.metadata["doc_name"] == q.doc_name]
        labelled = sum(citation_id(c.metadata) in q.evidence_pages for c in pool)
        picked = min(k, len(pool))
        expected += 1 - comb(len(pool) - labelled, picked) / comb(len(pool), picked) if pool else 0.0
    return expected


def versus_exact(counts: tuple[int, int], rate: float) -> str:
    """Compare a measured rate (hits, n) with an exact ``rate``: ``tie`` inside its 95% Wilson interval, else
    ``higher`` (the exact rate lies below the interval) or ``lower`` (above it)."""
    from labkit.rag.metrics import wilson_interval

    low, high = wilson_interval(*counts)
    return "higher" if rate < low else "lower" if rate > high else "tie"


def chance_table(experiments: list[Experiment], questions: list[FilingQuestion], index: FilingsIndex) -> Any:
    """Return, per k (chunk 800, rerank on), FAISS's page hits with their 95% interval beside a random pick's.

    ``random, any filing`` and ``random, own filing`` are `chance_hits` over the whole index and over the
    question's own filing; each ``vs`` column is `versus_exact`: the chance rate is an expected value, not a
    sample, so only FAISS's rate has an interval.
    """
    import pandas as pd

    from labkit.rag.metrics import wilson_interval
    from labkit.tables import interval

    rows = []
    for e in experiments:
        s = e.settings
        if s["chunk_size"] != index.descriptor.chunk_size or not s["rerank"]:
            continue
        hits, n = sum(e.hits.values()), len(e.hits)
        row: dict[str, Any] = {
            "k": s["k"],
            "FAISS + rerank": f"{hits}/{n}",
            "ci95": interval(*wilson_interval(hits, n)),
        }
        for label, own in (("any filing", False), ("own filing", True)):
            chance = chance_hits(questions, index, s["k"], own_filing=own)
            row[f"random, {label}"] = f"{chance:.1f}/{n}"
            row[f"FAISS vs {label}"] = versus_exact((hits, n), chance / n)
        rows.append(row)
    return text_table(pd.DataFrame(rows).set_index("k").sort_index())


def _one_variable_choice(experiments: list[Experiment], k: int, chunk_size: int) -> list[tuple[str, Experiment]]:
    """The baseline and each experiment that changes one setting from it, with the setting's name."""

    def varies(e: Experiment) -> str | None:
        s = e.settings
        changed = [name for name, base in (("k", k), ("chunk_size", chunk_size), ("rerank", True)) if s[name] != base]
        return "baseline" if not changed else changed[0] if len(changed) == 1 else None

    return [(v, e) for e in experiments if (v := varies(e))]


def one_variable(experiments: list[Experiment], *, k: int = 5, chunk_size: int = CHUNKING[0]) -> Any:
    """Return the experiments that change one setting from the baseline (k=5, chunk 800, reranking on).

    Each row has its page-hit rate's 95% Wilson interval (``ci95``) and ``vs_baseline`` (`versus`): a
    difference inside the interval is printed as a tie.
    """
    from labkit.rag.metrics import experiments_table, wilson_interval
    from labkit.tables import interval

    chosen = _one_variable_choice(experiments, k, chunk_size)
    baseline = next(e for v, e in chosen if v == "baseline")
    table = experiments_table([e for _, e in chosen])
    table.insert(0, "varies", [v for v, _ in chosen])
    table["ci95"] = [interval(*wilson_interval(sum(e.hits.values()), len(e.hits))) for _, e in chosen]
    table["vs_baseline"] = [versus(e, baseline) for _, e in chosen]
    return table.sort_values(["varies", "k", "chunk_size", "rerank"], ignore_index=True)


def question_moves(experiments: list[Experiment], *, k: int = 5, chunk_size: int = CHUNKING[0]) -> Any:
    """Return, for each one-variable change (`one_variable`), the questions it won and lost against the baseline.

    ``won`` lists the question ids the change hits and the baseline misses, ``lost`` the reverse; a count that
    ties can hide questions moving both ways. ``net`` is won minus lost: the change in the hit count.
    """
    import pandas as pd

    chosen = _one_variable_choice(experiments, k, chunk_size)
    baseline = next(e for v, e in chosen if v == "baseline")

    def ids(a: Experiment, b: Experiment) -> list[str]:
        return [qid[-3:] for qid, hit in sorted(a.hits.items()) if hit and not b.hits[qid]]

    rows = [
        {
            "varies": v,
            "experiment": e.name,
            "won": ", ".join(ids(e, baseline)) or "-",
            "lost": ", ".join(ids(baseline, e)) or "-",
            "net": len(ids(e, baseline)) - len(ids(baseline, e)),
        }
        for v, e in chosen
        if e is not baseline
    ]
    table = pd.DataFrame(rows, columns=["varies", "experiment", "won", "lost", "net"])
    return text_table(table.sort_values(["varies", "experiment"], ignore_index=True))


#: Exercise A's significance level: the paired test calls a difference only when its p-value is below it.
ALPHA = 0.05


def _disagreements(a: Experiment, b: Experiment) -> tuple[int, int]:
    """Questions ``a`` hits and ``b`` misses, and the reverse: the two counts `paired_p` takes."""
    return (
        sum(hit and not b.hits[qid] for qid, hit in a.hits.items()),
        sum(b.hits[qid] and not hit for qid, hit in a.hits.items()),
    )


def _paired(a: Experiment, b: Experiment) -> str:
    wins, losses = _disagreements(a, b)
    if paired_p(wins, losses) >= ALPHA:
        return "tie"
    return "higher" if wins > losses else "lower"


def _planted(name: str, hits: list[bool]) -> Experiment:
    return Experiment(name, {}, {f"q{i:02d}": hit for i, hit in enumerate(hits)})


def check_paired_verdict(paired_verdict: Any, experiments: list[Experiment], *, watch: Watch) -> None:
    """Check exercise A's ``paired_verdict(a, b)``; raise AssertionError at the first wrong verdict.

    The learner's function may not call this module's own verdict (`_paired`, `_disagreements`): ``watch``
    (the course's `calls_to`) lists the ones it called.

    Every ordered pair of ``experiments`` must get ``higher``, ``lower`` or ``tie`` as the exact paired test
    (`labkit.rag.metrics.paired_p` below `ALPHA`) gives it, and so must two planted pairs over 40 questions: one
    where the 7 disagreements all go one way, and one where 9 go one way and 2 the other. No expected verdict is
    printed.
    """
    shared = [True] * 20 + [False] * 20
    one_way = _planted("a", [True] * 27 + [False] * 13), _planted("b", shared)
    nine_two = (
        _planted("c", [True] * 27 + [False] * 13),
        _planted("d", [True] * 18 + [False] * 9 + [True] * 2 + [False] * 11),
    )
    pairs = [(a, b) for a in experiments for b in experiments if a is not b]
    for a, b in [*pairs, one_way, one_way[::-1], nine_two, nine_two[::-1]]:
        with watch(_paired, _disagreements) as called:
            got = paired_verdict(a, b)
        assert not called, f"paired_verdict calls labkit's {called[0]}: write the paired test yourself"
        assert got in ("higher", "lower", "tie"), f"paired_verdict returns 'higher', 'lower' or 'tie', not {got!r}"
        assert got == _paired(a, b), f"{a.name} against {b.name}: that is not the paired test's verdict"


def fewest_disagreements(alpha: float = ALPHA) -> int:
    """Return the fewest disagreeing questions, all one way, for which the exact paired test's p is below ``alpha``."""
    return next(d for d in range(1, 1000) if paired_p(d, 0) < alpha)


def _only_k_differs(a: Experiment, b: Experiment) -> bool:
    """Whether two experiments differ in k alone: the smaller one's selection is a prefix of the larger one's."""
    changed = {name for name in a.settings.keys() | b.settings.keys() if a.settings.get(name) != b.settings.get(name)}
    return changed == {"k"}


def _differences(experiments: list[Experiment]) -> tuple[list[tuple[Experiment, Experiment]], set[int], set[int]]:
    """Every unordered pair of experiments, and the indices of the pairs the interval rule and the paired test call
    a difference."""
    pairs = [(a, b) for i, a in enumerate(experiments) for b in experiments[i + 1 :]]
    by_interval = {n for n, (a, b) in enumerate(pairs) if versus(a, b) != "tie"}
    by_test = {n for n, (a, b) in enumerate(pairs) if _paired(a, b) != "tie"}
    return pairs, by_interval, by_test


#: Exercise A's predictions: the paired test calls more differences than the interval rule, fewer, or as many.
PAIRED_PREDICTIONS = ("more", "fewer", "as many")


def paired_prediction(prediction: Any, experiments: list[Experiment]) -> str:
    """Grade exercise A's prediction against the experiments; raise AssertionError when none was made.

    The prediction (`PAIRED_PREDICTIONS`) says whether the paired test calls more pairs a difference than the
    interval rule, fewer or as many. A wrong prediction is said, not raised: the learner predicted before knowing.
    """
    assert prediction in PAIRED_PREDICTIONS, (
        f"PREDICTION is {prediction!r}: set it to one of {PAIRED_PREDICTIONS} before you run the check"
    )
    _, by_interval, by_test = _differences(experiments)
    counts = (len(by_test), len(by_interval))
    actual = "more" if counts[0] > counts[1] else "fewer" if counts[0] < counts[1] else "as many"
    return (
        f"You predicted {prediction}; the paired test calls {counts[0]} pairs a difference, the interval rule"
        f" {counts[1]}: {actual}. Your prediction is {'right' if prediction == actual else 'wrong'}."
    )


def reach_prediction(prediction: Any, stages: dict[str, str], candidates: int) -> str:
    """Grade exercise B's prediction: of the ``candidates`` questions with a labelled candidate, how many reach the
    model with their evidence text (stage ``evidence sent`` in ``stages``); raise AssertionError when none was made."""
    assert isinstance(prediction, int) and not isinstance(prediction, bool) and 0 <= prediction <= candidates, (
        f"PREDICTION is {prediction!r}: set it to a whole number from 0 to {candidates} before you run the check"
    )
    sent = sum(stage == STAGES[0] for stage in stages.values())
    return (
        f"You predicted {prediction} of the {candidates} questions with a labelled candidate; {sent} reached the model"
        f" with their evidence text" + (": right." if prediction == sent else f" (off by {abs(prediction - sent)}).")
    )


def paired_reading(experiments: list[Experiment]) -> str:
    """Say over how many pairs of experiments the interval rule (`versus`) and the paired test call a difference.

    Both counts are sets of pairs: the sentence names how many of the interval rule's differences the paired test
    cannot tell from chance (in the interval rule's set, not the test's), and the pairs the paired test calls
    different that the interval rule calls a tie, if any. It also warns that many tests at `ALPHA` each pass some
    pairs by chance alone, and says the test's power: the fewest disagreements (`fewest_disagreements`) it needs.
    """
    pairs, by_interval, by_test = _differences(experiments)
    only_interval, only_test = by_interval - by_test, by_test - by_interval
    text = (
        f"Of {len(pairs)} pairs of settings, the interval rule calls {len(by_interval)} a difference"
        f" and the paired test {len(by_test)}."
    )
    if only_interval:
        text += f" {len(only_interval)} of the interval rule's differences the paired test cannot tell from chance."
    if only_test:
        names = "; ".join(f"`{pairs[n][0].name}` against `{pairs[n][1].name}`" for n in sorted(only_test))
        text += f" {len(only_test)} the paired test calls a difference are ties by the interval rule: {names}."
    elif by_test:
        text += " Every pair the paired test calls a difference, the interval rule calls one too."
    if not pairs:
        return text
    fewest = fewest_disagreements()
    nested = [n for n, (a, b) in enumerate(pairs) if _only_k_differs(a, b)]
    if nested:
        text += (
            f" {len(nested)} of the pairs {'differs' if len(nested) == 1 else 'differ'} only in k, so one selection"
            " holds the other: the smaller k can only"
            " lose, so the fair coin behind their p-values cannot hold"
            + (
                f" ({len(set(nested) & by_test)} of the paired test's {len(by_test)} differences are such pairs)."
                if by_test
                else "."
            )
        )
    return text + (
        f" These {len(pairs)} p-values are uncorrected for multiple testing: even if no setting differed, up to"
        f" about {ALPHA:.0%} of them (here about {round(ALPHA * len(pairs))}) could fall below {ALPHA} by chance."
        f" The test's power (here, how many questions must disagree before it can call any difference): it can call"
        " a difference only when at least"
        f" {fewest} questions disagree, all one way (p = {paired_p(fewest, 0):.3f}; {fewest - 1} against 0 gives"
        f" {paired_p(fewest - 1, 0):.3f}), and more when some go the other way. A tie says the test cannot tell,"
        " not that the settings are equal."
    )


#: Exercise B's stages, from the best outcome to the earliest loss.
STAGES = ("evidence sent", "sent without the evidence", "ranked below k", "dropped by the rerank", "not a candidate")


#: What could fix a loss at each of exercise B's stages (`STAGES`), in the same order.
STAGE_FIXES = (
    "-",
    "other chunking, or a search that finds the evidence's chunk",
    "k up to {top} (the rerank ranks their pages {ranks}), or a rerank that ranks them higher",
    "a rerank that keeps it",
    "a better first search: no rerank of these candidates can",
)


def stage_table(stages: dict[str, str], index: FilingsIndex, questions: list[FilingQuestion]) -> Any:
    """Return exercise B's stages (question id -> one of `STAGES`) as a table: per stage its questions, their ids,
    and what could fix such a loss (`STAGE_FIXES`).

    For ``sent without the evidence``, column ``evidence chunk a candidate`` says for how many of its questions the
    chunk holding the evidence text was among the 12 candidates (`figure_chunk_candidate`): when it was not, the
    search lost it, whatever the chunking sent. For ``ranked below k``, the fix names the k that would send every
    such page: the highest of their ranks in the rerank's order (`rerank_rank`).
    """
    import pandas as pd

    by_id = {q.financebench_id: q for q in questions}
    rows = []
    for stage, fix in zip(STAGES, STAGE_FIXES, strict=True):
        ids = sorted(qid for qid, got in stages.items() if got == stage)
        searched = sum(figure_chunk_candidate(index, by_id[qid]) for qid in ids)
        rows.append(
            {
                "stage": stage,
                "questions": len(ids),
                "ids": ", ".join(qid[-3:] for qid in ids) or "-",
                "evidence chunk a candidate": f"{searched} of {len(ids)}" if stage == STAGES[1] else "-",
                "what could fix it": _fix(stage, fix, [rerank_rank(index, by_id[qid]) for qid in ids]),
            }
        )
    return text_table(pd.DataFrame(rows).set_index("stage"))


def rerank_rank(index: FilingsIndex, question: FilingQuestion) -> int | None:
    """Return the rank (1 = first) of the question's first labelled page in the rerank's order of all candidates,
    or None when the rerank keeps no labelled page."""
    from labkit.rag.answer import FilingsRAG

    _, kept = FilingsRAG(index, model=None).retrieve(question.question, k=CANDIDATES)
    pages = set(question.evidence_pages)
    return next((rank for rank, s in enumerate(kept, 1) if s["citation_id"] in pages), None)


def _fix(stage: str, fix: str, ranks: list[int | None]) -> str:
    """A stage's fix; for ``ranked below k``, with the ranks its questions' pages hold (or the bare advice)."""
    known = sorted(r for r in ranks if r is not None)
    if stage != STAGES[2]:
        return fix
    if not known:
        return "a larger k, or a rerank that ranks them higher"
    return fix.format(top=known[-1], ranks=", ".join(map(str, known)))


class DroppingRerank:
    """A retriever whose rerank drops the given pages: exercise B's check uses it to plant a page the rerank drops.

    ``retrieve`` returns the wrapped retriever's candidates unchanged and its selection without ``dropped``, the
    way `labkit.rag.answer.bm25_rerank` drops a candidate that shares no word with the question.
    """

    def __init__(self, rag: Any, dropped: set[str]) -> None:
        self.rag, self.dropped = rag, dropped

    def retrieve(self, question: str, *, k: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Return ``(candidates, selected)`` as the wrapped retriever does, the dropped pages left out of the selection."""
        candidates, selected = self.rag.retrieve(question, k=CANDIDATES)
        return candidates, [s for s in selected if s["citation_id"] not in self.dropped][:k]


def _stage(rag: Any, question: FilingQuestion, k: int) -> str:
    candidates, selected = rag.retrieve(question.question, k=k)
    held = {e.citation_id: e.evidence_text for e in question.evidence}
    sent = [s for s in selected if s["citation_id"] in held]
    if sent:
        return STAGES[0] if any(held[s["citation_id"]] in s["chunk_text"] for s in sent) else STAGES[1]
    if not any(c["citation_id"] in held for c in candidates):
        return STAGES[4]
    _, kept = rag.retrieve(question.question, k=CANDIDATES)
    return STAGES[2] if any(s["citation_id"] in held for s in kept) else STAGES[3]


def check_where_lost(
    where_lost: Any,
    questions: list[FilingQuestion],
    indexes: dict[int, FilingsIndex],
    experiments: list[Experiment],
    *,
    watch: Watch,
) -> None:
    """Check exercise B's ``where_lost(rag, question, *, k)``; raise AssertionError at the first wrong answer.

    For both chunk sizes, reranking on and off, and every k in `KS`, every answerable question must get its stage
    (`STAGES`). The two ``sent`` stages together must be exactly that experiment's hits. ``not a candidate`` must
    be exactly the questions with no labelled page among FAISS's 12 candidates, as the retriever bench
    (`labkit.rag.retrievers`) finds them on the shared 800-character index. Last, a `DroppingRerank` plants a
    labelled candidate the rerank drops, which must come back as ``dropped by the rerank``, not ``ranked below k``.
    No expected stage is printed. The learner's function may not call this module's own `_stage`: ``watch``
    (the course's `calls_to`) lists it if it does.
    """
    from labkit.rag.answer import FilingsRAG
    from labkit.rag.retrievers import question_rows, retrieve_all

    labelled = [q for q in questions if q.answerable]
    base = {(e.settings["k"], e.settings["chunk_size"], e.settings["rerank"]): e for e in experiments}
    rows = question_rows(labelled, retrieve_all(labelled, indexes[CHUNKING[0]], scope="shared"), ks=(5,))
    never = {r["id"] for r in rows if r["retriever"] == "faiss+bm25" and not r["candidate_hit"]}
    for size, index in indexes.items():
        for rerank in (True, False):
            rag = FilingsRAG(index, model=None, rerank=rerank)
            for k in KS:
                with watch(_stage) as called:
                    got = {q.financebench_id: where_lost(rag, q, k=k) for q in labelled}
                assert not called, f"where_lost calls labkit's {called[0]}: find the stage yourself"
                assert set(got.values()) <= set(STAGES), f"where_lost returns one of {list(STAGES)}"
                hits = {qid: stage in STAGES[:2] for qid, stage in got.items()}
                assert hits == base[(k, size, rerank)].hits, f"a 'sent' stage is wrong at k={k}, chunk={size}"
                if size == CHUNKING[0]:
                    out = {qid for qid, stage in got.items() if stage == "not a candidate"}
                    assert out == never, f"'not a candidate' is wrong at k={k}, rerank={rerank}"
                for q in labelled:
                    assert got[q.financebench_id] == _stage(rag, q, k), (
                        f"question {q.financebench_id[-3:]} gets the wrong stage at k={k}, chunk={size},"
                        f" rerank={'on' if rerank else 'off'}"
                    )
    rag = FilingsRAG(indexes[CHUNKING[0]], model=None)
    planted = [q for q in labelled if _stage(rag, q, 5) != "not a candidate"]
    for q in planted:
        dropping = DroppingRerank(rag, set(q.evidence_pages))
        with watch(_stage) as called:
            stage = where_lost(dropping, q, k=5)
        assert not called, f"where_lost calls labkit's {called[0]}: find the stage yourself"
        assert stage == "dropped by the rerank", (
            f"question {q.financebench_id[-3:]}: a labelled candidate the rerank dropped is not 'ranked below k'"
        )


def save_experiments(experiments: list[Experiment], path: Path | None = None) -> Path:
    """Write every experiment's settings and per-question hits to the scratch folder as JSON."""
    path = path or scratch_dir() / "filings-experiments.json"
    path.write_text(
        pretty_json(
            [
                {"name": e.name, "settings": e.settings, "hits": e.hits, "page_hit_rate": e.page_hit_rate}
                for e in experiments
            ]
        ),
        encoding="utf-8",
    )
    return path


def plot_page_hits(experiments: list[Experiment]) -> Any:
    """Plot page-hit@k against k, one line per chunk size and reranking switch; return the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.5))
    lines: dict[str, list[tuple[int, float]]] = {}
    for e in experiments:
        label = f"chunk {e.settings['chunk_size']}, rerank {'on' if e.settings['rerank'] else 'off'}"
        lines.setdefault(label, []).append((e.settings["k"], e.page_hit_rate))
    # Lines that share points stay visible: each has its own marker and dash, and the legend sits outside.
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":")]
    for n, (label, points) in enumerate(sorted(lines.items())):
        marker, dash = styles[n % len(styles)]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, linestyle=dash, label=label)
    ax.set_xlabel("k (passages given to the model)")
    ax.set_ylabel("page-hit@k")
    ax.set_ylim(0, 1.05)
    ax.set_xticks(sorted({e.settings["k"] for e in experiments}))
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, borderaxespad=0)
    ax.set_title("Labelled evidence page among the selected passages")
    fig.tight_layout()
    return fig


def page_hit_grid(experiments: list[Experiment]) -> Any:
    """Return the numbers behind `plot_page_hits`: one row per line, one column per k."""
    import pandas as pd

    rows = [
        {
            "chunk_size": e.settings["chunk_size"],
            "rerank": e.settings["rerank"],
            "k": e.settings["k"],
            "page_hit@k": e.page_hit_rate,
        }
        for e in experiments
    ]
    return pd.DataFrame(rows).pivot_table(index=["chunk_size", "rerank"], columns="k", values="page_hit@k")


def measured(run_id: str) -> Any:
    """Return, per path, what a captured run measured when it was recorded: requests, median latency and tokens."""
    import pandas as pd

    from labkit.recording import load_run

    rows = []
    for binding in load_run(run_id).bindings:
        question = binding.question or ""
        rows.append(
            {
                "path": "naive" if question.startswith("naive: ") else "rag",
                "latency_s": binding.latency_s,
                "prompt_tokens": binding.usage.prompt_tokens if binding.usage else None,
                "completion_tokens": binding.usage.completion_tokens if binding.usage else None,
                "finish_reason": ((binding.response or {}).get("choices") or [{}])[0].get("finish_reason"),
            }
        )
    table = pd.DataFrame(rows)
    return (
        table.groupby("path")
        .agg(
            requests=("latency_s", "size"),
            median_latency_s=("latency_s", "median"),
            median_prompt_tokens=("prompt_tokens", "median"),
            median_completion_tokens=("completion_tokens", "median"),
            cut_by_max_tokens=("finish_reason", lambda s: int((s == "length").sum())),
        )
        .round(2)
    )


def page_trap(rag: Any, questions: list[FilingQuestion], *, k: int = 5) -> dict[str, int]:
    """Measure the page-number trap: page-hit@k with the one-based labels, and had the adapter not converted them.

    The unconverted label of ``DOC#p23`` is ``DOC#p22``, FinanceBench's zero-based index read as a page.
    Returns ``converted``, ``unconverted`` (hits), ``n`` (answerable questions), and the questions where they
    disagree: ``converted_only`` and ``unconverted_only``, the counts `labkit.rag.metrics.paired_p` takes.
    """
    converted = unconverted = n = converted_only = unconverted_only = 0
    for q in questions:
        if not q.answerable:
            continue
        _, selected = rag.retrieve(q.question, k=k)
        sent = {s["citation_id"] for s in selected}
        early = {f"{doc}#p{int(page) - 1}" for doc, page in (p.rsplit("#p", 1) for p in q.evidence_pages)}
        hit, early_hit = bool(sent & set(q.evidence_pages)), bool(sent & early)
        converted += hit
        unconverted += early_hit
        converted_only += hit and not early_hit
        unconverted_only += early_hit and not hit
        n += 1
    return {
        "converted": converted,
        "unconverted": unconverted,
        "n": n,
        "converted_only": converted_only,
        "unconverted_only": unconverted_only,
    }


def year_twin_misses(rag: Any, questions: list[FilingQuestion], *, k: int = 5) -> tuple[list[str], list[str]]:
    """Return the retrieval misses at ``k`` (answerable questions with no labelled page sent) and, among them, those
    whose first search candidate is a page of the same company's filing of another year (its "year twin").

    Each list holds question ids (their last three digits), in question order.
    """
    misses, twins = [], []
    for q in questions:
        if not q.answerable:
            continue
        candidates, selected = rag.retrieve(q.question, k=k)
        if {s["citation_id"] for s in selected} & set(q.evidence_pages):
            continue
        misses.append(q.financebench_id[-3:])
        top = candidates[0]["citation_id"].split("#p")[0] if candidates else ""
        company, _ = q.doc_name.split("_", 1)
        if top != q.doc_name and top.split("_", 1)[0] == company:
            twins.append(q.financebench_id[-3:])
    return misses, twins


def filing_filter_hits(rag: Any, questions: list[FilingQuestion], *, k: int = 5) -> Any:
    """Return a table of the answerable questions: page hit at ``k`` from the shared store and from the same
    search filtered to the question's labelled filing (`FilingsRAG.retrieve`'s ``doc_name``), one row a question."""
    import pandas as pd

    rows = []
    for q in questions:
        if not q.answerable:
            continue
        sent = {
            store: {s["citation_id"] for s in rag.retrieve(q.question, k=k, doc_name=only)[1]}
            for store, only in (("shared store", None), ("its filing only", q.doc_name))
        }
        rows.append(
            {
                "question": q.financebench_id[-3:],
                **{store: bool(ids & set(q.evidence_pages)) for store, ids in sent.items()},
            }
        )
    return pd.DataFrame(rows).set_index("question")


def candidate_recall(rag: Any, questions: list[FilingQuestion]) -> tuple[int, int]:
    """Return candidate recall@12 as (hits, n): the answerable questions with a labelled page among the
    search's candidates (all `CANDIDATES` of them), the ceiling of any rerank of those candidates."""
    answerable = [q for q in questions if q.answerable]
    hits = sum(
        any(c["citation_id"] in q.evidence_pages for c in rag.retrieve(q.question, k=CANDIDATES)[0]) for q in answerable
    )
    return hits, len(answerable)


def answers_as_returned(questions: list[FilingQuestion], run: Any, *, origin: str, per_path: int = 3) -> Any:
    """Return the first ``per_path`` answers the model gave on each path, as they came back, with their grade.

    ``origin`` is the run's (``captured`` or ``authored``), written into the answer column's name.

    Failed trials and the application's own refusals (no model was asked) are left out; they are counted
    in `path_summary` and listed by `failures`.
    """
    import pandas as pd

    table = compare_paths(questions, run)
    by_id = {q.financebench_id: q for q in questions}
    rows = [
        {
            "path": path,
            "id": qid[-3:],
            "question": by_id[qid].question,
            "status": reply["status"],
            f"answer ({origin}, as it came back)": reply["answer"],
            "grade": table.loc[qid[-3:], path],
        }
        for path, replies in (("rag", run.rag), ("naive", run.naive))
        for qid, reply in sorted(replies.items())
        if reply and reply["status"] != "insufficient_evidence"
    ]
    frame = pd.DataFrame(rows).groupby("path", sort=False).head(per_path).set_index(["path", "id"])
    return text_table(frame)


def passages_sent(model_request: list[dict[str, str]]) -> Any:
    """Return the passages of a grounded request as the model received them: citation id, length and text."""
    import json

    import pandas as pd

    passages = json.loads(model_request[-1]["content"])["passages"]
    rows = [{"citation_id": p["citation_id"], "characters": len(p["text"]), "text": p["text"]} for p in passages]
    return text_table(pd.DataFrame(rows, columns=["citation_id", "characters", "text"]))


def replay(run_id: str) -> Any:
    """Return the model boundary of lesson 02's run ``run_id`` with the filings pipeline's settings (`connect`).

    In replay mode (the default) each request is answered from the recorded run; explore and live modes are
    the boundary's, as in every lesson.
    """
    from labkit.boundary import connect
    from labkit.rag.answer import SETTINGS

    return connect(run_id, lesson="02", settings=SETTINGS)


def question_examples(questions: list[FilingQuestion], ids: list[str]) -> Any:
    """Return the questions with these ids (the last three digits) as a table: type, question, answer, evidence pages."""
    import pandas as pd

    by_id = {q.financebench_id[-3:]: q for q in questions}
    rows = [
        {
            "id": i,
            "question_type": by_id[i].question_type,
            "question": by_id[i].question,
            "answer": by_id[i].answer,
            "evidence pages": ", ".join(sorted(by_id[i].evidence_pages)) or "none",
        }
        for i in ids
    ]
    return text_table(pd.DataFrame(rows).set_index("id"))


def raw_question(question_id: str) -> dict[str, Any]:
    """Return one question as the question file stores it (zero-based ``evidence_page_num``), before the adapter."""
    import json

    from labkit.rag.questions import questions_path

    for line in questions_path().read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["financebench_id"].endswith(question_id):
            return dict(record)
    raise KeyError(f"no question {question_id!r} in {questions_path().name}")


def descriptor_table(index: FilingsIndex) -> Any:
    """Return an index's descriptor as a one-column table, its PDFs counted (each has a SHA-256 fingerprint)."""
    import pandas as pd

    d = index.descriptor
    fields = d.model_dump(exclude={"documents"}) | {"PDFs fingerprinted": len(d.documents)}
    return pd.Series(fields, name="value").to_frame()


def refusal(error: BaseException) -> str:
    """Return an error as a learner reads it: its class and message, paths written relative (`portable_text`)."""
    from labkit.paths import portable_text

    return f"{type(error).__name__}: {portable_text(str(error))}"


def chunk_lengths(index: FilingsIndex) -> str:
    """Say how the splitter cut the filings: chunks, pages, median and shortest length, short and footer-only chunks.

    A chunk under `SHORT_PASSAGE` characters is a page's short remainder; a footer-only
    chunk holds nothing but the page footer (`FOOTER_ONLY`).
    """
    from statistics import median

    lengths = [len(c.page_content) for c in index.chunks]
    pages = {(c.metadata["doc_name"], c.metadata["source_page"]) for c in index.chunks}
    footers = sum(bool(FOOTER_ONLY.fullmatch(c.page_content)) for c in index.chunks)
    return (
        f"{len(lengths)} chunks over {len(pages)} pages; median length {median(lengths):.0f} characters,"
        f" shortest {min(lengths)}; {sum(n < SHORT_PASSAGE for n in lengths)} chunks under {SHORT_PASSAGE}"
        f" characters, {footers} of them only a page footer"
    )


def short_share(index: FilingsIndex, run: Any) -> tuple[int, int, int, int]:
    """Return (short chunks, chunks) in the index and (short passages, passages) sent on the run's RAG path.

    Short is under `SHORT_PASSAGE` characters; a chunk sent for several questions counts once per question.
    """
    sent = [p["chunk_text"] for r in run.rag.values() if r for p in r["retrieved"]]
    lengths = [len(c.page_content) for c in index.chunks]
    return (
        sum(n < SHORT_PASSAGE for n in lengths),
        len(lengths),
        sum(len(t) < SHORT_PASSAGE for t in sent),
        len(sent),
    )


def versus_counts(a: tuple[int, int], b: tuple[int, int]) -> str:
    """Say how rate ``a`` (hits, n) compares with rate ``b``: ``tie`` inside the 95% interval, else ``higher``/``lower``."""
    from labkit.rag.metrics import rate_verdicts

    verdicts = rate_verdicts({"a": a, "b": b})
    if "below" not in verdicts.values():
        return "tie"
    return "higher" if verdicts["a"] == "best" else "lower"


#: The retriever the bench compares the others with: the one `answer_with_rag` uses.
REFERENCE_RETRIEVER = "faiss+bm25"


def bench_counts(questions: list[FilingQuestion], shared: Any, own: Any, sample: Any) -> dict[str, dict[str, Any]]:
    """Return store -> retriever -> (hits, n) of page-hit@5 for the shared store, the single-document store and the
    FinanceBench sample (``shared``/``own``: `labkit.rag.retrievers.retrieve_all`'s; ``sample``: `load_results`')."""
    from labkit.rag.financebench.results import rows as financebench_rows
    from labkit.rag.retrievers import question_rows

    sets = {
        "shared store": question_rows(questions, shared, ks=(5,)),
        "single-document store": question_rows(questions, own, ks=(5,)),
        "FinanceBench sample, single-document (committed)": financebench_rows(sample),
    }
    return {
        store: {
            r: (sum(bool(x["page_hit@5"]) for x in rows if x["retriever"] == r), sum(x["retriever"] == r for x in rows))
            for r in dict.fromkeys(x["retriever"] for x in rows)
        }
        for store, rows in sets.items()
    }


def bench_experiment(questions: list[FilingQuestion], results: Any, retriever: str) -> Experiment:
    """Return one retriever of the bench (`labkit.rag.retrievers.retrieve_all`'s ``results``) as an `Experiment`:
    its page-hit@5 per answerable question, so exercise A's paired test can compare two retrievers."""
    from labkit.rag.retrievers import question_rows

    rows = question_rows(questions, {retriever: results[retriever]}, ks=(5,))
    return Experiment(retriever, {"retriever": retriever}, {r["id"]: bool(r["page_hit@5"]) for r in rows})


def paired_on_bench(paired_verdict: Any, questions: list[FilingQuestion], results: Any, a: str, b: str) -> str:
    """Say what exercise A's ``paired_verdict`` calls retriever ``a`` against ``b`` on one store of the bench, beside
    the interval rule's verdict and the disagreements the test weighs (`bench_experiment` makes each retriever).

    An unfinished exercise (``NotImplementedError``) is said, not raised, so the notebook runs on.
    """
    first, second = bench_experiment(questions, results, a), bench_experiment(questions, results, b)
    one_way, other_way = _disagreements(first, second)
    try:
        verdict = paired_verdict(first, second)
    except NotImplementedError:
        verdict = "not yet computed (finish exercise A)"
    return (
        f"`{a}` against `{b}`: the interval rule says {versus(first, second)}; your paired_verdict says {verdict}."
        f" `{a}` alone hits {one_way} question(s), `{b}` alone {other_way}: p = {paired_p(one_way, other_way):.3f}."
    )


def bench_table(questions: list[FilingQuestion], shared: Any, own: Any, sample: Any) -> Any:
    """Return the retriever bench as one table: per store, each retriever's page-hit@5 with its 95% interval and its
    verdict against `REFERENCE_RETRIEVER` (`versus_counts`: ``tie``, ``higher`` or ``lower``)."""
    import pandas as pd

    from labkit.rag.metrics import wilson_interval
    from labkit.tables import interval

    counts = bench_counts(questions, shared, own, sample)
    lines = []
    for retriever in counts["shared store"]:
        line: dict[Any, Any] = {"retriever": retriever}
        for store, per in counts.items():
            hits, n = per[retriever]
            line[(store, "page-hit@5")] = f"{hits}/{n} {interval(*wilson_interval(hits, n))}"
            line[(store, f"vs {REFERENCE_RETRIEVER}")] = (
                "(reference)"
                if retriever == REFERENCE_RETRIEVER
                else versus_counts((hits, n), per[REFERENCE_RETRIEVER])
            )
        lines.append(line)
    frame = pd.DataFrame(lines).set_index("retriever")
    frame.columns = pd.MultiIndex.from_tuples(list(frame.columns))
    return text_table(frame)


def figure_on_page(index: FilingsIndex, record: dict[str, Any], page: str, figure: str) -> str:
    """Say whether ``figure`` (as printed) is in the chunk of ``page`` that a record sent, in a candidate, or only in
    another chunk of the page.

    This is how a page-hit can still starve the model: the labelled page was selected, but the chunk of it
    that was sent does not hold the figure. When no candidate holds it either, the search lost it.
    """
    from labkit.rag.index import citation_id

    chunks = [c.page_content for c in index.chunks if citation_id(c.metadata) == page]
    sent = [r["chunk_text"] for r in record["retrieved"] if r["citation_id"] == page]
    found = index.store.similarity_search_with_score(record["question"], k=CANDIDATES)
    candidates = [doc.page_content for doc, _ in found if citation_id(doc.metadata) == page]
    return (
        f"{page}: {len(chunks)} chunks; {figure} printed in a chunk sent: {any(figure in t for t in sent)}"
        f" | in a candidate chunk: {any(figure in t for t in candidates)}"
        f" | in a chunk of the page: {any(figure in t for t in chunks)}"
    )


def figure_chunk_candidate(index: FilingsIndex, question: FilingQuestion) -> bool:
    """Return whether a chunk holding a labelled page's evidence text is among FAISS's 12 candidates.

    When it is not, the evidence was lost at the search, even if another chunk of the page was sent.
    """
    from labkit.rag.index import citation_id

    held = {e.citation_id: e.evidence_text for e in question.evidence}
    found = index.store.similarity_search_with_score(question.question, k=CANDIDATES)
    pages = [(citation_id(doc.metadata), doc.page_content) for doc, _ in found]
    return any(page in held and held[page] in text for page, text in pages)


def unprinted_references(questions: list[FilingQuestion], index: FilingsIndex) -> dict[str, list[float]]:
    """Return, per answerable question, the reference answer's figures that no chunk of its own filing prints.

    Such a figure is computed (a ratio, a margin, a sum). `labkit.rag.metrics.faithful` asks for every figure of
    an answer to be printed in a cited passage, so a reply that states it and cites its own filing is never
    faithful, even when it is correct. Questions whose figures are all printed are left out.
    """
    from labkit.rag.metrics import figures

    printed: dict[str, set[float]] = {}
    for chunk in index.chunks:
        found = {round(f, 4) for f in figures(chunk.page_content)}
        printed.setdefault(chunk.metadata["doc_name"], set()).update(found)
    missing = {}
    for q in questions:
        if q.answerable:
            unprinted = [f for f in figures(q.answer) if round(f, 4) not in printed.get(q.doc_name, set())]
            if unprinted:
                missing[q.financebench_id[-3:]] = unprinted
    return missing
