"""The golden set: 3/3 in replay of the authored run, exact-text scoring, fresh threads, and the lesson's runs."""

import json

import pytest

from labkit.boundary import connect
from labkit.course.lessons import write_authored
from labkit.recording import load_run
from labkit.system.contract import SETTINGS, ScriptedModel
from labkit.system.golden import GOLDEN, QUESTIONS, GoldenCase, passed, run_golden, score_line, unmet
from labkit.system.policy import load_policy_index
from labkit.system.runs import RUN_AUTHORED, RUN_CAPTURED, make_requests
from labkit.system.workflow import MinimalSystem, read_trace_lines


@pytest.fixture(scope="module")
def index():
    return load_policy_index()


def test_replaying_the_authored_run_passes_all_three_golden_cases(index, tmp_path):
    system = MinimalSystem(
        connect(RUN_AUTHORED, lesson="05", settings=SETTINGS), index=index, trace_path=tmp_path / "t.jsonl"
    )
    rows = run_golden(system)
    assert score_line(rows) == "3/3 golden cases passed"


def test_an_incorrect_policy_answer_with_a_valid_page_is_answered_but_fails_the_exact_text_check(index, tmp_path):
    wrong = json.dumps(
        {
            "kind": "answer",
            "text": "Customers can request a refund within 60 days.",
            "citation_ids": ["refund_policy.pdf#p1"],
        }
    )
    system = MinimalSystem(ScriptedModel(wrong), index=index, trace_path=tmp_path / "t.jsonl")
    result = system.ask(GOLDEN[0].question, "team-a", "s1")
    assert result["status"] == "answered" and result["citation_ids"] == ["refund_policy.pdf#p1"]
    assert not passed(result, GOLDEN[0])


def test_each_golden_case_runs_on_its_own_fresh_thread(index, tmp_path):
    system = MinimalSystem(
        connect(RUN_AUTHORED, lesson="05", settings=SETTINGS), index=index, trace_path=tmp_path / "t.jsonl"
    )
    rows = run_golden(system)
    sessions = [session_id for _, session_id, _, _ in rows]
    assert len(set(sessions)) == 3
    assert all(len(system.saved_state(s)["trace"]) <= 4 for s in sessions)  # one request per thread
    assert [line["session_id"] for line in read_trace_lines(system.trace_path)] == sessions
    assert all(s.startswith("golden-") for s in sessions)
    assert all(s.startswith("demo-") for _, s, _, _ in run_golden(system, prefix="demo"))


def test_an_answer_without_citation_ids_fails_a_case_that_needs_a_citation():
    assert passed({"status": "answered", "text": GOLDEN[0].text}, GOLDEN[0]) is False


COUNT = GOLDEN[1]
PASSES = [
    (
        {
            "status": "answered",
            "text": "Customers can request a refund within 30 days.",
            "citation_ids": ["refund_policy.pdf#p1"],
        },
        GOLDEN[0],
        True,
    ),
    (
        {
            "status": "answered",
            "text": "Customers can request a refund within 30 days.",
            "citation_ids": ["refund_policy.pdf#p2"],
        },
        GOLDEN[0],
        False,
    ),
    (
        {
            "status": "answered",
            "text": "Refunds can be requested within 30 days.",
            "citation_ids": ["refund_policy.pdf#p1"],
        },
        GOLDEN[0],
        False,
    ),
    ({"status": "invalid_output"}, GOLDEN[0], False),
    ({"status": "answered", "text": "2 get_refund tickets", "observation": {"count": 2}}, COUNT, True),
    ({"status": "answered", "text": "1 track_order tickets", "observation": {"count": 1}}, COUNT, False),
    ({"status": "answered", "text": "2"}, COUNT, False),
    ({"status": "insufficient_evidence"}, GOLDEN[2], True),
    ({"status": "answered", "text": "2 get_refund tickets", "observation": {"count": 2}}, GOLDEN[2], False),
]


@pytest.mark.parametrize("result,case,expected", PASSES, ids=[f"case{i}" for i in range(len(PASSES))])
def test_passed_checks_status_citation_exact_text_and_count(result, case, expected):
    assert passed(result, case) is expected


def test_a_golden_case_must_name_a_known_status():
    with pytest.raises(ValueError):
        GoldenCase(question="q", team="team-a", status="tool_call")


def test_the_lesson_asks_the_golden_questions_and_one_empty_count():
    assert QUESTIONS[:3] == tuple(case.question for case in GOLDEN) and len(QUESTIONS) == 4


@pytest.mark.parametrize("run_id", [RUN_AUTHORED, RUN_CAPTURED])
def test_every_request_of_the_lesson_replays_from_its_run(run_id, tmp_path):
    asked = make_requests(connect(run_id, lesson="05", settings=SETTINGS), trace_path=tmp_path / "t.jsonl")
    assert [question for question, _, _ in asked] == list(QUESTIONS)


def test_the_captured_run_is_labelled_and_carries_measured_latency():
    run = load_run(RUN_CAPTURED)
    assert run.origin == "captured" and run.model.endpoint_kind == "local-llama-cpp"
    assert {b.question for b in run.bindings} == set(QUESTIONS)
    assert all(b.latency_s is not None and b.usage for b in run.bindings)


def test_the_authored_run_is_rewritten_byte_for_byte(course):
    path = course / "recorded_runs" / RUN_AUTHORED / "run.json"
    before = path.read_bytes()
    assert write_authored("05") == path and path.read_bytes() == before


@pytest.mark.parametrize("result,case,expected", PASSES, ids=[f"case{i}" for i in range(len(PASSES))])
def test_a_result_passes_exactly_when_it_breaks_no_rule(result, case, expected):
    assert (unmet(result, case) == []) is expected


def test_unmet_names_every_rule_a_result_breaks_not_only_the_first():
    counted = {"status": "answered", "text": "2 get_refund tickets", "observation": {"count": 2}}
    assert unmet(counted, GOLDEN[0]) == [
        "cites [], expected refund_policy.pdf#p1",
        f"text '2 get_refund tickets' is not exactly {GOLDEN[0].text!r}",
    ]
    assert unmet({"status": "insufficient_evidence"}, GOLDEN[1]) == [
        "status insufficient_evidence, expected answered",
        "count None, expected 2",
    ]
    assert unmet(counted, GOLDEN[2]) == ["status answered, expected insufficient_evidence"]


def test_a_paraphrase_citing_the_right_page_breaks_only_the_exact_text_rule():
    said = {"status": "answered", "text": "You have 30 days.", "citation_ids": ["refund_policy.pdf#p1"]}
    assert unmet(said, GOLDEN[0]) == [f"text 'You have 30 days.' is not exactly {GOLDEN[0].text!r}"]
