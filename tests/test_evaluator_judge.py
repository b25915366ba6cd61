"""The judge: explanation first, verdict second, verdict limited to the rubric's allowed labels."""

import json

import pytest

from labkit.evaluator.judge import JudgeReplyRejected, bundled_model, parse_judge_reply, verdict_model
from labkit.evaluator.rubric import load_rubric

RUBRIC = load_rubric()


def test_judge_label_outside_the_allowed_set_is_rejected():
    criterion = RUBRIC.criterion("completeness")
    for verdict in ("excellent", "Complete", "pass", ""):
        with pytest.raises(JudgeReplyRejected, match="verdict"):
            parse_judge_reply(
                json.dumps({"explanation": "Gives every fact.", "verdict": verdict}), RUBRIC, criterion=criterion
            )


def test_allowed_label_is_accepted_with_its_explanation():
    [label] = parse_judge_reply(
        '{"explanation": "Leaves out materials.", "verdict": "partial"}',
        RUBRIC,
        criterion=RUBRIC.criterion("completeness"),
    )
    assert (label.criterion, label.verdict, label.explanation) == ("completeness", "partial", "Leaves out materials.")


def test_schema_puts_explanation_before_verdict_and_lists_allowed_labels():
    schema = verdict_model(RUBRIC.criterion("tone")).model_json_schema()
    assert list(schema["properties"]) == ["explanation", "verdict"] and schema["required"] == ["explanation", "verdict"]
    assert schema["properties"]["verdict"]["enum"] == ["pass", "fail"]


@pytest.mark.parametrize(
    "reply",
    [
        "pass",
        '{"verdict": "pass"}',
        '{"explanation": "ok", "verdict": "pass", "confidence": 0.9}',
        '{"explanation": "", "verdict": "pass"}',
    ],
)
def test_malformed_judge_reply_is_rejected_not_repaired(reply):
    with pytest.raises(JudgeReplyRejected):
        parse_judge_reply(reply, RUBRIC, criterion=RUBRIC.criterion("tone"))


def test_bundled_reply_needs_every_judged_criterion_and_checks_each_verdict():
    good = {c.id: {"explanation": "x", "verdict": c.allowed_labels[0]} for c in RUBRIC.judged()}
    assert [lab.criterion for lab in parse_judge_reply(json.dumps(good), RUBRIC)] == [c.id for c in RUBRIC.judged()]
    assert "format_length" not in bundled_model(RUBRIC).model_json_schema()["properties"]
    with pytest.raises(JudgeReplyRejected, match="tone"):
        parse_judge_reply(json.dumps({**good, "tone": {"explanation": "x", "verdict": "meh"}}), RUBRIC)
    with pytest.raises(JudgeReplyRejected):
        parse_judge_reply(json.dumps({k: v for k, v in good.items() if k != "tone"}), RUBRIC)
