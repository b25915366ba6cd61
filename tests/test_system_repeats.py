"""Lesson 05's golden set over repeated trials: the captured run's seeds, replay, and tables counted from the replies."""

import json
from collections import defaultdict

import pytest

from labkit.boundary import connect
from labkit.recording import load_run
from labkit.system.golden import GOLDEN
from labkit.system.repeats import (
    RUN_CAPTURED,
    SETTINGS,
    TRIALS,
    golden_repeat_table,
    make_requests,
    outcomes,
    separable_counts,
    status_table,
)
from labkit.system.tickets import TICKETS
from tests.planted import PlantOne

QUESTIONS = [case.question for case in GOLDEN]


@pytest.fixture(scope="module")
def run():
    return load_run(RUN_CAPTURED)


@pytest.fixture
def replayed(tmp_path):
    return make_requests(connect(RUN_CAPTURED, lesson="05", settings=SETTINGS), trace_path=tmp_path / "t.jsonl")


def test_the_plan_repeats_each_case_at_least_five_times_above_temperature_zero():
    assert TRIALS.n >= 5 and TRIALS.temperature > 0
    assert SETTINGS["temperature"] == TRIALS.temperature and SETTINGS["seed"] == TRIALS.first_seed


def test_the_captured_run_holds_every_golden_case_once_per_seed_at_the_stated_temperature(run):
    assert run.origin == "captured" and TRIALS.describe() in run.description
    seeds = defaultdict(list)
    for binding in run.bindings:
        assert binding.request["temperature"] == TRIALS.temperature
        seeds[binding.question].append(binding.request["seed"])
    assert sorted(seeds) == sorted(QUESTIONS)
    assert all(sorted(found) == TRIALS.seeds for found in seeds.values())


def test_replay_answers_every_trial_of_every_case(run, replayed):
    assert len(replayed) == len(run.bindings) == len(GOLDEN) * TRIALS.n
    for case in GOLDEN:
        assert sorted(t.seed for t in replayed if t.case == case) == TRIALS.seeds
    assert len({t.session_id for t in replayed}) == len(replayed)  # every trial on a fresh thread


def _independent_pass(binding) -> bool:
    """Score one recorded reply without the workflow: parse it and compare with the golden case by hand."""
    case = next(c for c in GOLDEN if c.question == binding.question)
    if binding.response is None:
        return False
    text = binding.response["choices"][0]["message"]["content"]

    def refuse_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    try:
        reply = json.loads(text, object_pairs_hook=refuse_duplicates)
    except ValueError:
        return False
    if not isinstance(reply, dict) or not set(reply) <= {"kind", "text", "citation_ids", "tool_args"}:
        return False
    words, cites, args = reply.get("text", ""), reply.get("citation_ids", []), reply.get("tool_args")
    evidence = json.loads(binding.request["messages"][-1]["content"])["evidence"]
    if case.status == "insufficient_evidence":
        return reply.get("kind") == "insufficient_evidence" and not words and not cites and args is None
    if case.count is not None:
        if reply.get("kind") != "tool_call" or words or cites or not isinstance(args, dict) or set(args) != {"intent"}:
            return False
        counted = sum(1 for t in TICKETS if t["intent"] == args["intent"] and t["team"] == case.team)
        return args["intent"] in ("get_refund", "track_order", "cancel_order") and counted == case.count
    allowed = {e["citation_id"] for e in evidence}
    return (
        reply.get("kind") == "answer"
        and args is None
        and bool(cites)
        and set(cites) <= allowed
        and case.cites in cites
        and words == case.text
    )


def test_the_table_equals_counts_computed_independently_from_the_recorded_replies(run, replayed):
    by_question = defaultdict(list)
    for binding in sorted(run.bindings, key=lambda b: b.request["seed"]):
        by_question[binding.question].append(_independent_pass(binding))
    table = golden_repeat_table(replayed)
    for question, passes in by_question.items():
        assert table.loc[question, "passed"] == f"{sum(passes)}/{len(passes)}"
        assert table.loc[question, "first trial"] == ("pass" if passes[0] else "fail")
    assert outcomes(replayed) == dict(by_question)
    assert status_table(replayed).to_numpy().sum() == len(replayed)


