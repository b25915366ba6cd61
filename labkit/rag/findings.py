"""The sentences lesson 02b renders from its measurements, so that no figure is typed into its prose.

Each function takes what the notebook has already computed (a graded run, the experiments, the retrievers'
results, the FinanceBench sample) and returns Markdown whose every figure comes from those inputs, and whose
every verdict on two rates comes from the interval rule (`labkit.rag.metrics.rate_verdicts`): a rate inside
the higher one's 95% Wilson interval is a tie, and is printed as one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from statistics import median
from typing import Any

from labkit.rag.metrics import Experiment, rate_verdicts, unsupported_figures, wilson_interval
from labkit.rag.questions import FilingQuestion
from labkit.tables import interval

#: A chunk that is nothing but a page footer ("Company | DOC_NAME | page 7").
FOOTER_ONLY = re.compile(r"[^\n]+ \| \w+ \| page \d+")


def _markdown(text: str) -> Any:
    from IPython.display import Markdown

    return Markdown(text)


def _rate(hits: int, n: int) -> str:
    return f"{hits}/{n} {interval(*wilson_interval(hits, n))}"


def tie_or_difference(a: tuple[int, int], b: tuple[int, int]) -> str:
    """Say whether two rates given as (hits, n) tie: ``a tie`` or ``a difference outside the 95% interval``."""
    verdicts = rate_verdicts({"a": a, "b": b})
    return "a tie" if "below" not in verdicts.values() else "a difference outside the 95% interval"


def graded_examples(questions: list[FilingQuestion], run: Any) -> Any:
    """Render the four rows of a run where the three measurements disagree, and the totals' split.

    ``run`` is a replayed run (`labkit.rag.runs.make_requests`), graded here by `compare_paths`. Question 018's sentence names the figure the faithfulness check could not find in a cited passage
    and the labelled pages that were not sent, so the verdict's reason is the one the text gives.
    """
    from labkit.rag.lesson import compare_paths

    table = compare_paths(questions, run)
    by_id = {q.financebench_id[-3:]: q for q in questions}

    def record(qid: str) -> dict[str, Any]:
        return run.rag[by_id[qid].financebench_id] or {}

    def sent(qid: str) -> list[str]:
        return [p["citation_id"] for p in record(qid).get("retrieved", [])]

    r017, r018, r030 = record("017"), record("018"), record("030")
    missing = unsupported_figures(r018)
    not_sent = sorted(set(by_id["018"].evidence_pages) - set(sent("018")))
    lines = [
        f"- **017**, the plain case: `{table.loc['017', 'rag']}`, faithful `{table.loc['017', 'faithful']}`,"
        f" page hit `{table.loc['017', 'page_hit@5']}`; it cites {r017.get('cited_pages')}.",
        f"- **018**, `{table.loc['018', 'rag']}` but faithful `{table.loc['018', 'faithful']}`: *{r018.get('answer')}*"
        f" It cites {r018.get('cited_pages')}, which prints the debt; the figure no cited passage prints is"
        f" {', '.join(f'{f:g}' for f in missing) or 'none'}, the ratio the reply computed. That is the check's"
        " whole reason, and it would say the same of a correctly derived ratio. The check does not see the"
        f" other half of the ratio: the labelled page not sent, {', '.join(not_sent) or 'none'} (the FY2025"
        " balance sheet, with the equity the ratio divides by), so the reply's ratio rests on a figure it was"
        " never given.",
        f"- **030**, `{table.loc['030', 'rag']}` but faithful `{table.loc['030', 'faithful']}`: it asks about"
        f" {by_id['030'].doc_name}, and the shared store (one index over all six filings) selected another"
        f" company's page, {r030.get('cited_pages')}, whose figures the reply quotes: *{r030.get('answer')}*",
        f"- **005**, `{table.loc['005', 'kind']}`: the reply answers anyway, graded `{table.loc['005', 'rag']}`.",
    ]
    answerable = int((table.kind != "unanswerable").sum())
    for path in ("naive", "rag"):
        right = table[(table[path] == "correct")]
        if path == "rag":  # the app's own refusals are not the model's (app_refused)
            right = right[right.rag_status != "insufficient_evidence"]
        refusals = right[right.kind == "unanswerable"]
        lines.append(
            f"- `{path}`: {len(right)} correct = {len(refusals)} right refusals of unanswerable questions"
            f" ({', '.join(refusals.index) or 'none'}) + {len(right) - len(refusals)} right answers of"
            f" {answerable} answerable questions."
        )
    refused = table[table.rag == "refused"]
    texts = [p["chunk_text"] for r in run.rag.values() if r for p in r["retrieved"]]
    footers = sum(bool(FOOTER_ONLY.fullmatch(t)) for t in texts)
    lines.append(
        f"- The RAG path refused {len(refused)} answerable questions; the labelled page was selected for"
        f" {int(refused['page_hit@5'].fillna(False).astype(bool).sum())} of them. Of the {len(texts)} passages"
        f" sent, {sum(len(t) < 200 for t in texts)} are under 200 characters and {footers} nothing but a page"
        " footer."
    )
    return _markdown("\n".join(lines))


def captured_summary(questions: list[FilingQuestion], run: Any) -> Any:
    """Render what a run of a real model shows: failed trials, the app's refusals, correct answers per path
    with their intervals and tie verdict (vacuous when neither path has one), and the two stages graded apart.
    """
    from labkit.rag.answer import SETTINGS
    from labkit.rag.lesson import compare_paths, path_summary

    table = compare_paths(questions, run)
    totals = path_summary(questions, run).set_index("path")
    max_tokens = SETTINGS["max_tokens"]
    by_app = table[table.rag_status == "insufficient_evidence"]
    asked = {path: len(questions) - int(totals.loc[path, "app_refused"]) for path in ("naive", "rag")}
    correct = {path: (int(totals.loc[path, "correct"]), asked[path]) for path in asked}
    verdict = tie_or_difference(correct["naive"], correct["rag"])
    vacuous = not any(hits for hits, _ in correct.values())
    answerable = table[table["page_hit@5"].notna()]
    hit = answerable["page_hit@5"].astype(bool)
    hit_correct = int((answerable[hit].rag == "correct").sum())
    return _markdown(
        f"Of the times the model was asked, {totals.loc['naive', 'failed']} of {asked['naive']} baseline trials"
        f" and {totals.loc['rag', 'failed']} of {asked['rag']} RAG trials failed the reply contract (a `Reply`"
        f" object citing only passages sent; token budget {max_tokens}). The application declined"
        f" {len(by_app)} RAG question(s) itself ({', '.join(by_app.index) or 'none'}), which the model is not"
        f" credited with. Correct answers: baseline {_rate(*correct['naive'])}, RAG {_rate(*correct['rag'])}:"
        f" **{verdict}**"
        + (
            ", and a vacuous one: with no correct answer on either path, this run cannot show what retrieval"
            " adds for this model"
            if vacuous
            else ""
        )
        + f". Retrieval put a labelled page before the model for {int(hit.sum())} of {len(answerable)}"
        f" answerable questions, and the model was correct on {hit_correct} of those"
        + (": there generation failed where retrieval had not." if hit.any() and not hit_correct else ".")
    )


def separable(hits: int, n: int) -> tuple[int, int]:
    """Return the nearest hit counts over ``n`` that the interval rule separates from ``hits``: (below, above).

    Below: the largest count under the interval of ``hits``; above: the smallest count whose own interval
    leaves ``hits`` out. -1 or n + 1 when no count on that side is separable.
    """
    below = max((h for h in range(hits) if tie_or_difference((hits, n), (h, n)) != "a tie"), default=-1)
    above = min((h for h in range(hits + 1, n + 1) if tie_or_difference((hits, n), (h, n)) != "a tie"), default=n + 1)
    return below, above


def experiments_summary(experiments: list[Experiment], trap: Mapping[str, int]) -> Any:
    """Render what the one-variable experiments can separate at their n, their verdicts, and the page trap.

    ``trap`` is `labkit.rag.lesson.page_trap`'s: the baseline's hits with the converted and unconverted labels.
    """
    from labkit.rag.lesson import KS, one_variable, versus

    base = {(e.settings["k"], e.settings["chunk_size"], e.settings["rerank"]): e for e in experiments}
    on, off = base[(5, 800, True)], base[(5, 800, False)]
    hits, n = sum(on.hits.values()), len(on.hits)
    below, above = separable(hits, n)
    chunk = {k: versus(base[(k, 300, True)], base[(k, 800, True)]) for k in KS}
    one = one_variable(experiments)
    single = sorted(set(one.vs_baseline) - {"baseline"})
    apart = [f"`{e.name}` ({versus(e, on)})" for e in experiments if versus(e, on) not in ("tie", "baseline")]
    return _markdown(
        f"**What n = {n} can separate.** The baseline finds a labelled page for {_rate(hits, n)}. By the"
        f" interval rule a setting would need {below if below >= 0 else 'no'} hits or fewer, or {above} or"
        f" more, to differ from it: a difference of {min(hits - below, above - hits)} questions at the"
        f" least. The one-variable changes above are all `{'`, `'.join(single)}`"
        + (" with it" if single == ["tie"] else "")
        + f"; of the {len(experiments)} settings of the whole grid, those that differ from the baseline change"
        f" more than one setting: {'; '.join(apart) or 'none'}. So these experiments show the method, not a"
        f" winner: reranking on ({sum(on.hits.values())}) against off ({sum(off.hits.values())}) is"
        f" `{versus(on, off)}`; 300- against 800-character chunks at k = {', '.join(map(str, KS))}:"
        f" {', '.join(f'`{v}`' for v in chunk.values())}. **The page-number trap, measured:** with the"
        f" unconverted zero-based labels the baseline would score {trap['unconverted']}/{trap['n']}"
        f" instead of {trap['converted']}/{trap['n']}."
    )


def retriever_summary(questions: list[FilingQuestion], shared: Any, own: Any) -> Any:
    """Render the three retrievers' comparison on both stores: page-hit@5 counts with verdicts, the
    question-by-question wins and losses, the rerank's ceiling, and shared against single-document store.

    ``shared`` and ``own`` are `labkit.rag.retrievers.retrieve_all`'s results for the two scopes.
    """
    from labkit.rag.retrievers import head_to_head, question_rows, question_type, wins_and_losses

    def counts(results: Any) -> dict[str, tuple[int, int]]:
        rows = question_rows(questions, results, ks=(5,))
        names = dict.fromkeys(r["retriever"] for r in rows)
        return {
            name: (
                sum(r["page_hit@5"] for r in rows if r["retriever"] == name),
                sum(r["retriever"] == name for r in rows),
            )
            for name in names
        }

    def verdicts(part: Mapping[str, tuple[int, int]]) -> str:
        v = rate_verdicts(part)
        return "; ".join(f"`{name}` {hits}/{n} `{v[name]}`" for name, (hits, n) in part.items())

    in_shared, in_own = counts(shared), counts(own)
    duel = head_to_head(questions, shared, k=5, kind=question_type)
    rerank = wins_and_losses(duel, better="faiss+bm25", than="faiss")
    hybrid = wins_and_losses(duel, better="hybrid", than="faiss+bm25")
    rows = question_rows(questions, shared, ks=(5,))
    staged = [r["candidate_hit"] for r in rows if r["candidate_hit"] is not None]
    scopes = "; ".join(
        f"`{name}` {in_shared[name][0]} shared against {in_own[name][0]} single-document:"
        f" {tie_or_difference(in_shared[name], in_own[name])}"
        for name in in_shared
    )
    own_verdicts = rate_verdicts(in_own)
    best = [name for name, v in own_verdicts.items() if v == "best"]
    behind = [name for name, v in own_verdicts.items() if v == "below"]
    separated = (
        f" There `{'`, `'.join(best)}` lead `{'`, `'.join(behind)}` outside the interval"
        f" ({in_own[best[0]][0]} against {in_own[behind[0]][0]} of {in_own[best[0]][1]}): over all labelled"
        " questions, the one retriever difference these filings show, on the store that searches one filing."
        if behind
        else ""
    )
    return _markdown(
        f"**Shared store**, page-hit@5 over the {next(iter(in_shared.values()))[1]} labelled questions:"
        f" {verdicts(in_shared)}. Question by question the rerank wins {rerank['wins']} and loses"
        f" {rerank['losses']} against FAISS, the hybrid {hybrid['wins']} and {hybrid['losses']} against the"
        f" rerank; the rerank's ceiling, its candidate recall@12, is {sum(staged)}/{len(staged)}."
        f" **Single-document store:** {verdicts(in_own)}.{separated} **Shared against single-document:** {scopes}."
        " Searching only the question's own filing is the change these data do separate: in the shared store"
        " another company's page can crowd out the question's own, as for question 030 above. (A shared"
        " store in a real deployment also needs per-user permissions, the book's caveat; this lesson has"
        " none.)"
    )


def financebench_summary(sample: Any, questions: list[FilingQuestion], own: Any) -> Any:
    """Render the FinanceBench sample beside the fictional filings: retriever verdicts within each set, the
    sets' difference per retriever, and what confounds that difference (question mix, context line, length).

    ``sample`` is `labkit.rag.financebench.results.load_results`'s; ``own`` the single-document results.
    """
    from labkit.rag.financebench.results import rows as financebench_rows
    from labkit.rag.financebench.results import side_by_side
    from labkit.rag.retrievers import question_rows

    sets = {
        "fictional filings": question_rows(questions, own, ks=(5,)),
        "FinanceBench sample": financebench_rows(sample),
    }
    both = side_by_side(sets, k=5)
    lines = []
    for name, rows in sets.items():
        part = {
            r: (sum(x["page_hit@5"] for x in rows if x["retriever"] == r), sum(x["retriever"] == r for x in rows))
            for r in dict.fromkeys(x["retriever"] for x in rows)
        }
        v = rate_verdicts(part)
        lines.append(
            f"- **{name}**, the three retrievers: "
            + "; ".join(f"`{r}` {_rate(*c)} `{v[r]}`" for r, c in part.items())
            + (": the data separate no retriever." if "below" not in v.values() else ".")
        )
    lines.append(
        "- **Between the sets**, per retriever: "
        + "; ".join(f"`{r}` {both.loc[r, ('difference', '')]}" for r in both.index)
        + "."
    )
    n = {name: len({x["id"] for x in rows}) for name, rows in sets.items()}
    novel = {name: len({x["id"] for x in rows if x["kind"] == "novel-generated"}) for name, rows in sets.items()}
    pages = [d["pages"] for d in sample.documents.values()]
    lines.append(
        "- **Not like with like.** A difference between the sets mixes the corpus with three other changes:"
        f" the mix of question types (novel-generated {novel['FinanceBench sample']} of"
        f" {n['FinanceBench sample']} there, {novel['fictional filings']} of {n['fictional filings']} here);"
        " FinanceBench's chunks carry a context line naming company, kind and period, which these do not;"
        f" and its documents run from {min(pages)} to {max(pages)} pages (median {median(pages):g}) against 25"
        " here."
    )
    return _markdown("\n".join(lines))
