"""What notebook 02b calls: open both indexes, replay a run on both paths, run the experiments, plot.

Each function is a few lines over `labkit.rag`'s parts, so that a notebook cell reads as the lesson's
steps (``answer_with_rag``, grade, experiment) and the logic stays tested here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labkit.canonical import pretty_json
from labkit.paths import scratch_dir
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
from labkit.rag.metrics import Experiment, grade, page_hit, summary
from labkit.rag.questions import FilingQuestion
from labkit.tables import text_table

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
    from labkit.rag.metrics import rate_verdicts

    if experiment is baseline:
        return "baseline"
    counts = {name: (sum(e.hits.values()), len(e.hits)) for name, e in (("exp", experiment), ("base", baseline))}
    verdicts = rate_verdicts(counts)
    if "below" not in verdicts.values():
        return "tie"
    return "higher" if verdicts["exp"] == "best" else "lower"


def one_variable(experiments: list[Experiment], *, k: int = 5, chunk_size: int = CHUNKING[0]) -> Any:
    """Return the experiments that change one setting from the baseline (k=5, chunk 800, reranking on).

    Each row has its page-hit rate's 95% Wilson interval (``ci95``) and ``vs_baseline`` (`versus`): a
    difference inside the interval is printed as a tie.
    """
    from labkit.rag.metrics import experiments_table, wilson_interval
    from labkit.tables import interval

    def varies(e: Experiment) -> str | None:
        s = e.settings
        changed = [name for name, base in (("k", k), ("chunk_size", chunk_size), ("rerank", True)) if s[name] != base]
        return "baseline" if not changed else changed[0] if len(changed) == 1 else None

    chosen = [(varies(e), e) for e in experiments if varies(e)]
    baseline = next(e for v, e in chosen if v == "baseline")
    table = experiments_table([e for _, e in chosen])
    table.insert(0, "varies", [v for v, _ in chosen])
    table["ci95"] = [interval(*wilson_interval(sum(e.hits.values()), len(e.hits))) for _, e in chosen]
    table["vs_baseline"] = [versus(e, baseline) for _, e in chosen]
    return table.sort_values(["varies", "k", "chunk_size", "rerank"], ignore_index=True)


def check_where_lost(
    where_lost: Any, questions: list[FilingQuestion], indexes: dict[int, FilingsIndex], experiments: list[Experiment]
) -> None:
    """Check exercise B's ``where_lost(rag, question, *, k)``; raise AssertionError at the first wrong answer.

    For both chunk sizes, reranking on and off, and every k in `KS`, the questions it calls ``selected`` must be
    exactly that experiment's hits. The questions it calls ``not a candidate`` must be exactly those with no
    labelled page among FAISS's 12 candidates, as the retriever bench (`labkit.rag.retrievers`) finds them on
    the shared 800-character index, at every k and with reranking on or off.
    """
    from labkit.rag.answer import FilingsRAG
    from labkit.rag.retrievers import question_rows, retrieve_all

    stages = {"selected", "ranked below k", "not a candidate"}
    labelled = [q for q in questions if q.answerable]
    base = {(e.settings["k"], e.settings["chunk_size"], e.settings["rerank"]): e for e in experiments}
    rows = question_rows(labelled, retrieve_all(labelled, indexes[CHUNKING[0]], scope="shared"), ks=(5,))
    never = {r["id"] for r in rows if r["retriever"] == "faiss+bm25" and not r["candidate_hit"]}
    for size, index in indexes.items():
        for rerank in (True, False):
            rag = FilingsRAG(index, model=None, rerank=rerank)
            for k in KS:
                got = {q.financebench_id: where_lost(rag, q, k=k) for q in labelled}
                assert set(got.values()) <= stages, f"where_lost returns one of {sorted(stages)}"
                hits = {qid: stage == "selected" for qid, stage in got.items()}
                assert hits == base[(k, size, rerank)].hits, f"'selected' is wrong at k={k}, chunk={size}"
                if size == CHUNKING[0]:
                    out = {qid for qid, stage in got.items() if stage == "not a candidate"}
                    assert out == never, f"'not a candidate' is wrong at k={k}, rerank={rerank}"


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
    Returns ``converted``, ``unconverted`` (hits) and ``n`` (answerable questions).
    """
    converted = unconverted = n = 0
    for q in questions:
        if not q.answerable:
            continue
        _, selected = rag.retrieve(q.question, k=k)
        sent = {s["citation_id"] for s in selected}
        early = {f"{doc}#p{int(page) - 1}" for doc, page in (p.rsplit("#p", 1) for p in q.evidence_pages)}
        converted += bool(sent & set(q.evidence_pages))
        unconverted += bool(sent & early)
        n += 1
    return {"converted": converted, "unconverted": unconverted, "n": n}


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