@pytest.mark.parametrize("trial", [0, -1])
def test_a_planted_change_of_one_trial_changes_that_cases_row(replayed, tmp_path, trial):
    decline = GOLDEN[2]
    seed = TRIALS.seeds[trial]
    before = outcomes(replayed)[decline.question]
    flipped = '{"kind": "answer", "text": "At the office.", "citation_ids": ["refund_policy.pdf#p1"]}'
    if not before[trial]:
        flipped = '{"kind": "insufficient_evidence"}'
    boundary = connect(RUN_CAPTURED, lesson="05", settings=SETTINGS)
    planted = make_requests(
        PlantOne(boundary, question=decline.question, seed=seed, reply=flipped), trace_path=tmp_path / "p.jsonl"
    )
    after = outcomes(planted)[decline.question]
    assert after[trial] is not before[trial]
    assert [a for i, a in enumerate(after) if i != trial % TRIALS.n] == [
        b for i, b in enumerate(before) if i != trial % TRIALS.n
    ]
    row_before, row_after = (
        golden_repeat_table(replayed).loc[decline.question],
        golden_repeat_table(planted).loc[decline.question],
    )
    assert row_before["passed"] != row_after["passed"] and row_before["trials"] != row_after["trials"]


def test_recording_sends_each_case_once_per_seed_and_a_failed_reply_stays_a_failed_trial(course, monkeypatch, tmp_path):
    from labkit.cli import main
    from tests.fake_endpoint import FakeEndpoint

    def answer(body):  # declines every question; on odd seeds the reply breaks the contract
        return '{"kind": "insufficient_evidence"}' if body["seed"] % 2 == 0 else '{"kind": "answer"}'

    with FakeEndpoint(answer=answer) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        assert main(["record", "05", "--repeats", "--run-id", "05-repeats-fake"]) == 0
    recorded = load_run("05-repeats-fake")
    assert len(recorded.bindings) == len(GOLDEN) * TRIALS.n
    assert {b.request["temperature"] for b in recorded.bindings} == {TRIALS.temperature}
    trials = make_requests(connect("05-repeats-fake", lesson="05", settings=SETTINGS), trace_path=tmp_path / "r.jsonl")
    even = [seed % 2 == 0 for seed in TRIALS.seeds]
    assert outcomes(trials) == {
        GOLDEN[0].question: [False] * TRIALS.n,
        GOLDEN[1].question: [False] * TRIALS.n,
        GOLDEN[2].question: even,
    }
    assert set(status_table(trials).columns) == {"insufficient_evidence", "invalid_output"}


def test_a_trial_whose_endpoint_has_a_password_records_its_failure_with_the_password_hidden(monkeypatch, tmp_path):
    import socket

    from labkit.system.repeats import ask_trial
    from labkit.system.workflow import MinimalSystem

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("LABKIT_BASE_URL", f"http://learner:hunter2@127.0.0.1:{port}/v1")
    monkeypatch.setenv("LABKIT_MODEL", "fake-model")
    system = MinimalSystem(connect(RUN_CAPTURED, lesson="05", settings=SETTINGS, mode="live"))
    result = ask_trial(system, GOLDEN[0], "case1-seed500")
    assert result["status"] == "request_failed"
    assert result["reason"].startswith(f"model endpoint http://learner:***@127.0.0.1:{port}/v1: cannot connect")
    assert "hunter2" not in json.dumps(result)


def test_separable_counts_lists_exactly_the_pairs_whose_intervals_do_not_overlap():
    from labkit.trials import wilson

    assert separable_counts(TRIALS.n) == [(0, 5)]  # at n = 5 only no pass against five
    for n in (5, 12):
        pairs = separable_counts(n)
        for a in range(n + 1):
            for b in range(a + 1, n + 1):
                apart = wilson(b, n)[0] > wilson(a, n)[1]
                assert ((a, b) in pairs) is apart, (n, a, b)
    assert (1, 5) not in separable_counts(5) and (1, 12) in separable_counts(12)


def test_trial_summary_counts_each_cases_passes_interval_and_statuses_from_the_trials(replayed):
    from labkit.system.repeats import trial_summary
    from labkit.tables import interval
    from labkit.trials import wilson

    greedy = {q: i == 1 for i, q in enumerate(QUESTIONS)}
    table = trial_summary(replayed, greedy)
    assert list(table.index) == QUESTIONS
    for question, passes in outcomes(replayed).items():
        row = table.loc[question]
        assert row["passes"] == f"{sum(passes)}/{TRIALS.n}"
        assert row["95% Wilson interval"] == interval(*wilson(sum(passes), TRIALS.n))
        assert row["temperature 0"] == ("pass" if greedy[question] else "fail")
        ended = [t.result["status"] for t in replayed if t.case.question == question]
        counted = {s: int(c) for s, c in (part.rsplit(" ", 1) for part in row["statuses"].split(", "))}
        assert counted == {s: ended.count(s) for s in set(ended)}


def test_invalid_json_names_only_the_trials_refused_as_invalid_json(replayed):
    from labkit.system.repeats import invalid_json

    named = invalid_json(replayed)
    assert named, "the captured repeats hold replies that are not valid JSON"
    for trial in replayed:
        is_json_refusal = trial.result.get("reason", "").startswith("Invalid JSON")
        assert (trial.session_id in named) == is_json_refusal
