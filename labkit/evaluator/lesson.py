"""Lesson 01's model requests: generation first, then the judge, identical in every mode.

`make_requests` asks for one description per product, then has the judge
label the human-labeled descriptions of the held-out subset (each criterion
in its own call, and all criteria in one bundled call, for calibration), then
the narrative product's newly generated description (for the release record).
The authored run answers these requests with replies the course wrote; the
captured run holds what the bundled local model replied.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.evaluator import catalog
from labkit.evaluator.calls import Caller, PriceTable, load_prices
from labkit.evaluator.generation import GenerationRun, generate_descriptions
from labkit.evaluator.judge import ARRANGEMENTS, PROMPT_VERSION, JudgeRun, judge_description
from labkit.evaluator.labels import HumanLabels, descriptions_path, labels_path, load_labeled_descriptions, load_labels
from labkit.evaluator.products import Product, load_products, products_path
from labkit.evaluator.rubric import Rubric, load_rubric, rubric_path

RUN_AUTHORED = "01-evaluator-authored"
RUN_CAPTURED = "01-evaluator-smollm2"
#: Shared by every request; each request adds its own reply schema and token limit.
SETTINGS: dict[str, Any] = {"temperature": 0, "seed": 11}
AUTHORED_DESCRIPTION = (
    "Descriptions and judge labels written by the course: the descriptions are the texts the raters labeled (flaws "
    "planted on purpose, such as a lantern said to run 12 hours when its facts say 6), and the judge replies show a "
    "judge that agrees well on two criteria and poorly on tone. No model produced them."
)
CAPTURED_DESCRIPTION = (
    "Lesson 01's requests answered by a real model: a description for every product (schema-constrained JSON), "
    "judge labels per criterion and bundled on the held-out labeled descriptions, and on the narrative product's "
    "new description."
)


@dataclass(frozen=True)
class LessonInputs:
    """The fixtures every lesson 01 request is built from."""

    products: dict[str, Product]
    rubric: Rubric
    labels: HumanLabels
    labeled_texts: dict[str, str]
    prices: PriceTable


def load_inputs() -> LessonInputs:
    """Load products, rubric, labeled texts, human labels and prices, each checked against the others."""
    products, rubric, texts = load_products(), load_rubric(), load_labeled_descriptions()
    labels = load_labels(rubric=rubric, products=list(products), texts=texts)
    return LessonInputs(products, rubric, labels, texts, load_prices())


def run_fixtures() -> list[Path]:
    """Return the files the requests depend on: a changed rubric or label subset invalidates the runs."""
    return [products_path(), rubric_path(), descriptions_path(), labels_path()]


@dataclass(frozen=True)
class LessonRuns:
    """What one pass of the lesson's requests produced."""

    generation: GenerationRun
    judging: JudgeRun


def make_requests(adapter: Any, *, inputs: LessonInputs | None = None) -> LessonRuns:
    """Make every model request of lesson 01 through ``adapter``: descriptions, then judge labels."""
    inputs = inputs or load_inputs()
    run_id = getattr(adapter, "run_id", RUN_AUTHORED)
    caller = Caller(adapter, prices=inputs.prices)
    rubric, products = inputs.rubric, inputs.products
    generation = generate_descriptions(caller, products, rubric, run_id=run_id)
    calls = []
    for pid in inputs.labels.held_out:
        for arrangement in ARRANGEMENTS:
            calls += judge_description(
                caller, products[pid], inputs.labeled_texts[pid], rubric, arrangement=arrangement, source="labeled"
            )
    generated = generation.by_product()
    for pid in catalog.NARRATIVE_PRODUCTS:
        calls += judge_description(
            caller, products[pid], generated[pid].text, rubric, arrangement="per_criterion", source="generated"
        )
    judging = JudgeRun(
        run_id=run_id,
        origin=generation.origin,
        model_id=generation.model_id,
        prompt_version=PROMPT_VERSION,
        rubric_version=rubric.version,
        rubric_sha256=rubric.sha256,
        calls=calls,
    )
    return LessonRuns(generation, judging)


# --- the authored judge: labels and explanations the course wrote --------------------------------

