"""The evaluation record: kept apart from the shopper's description, cost from tokens and prices only."""

import hashlib
import json

import pytest
from openai.types.chat import ChatCompletion

from labkit.evaluator.calibration import Agreement, Routing
from labkit.evaluator.calls import Caller, ModelCall, UnknownPrice, load_prices
from labkit.evaluator.checks import CheckReport, CheckResult, ClaimCheck, run_checks
from labkit.evaluator.generation import Generation
from labkit.evaluator.judge import JudgeLabel, judge_description
from labkit.evaluator.lesson import load_inputs
from labkit.evaluator.record import (
    CriterionResult,
    UserDescription,
    build_record,
    release_decision,
    user_description,
)
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


# --- build_record and release_decision on inputs built here, one rule per test ----------------------------------

REPLY = json.dumps({"title": "Trailhead Lantern", "description": "A lantern."})
REQUEST = {
    "model": "SmolLM2-135M-Instruct",
    "messages": [{"role": "user", "content": "x"}],
    "temperature": 0,
    "seed": 3,
}


def live_generation() -> Generation:
    call = ModelCall(
        key="describe:p07",
        request_sha256="0" * 64,
        request=REQUEST,
        reply_text=REPLY,
        model_id="SmolLM2-135M-Instruct",
        origin="live",
        prompt_tokens=10,
        completion_tokens=5,
        usage_source="reported",
        latency_s=1.25,
        cost_usd=0.0001,
    )
    return Generation(product_id="p07", prompt_version="v1", rubric_version="r1", rubric_sha256="a" * 64, call=call)


def check_report(*, claims: tuple[ClaimCheck, ...] = (), **statuses: str) -> CheckReport:
    """A report with every check passing unless ``statuses`` says otherwise; each detail names its check."""
    names = ("schema", "length", "cost", "numeric_claims")
    results = [CheckResult(name=n, status=statuses.get(n, "pass"), detail=f"{n} detail") for n in names]
    return CheckReport(product_id="p07", results=results, claims=list(claims))


def evidence_of(criterion: str) -> Agreement:
    return Agreement(
        criterion=criterion,
        arrangement="per_criterion",
        items=20,
        rejected=0,
        percent_agreement=0.9,
        kappa=0.8,
        base_rate_label="pass",
        base_rate=0.6,
        agreement_low=0.8,
        agreement_high=1.0,
        kappa_low=0.6,
        kappa_high=1.0,
        kappa_undefined=0,
    )


AGREEMENTS = {c.id: evidence_of(c.id) for c in INPUTS.rubric.criteria}
JUDGE_ROUTES = {c.id: Routing(criterion=c.id, scorer="judge", reason="meets the rule") for c in INPUTS.rubric.criteria}
LABELS = {
    "factual_accuracy": JudgeLabel(criterion="factual_accuracy", explanation="Matches the facts.", verdict="pass"),
    "completeness": JudgeLabel(criterion="completeness", explanation="Leaves out the weight.", verdict="partial"),
    "tone": JudgeLabel(criterion="tone", explanation="Plain and friendly.", verdict="pass"),
}


def record_of(checks: CheckReport, *, routing=None, labels=None) -> dict[str, CriterionResult]:
    record = build_record(
        live_generation(),
        checks,
        INPUTS.rubric,
        run_id="test",
        routing=JUDGE_ROUTES if routing is None else routing,
        agreements=AGREEMENTS,
        judge_labels=LABELS if labels is None else labels,
        judge_cost_usd=0.0,
    )
    return {r.criterion: r for r in record.criteria}


def result(passed: bool | None) -> CriterionResult:
    label = None if passed is None else ("pass" if passed else "fail")
    scorer = "human_review" if passed is None else "judge"
    return CriterionResult(
        criterion="c", label=label, passed=passed, scorer=scorer, explanation=None, evidence=[], agreement=None
    )


def test_a_description_passing_every_criterion_is_released():
    assert release_decision([result(True), result(True)]) == "release"


def test_one_unscored_criterion_holds_the_release_and_one_failure_blocks_it_whatever_the_others():
    assert release_decision([result(True), result(None)]) == "awaiting_human_review"
    assert release_decision([result(None), result(False), result(True)]) == "blocked"


def test_a_reply_that_is_not_the_output_schema_shows_the_shopper_nothing():
    assert user_description("Here is a lovely lantern!") is None
    assert user_description(REPLY) == UserDescription(title="Trailhead Lantern", description="A lantern.")


