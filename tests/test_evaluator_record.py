"""The evaluation record: kept apart from the shopper's description, cost from tokens and prices only."""

import json

import pytest
from openai.types.chat import ChatCompletion

from labkit.evaluator.calls import Caller, UnknownPrice, load_prices
from labkit.evaluator.checks import run_checks
from labkit.evaluator.judge import judge_description
from labkit.evaluator.lesson import load_inputs
from labkit.evaluator.record import UserDescription, build_record, user_description
from labkit.evaluator.report import evaluate_run

INPUTS = load_inputs()


@pytest.fixture(scope="module")
def authored():
    return evaluate_run("01-evaluator-authored", inputs=INPUTS)


def test_six_versus_twelve_hours_fails_factual_accuracy_although_schema_and_cost_pass(authored):
    record = authored.records["p07"]
    assert record.checks.status("schema") == "pass" and record.checks.status("cost") == "pass"
    assert record.cost_usd <= INPUTS.rubric.limits.max_cost_usd
    factual = next(r for r in record.criteria if r.criterion == "factual_accuracy")
    assert (factual.label, factual.passed, factual.scorer) == ("fail", False, "programmatic")
    assert "'12 hours': claims 12 h, facts say 6 h" in factual.evidence
    [claim] = record.checks.failed_claims()
    assert (claim.claimed, claim.fact) == ("12 h", "6 h")
    assert record.release == "blocked"


def test_record_holds_rubric_settings_labels_cost_and_agreement_but_not_the_description(authored):
    record = authored.records["p07"]
    dumped = record.model_dump(mode="json")
    assert dumped["rubric_sha256"] == INPUTS.rubric.sha256 and dumped["rubric_version"] == INPUTS.rubric.version
    assert dumped["generation_settings"]["temperature"] == 0 and "response_format" in dumped["generation_settings"]
    completeness = next(r for r in record.criteria if r.criterion == "completeness")
    assert completeness.scorer == "judge" and completeness.explanation and completeness.agreement.kappa is not None
    description = user_description(authored.runs.generation.by_product()["p07"].text)
    assert description.description not in json.dumps(dumped)
    assert set(UserDescription.model_fields) == {"title", "description"}


def test_judge_criterion_below_the_rule_waits_for_human_review_in_the_record(authored):
    assert authored.routing["tone"].scorer == "human_review"
    tone = next(r for r in authored.records["p02"].criteria if r.criterion == "tone")
    assert tone.label is None and tone.scorer == "human_review"
    assert authored.records["p02"].release == "awaiting_human_review"


class FakeAdapter:
    """Answers like a live endpoint with fixed token counts; the judge reply claims a cost of its own."""

    mode = "live"
    model = "SmolLM2-135M-Instruct"

    def __init__(self):
        self.settings = {"temperature": 0, "seed": 11}

    def generate(self, key, messages, **settings):
        if key.startswith("describe:"):
            text = json.dumps({"title": "Trailhead Lantern", "description": "A lantern. " * 12})
        else:
            allowed = settings["response_format"]["schema"]["properties"]["verdict"]["enum"]
            text = json.dumps({"explanation": "Fine.", "verdict": allowed[0], "cost_usd": 0.0})
        return ChatCompletion.model_validate(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
            }
        )


def test_cost_is_computed_from_tokens_and_prices_never_read_from_a_judge_reply():
    prices = load_prices()
    caller = Caller(FakeAdapter(), prices=prices)
    product = INPUTS.products["p07"]
    from labkit.evaluator.generation import generate_descriptions

    generation = generate_descriptions(caller, {"p07": product}, INPUTS.rubric, run_id="test")
    calls = judge_description(
        caller, product, generation.generations[0].text, INPUTS.rubric, arrangement="per_criterion", source="generated"
    )
    price = prices.models["SmolLM2-135M-Instruct"]
    expected = (1000 * price.input_per_million_tokens + 500 * price.output_per_million_tokens) / 1e6
    assert generation.generations[0].call.cost_usd == pytest.approx(expected)
    assert all(c.call.cost_usd == pytest.approx(expected) and c.call.usage_source == "reported" for c in calls)
    assert all("cost_usd" in c.rejected and not c.labels for c in calls)  # a reply that speaks of cost is refused
    checks = run_checks(
        generation.generations[0].text, product, INPUTS.rubric, cost_usd=generation.generations[0].call.cost_usd
    )
    record = build_record(
        generation.generations[0],
        checks,
        INPUTS.rubric,
        run_id="test",
        routing={},
        agreements={},
        judge_labels={},
        judge_cost_usd=calls[0].call.cost_usd,
    )
    assert record.cost_usd == pytest.approx(expected) and record.judge_cost_usd == pytest.approx(expected)


def test_model_without_a_price_has_no_cost_instead_of_a_guess():
    with pytest.raises(UnknownPrice, match=r"add it to fixtures/evaluator/prices\.json"):
        load_prices().cost("mystery-model", prompt_tokens=1, completion_tokens=1)


def test_authored_run_measures_no_latency_and_labels_its_tokens_estimated(authored):
    calls = [g.call for g in authored.runs.generation.generations]
    assert all(c.latency_s is None and c.usage_source == "estimated" and c.origin == "authored" for c in calls)


def test_release_rule_blocks_on_any_failure_releases_on_all_passes_and_otherwise_waits(authored):
    releases = set()
    for record in authored.records.values():
        passed = [r.passed for r in record.criteria]
        if any(p is False for p in passed):
            expected = "blocked"
        elif all(p is True for p in passed):
            expected = "release"
        else:
            expected = "awaiting_human_review"
        assert record.release == expected, record.product_id
        releases.add(record.release)
    assert {"blocked", "awaiting_human_review"} <= releases  # the authored run releases no product


def test_each_criterion_result_follows_its_scorer(authored):
    criteria = {c.id: c for c in INPUTS.rubric.criteria}
    scorers = set()
    for record in authored.records.values():
        for result in record.criteria:
            criterion = criteria[result.criterion]
            scorers.add(result.scorer)
            assert result.agreement is None or result.agreement.criterion == result.criterion
            if result.scorer == "judge":
                assert result.label in criterion.allowed_labels and result.explanation and result.agreement
                assert result.passed is (result.label in criterion.pass_labels)
            elif result.scorer == "human_review":
                assert (result.label, result.passed) == (None, None)
            elif result.scorer == "programmatic":
                assert result.passed is (result.label in criterion.pass_labels)
    assert {"judge", "human_review", "programmatic"} <= scorers
