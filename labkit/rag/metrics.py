"""Grade each question separately for correctness, faithfulness and page-hit@k, and run one-variable experiments.

- **correctness**: every figure of the reference answer must appear in the answer within `TOLERANCE`
  (relative 0.5%, at least 0.005 absolute; signs and units are ignored, so "2.37 billion" does not match
  "2,374.4 million"); ``partial`` when only some do. A refusal is counted as ``refused`` on an answerable question and as ``correct`` on a
  question the filings cannot answer; an answer to such a question is ``wrong``; a reply that broke the
  contract is ``failed``.
- **faithfulness**: every figure in the answer appears, as printed, in a passage the answer cites
  (``None`` when there is nothing to check: no answer, or an answer that states no figure; `summary` counts
  those apart instead of crediting them). A figure the model computed is therefore unfaithful even when
  it is right: the check sees support, not arithmetic.
- **retrieval** (`Retrieval`, `retrieval_scores`): page-hit@k (a labelled evidence page is among the first ``k``
  passages given to the model), recall of the evidence pages at ``k`` and the reciprocal rank of the first
  evidence page. They are computed from retrieval alone, recorded for every question before generation, so a
  trial whose reply failed still has its retrieval graded (``None`` only for questions with no labelled page).
- **intervals and ties** (`wilson_interval`, `rate_verdicts`): a rate over n questions comes with its 95% Wilson
  interval (scipy's ``binomtest(k, n).proportion_ci(method="wilson")``), and a rate inside the best one's
  interval is printed as a tie with it, by the code, not by a sentence typed once.
Years (1900-2099 written without separators) are not counted as figures.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.rag.questions import FilingQuestion
from labkit.tables import text_table
from labkit.trials import wilson

#: Relative tolerance of a numeric answer, and the smallest absolute one.
TOLERANCE = (0.005, 0.005)
_FIGURE = re.compile(r"(?<![\w#])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w#])\d+(?:\.\d+)?")
_CITATION = re.compile(r"[A-Za-z0-9_.&\-]+#p\d+")
#: How a rate over no eligible case is printed (never as 0/0 or 0.0).
NO_ELIGIBLE = "n/a (0 eligible)"
#: The status of an answer the application produced without asking the model (nothing was selected).
APP_REFUSAL = "insufficient_evidence"


def figures(text: str | None) -> list[float]:
    """Return the numbers written in ``text`` (commas removed), leaving out years and citation ids."""
    found = []
    for match in _FIGURE.findall(_CITATION.sub(" ", text or "")):
        if re.fullmatch(r"(19|20)\d\d", match):
            continue
        found.append(float(match.replace(",", "")))
    return found


def close_enough(got: float, want: float) -> bool:
    """Return whether ``got`` matches the reference figure ``want``: within 0.5% of it, or 0.005 (`TOLERANCE`)."""
    return abs(got - want) <= max(TOLERANCE[0] * abs(want), TOLERANCE[1])


def correctness(question: FilingQuestion, record: dict[str, Any] | None) -> str:
    """Return ``correct``, ``partial``, ``wrong``, ``refused`` or ``failed`` for one answer record (None: failed trial)."""
    if record is None:
        return "failed"
    refused = record["status"] in ("refused", APP_REFUSAL)
    if not question.answerable:
        return "correct" if refused else "wrong"
    if refused:
        return "refused"
    got = figures(record["answer"])
    found = [any(close_enough(g, want) for g in got) for want in figures(question.answer)]
    return "correct" if all(found) else "partial" if any(found) else "wrong"


def unsupported_figures(record: Mapping[str, Any] | None) -> list[float]:
    """Return the figures of an answer that no passage it cites prints: why `faithful` says False.

    Empty when there is nothing to check (no answer) or every figure is printed. A figure the model computed
    (a ratio, a sum) is printed nowhere, so it lands here even when it is right.
    """
    if record is None or record["status"] != "answered":
        return []
    cited = set(record["cited_pages"])
    printed = {
        round(f, 4) for item in record["retrieved"] if item["citation_id"] in cited for f in figures(item["chunk_text"])
    }
    return [f for f in figures(record["answer"]) if round(f, 4) not in printed]


def faithful(record: dict[str, Any] | None) -> bool | None:
    """Return whether every figure in the answer is printed in a cited passage.

    None when there is nothing to check: no answer, or an answer that states no figure (it has no unsupported
    figure, yet calling it faithful would let a baseline that only refuses score well).
    """
    if record is None or record["status"] != "answered" or not figures(record["answer"]):
        return None
    return not unsupported_figures(record)


def page_hit(question: FilingQuestion, citations: list[str], k: int) -> bool | None:
    """Return whether a labelled evidence page is among the first ``k`` citations; None if nothing is labelled."""
    if not question.answerable:
        return None
    return any(c in question.evidence_pages for c in citations[:k])


def evidence_recall(question: FilingQuestion, citations: Sequence[str], k: int) -> float | None:
    """Return the share of the labelled evidence pages among the first ``k`` citations; None if nothing is labelled."""
    if not question.answerable:
        return None
    wanted = set(question.evidence_pages)
    return len(wanted & set(citations[:k])) / len(wanted)


def reciprocal_rank(question: FilingQuestion, citations: Sequence[str]) -> float | None:
    """Return 1/rank of the first labelled evidence page in ``citations`` (0 when absent); None if nothing is labelled."""
    if not question.answerable:
        return None
    return next((1 / rank for rank, c in enumerate(citations, 1) if c in question.evidence_pages), 0.0)


@dataclass(frozen=True)
class Retrieval:
    """What retrieval alone returned for one question, kept apart from whatever generation did with it."""

    ranked: tuple[str, ...]
    """Citation ids in the order the path hands passages to the model (after reranking, when it reranks)."""
    k: int
    """How many of ``ranked`` the path gives the model."""
    candidates: tuple[str, ...] = ()
    """The search's candidates in search order, before any rerank (their recall is a rerank's ceiling)."""


def retrieval_scores(question: FilingQuestion, retrieval: Retrieval) -> dict[str, Any]:
    """Return page-hit@k, evidence recall@k and reciprocal rank of one question's retrieval (None: no label)."""
    return {
        "page_hit": page_hit(question, list(retrieval.ranked), retrieval.k),
        "evidence_recall": evidence_recall(question, retrieval.ranked, retrieval.k),
        "reciprocal_rank": reciprocal_rank(question, retrieval.ranked),
    }


