"""Failure variants: each authored bad reply is caught by its lesson's real check with the catalogued outcome."""

import subprocess
import sys

import pytest

from labkit.course.variants import VARIANTS, FailedAttempt, UnknownVariant, demonstrate, variant
from labkit.errors import LabkitError

NAMES = [v.name for v in VARIANTS]


def test_catalogue_holds_the_six_named_variants():
    assert NAMES == [
        "malformed-json",
        "field-combination",
        "wrong-tool-arguments",
        "unsupported-citation",
        "iteration-cap-loop",
        "rate-limit-retry",
    ]


@pytest.mark.parametrize("name", NAMES)
def test_variant_is_caught_by_its_check_with_the_expected_outcome(name):
    chosen = variant(name)
    result = demonstrate(name)
    assert (result.name, result.caught_by, result.outcome) == (name, chosen.caught_by, chosen.expected)
    assert result.reason


@pytest.mark.parametrize("name", NAMES)
def test_every_description_says_the_reply_is_authored_not_model_output(name):
    description = variant(name).description.lower()
    assert "authored by the course" in description and "no model produced it" in description


@pytest.mark.parametrize(
    "name", ["malformed-json", "field-combination", "wrong-tool-arguments", "unsupported-citation"]
)
def test_lesson_05_variants_never_reach_the_tool(name):
    detail = demonstrate(name).detail
    assert detail["tool ran"] is False and detail["steps"] == "retrieve -> generate -> check"


def test_smuggled_team_is_named_in_the_reason():
    assert demonstrate("wrong-tool-arguments").reason.startswith("tool_args.team")


def test_field_combination_reason_names_the_broken_rule():
    assert "tool_call must leave text empty" in demonstrate("field-combination").reason


def test_unsupported_citation_lists_the_evidence_it_was_checked_against():
    result = demonstrate("unsupported-citation")
    assert "refund_policy.pdf#p3" in result.reason
    assert "refund_policy.pdf#p3" not in result.detail["evidence"]


def test_loop_stops_at_the_cap_with_the_recorded_fallback():
    from labkit.agent.graph import DEFAULT_MAX_ITERATIONS, FALLBACK_ANSWER

    result = demonstrate("iteration-cap-loop")
    assert result.detail["status"] == "fallback" and result.detail["final"] == FALLBACK_ANSWER
    assert result.detail["trajectory"].count("filter_by_intent:tool_returned") == DEFAULT_MAX_ITERATIONS


def test_rate_limit_is_retried_by_the_client_and_recorded_on_the_binding():
    from labkit.rag.trace import RUN_AUTHORED

    result = demonstrate("rate-limit-retry")
    attempt = variant("rate-limit-retry").reply[0]
    assert isinstance(attempt, FailedAttempt) and attempt.status_code == 429
    assert result.detail["attempts"] == 2 and result.detail["retries recorded"] == 1
    assert [e.split(":")[0] for e in result.detail["transport errors"]] == ["HTTP 429"]
    assert result.detail["from run"] == RUN_AUTHORED and '"answered"' in result.detail["reply"]


@pytest.mark.parametrize("name", NAMES)
def test_demonstrate_is_deterministic(name):
    assert demonstrate(name) == demonstrate(name)
    assert demonstrate(name).summary() == demonstrate(name).summary()


@pytest.mark.parametrize("name", ["malformed_json", "", "MALFORMED-JSON", None])
def test_unknown_name_is_refused_with_the_list_of_names(name):
    with pytest.raises(UnknownVariant) as caught:
        variant(name)
    assert isinstance(caught.value, LabkitError) and isinstance(caught.value, LookupError)
    assert all(known in str(caught.value) for known in NAMES)
    with pytest.raises(UnknownVariant):
        demonstrate(name)


def test_importing_the_catalogue_loads_no_lesson_or_heavy_library():
    code = (
        "import sys, labkit.course.variants; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'langgraph', 'langchain_core', "
        "'pandas', 'faiss') or m.startswith(('labkit.system', 'labkit.agent', 'labkit.rag'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