#: (product, criterion) -> (per-criterion verdict, bundled verdict) where the authored judge does not give the
#: adjudicated label; it agrees everywhere else on the held-out subset.
AUTHORED_JUDGE_MISSES: dict[tuple[str, str], tuple[str | None, str | None]] = {
    ("p15", "factual_accuracy"): ("pass", "pass"),
    ("p12", "factual_accuracy"): (None, "pass"),
    ("p24", "completeness"): ("partial", "partial"),
    ("p10", "completeness"): (None, "complete"),
    ("p02", "tone"): ("fail", "fail"),
    ("p22", "tone"): ("fail", "fail"),
    ("p19", "tone"): ("pass", "pass"),
    ("p17", "tone"): (None, "fail"),
}
AUTHORED_EXPLANATIONS: dict[tuple[str, str, str], str] = {
    (
        "p07",
        "factual_accuracy",
        "fail",
    ): "It says 'One charge lasts 12 hours', but the facts give a battery life of 6 h.",
    ("p12", "factual_accuracy", "fail"): "It calls the light 'fully waterproof'; the facts say nothing about water.",
    ("p12", "factual_accuracy", "pass"): "The weight, size and battery life it gives match the facts.",
    ("p15", "factual_accuracy", "pass"): "It gives 14500 g and 800 x 300 x 1100 mm, both as in the facts.",
    ("p10", "completeness", "partial"): "It gives the weight and size but not what the board is made of.",
    ("p10", "completeness", "complete"): "It names the board and gives its weight and size.",
    ("p24", "completeness", "partial"): "It names the basket but gives no weight, size or materials.",
    ("p02", "tone", "fail"): "'Honestly the last bottle you will ever want!' oversells the bottle.",
    ("p22", "tone", "fail"): "'Your mornings will never be the same!' promises more than a mug can.",
    ("p19", "tone", "pass"): "It speaks to the reader directly and stays with the backpack.",
    ("p04", "tone", "fail"): "'The BEST speaker EVER made!!!' and 'buy it now before it's gone!!!' shout and push.",
    ("p17", "tone", "fail"): "The tone is flat; it reads like a list, not a shop page.",
}


def _explanation(pid: str, criterion: str, verdict: str) -> str:
    if (pid, criterion, verdict) in AUTHORED_EXPLANATIONS:
        return AUTHORED_EXPLANATIONS[(pid, criterion, verdict)]
    row = next(r for r in catalog.PRODUCT_ROWS if r[0] == pid)
    if criterion == "factual_accuracy":
        return "The weight, size and materials it states match the facts, and it adds nothing the facts lack."
    if criterion == "completeness":
        return "It gives the materials, the weight and the size" + (", and the battery life." if row[3] else ".")
    return "Plain and friendly; no pressure to buy."


def authored_verdicts(pid: str, criterion: str) -> tuple[str, str]:
    """Return the authored judge's (per-criterion, bundled) verdicts for a held-out product."""
    truth = catalog.adjudicated_label(pid, criterion)
    per, bundled = AUTHORED_JUDGE_MISSES.get((pid, criterion), (None, None))
    return per or truth, bundled or truth


def _authored_replies() -> dict[str, str]:
    replies = {f"describe:{row[0]}": catalog.labeled_description(row[0]) for row in catalog.PRODUCT_ROWS}
    judged = ("factual_accuracy", "completeness", "tone")
    for pid in catalog.HELD_OUT_SUBSET:
        bundled = {}
        for criterion in judged:
            per, bund = authored_verdicts(pid, criterion)
            replies[f"judge:labeled:{pid}:{criterion}"] = json.dumps(
                {"explanation": _explanation(pid, criterion, per), "verdict": per}, ensure_ascii=False
            )
            bundled[criterion] = {"explanation": _explanation(pid, criterion, bund), "verdict": bund}
        replies[f"judge:labeled:{pid}:bundled"] = json.dumps(bundled, ensure_ascii=False)
    return replies


def __getattr__(name: str) -> Any:
    if name == "AUTHORED_REPLIES":  # built on first use, from the same catalog the fixtures come from
        return _authored_replies()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
