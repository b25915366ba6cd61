"""Judge stability: a stated subset of the judge's calls sent once per seed, and whether one trace would mislead.

The lesson's runs ask the judge each question once, at temperature 0. Here the
per-criterion judge calls for `PRODUCTS` (their human-labeled descriptions, each
judged criterion in its own call) are each sent ``TRIALS.n`` times at a
temperature above zero, one seed per trial (`labkit.trials`), so each trial has
its own replay binding. For each (product, criterion) `stability_table` shows
the verdicts in seed order, the share of seeds that agree with the first trace,
and the share that agree with the adjudicated human label (with a Wilson
interval). A (product, criterion) whose verdict changes on repeat is one where
a single judge trace would have misled: its label was a draw, not a measurement.
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
from labkit.trials import Trials, misled_by_one_trace, wilson

#: Five seeds per call at 0.7, a temperature at which a judge samples rather than decodes greedily; five is the
#: fewest a share is shown over.
TRIALS = Trials(n=5, temperature=0.7, first_seed=700)
#: The held-out products whose labeled descriptions are judged repeatedly: the lantern said to run 12 hours (facts: 6),
#: the lesson's narrative product. One product, three criteria, five seeds: fifteen requests, as each took one to three
#: minutes to record on the course's shared two-core machine.
PRODUCTS: tuple[str, ...] = ("p07",)
RUN_CAPTURED = "01-evaluator-smollm2-repeats"
#: The lesson's settings with the first trial's seed and the plan's temperature; each trial sends its own seed.
SETTINGS = TRIALS.settings_for(BASE_SETTINGS, 0)
CAPTURED_DESCRIPTION = (
    "Lesson 01's per-criterion judge calls on the human-labeled descriptions of products "
    + " and ".join(PRODUCTS)
    + " sent repeatedly to a real model, one binding per trial; each reply schema-constrained. "
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


def flips_on_repeat(trials: list[JudgeTrial]) -> list[tuple[str, str]]:
    """Return the (product, criterion) pairs whose verdict on some later seed differs from the first trace's."""
    return misled_by_one_trace(verdicts(trials))


def stability_table(trials: list[JudgeTrial], labels: Any) -> Any:
    """Return one row per (product, criterion): verdicts by seed, agreement with the first trace and with people.

    ``labels`` is the lesson's `HumanLabels`; the human label is the adjudicated one.
    The Wilson interval is over the seeds, for the share agreeing with the human label.
    """
    import pandas as pd

    rows = []
    for (pid, criterion), seen in verdicts(trials).items():
        human = labels.label(pid, criterion)
        with_first = sum(v == seen[0] for v in seen)
        with_human = sum(v == human for v in seen)
        low, high = wilson(with_human, len(seen))
        rows.append(
            {
                "product": pid,
                "criterion": criterion,
                "verdicts by seed": " · ".join(seen),
                "first trace": seen[0],
                "agree with first": f"{with_first}/{len(seen)}",
                "human label": human,
                "agree with human": f"{with_human}/{len(seen)}",
                "wilson_low": low,
                "wilson_high": high,
                "flips on repeat": with_first < len(seen),
            }
        )
    return pd.DataFrame(rows).set_index(["product", "criterion"])
