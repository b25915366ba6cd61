"""The results file of a FinanceBench measurement, and the tables and sentences a lesson renders from it.

`python -m labkit.rag.financebench DIR` writes one JSON file: per question its FinanceBench id, kind,
document and page-hit per retriever, store and k, with the settings, the documents measured and the
labkit commit. It holds ids, kinds, document names and numbers only, never FinanceBench's text, so the
course can commit the file measured on a development sample (``fixtures/financebench/sample_results.json``)
and a notebook can render real figures from it instead of typing them:

- `load_results` reads and checks a results file (the committed one by default);
- `page_hit_table` gives page-hit@k per retriever and question kind (or document kind), each with its
  95% Wilson interval and a verdict against the best retriever (a difference inside that interval is a tie);
- `winners` says, per kind, which retriever is best and which ones the data cannot separate from it;
- `side_by_side` and `difference_sentences` set these figures beside the fictional filings' ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.canonical import load_strict, pretty_json
from labkit.paths import atomic_write, fixtures_dir
from labkit.rag.metrics import rate_verdicts, wilson_interval

FORMAT = "labkit-financebench-results/1"
SCOPES: tuple[Literal["single-document", "shared"], ...] = ("single-document", "shared")
#: The fields that differ from one run of the same measurement to the next (not part of its result).
VARYING = ("labkit_commit", "timings")
Scope = Literal["single-document", "shared"]


class QuestionResult(BaseModel):
    """One measured question: who it is, and what each retriever found for it in each store."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    financebench_id: str = Field(description="FinanceBench's id of the question.")
    question_type: str = Field(description="FinanceBench's kind: metrics-generated, domain-relevant, novel-generated.")
    doc_name: str = Field(description="The document the question asks about.")
    doc_type: str | None = Field(description="The document's kind, from its name: 10K, 10Q, 8K, EARNINGS...")
    evidence_pages: list[int] = Field(description="The labelled evidence pages, one-based.")
    page_hit: dict[str, dict[str, dict[str, bool]]] = Field(
        description="store -> retriever -> k -> whether an evidence page is among the first k distinct pages."
    )
    reciprocal_rank: dict[str, dict[str, float]] = Field(
        description="store -> retriever -> 1/rank of the first evidence page (0 when it is not ranked)."
    )
    candidate_hit: dict[str, dict[str, bool]] = Field(
        description="store -> retriever -> evidence page among its own candidates (only retrievers that have some)."
    )