def grade(
    questions: list[FilingQuestion],
    records: dict[str, dict[str, Any] | None],
    *,
    path: str,
    retrieval: Mapping[str, Retrieval] | None = None,
    errors: dict[str, str] | None = None,
) -> Any:
    """Return a pandas table with one row per question: status, correctness, faithfulness and the retrieval scores.

    Correctness and faithfulness grade the answer record (``failed`` and ``None`` when the trial raised); the
    retrieval columns grade ``retrieval`` alone, so every question with a retrieval entry gets them whatever
    generation did. A path with no retrieval (the no-retrieval baseline) has ``None`` there.
    """
    import pandas as pd

    rows = []
    for q in questions:
        record = records.get(q.financebench_id)
        found = (retrieval or {}).get(q.financebench_id)
        scores = (
            retrieval_scores(q, found)
            if found
            else {"page_hit": None, "evidence_recall": None, "reciprocal_rank": None}
        )
        rows.append(
            {
                "id": q.financebench_id.removeprefix("labkit_filings_"),
                "doc_name": q.doc_name,
                "kind": kind(q),
                "question_type": q.question_type,
                "path": path,
                "status": record["status"] if record else "failed",
                "correctness": correctness(q, record),
                "faithful": faithful(record),
                "passages": len(record.get("retrieved") or []) if record else 0,
                **scores,
                "note": (errors or {}).get(q.financebench_id, ""),
            }
        )
    return text_table(pd.DataFrame(rows))


def kind(question: FilingQuestion) -> str:
    """Return ``unanswerable`` (no evidence), ``two-page`` (figures from two labelled pages) or ``one-page``."""
    pages = {e.source_page for e in question.evidence}
    if not pages:
        return "unanswerable"
    return "two-page" if len(pages) > 1 and len(figures(question.answer)) > 1 else "one-page"