def test_a_judge_label_of_a_routed_criterion_is_the_release_label_with_its_explanation_and_evidence():
    results = record_of(check_report())
    completeness = results["completeness"]
    assert (completeness.label, completeness.passed, completeness.scorer) == ("partial", False, "judge")
    assert completeness.explanation == "Leaves out the weight."
    assert completeness.agreement == AGREEMENTS["completeness"]
    tone = results["tone"]
    assert (tone.label, tone.passed, tone.scorer, tone.explanation) == ("pass", True, "judge", "Plain and friendly.")


def test_a_passing_programmatic_criterion_passes_without_routing_or_a_judge():
    fmt = record_of(check_report(), routing={}, labels={})["format_length"]
    assert (fmt.label, fmt.passed, fmt.scorer) == ("pass", True, "programmatic")
    assert fmt.agreement == AGREEMENTS["format_length"]
    assert fmt.evidence == ["schema: schema detail", "length: length detail"]


def test_a_failing_check_fails_only_the_criterion_it_gates_and_keeps_the_judges_explanation():
    results = record_of(check_report(length="fail", cost="fail"))
    fmt = results["format_length"]
    assert (fmt.label, fmt.passed, fmt.scorer) == ("fail", False, "programmatic")
    assert fmt.evidence == ["schema: schema detail", "length: length detail"]
    assert [r.scorer for r in results.values()] == ["judge", "judge", "judge", "programmatic"]
    assert results["completeness"].evidence == [] and results["tone"].evidence == []
    checked = record_of(check_report(numeric_claims="fail"))["factual_accuracy"]
    assert (checked.label, checked.passed, checked.scorer) == ("fail", False, "programmatic")
    assert checked.explanation == "Matches the facts." and checked.agreement == AGREEMENTS["factual_accuracy"]


def test_failing_claims_are_the_evidence_each_with_its_fact_or_nothing():
    claims = (
        ClaimCheck(quantity="battery_life", text="12 hours", claimed="12 h", fact="6 h", status="contradicted"),
        ClaimCheck(quantity="price", text="€30", claimed="30 EUR", fact=None, status="unsupported"),
        ClaimCheck(quantity="weight", text="200 g", claimed="200 g", fact="200 g", status="supported"),
    )
    factual = record_of(check_report(numeric_claims="fail", claims=claims))["factual_accuracy"]
    assert factual.evidence == [
        "'12 hours': claims 12 h, facts say 6 h",
        "'€30': claims 30 EUR, facts say nothing",
    ]


def test_a_passing_numeric_check_is_evidence_in_its_own_words():
    factual = record_of(check_report())["factual_accuracy"]
    assert factual.evidence == ["numeric_claims: numeric_claims detail"]
    assert (factual.label, factual.scorer) == ("pass", "judge")


def test_a_criterion_routed_to_human_review_waits_even_beside_a_judge_label():
    routing = {**JUDGE_ROUTES, "tone": Routing(criterion="tone", scorer="human_review", reason="kappa below 0.6")}
    tone = record_of(check_report(), routing=routing)["tone"]
    assert (tone.label, tone.passed, tone.scorer) == (None, None, "human_review")
    assert tone.explanation == "Plain and friendly." and tone.agreement == AGREEMENTS["tone"]
    unrouted = record_of(check_report(), routing={})["tone"]
    assert (unrouted.label, unrouted.scorer) == (None, "human_review")


def test_a_routed_criterion_the_judge_did_not_label_is_not_judged():
    tone = record_of(check_report(), labels={})["tone"]
    assert (tone.label, tone.passed, tone.scorer, tone.explanation) == (None, None, "not_judged", None)
    assert tone.agreement == AGREEMENTS["tone"]


def test_the_record_keeps_every_setting_but_model_and_messages_and_the_measured_latency():
    record = build_record(
        live_generation(),
        check_report(),
        INPUTS.rubric,
        run_id="test",
        routing=JUDGE_ROUTES,
        agreements=AGREEMENTS,
        judge_labels=LABELS,
        judge_cost_usd=0.0,
    )
    assert record.generation_settings == {"temperature": 0, "seed": 3}
    assert record.latency_s == 1.25 and record.origin == "live" and record.model_id == "SmolLM2-135M-Instruct"
    assert record.description_sha256 == hashlib.sha256(REPLY.encode()).hexdigest()
    assert record.release == "blocked"  # completeness is partial
