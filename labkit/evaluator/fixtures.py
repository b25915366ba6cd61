"""Write lesson 01's fixtures into ``fixtures/evaluator``: products, rubric, labeled descriptions, labels, prices.

Run ``python -m labkit.evaluator.fixtures [FOLDER]``. Writing twice gives
byte-identical files; the script refuses a folder that holds a captured run.
The human labels are authored by the course (see `labkit.evaluator.catalog`).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from labkit.evaluator import catalog
from labkit.fixtures import fixture_script, prepare_fixture_folder, write_json_fixtures
from labkit.paths import fixtures_dir

RUBRIC_VERSION = "product-description-v1"
RATERS = ("rater_a", "rater_b")


def products() -> dict[str, Any]:
    """Return the products fixture: typed facts with units for every product."""
    items = []
    for pid, name, category, hours, grams, (length, width, height), materials, euros in catalog.PRODUCT_ROWS:
        items.append(
            {
                "id": pid,
                "name": name,
                "category": category,
                "facts": {
                    "battery_life": None if hours is None else {"value": hours, "unit": "h"},
                    "weight": {"value": grams, "unit": "g"},
                    "dimensions": {
                        k: {"value": v, "unit": "mm"}
                        for k, v in zip(("length", "width", "height"), (length, width, height), strict=True)
                    },
                    "materials": list(materials),
                    "price": {"value": euros, "unit": "EUR"},
                },
            }
        )
    return {"products": items}


def rubric() -> dict[str, Any]:
    """Return the rubric fixture, fixed before any generation."""
    criteria = [
        {
            "id": "factual_accuracy",
            "question": "Does every claim in the description agree with the supplied facts?",
            "allowed_labels": ["pass", "fail"],
            "anchors": {
                "pass": "Every number, unit, material and feature stated is in the supplied facts, with the same value.",
                "fail": "At least one stated value, material or feature contradicts the facts or is not in them.",
            },
            "pass_labels": ["pass"],
            "scored_by": "judge",
            "checks": ["numeric_claims"],
        },
        {
            "id": "completeness",
            "question": "Does the description give the facts a shopper needs to choose?",
            "allowed_labels": ["complete", "partial", "incomplete"],
            "anchors": {
                "complete": "It states the materials, the weight and size, and the battery life if there is one.",
                "partial": "It leaves out one of those facts.",
                "incomplete": "It leaves out two or more of those facts.",
            },
            "pass_labels": ["complete"],
            "scored_by": "judge",
            "checks": [],
        },
        {
            "id": "tone",
            "question": "Is the tone plain, friendly and free of pressure?",
            "allowed_labels": ["pass", "fail"],
            "anchors": {
                "pass": "Plain and friendly; at most one light enthusiastic phrase.",
                "fail": "Pushy or hyped: shouting capitals, several exclamation marks, urgency, superlatives.",
            },
            "pass_labels": ["pass"],
            "scored_by": "judge",
            "checks": [],
        },
        {
            "id": "format_length",
            "question": "Is the reply the JSON object asked for, within the length limits?",
            "allowed_labels": ["pass", "fail"],
            "anchors": {
                "pass": "A JSON object with a title and a description, each within its limits.",
                "fail": "Not that JSON object, or a title or description outside its limits.",
            },
            "pass_labels": ["pass"],
            "scored_by": "programmatic",
            "checks": ["schema", "length"],
        },
    ]
    return {
        "rubric_id": "product-description",
        "version": RUBRIC_VERSION,
        "fixed_at": "2026-11-01",
        "criteria": criteria,
        "limits": {"min_words": 25, "max_words": 80, "max_title_chars": 60, "max_cost_usd": 0.0002},
        "agreement_rule": {
            "subset": "held_out",
            "reference": "adjudicated",
            "min_kappa": 0.6,
            "min_percent_agreement": 0.8,
            "arrangement": "per_criterion",
        },
        "release_rule": "A description is shown to shoppers only when every criterion passes. A criterion the judge "
        "may not score waits for a person's label, and so does the release.",
    }


def descriptions() -> dict[str, Any]:
    """Return the descriptions the raters labeled: the exact reply text per product."""
    return {
        "note": "Written by the course, flaws included on purpose; the raters labeled these exact texts.",
        "descriptions": {row[0]: catalog.labeled_description(row[0]) for row in catalog.PRODUCT_ROWS},
    }


def human_labels(rubric_data: dict[str, Any]) -> dict[str, Any]:
    """Return two raters' labels and the adjudicated label per product and criterion, with the fixed subsets."""
    from labkit.canonical import canonical_sha256

    items = []
    for pid, *_ in catalog.PRODUCT_ROWS:
        text = catalog.labeled_description(pid)
        labels = {
            c["id"]: {
                **{r: catalog.rater_label(r, pid, c["id"]) for r in RATERS},
                "adjudicated": catalog.adjudicated_label(pid, c["id"]),
            }
            for c in rubric_data["criteria"]
        }
        items.append(
            {
                "product_id": pid,
                "description_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "labels": labels,
            }
        )
    return {
        "note": "Authored by the course to stand for two human raters; no person labeled these texts.",
        "rubric_version": rubric_data["version"],
        "rubric_sha256": canonical_sha256(rubric_data),
        "raters": list(RATERS),
        "subsets": {"calibration": list(catalog.CALIBRATION_SUBSET), "held_out": list(catalog.HELD_OUT_SUBSET)},
        "fixed_at": "2026-11-01",
        "items": items,
    }


def prices() -> dict[str, Any]:
    """Return the price table: US dollars per million tokens, by model id."""
    return {
        "currency": "USD",
        "note": "Illustrative prices written for the course, not any vendor's list.",
        "models": {
            "SmolLM2-135M-Instruct": {"input_per_million_tokens": 0.01, "output_per_million_tokens": 0.02},
            "authored-by-course": {"input_per_million_tokens": 0.15, "output_per_million_tokens": 0.6},
        },
    }


def write_evaluator_fixtures(folder: str | Path) -> dict[str, str]:
    """Write every lesson 01 fixture into ``folder``; return each file's SHA-256."""
    folder = prepare_fixture_folder(folder)
    rubric_data = rubric()
    contents = {
        "products.json": products(),
        "rubric.json": rubric_data,
        "descriptions.json": descriptions(),
        "human_labels.json": human_labels(rubric_data),
        "prices.json": prices(),
    }
    return write_json_fixtures(folder, contents)


def main(argv: list[str] | None = None) -> int:
    """Write the fixtures into ``argv[0]`` (default ``fixtures/evaluator``) and print their hashes."""
    return fixture_script(
        argv, prog="labkit.evaluator.fixtures", default=fixtures_dir() / "evaluator", write=write_evaluator_fixtures
    )


if __name__ == "__main__":
    sys.exit(main())