def summary(table: Any) -> Any:
    """Aggregate a graded table per path: outcome counts, faithful share, page-hit rate, mean recall and MRR.

    ``faithful`` counts only the answers that state a figure (`NO_ELIGIBLE` when none does, and on a path with
    no passage sent, such as the no-retrieval baseline: nothing there can be faithful or not); ``no_figure``
    counts the answers that state none (faithfulness cannot be checked there, so they are neither credited
    nor blamed).
    ``app_refused`` counts the questions the application itself declined (``insufficient_evidence``: the
    reranker selected nothing, so no model was asked); they are left out of the model's outcome counts
    (``correct`` ... ``failed``), even where declining was the right reply, so no model is credited with them.
    """
    import pandas as pd

    rows = []
    for path, part in table.groupby("path", sort=False):
        faithful_known = part.loc[part["passages"] > 0, "faithful"].dropna()  # no passage: nothing to be faithful to
        hits = part["page_hit"].dropna()
        by_app = part["status"] == APP_REFUSAL
        asked = part[~by_app]
        rows.append(
            {
                "path": path,
                "questions": len(part),
                **{
                    outcome: int((asked["correctness"] == outcome).sum())
                    for outcome in ("correct", "partial", "wrong", "refused", "failed")
                },
                "app_refused": int(by_app.sum()),
                "faithful": (
                    f"{int(faithful_known.sum())}/{len(faithful_known)}" if len(faithful_known) else NO_ELIGIBLE
                ),
                "no_figure": int(((part["status"] == "answered") & part["faithful"].isna()).sum()),
                "page_hit": f"{int(hits.sum())}/{len(hits)}" if len(hits) else "n/a",
                "evidence_recall": _mean(part["evidence_recall"]),
                "mrr": _mean(part["reciprocal_rank"]),
            }
        )
    return text_table(pd.DataFrame(rows))


def paired_p(wins: int, losses: int) -> float:
    """Return the exact two-sided p-value of a paired comparison on the same questions (exact McNemar test).

    ``wins`` counts the questions where one setting hits and the other misses, ``losses`` the reverse; the
    questions where both agree say nothing about the difference, so they are left out. Under "no difference"
    each disagreement is a coin toss, so this is scipy's ``binomtest(wins, wins + losses)``; 1.0 when the two
    never disagree. A small p says the split of the disagreements is unlikely by chance; with few
    disagreements no split is small enough (1 against 4 gives p = 0.375).
    """
    from scipy.stats import binomtest

    n = wins + losses
    return 1.0 if n == 0 else float(binomtest(wins, n).pvalue)


def wilson_interval(hits: int, n: int) -> tuple[float, float]:
    """Return the 95% Wilson interval of a rate of ``hits`` in ``n`` (`labkit.trials.wilson`, scipy's), rounded to 3 places.

    The interval is where the true rate plausibly lies given n questions: over 40 questions a measured 0.55
    could be anything from about 0.40 to 0.69. With no question at all, any rate is possible: (0.0, 1.0).
    """
    return (0.0, 1.0) if n == 0 else wilson(hits, n)


def rate_verdicts(counts: Mapping[str, tuple[int, int]]) -> dict[str, str]:
    """Compare rates given as name -> (hits, n): ``best``, ``tie`` or ``below``, for each name.

    A rate that lies inside the highest rate's 95% Wilson interval is a ``tie``, since the data cannot tell the
    two apart; below that interval it is ``below``. The highest rate (several names can share it) is ``best``
    only when some rate is ``below``: when every rate ties, no name is called best, and all are ``tie``.
    """
    rates = {name: hits / n if n else 0.0 for name, (hits, n) in counts.items()}
    if not rates:
        return {}
    top = max(rates.values())
    best = next(name for name, rate in rates.items() if rate == top)
    low, _ = wilson_interval(*counts[best])
    verdicts = {name: "best" if rate == top else "tie" if rate >= low else "below" for name, rate in rates.items()}
    if "below" not in verdicts.values():
        return dict.fromkeys(verdicts, "tie")
    return verdicts


def _mean(column: Any) -> float | str:
    known = column.dropna()
    return round(float(known.mean()), 3) if len(known) else "n/a"


# --- one-variable experiments (retrieval only: no model call) -------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """One experiment: its settings and, per question, whether a labelled page was in the selected context."""

    name: str
    """Which variable this experiment changes."""
    settings: dict[str, Any]
    """Every setting, changed or not: k, chunk_size, chunk_overlap, rerank, embedding_model, reranker."""
    hits: dict[str, bool] = field(default_factory=dict)
    """financebench_id -> page hit, for the answerable questions."""

    @property
    def page_hit_rate(self) -> float:
        """Share of answerable questions with a hit, rounded to three decimals."""
        return round(sum(self.hits.values()) / len(self.hits), 3) if self.hits else 0.0


def experiments_table(experiments: list[Experiment]) -> Any:
    """Return one row per experiment: its settings and page-hit@k."""
    import pandas as pd

    return text_table(
        pd.DataFrame(
            [
                {
                    "experiment": e.name,
                    "k": e.settings["k"],
                    "chunk_size": e.settings["chunk_size"],
                    "rerank": e.settings["rerank"],
                    "hits": f"{sum(e.hits.values())}/{len(e.hits)}",
                    "page_hit@k": e.page_hit_rate,
                }
                for e in experiments
            ]
        )
    )
