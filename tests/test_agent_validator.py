"""The final-answer validator checks number, scope and intent, and rejects an unsupported explanation."""

import pytest

from labkit.agent.validator import AnswerRejected, VerifiedAnswer, format_answer, intent_noun, verify_final

RESULT = {
    "count": 27,
    "dataset_version": "support-2026-09-01",
    "caller_scope": "approved_support_dataset",
    "intent": "get_refund",
}


def test_the_books_answer_is_verified():
    verified = verify_final(
        "27 refund requests in approved_support_dataset", result=RESULT, expected_intent="get_refund"
    )
    assert verified.count == 27 and verified.caller_scope == "approved_support_dataset"
    assert format_answer(27, "get_refund", "approved_support_dataset") == verified.answer


@pytest.mark.parametrize(
    "answer,reason",
    [
        ("26 refund requests in approved_support_dataset", "wrong_count"),
        ("27 refund requests in escalations_restricted", "wrong_scope"),
        ("27 complaint requests in approved_support_dataset", "wrong_intent"),
        ("27 refund requests in approved_support_dataset, mostly because of late deliveries.", "unsupported"),
        ("About 20 refund requests", "unsupported"),
    ],
)
def test_answer_not_supported_by_the_tool_result_is_rejected(answer, reason):
    with pytest.raises(AnswerRejected) as info:
        verify_final(answer, result=RESULT)
    assert info.value.reason == reason


def test_count_of_another_intent_is_rejected_for_a_refund_question():
    with pytest.raises(AnswerRejected) as info:
        verify_final(
            "14 complaint requests in approved_support_dataset",
            result={**RESULT, "count": 14, "intent": "complaint"},
            expected_intent="get_refund",
        )
    assert info.value.reason == "wrong_intent"


def test_the_verified_answer_carries_the_result_it_was_checked_against():
    verified = verify_final("  27 refund requests in approved_support_dataset.  ", result=RESULT)
    assert verified == VerifiedAnswer(
        "27 refund requests in approved_support_dataset.",
        27,
        "approved_support_dataset",
        "get_refund",
        "support-2026-09-01",
    )


def test_other_intents_are_named_by_their_words():
    assert intent_noun("track_order") == "track order"
    assert (
        format_answer(6, "track_order", "approved_support_dataset")
        == "6 track order requests in approved_support_dataset"
    )
    result = {**RESULT, "count": 6, "intent": "track_order"}
    assert verify_final("6 track order requests in approved_support_dataset", result=result).intent == "track_order"


@pytest.mark.parametrize(
    "answer,result,expected_intent,message",
    [
        (
            "About 20 refund requests",
            RESULT,
            None,
            "'About 20 refund requests' is not the one form verify_final accepts, '<count> <intent> requests in <scope>'; "
            "any other wording, an added explanation or a true rewording, cannot be checked",
        ),
        ("26 refund requests in approved_support_dataset", RESULT, None, "the answer says 26, the tool counted 27"),
        (
            "27 refund requests in escalations_restricted",
            RESULT,
            None,
            "the answer names 'escalations_restricted', the tool read 'approved_support_dataset'",
        ),
        (
            "27 refund requests in approved_support_dataset",
            {**RESULT, "intent": "complaint"},
            "get_refund",
            "the tool counted 'complaint', the question asked about 'get_refund'",
        ),
        (
            "27 complaint requests in approved_support_dataset",
            RESULT,
            None,
            "the answer speaks of 'complaint' requests, the tool counted 'get_refund' ('refund')",
        ),
    ],
)
def test_a_rejection_says_exactly_what_differs(answer, result, expected_intent, message):
    with pytest.raises(AnswerRejected) as info:
        verify_final(answer, result=result, expected_intent=expected_intent)
    assert str(info.value) == message
