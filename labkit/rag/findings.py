"""The sentences lesson 02b renders from its measurements, so that no figure is typed into its prose.

Each function takes what the notebook has already computed (a graded run, the experiments, the retrievers'
results, the FinanceBench sample) and returns Markdown whose every figure comes from those inputs, and whose
every verdict on two rates comes from the interval rule (`labkit.rag.metrics.rate_verdicts`): a rate inside
the higher one's 95% Wilson interval is a tie, and is printed as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labkit.errors import ReadingOutdated
from labkit.rag.metrics import Experiment, figures, rate_verdicts, unsupported_figures, wilson_interval
from labkit.rag.questions import FilingQuestion
from labkit.tables import interval


def _require(holds: bool, claim: str) -> None:
    if not holds:
        raise ReadingOutdated(
            f"the recorded run no longer shows that {claim}; read the run's tables again and rewrite "
            "this sentence in labkit/rag/findings.py"
        )


def _markdown(text: str) -> Any:
    from IPython.display import Markdown

    return Markdown(text)


def _rate(hits: int, n: int) -> str:
    return f"{hits}/{n} {interval(*wilson_interval(hits, n))}"


def tie_or_difference(a: tuple[int, int], b: tuple[int, int]) -> str:
    """Say whether two rates given as (hits, n) tie: ``a tie`` or ``a difference outside the 95% interval``."""
    verdicts = rate_verdicts({"a": a, "b": b})
    return "a tie" if "below" not in verdicts.values() else "a difference outside the 95% interval"


def graded_examples(questions: list[FilingQuestion], run: Any, *, origin: str = "authored") -> Any:
    """Render four graded rows of a run (017 where the measures agree, 018 and 030 where they disagree, 005
    unanswerable) and the split of each path's correct count into right refusals and right answers.

    Each quoted reply is labelled with the run's ``origin`` (``authored`` or ``captured``).

    ``run`` is a replayed run (`labkit.rag.runs.make_requests`), graded here by `compare_paths`. Question 018's line
    names the figure the faithfulness check found in no cited passage, and the labelled pages that were not sent.
    """
    from labkit.rag.lesson import compare_paths

    table = compare_paths(questions, run)
    by_id = {q.financebench_id[-3:]: q for q in questions}

    def record(qid: str) -> dict[str, Any]:
        return run.rag[by_id[qid].financebench_id] or {}

    r018, r030 = record("018"), record("030")
    row017 = table.loc["017"]
    held = [bool(v) if v is not None and v == v else False for v in (row017["faithful"], row017["page_hit@5"])]
    _require(row017["rag"] == "correct" and all(held), "017 is correct, faithful and a page hit")
    companies030 = {page.split("_")[0] for page in r030.get("cited_pages", [])}
    asked030 = by_id["030"].doc_name.split("_")[0]
    _require(bool(companies030) and asked030 not in companies030, "030 cites only another company's pages")
    missing = ", ".join(f"{f:g}" for f in unsupported_figures(r018)) or "none"
    sent = {p["citation_id"] for p in r018.get("retrieved", [])}
    not_sent = ", ".join(sorted(set(by_id["018"].evidence_pages) - sent)) or "none"
    lines = [
        f"- **017**: `{table.loc['017', 'rag']}`, faithful `{table.loc['017', 'faithful']}`, page hit"
        f" `{table.loc['017', 'page_hit@5']}`. The three measures agree.",
        f"- **018**: `{table.loc['018', 'rag']}` but faithful `{table.loc['018', 'faithful']}`."
        f" Its {origin} reply: *{r018.get('answer')}* No cited passage prints {missing}."
        + _equity_reading(r018, not_sent),
        f"- **030**: `{table.loc['030', 'rag']}` but faithful `{table.loc['030', 'faithful']}`. It asks about"
        f" {by_id['030'].doc_name}; its {origin} reply quotes another company's page,"
        f" {', '.join(r030.get('cited_pages', []))}:"
        f" *{r030.get('answer')}*",
        f"- **005**: `{table.loc['005', 'kind']}`, answered anyway: `{table.loc['005', 'rag']}`.",
    ]
    answerable = int((table.kind != "unanswerable").sum())
    for path in ("naive", "rag"):
        right = table[(table[path] == "correct")]
        if path == "rag":  # the app's own refusals are not the model's (app_refused)
            right = right[right.rag_status != "insufficient_evidence"]
        refusals = right[right.kind == "unanswerable"]
        lines.append(
            f"- `{path}`: {len(right)} correct = {len(refusals)} right refusals"
            f" ({', '.join(refusals.index) or 'none'}) + {len(right) - len(refusals)} right answers of"
            f" {answerable} answerable questions."
        )
    refused = table[table.rag == "refused"]
    lines.append(
        f"- `rag` refused {len(refused)} answerable questions; the labelled page was sent for"
        f" {int(refused['page_hit@5'].fillna(False).astype(bool).sum())} of them."
    )
    return _markdown("\n".join(lines))


def uncited_reading(run: Any) -> Any:
    """Render why a run's RAG replies are unfaithful: how many of those `faithful` can check cite no page.

    A reply that cites nothing has no cited passage to print its figures, so `faithful` says False whatever
    the figures are: such a False measures the missing citation, not an unsupported figure.
    """
    from labkit.rag.metrics import faithful

    checked = {qid: r for qid, r in run.rag.items() if faithful(r) is not None}
    uncited = [qid[-3:] for qid, r in checked.items() if not r["cited_pages"]]
    unfaithful = sum(faithful(r) is False for r in checked.values())
    return _markdown(
        f"`faithful` could check {len(checked)} captured RAG replies (an answer stating a figure) and calls"
        f" {unfaithful} of them False. {len(uncited)} of the {len(checked)} cite no page at all"
        f"{' (' + ', '.join(sorted(uncited)) + ')' if uncited else ''}: with nothing cited, no cited passage"
        " can print a figure, so their False says only that the model cited nothing, not whether the passages"
        " it was sent print its figures."
    )


def separable(hits: int, n: int) -> tuple[int, int]:
    """Return the nearest hit counts over ``n`` that the interval rule separates from ``hits``: (below, above).

    Below: the largest count under the interval of ``hits``; above: the smallest count whose own interval
    leaves ``hits`` out. -1 or n + 1 when no count on that side is separable.
    """
    below = max((h for h in range(hits) if tie_or_difference((hits, n), (h, n)) != "a tie"), default=-1)
    above = min((h for h in range(hits + 1, n + 1) if tie_or_difference((hits, n), (h, n)) != "a tie"), default=n + 1)
    return below, above


def power(hits: int, n: int, below: int, above: int) -> str:
    """Say how many hits a setting must lose or gain to differ from ``hits`` of ``n`` (`separable`'s counts)."""
    moves = []
    if below >= 0:
        moves.append(f"lose {hits - below}")
    if above <= n:
        moves.append(f"gain {above - hits}")
    return f": {n} questions can show only a change that moves it that far, {' or '.join(moves)}" if moves else ""


def experiments_summary(experiments: list[Experiment]) -> Any:
    """Render what the one-variable experiments can separate at their n, and which settings the interval rule reads
    as apart from the baseline, each labelled as that rule's reading (exercise A's paired test is the one to trust).
    """
    from labkit.rag.lesson import one_variable, versus

    on = next(e for e in experiments if e.settings == {**e.settings, "k": 5, "chunk_size": 800, "rerank": True})
    hits, n = sum(on.hits.values()), len(on.hits)
    below, above = separable(hits, n)
    single = sorted(set(one_variable(experiments).vs_baseline) - {"baseline"})
    where = {"lower": "below the baseline's interval", "higher": "the baseline below its interval"}
    apart = [f"`{e.name}` ({where[versus(e, on)]})" for e in experiments if versus(e, on) in where]
    verdicts = (
        "Every one-variable change above ties with it."
        if single == ["tie"]
        else f"The one-variable changes above are `{'`, `'.join(single)}`."
    )
    return _markdown(
        f"The baseline finds a labelled page for {_rate(hits, n)}. By the interval rule, a setting needs"
        f" {below if below >= 0 else 'no'} hits or fewer, or {above} or more, to differ from it"
        f"{power(hits, n, below, above)}. {verdicts}"
        f" Of all {len(experiments)} settings, the interval rule reads {len(apart)} as apart from the baseline:"
        f" {'; '.join(apart) or 'none'}. That is the interval rule's reading, not a test."
    )


def unprinted_reading(questions: list[FilingQuestion], index: Any) -> Any:
    """Say how many answerable questions have a reference figure that no page of their own filing prints.

    A reply that states such a computed figure is never faithful (figures printed in a cited passage) when it
    cites its own filing, even when it is correct: see `labkit.rag.lesson.unprinted_references`.
    """
    from labkit.rag.lesson import unprinted_references

    missing = unprinted_references(questions, index)
    answerable = sum(q.answerable for q in questions)
    return _markdown(
        f"For {len(missing)} of the {answerable} answerable questions ({', '.join(missing)}), no page of the"
        " question's own filing prints the reference figure: it is computed. A reply that states that figure and"
        " cites its own filing is never faithful, even when it is correct."
    )


def _equity_reading(record: dict[str, Any], not_sent: str) -> str:
    """Say which shareholders' equity the passages sent print, and the ratio the reply's debt gives against it."""
    equity = [
        (item["citation_id"], figures(line)[0])
        for item in record.get("retrieved", [])
        for line in item["chunk_text"].splitlines()
        if line.lower().startswith("total shareholders' equity") and figures(line)
    ]
    debt = [f for f in figures(record.get("answer") or "") if f > 1]
    if not equity or not debt:
        return f" The labelled page not sent: {not_sent}."
    _require(len(equity) == 1, f"the passages sent for 018 print one equity figure (they print {len(equity)})")
    page, value = equity[0]
    year = page.split("_")[1]  # a balance sheet's first column is its own filing's year
    return (
        f" The only equity figure sent is FY{year}'s {value:,.1f}, on {page}: {debt[0]:,.1f}/{value:,.1f}"
        f" = {debt[0] / value:.2f}. The equity of the year asked is on {not_sent}, which was not sent. So the reply"
        " states a figure its passages do not support, and faithful is `False`; for this computed ratio it would be"
        " `False` for a right reply too, since no page prints it."
    )


def bench_reading(questions: list[FilingQuestion], shared: Any, own: Any, sample: Any) -> Any:
    """Render the one reading of the retriever bench (`labkit.rag.lesson.bench_table`): the verdicts per store
    against the reference retriever, the rerank's ceiling, and why neither other store generalizes.

    The bench's retrievers rank distinct pages, so no count of theirs is set against the one-variable experiments'.
    """
    from labkit.rag.lesson import REFERENCE_RETRIEVER, bench_counts, versus_counts
    from labkit.rag.retrievers import question_rows

    counts = bench_counts(questions, shared, own, sample)
    lines = []
    for store, per in counts.items():
        apart = [
            f"`{r}` is {versus_counts(c, per[REFERENCE_RETRIEVER])}"
            for r, c in per.items()
            if r != REFERENCE_RETRIEVER and versus_counts(c, per[REFERENCE_RETRIEVER]) != "tie"
        ]
        lines.append(
            f"- **{store}**: "
            + (
                f"{'; '.join(apart)} than `{REFERENCE_RETRIEVER}` by the interval rule, which exercise A showed"
                " too generous."
                if apart
                else f"every retriever ties with `{REFERENCE_RETRIEVER}`."
            )
        )
    staged = [r["candidate_hit"] for r in question_rows(questions, shared, ks=(5,)) if r["candidate_hit"] is not None]
    lines.append(
        f"- The rerank's ceiling on the shared store, its candidate recall@12, is {sum(staged)}/{len(staged)}:"
        " no reordering of FAISS's twelve candidates can send a labelled page for more questions than that."
    )
    lines.append(
        "- The single-document store is told each question's filing. A deployment must first find that filing,"
        " so its rates bound a pipeline that searches for the filing first. They are no reason to build one store per"
        " filing."
    )
    n = sample.counts
    novel = len({r["id"] for r in _sample_rows(sample) if r["kind"] == "novel-generated"})
    lines.append(
        f"- The FinanceBench sample holds {n['measured']} of FinanceBench's {n['questions']} questions (those whose"
        f" PDF the sample has), over {n['documents_measured']} filings; {novel} of the {n['measured']} are novel-generated."
        " It is not representative of FinanceBench, and its chunking differs from ours: a context line added to"
        " each of its chunks names company, kind and period, where here only a page's last chunk does, in its"
        " footer. So read its column on its own, not against the other two."
    )
    return _markdown("\n".join(lines))


def _sample_rows(sample: Any) -> list[dict[str, Any]]:
    from labkit.rag.financebench.results import rows

    return rows(sample)


def partial_reading(questions: list[FilingQuestion], runs: Mapping[str, Any]) -> Any:
    """Say why column ``partial`` reads what it does: only a reference with two figures or more can be met in part.

    ``runs`` maps a label to a replayed run (`labkit.rag.runs.make_requests`); both paths of each are graded.
    """
    from collections import Counter

    from labkit.rag.metrics import correctness

    multi = [q for q in questions if q.answerable and len(figures(q.answer)) > 1]
    outcomes = Counter(
        correctness(q, getattr(run, path).get(q.financebench_id))
        for run in runs.values()
        for path in ("naive", "rag")
        for q in multi
    )
    ids = ", ".join(q.financebench_id[-3:] for q in multi)
    answerable = sum(q.answerable for q in questions)
    seen = "; ".join(f"{outcome} {count}" for outcome, count in sorted(outcomes.items()))
    return _markdown(
        f"`partial` needs an answer that states some, not all, of a reference's figures, so only a reference with"
        f" two figures or more can be met in part: {len(multi)} of the {answerable} answerable references"
        f" ({ids}). Their {sum(outcomes.values())} trials in these runs were: {seen or 'none'}."
        + ("" if outcomes["partial"] else " None states one figure without the other, hence the 0.")
    )


def retrieval_reading(questions: list[FilingQuestion], run: Any, index: Any) -> Any:
    """Say what the RAG row's evidence recall@5 and MRR mean on this run, and how short passages are spread.

    Evidence recall falls below the page-hit rate for the hits that sent only some of their labelled pages; MRR
    averages 1/rank over every answerable question, so it is split into the questions whose labelled page the
    rerank ranks first, those it ranks lower and those with none (each a 0). The short-passage line compares the
    share of chunks under `SHORT_PASSAGE` characters in the index with their share of the passages sent
    (`lesson.short_share`), and offers BM25's length normalisation as a hypothesis only.
    """
    from labkit.rag.lesson import SHORT_PASSAGE, short_share
    from labkit.rag.metrics import retrieval_scores

    scores = {
        q.financebench_id[-3:]: retrieval_scores(q, run.retrieval[q.financebench_id]) for q in questions if q.answerable
    }
    hits = [qid for qid, s in scores.items() if s["page_hit"]]
    some = [qid for qid in hits if scores[qid]["evidence_recall"] < 1]
    first = [qid for qid, s in scores.items() if s["reciprocal_rank"] == 1]
    lower = {qid: round(1 / s["reciprocal_rank"]) for qid, s in scores.items() if 0 < s["reciprocal_rank"] < 1}
    n = len(scores)
    short, chunks, short_sent, sent = short_share(index, run)
    return _markdown(
        f"**Evidence recall@5** is below page-hit@5's rate because {len(some)} of the {len(hits)} hits sent only"
        f" some of their labelled pages ({', '.join(some) or 'none'}). **MRR** averages 1/rank over all {n}"
        f" answerable questions: {len(first)} have a labelled page first in the rerank's order"
        f" ({', '.join(first) or 'none'}), {len(lower)} have one lower (ranks"
        f" {', '.join(str(r) for r in sorted(lower.values())) or 'none'}), and the other {n - len(first) - len(lower)}"
        f" have none and count 0. **Short passages**: {short / chunks:.0%} of the index's chunks are under"
        f" {SHORT_PASSAGE} characters, but {short_sent / sent:.0%} of the passages sent. A hypothesis, not tested"
        " here: BM25 scores long passages less (its length normalisation), so the rerank may favour fragments."
    )
