"""The sampled judge: a stated subset of the judge's calls sent at a temperature above zero, once per seed.

The lesson's runs ask the judge each question once, at temperature 0: greedy
decoding, which takes the most likely token at every step. That removes the
sampling, not every source of variation (a server that batches requests may break
near-ties differently), and the captured run holds each request once, so it cannot
show whether a second call would get the same reply. Here the
per-criterion judge calls for `PRODUCTS` (their human-labeled descriptions) are
sent ``TRIALS.n`` times at ``TRIALS.temperature``, one seed per trial
(`labkit.trials`): the model samples each token, and each seed is a request of
its own with its own replay binding. That is a *different configuration*, the
sampled judge. `stability_table` shows, per (product, criterion), the
temperature-0 verdict beside the sampled verdicts in seed order, how many seeds
agree with the adjudicated human label (with a Wilson interval over the seeds),
and whether the sampled verdict varies across seeds.

What the subset can show is narrow: one product, three criteria, five seeds
each. It can show that, on this description, the sampled setting gives more
than one verdict; it cannot show how often that happens across the held-out
items, and it does not re-measure the temperature-0 judge that calibration uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.evaluator.calls import Caller
from labkit.evaluator.judge import JudgeCall, judge_description
from labkit.evaluator.lesson import SETTINGS as BASE_SETTINGS
from labkit.evaluator.lesson import LessonInputs, load_inputs
from labkit.evaluator.lesson import run_fixtures as _run_fixtures
from labkit.tables import interval, text_table
from labkit.trials import Trials, wilson

#: Five seeds per call at 0.7, a temperature at which the judge samples instead of decoding greedily; five is the
#: fewest a share is shown over.
TRIALS = Trials(n=5, temperature=0.7, first_seed=700)
#: The held-out products whose labeled descriptions are judged repeatedly: the lantern said to run 12 hours (facts: 6),
#: the lesson's narrative product. One product, three criteria, five seeds: fifteen requests, as each took one to three
#: minutes to record on the course's shared two-core machine.
PRODUCTS: tuple[str, ...] = ("p07",)
RUN_CAPTURED = "01-evaluator-smollm2-repeats"
#: The lesson's settings with the first trial's seed and the sampled setting's temperature; each trial sends its own
#: seed.
SETTINGS = TRIALS.settings_for(BASE_SETTINGS, 0)
CAPTURED_DESCRIPTION = (
    "Lesson 01's per-criterion judge calls on the human-labeled descriptions of products "
    + " and ".join(PRODUCTS)
    + " sent to a real model in a sampled setting (a configuration apart from the lesson's temperature-0 calls), "
    + "one binding per trial; each reply schema-constrained. "
    + TRIALS.describe()
)
#: What a rejected reply counts as in the verdicts: a value of its own, never a label.
REJECTED = "rejected"


def run_fixtures() -> list[Path]:
    """Return the files the requests depend on: the same products, rubric, texts and labels as the lesson's runs."""
    return _run_fixtures()


@dataclass(frozen=True)
class JudgeTrial:
    """One trial of one judge call: which product and criterion, the seed, and the verdict (or the rejection)."""

    product_id: str
    criterion: str
    trial: int
    seed: int
    call: JudgeCall

    @property
    def verdict(self) -> str:
        """The judge's label, or `REJECTED` when the reply did not fit the schema."""
        return self.call.labels[0].verdict if self.call.labels else REJECTED


def make_requests(adapter: Any, *, inputs: LessonInputs | None = None) -> list[JudgeTrial]:
    """Send every per-criterion judge call on `PRODUCTS`' labeled descriptions once per trial; return every trial."""
    inputs = inputs or load_inputs()
    trials = []
    for pid in PRODUCTS:
        for trial in TRIALS.each(adapter):
            calls = judge_description(
                Caller(trial, prices=inputs.prices),
                inputs.products[pid],
                inputs.labeled_texts[pid],
                inputs.rubric,
                arrangement="per_criterion",
                source="labeled",
            )
            trials += [JudgeTrial(pid, call.criteria[0], trial.trial, trial.seed, call) for call in calls]
    return trials


