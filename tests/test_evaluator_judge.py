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


def test_judge_groups_make_one_call_per_criterion_or_one_bundled_call():
    from labkit.evaluator.judge import judge_groups

    each = judge_groups(RUBRIC, "per_criterion")
    assert [(c.id, [x.id for x in group]) for c, group in each] == [
        ("factual_accuracy", ["factual_accuracy"]),
        ("completeness", ["completeness"]),
        ("tone", ["tone"]),
    ]
    bundled = judge_groups(RUBRIC, "bundled")
    assert [(c, [x.id for x in group]) for c, group in bundled] == [
        (None, ["factual_accuracy", "completeness", "tone"])
    ]


def test_a_judge_call_names_its_instructions_and_reply_fields_in_order():
    from labkit.evaluator.report import evaluate_run

    calls = evaluate_run("01-evaluator-authored").runs.judging.calls
    call = next(c for c in calls if c.product_id == "p07" and c.criteria == ["completeness"])
    assert call.instructions.startswith("Judge one product description against one criterion.")
    assert call.reply_fields == ["explanation", "verdict"]