class FinanceBenchResults(BaseModel):
    """A whole results file."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str = Field(description="The file's format and version.")
    labkit_commit: str | None = Field(description="The labkit commit that measured it (None outside a git checkout).")
    settings: dict[str, Any] = Field(description="Chunking, extraction, embedding model, k values, retrievers.")
    counts: dict[str, int] = Field(description="Questions in the file, measured, skipped for want of a PDF.")
    documents: dict[str, dict[str, Any]] = Field(description="doc_name -> PDF sha256, pages, chunks, kind.")
    absent: dict[str, int] = Field(description="Documents asked about without a PDF -> questions skipped.")
    names: dict[str, Any] = Field(description="Names outside the rule, renamed PDFs, repeated records, unused PDFs.")
    questions: list[QuestionResult] = Field(description="One entry per measured question, in file order.")
    timings: dict[str, float] = Field(description="Seconds spent parsing, embedding and retrieving (vary per run).")

    @property
    def ks(self) -> list[int]:
        """The k values measured."""
        return list(self.settings["ks"])

    @property
    def retrievers(self) -> list[str]:
        """The retrievers measured, in the order the command prints them."""
        return list(self.settings["retrievers"])


def sample_results_path() -> Path:
    """Return the committed results of the development sample (``fixtures/financebench/sample_results.json``)."""
    return fixtures_dir() / "financebench" / "sample_results.json"


def load_results(path: str | Path | None = None) -> FinanceBenchResults:
    """Read a results file (by default the committed sample's), refusing one that is not in this format."""
    path = Path(path) if path else sample_results_path()
    data, _ = load_strict(path, max_bytes=50_000_000)
    return FinanceBenchResults.model_validate(data)


def write_results(results: FinanceBenchResults, path: str | Path) -> Path:
    """Write a results file (two-space JSON, newline at the end), all at once."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, pretty_json(results.model_dump()))


def comparable(results: FinanceBenchResults) -> dict[str, Any]:
    """Return the results without the fields that vary from run to run (`VARYING`): what a rerun must equal."""
    return results.model_dump(exclude=set(VARYING))


def rows(results: FinanceBenchResults, *, scope: Scope = "single-document") -> list[dict[str, Any]]:
    """Return one row per question and retriever of one store, as `labkit.rag.retrievers.question_rows` gives them."""
    found = []
    for q in results.questions:
        for name in results.retrievers:
            found.append(
                {
                    "id": q.financebench_id,
                    "kind": q.question_type,
                    "doc_type": q.doc_type or "unknown",
                    "retriever": name,
                    **{f"page_hit@{k}": q.page_hit[scope][name][str(k)] for k in results.ks},
                    "reciprocal_rank": q.reciprocal_rank[scope][name],
                    "candidate_hit": q.candidate_hit[scope].get(name),
                }
            )
    return found


def page_hit_table(
    results: FinanceBenchResults,
    *,
    scope: Scope = "single-document",
    ks: Sequence[int] | None = None,
    by: Literal["kind", "doc_type"] = "kind",
) -> Any:
    """Return page-hit@k per question kind and retriever of one store, with intervals and verdicts.

    Each ``page_hit@k`` has its 95% Wilson interval (``ci95@k``) and a verdict (``vs_best@k``): ``best``,
    ``tie`` when it lies inside the best retriever's interval for that kind (the data cannot separate them),
    or ``below``. ``by="doc_type"`` groups by the kind of document (10K, 10Q, 8K, EARNINGS) instead.
    """
    from labkit.rag.retrievers import rates_table

    return rates_table(rows(results, scope=scope), ks=ks or results.ks, by=by)


def winners(table: Any, *, k: int = 5) -> list[str]:
    """Return one sentence per group of a `page_hit_table`: the best retriever at k, and which ones tie with it.

    When every retriever ties, the sentence names none best and says the data cannot separate them.
    """
    sentences = []
    for group in dict.fromkeys(table.index.get_level_values(0)):
        part = table.loc[group]
        best = [name for name, row in part.iterrows() if row[f"vs_best@{k}"] == "best"]
        tied = [name for name, row in part.iterrows() if row[f"vs_best@{k}"] == "tie"]
        below = [name for name, row in part.iterrows() if row[f"vs_best@{k}"] == "below"]
        if not best:  # every rate ties (`rate_verdicts` then names none best)
            top = part.loc[part[f"page_hit@{k}"].astype(float).idxmax()]
            sentences.append(
                f"{group} ({int(top['questions'])} questions): the data cannot separate {', '.join(tied)}"
                f" (each inside the highest one's interval, {top[f'page_hit@{k}']:.3f} {top[f'ci95@{k}']})."
            )
            continue
        top = part.loc[best[0]]
        text = (
            f"{group} ({int(top['questions'])} questions): "
            f"{' and '.join(best)} {top[f'page_hit@{k}']:.3f} {top[f'ci95@{k}']}"
        )
        if tied:
            text += f"; the data cannot separate {', '.join(tied)} from it (inside that interval)"
        if below:
            text += f"; {', '.join(below)} below it"
        sentences.append(text + ".")
    return sentences


def side_by_side(sets: Mapping[str, Sequence[Mapping[str, Any]]], *, k: int = 5) -> Any:
    """Return page-hit@k per retriever for several question sets (name -> `question_rows`), with intervals.

    One row per retriever; for each set its ``hits`` (``7/26``), ``page_hit@k`` and ``ci95@k``. With two
    sets, ``difference`` says ``tie`` when the lower rate lies inside the higher one's interval, else which
    set is higher. A notebook sets the fictional filings beside the FinanceBench sample this way.
    """
    import pandas as pd

    names = list(sets)
    retrievers = list(dict.fromkeys(row["retriever"] for part in sets.values() for row in part))
    lines = []
    for retriever in retrievers:
        line: dict[Any, Any] = {"retriever": retriever}
        counts = {}
        for name in names:
            part = [row for row in sets[name] if row["retriever"] == retriever]
            hits = sum(bool(row[f"page_hit@{k}"]) for row in part)
            counts[name] = (hits, len(part))
            low, high = wilson_interval(hits, len(part))
            line[(name, "hits")] = f"{hits}/{len(part)}"
            line[(name, f"page_hit@{k}")] = round(hits / len(part), 3) if part else None
            line[(name, f"ci95@{k}")] = f"[{low:.2f}, {high:.2f}]"
        if len(names) == 2:
            verdicts = rate_verdicts(counts)
            line["difference"] = (
                "tie"
                if "below" not in verdicts.values()
                else f"higher on {next(n for n, v in verdicts.items() if v == 'best')}"
            )
        lines.append(line)
    frame = pd.DataFrame(lines).set_index("retriever")
    frame.columns = pd.MultiIndex.from_tuples([c if isinstance(c, tuple) else (c, "") for c in frame.columns])
    return frame


def difference_sentences(table: Any, *, k: int = 5) -> list[str]:
    """Return one sentence per retriever of a two-set `side_by_side` table, saying what the difference is."""
    first, second = list(dict.fromkeys(table.columns.get_level_values(0)))[:2]
    sentences = []
    for retriever, row in table.iterrows():
        a, b = row[(first, f"page_hit@{k}")], row[(second, f"page_hit@{k}")]
        shown = (
            f"{retriever}: page-hit@{k} {a:.2f} {row[(first, f'ci95@{k}')]} on {first}, "
            f"{b:.2f} {row[(second, f'ci95@{k}')]} on {second}"
        )
        verdict = row[("difference", "")]
        if verdict == "tie":
            sentences.append(f"{shown}: a tie, one lies inside the other's 95% interval.")
        else:
            sentences.append(f"{shown}: {verdict}, outside the other's 95% interval.")
    return sentences
