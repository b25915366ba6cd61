"""Programmatic checks: output schema, length and cost limits, and numeric claims against the supplied facts."""

import json

import pytest

from labkit.evaluator.checks import CLAIM_PATTERNS, find_claims, run_checks
from labkit.evaluator.labels import load_labeled_descriptions
from labkit.evaluator.products import load_products
from labkit.evaluator.rubric import load_rubric

PRODUCTS = load_products()
RUBRIC = load_rubric()


def _reply(body, title="Trailhead Lantern"):
    return json.dumps({"title": title, "description": body})


def test_battery_claim_of_12_hours_fails_against_facts_of_6_hours_and_keeps_both():
    text = load_labeled_descriptions()["p07"]
    report = run_checks(text, PRODUCTS["p07"], RUBRIC, cost_usd=0.00006)
    assert report.status("schema") == "pass" and report.status("length") == "pass" and report.status("cost") == "pass"
    assert report.status("numeric_claims") == "fail"
    [bad] = report.failed_claims()
    assert (bad.quantity, bad.text, bad.claimed, bad.fact, bad.status) == (
        "battery_life",
        "12 hours",
        "12 h",
        "6 h",
        "contradicted",
    )


def test_claims_in_other_units_are_converted_before_comparing():
    product = PRODUCTS["p03"]  # 2300 g, 450 x 260 x 55 mm
    claims = find_claims("It weighs 2.3 kg, measures 45 x 26 x 5.5 cm and is 55 mm deep.", product)
    assert [(c.quantity, c.status) for c in claims] == [
        ("weight", "supported"),
        ("dimensions", "supported"),
        ("length", "supported"),
    ]
    assert find_claims("It weighs 1.2 kg.", product)[0].claimed == "1200 g"


def test_battery_claim_for_a_product_without_a_battery_is_unsupported():
    [claim] = find_claims("It runs for 10 hours.", PRODUCTS["p01"])
    assert claim.status == "unsupported" and claim.fact is None


def test_price_claims_are_checked_in_euros():
    claims = find_claims("Yours for €45 (not 50 EUR).", PRODUCTS["p07"])
    assert [(c.claimed, c.status) for c in claims] == [("45 EUR", "supported"), ("50 EUR", "contradicted")]


def test_reply_that_is_not_the_json_object_fails_schema_and_skips_length():
    report = run_checks("Trailhead Lantern: a lantern.", PRODUCTS["p07"], RUBRIC, cost_usd=0.0)
    assert report.status("schema") == "fail" and report.status("length") == "not_applicable"


def test_extra_field_in_reply_fails_schema():
    text = json.dumps({"title": "T", "description": "x " * 30, "rating": 5})
    assert run_checks(text, PRODUCTS["p07"], RUBRIC, cost_usd=0.0).status("schema") == "fail"


@pytest.mark.parametrize("words,status", [(24, "fail"), (25, "pass"), (80, "pass"), (81, "fail")])
def test_length_limit_is_inclusive(words, status):
    report = run_checks(_reply(" ".join(["light"] * words)), PRODUCTS["p07"], RUBRIC, cost_usd=0.0)
    assert report.status("length") == status


def test_cost_over_the_limit_fails_the_cost_check():
    limit = RUBRIC.limits.max_cost_usd
    assert run_checks(_reply("light " * 30), PRODUCTS["p07"], RUBRIC, cost_usd=limit).status("cost") == "pass"
    assert run_checks(_reply("light " * 30), PRODUCTS["p07"], RUBRIC, cost_usd=limit * 1.01).status("cost") == "fail"


def test_cost_detail_names_usd_without_dollar_signs_that_mathjax_would_read_as_math():
    report = run_checks(_reply("light " * 30), PRODUCTS["p07"], RUBRIC, cost_usd=0.000061)
    detail = next(r.detail for r in report.results if r.name == "cost")
    assert detail == f"0.000061 USD (limit {RUBRIC.limits.max_cost_usd:.6f} USD)"


def test_claim_patterns_read_digits_with_a_unit_and_not_spelled_out_numbers():
    patterns = dict(CLAIM_PATTERNS)
    assert patterns["battery_life"].search("lasts 12 hours").group(0) == "12 hours"
    assert patterns["weight"].search("weighs 14,500 g").group(1) == "14,500"
    assert patterns["battery_life"].search("lasts twelve hours") is None