def verdicts(trials: list[JudgeTrial]) -> dict[tuple[str, str], list[str]]:
    """Return (product, criterion) -> the judge's verdicts in seed order (`REJECTED` where a reply was rejected)."""
    out: dict[tuple[str, str], list[JudgeTrial]] = {}
    for trial in trials:
        out.setdefault((trial.product_id, trial.criterion), []).append(trial)
    return {key: [t.verdict for t in sorted(rows, key=lambda t: t.seed)] for key, rows in out.items()}


def varies_across_seeds(trials: list[JudgeTrial]) -> list[tuple[str, str]]:
    """Return the (product, criterion) pairs whose sampled verdict is not the same on every seed."""
    return [key for key, seen in verdicts(trials).items() if len(set(seen)) > 1]


def greedy_verdicts(report: Any) -> dict[tuple[str, str], str | None]:
    """Return (product, criterion) -> the temperature-0 per-criterion verdict a lesson run gave on `PRODUCTS`.

    ``report`` is the lesson's `EvaluationReport` of the same model; None where its reply was rejected.
    """
    out: dict[tuple[str, str], str | None] = {}
    for pid in PRODUCTS:
        for criterion in report.inputs.rubric.judged():
            found = report.runs.judging.labels(arrangement="per_criterion", source="labeled", criterion=criterion.id)
            out[(pid, criterion.id)] = found.get(pid)
    return out


def stability_table(
    trials: list[JudgeTrial], labels: Any, *, greedy: dict[tuple[str, str], str | None] | None = None
) -> Any:
    """Return one row per (product, criterion): the temperature-0 verdict, the sampled ones, agreement with people.

    ``labels`` is the lesson's `HumanLabels`; the human label is the adjudicated one.
    ``greedy`` (from `greedy_verdicts`) adds the temperature-0 verdict and how many
    sampled seeds give the same one. The Wilson interval is over the seeds, for the
    share of sampled verdicts that equal the human label.
    """
    import pandas as pd

    sampled = f"temperature {TRIALS.temperature:g}, by seed"
    rows = []
    for (pid, criterion), seen in verdicts(trials).items():
        human = labels.label(pid, criterion)
        with_human = sum(v == human for v in seen)
        row: dict[str, Any] = {"product": pid, "criterion": criterion}
        if greedy is not None:
            at_zero = greedy.get((pid, criterion)) or REJECTED
            row["temperature 0"] = at_zero
            row["as at 0"] = f"{sum(v == at_zero for v in seen)}/{len(seen)}"
        row |= {
            sampled: " · ".join(seen),
            "adjudicated": human,
            "agree with adjudicated": f"{with_human}/{len(seen)}",
            "Wilson 95%": interval(*wilson(with_human, len(seen))),
            "varies": len(set(seen)) > 1,
        }
        rows.append(row)
    return text_table(pd.DataFrame(rows).set_index(["product", "criterion"]))


@dataclass(frozen=True)
class SampledJudge:
    """The sampled judge replayed: where its replies come from, every trial, and the `stability_table`."""

    provenance: str
    trials: list[JudgeTrial]
    table: Any


def replay_sampled_judge(report: Any) -> SampledJudge:
    """Replay `RUN_CAPTURED` through the model boundary and tabulate it beside ``report``'s temperature-0 verdicts.

    ``report`` is the lesson's `EvaluationReport` of the same model. Every request is
    made by `make_requests` and answered with the reply recorded for it.
    """
    from labkit.boundary import connect
    from labkit.recording import load_run

    run = load_run(RUN_CAPTURED)
    replayed = connect(RUN_CAPTURED, lesson="01", settings=SETTINGS)
    trials = make_requests(replayed, inputs=report.inputs)
    table = stability_table(trials, report.inputs.labels, greedy=greedy_verdicts(report))
    return SampledJudge(f"{run.run_id} ({run.origin}), {run.model.id}: {TRIALS.describe()}", trials, table)
