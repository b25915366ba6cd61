"""The final-answer validator checks number, scope and intent, and rejects an unsupported explanation."""

import pytest

from labkit.agent.validator import AnswerRejected, format_answer, verify_final

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
