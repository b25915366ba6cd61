"""Human labels: two raters and their adjudicated label per product and criterion, on exact description texts.

The calibration and held-out subsets are fixed in the same file, before any
judge run. Each item names the SHA-256 of the description text it labels, so
labels can never be applied to a different text by mistake; and the file
names the rubric the raters used, so labels under an old rubric are refused.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.canonical import load_strict
from labkit.evaluator.products import EvaluatorFixtureError
from labkit.evaluator.rubric import Rubric, StaleRubric
from labkit.paths import fixtures_dir

REFERENCE = "adjudicated"


def labels_path() -> Path:
    """Return the committed human-labels file."""
    return fixtures_dir() / "evaluator" / "human_labels.json"


def descriptions_path() -> Path:
    """Return the committed file of the descriptions the raters labeled."""
    return fixtures_dir() / "evaluator" / "descriptions.json"


def load_labeled_descriptions(path: Path | None = None) -> dict[str, str]:
    """Return the labeled description text (the exact reply text) per product id."""
    path = path or descriptions_path()
    data, _ = load_strict(path)
    texts = data.get("descriptions") if isinstance(data, dict) else None
    if not isinstance(texts, dict) or not all(isinstance(v, str) and v for v in texts.values()):
        raise EvaluatorFixtureError(f"{path}: expected 'descriptions', an object of product id -> non-empty text")
    return texts


@dataclass(frozen=True)
class HumanLabels:
    """Every human label, and the subsets fixed in advance."""

    raters: tuple[str, ...]
    """The two raters' names."""
    calibration: tuple[str, ...]
    """Product ids the judge prompt may be tuned on."""
    held_out: tuple[str, ...]
    """Product ids agreement is measured on; never used for tuning."""
    labels: dict[tuple[str, str], dict[str, str]]
    """(product id, criterion) -> {rater or "adjudicated": label}."""
    description_sha256: dict[str, str]
    """Product id -> SHA-256 of the exact description text labeled."""

    def label(self, product_id: str, criterion: str, *, who: str = REFERENCE) -> str:
        """Return one label: a rater's, or the adjudicated one."""
        return self.labels[(product_id, criterion)][who]

    def column(self, product_ids: tuple[str, ...] | list[str], criterion: str, *, who: str = REFERENCE) -> list[str]:
        """Return the labels of ``who`` for these products, in the same order."""
        return [self.label(p, criterion, who=who) for p in product_ids]

    def held_out_by_rater(self, criterion: str) -> tuple[list[str], ...]:
        """Return each rater's labels of ``criterion`` on the held-out products, one list per rater, in order."""
        return tuple(self.column(self.held_out, criterion, who=rater) for rater in self.raters)


def parse_labels(
    data: Any, *, rubric: Rubric, products: list[str], texts: dict[str, str], source: str = "human labels"
) -> HumanLabels:
    """Validate the labels file against the rubric, the products and the labeled texts."""
    if not isinstance(data, dict):
        raise EvaluatorFixtureError(f"{source}: expected a JSON object")
    missing = {"raters", "subsets", "items", "rubric_sha256", "rubric_version"} - set(data)
    if missing:
        raise EvaluatorFixtureError(f"{source}: missing {sorted(missing)}")
    if data["rubric_sha256"] != rubric.sha256:
        raise StaleRubric(
            f"{source}: the raters labeled under rubric {data['rubric_version']} ({data['rubric_sha256'][:12]}…), "
            f"not the current {rubric.version} ({rubric.sha256[:12]}…); have the texts labeled again under this rubric"
        )
    raters = tuple(data["raters"])
    if len(raters) != 2 or len(set(raters)) != 2 or REFERENCE in raters:
        raise EvaluatorFixtureError(f"{source}: name exactly two distinct raters (not {REFERENCE!r}), got {raters}")
    subsets = data["subsets"]
    if not isinstance(subsets, dict) or set(subsets) != {"calibration", "held_out"}:
        raise EvaluatorFixtureError(f"{source}: subsets must be exactly 'calibration' and 'held_out'")
    calibration, held_out = tuple(subsets["calibration"]), tuple(subsets["held_out"])
    if set(calibration) & set(held_out):
        raise EvaluatorFixtureError(
            f"{source}: {sorted(set(calibration) & set(held_out))} are in both subsets; "
            "an item used for tuning cannot also measure agreement"
        )
    if sorted(calibration + held_out) != sorted(products):
        raise EvaluatorFixtureError(f"{source}: the two subsets must together hold every product exactly once")
    labels: dict[tuple[str, str], dict[str, str]] = {}
    hashes: dict[str, str] = {}
    for item in data["items"]:
        pid = item.get("product_id")
        if pid not in products or pid in hashes:
            raise EvaluatorFixtureError(f"{source}: item for {pid!r} is unknown or repeated")
        actual = hashlib.sha256(texts[pid].encode("utf-8")).hexdigest()
        if item.get("description_sha256") != actual:
            raise EvaluatorFixtureError(
                f"{source}: {pid} was labeled on another text than the committed description; "
                "label the current text, or restore the text that was labeled"
            )
        hashes[pid] = actual
        if set(item.get("labels", {})) != {c.id for c in rubric.criteria}:
            raise EvaluatorFixtureError(f"{source}: {pid} must have labels for exactly the rubric's criteria")
        for criterion in rubric.criteria:
            given = item["labels"][criterion.id]
            if set(given) != {*raters, REFERENCE}:
                raise EvaluatorFixtureError(
                    f"{source}: {pid}/{criterion.id} needs a label from each rater and {REFERENCE!r}"
                )
            wrong = {who: v for who, v in given.items() if v not in criterion.allowed_labels}
            if wrong:
                raise EvaluatorFixtureError(
                    f"{source}: {pid}/{criterion.id}: {wrong} not among {criterion.allowed_labels}"
                )
            labels[(pid, criterion.id)] = dict(given)
    if set(hashes) != set(products):
        raise EvaluatorFixtureError(f"{source}: no labels for {sorted(set(products) - set(hashes))}")
    return HumanLabels(raters, calibration, held_out, labels, hashes)


def load_labels(
    *, rubric: Rubric, products: list[str], path: Path | None = None, texts: dict[str, str] | None = None
) -> HumanLabels:
    """Load the human labels fixture, checked against the rubric, products and labeled texts."""
    path = path or labels_path()
    data, _ = load_strict(path)
    return parse_labels(
        data, rubric=rubric, products=products, texts=texts or load_labeled_descriptions(), source=str(path)
    )
