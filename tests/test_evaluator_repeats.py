"""The sampled judge: the captured run's seeds at temperature 0.7, replay, and the table counted from the replies."""

import json
from collections import defaultdict

import pytest

from labkit.boundary import connect
from labkit.evaluator.lesson import load_inputs
from labkit.evaluator.repeats import (
    PRODUCTS,
    REJECTED,
    RUN_CAPTURED,
    SETTINGS,
    TRIALS,
    greedy_verdicts,
    make_requests,
    stability_table,
    varies_across_seeds,
    verdicts,
)
from labkit.recording import load_run
from labkit.trials import wilson
from tests.planted import PlantOne

JUDGED = ("factual_accuracy", "completeness", "tone")
SAMPLED = f"temperature {TRIALS.temperature:g}, by seed"


@pytest.fixture(scope="module")
def inputs():
    return load_inputs()


@pytest.fixture(scope="module")
def run():
    return load_run(RUN_CAPTURED)


@pytest.fixture(scope="module")
def replayed(inputs):
    return make_requests(connect(RUN_CAPTURED, lesson="01", settings=SETTINGS), inputs=inputs)


def _key(binding):
    """(product, criterion) of a judge request, read from its question ``judge:labeled:<product>:<criterion>``."""
    _, source, pid, criterion = binding.question.split(":")
    assert source == "labeled"
    return pid, criterion


def _independent_verdict(binding, inputs):
    """Read one recorded judge reply by hand: its verdict if it is the schema's JSON with an allowed label."""
    if binding.response is None:
        return REJECTED
    text = binding.response["choices"][0]["message"]["content"]
    try:
        reply = json.loads(text)
    except ValueError:
        return REJECTED
    allowed = inputs.rubric.criterion(_key(binding)[1]).allowed_labels
    explanation = reply.get("explanation") if isinstance(reply, dict) else None
    if set(reply) != {"explanation", "verdict"} or not isinstance(explanation, str) or not explanation.strip():
        return REJECTED
    if len(explanation) > 300 or reply["verdict"] not in allowed:
        return REJECTED
    return reply["verdict"]


def test_the_plan_is_at_least_five_seeds_above_temperature_zero_and_at_most_sixty_requests():
    assert TRIALS.n >= 5 and TRIALS.temperature > 0
    assert len(PRODUCTS) * len(JUDGED) * TRIALS.n <= 60
    assert SETTINGS["temperature"] == TRIALS.temperature and SETTINGS["seed"] == TRIALS.first_seed


def test_the_captured_run_holds_each_judge_call_once_per_seed_at_the_stated_temperature(run):
    assert run.origin == "captured" and TRIALS.describe() in run.description
    seeds = defaultdict(list)
    for binding in run.bindings:
        assert binding.request["temperature"] == TRIALS.temperature
        seeds[_key(binding)].append(binding.request["seed"])
    assert sorted(seeds) == sorted((pid, c) for pid in PRODUCTS for c in JUDGED)
    assert all(sorted(found) == TRIALS.seeds for found in seeds.values())


def test_replay_answers_every_trial(run, replayed):
    assert len(replayed) == len(run.bindings) == len(PRODUCTS) * len(JUDGED) * TRIALS.n
    assert {t.call.call.origin for t in replayed} == {"captured"}
    assert all(t.call.call.request["seed"] == t.seed for t in replayed)


def test_the_table_equals_verdicts_read_independently_from_the_recorded_replies(run, replayed, inputs):
    by_key = defaultdict(list)
    for binding in sorted(run.bindings, key=lambda b: b.request["seed"]):
        by_key[_key(binding)].append(_independent_verdict(binding, inputs))
    assert verdicts(replayed) == dict(by_key)
    table = stability_table(replayed, inputs.labels)
    for (pid, criterion), seen in by_key.items():
        row = table.loc[(pid, criterion)]
        human = inputs.labels.label(pid, criterion)
        assert row[SAMPLED] == " · ".join(seen)
        assert row["agree with adjudicated"] == f"{seen.count(human)}/{len(seen)}"
        assert row["varies"] == (len(set(seen)) > 1)
        low, high = wilson(seen.count(human), len(seen))
        assert row["Wilson 95%"] == f"[{low:.2f}, {high:.2f}]"
    assert varies_across_seeds(replayed) == [key for key, seen in by_key.items() if len(set(seen)) > 1]


def test_the_temperature_0_column_comes_from_the_lessons_greedy_requests_not_from_the_sampled_ones(replayed, inputs):
    from labkit.evaluator.lesson import RUN_CAPTURED as LESSON_RUN
    from labkit.evaluator.report import evaluate_run

    lesson_run = load_run(LESSON_RUN)
    greedy = greedy_verdicts(evaluate_run(LESSON_RUN, inputs=inputs))
    table = stability_table(replayed, inputs.labels, greedy=greedy)
    for pid, criterion in greedy:
        binding = next(b for b in lesson_run.bindings if b.question == f"judge:labeled:{pid}:{criterion}")
        assert binding.request["temperature"] == 0  # greedy: deterministic for its inputs
        reply = json.loads(binding.response["choices"][0]["message"]["content"])
        row = table.loc[(pid, criterion)]
        assert row["temperature 0"] == reply["verdict"] == greedy[(pid, criterion)]
        seen = verdicts(replayed)[(pid, criterion)]
        assert row["as at 0"] == f"{seen.count(reply['verdict'])}/{len(seen)}"
    assert "temperature 0" not in stability_table(replayed, inputs.labels).columns


def test_a_planted_verdict_on_one_later_seed_changes_that_row(replayed, inputs):
    pid, criterion, last = PRODUCTS[0], "tone", TRIALS.seeds[-1]
    before = verdicts(replayed)[(pid, criterion)]
    planted_verdict = "fail" if before[-1] == "pass" else "pass"
    reply = json.dumps({"explanation": "Planted by the test.", "verdict": planted_verdict})
    boundary = connect(RUN_CAPTURED, lesson="01", settings=SETTINGS)
    planted = make_requests(
        PlantOne(boundary, question=f"judge:labeled:{pid}:{criterion}", seed=last, reply=reply), inputs=inputs
    )
    after = verdicts(planted)[(pid, criterion)]
    assert after == [*before[:-1], planted_verdict]
    row_before = stability_table(replayed, inputs.labels).loc[(pid, criterion)]
    row_after = stability_table(planted, inputs.labels).loc[(pid, criterion)]
    assert row_before[SAMPLED] != row_after[SAMPLED]
    assert row_before["agree with adjudicated"] != row_after["agree with adjudicated"]
    if len(set(before)) == 1:  # a stable row becomes one that flips
        assert (pid, criterion) not in varies_across_seeds(replayed) and (pid, criterion) in varies_across_seeds(
            planted
        )


def test_recording_sends_each_judge_call_once_per_seed(course, monkeypatch, inputs):
    from labkit.cli import main
    from tests.fake_endpoint import FakeEndpoint

    def answer(body):  # passes on even seeds, fails on odd ones, for every criterion that allows it
        allowed = body["response_format"]["schema"]["properties"]["verdict"]["enum"]
        return json.dumps({"explanation": "Fake.", "verdict": allowed[0] if body["seed"] % 2 == 0 else allowed[-1]})

    with FakeEndpoint(answer=answer) as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "SmolLM2-135M-Instruct")  # a model the price table prices
        assert main(["record", "01", "--repeats", "--run-id", "01-repeats-fake"]) == 0
    recorded = load_run("01-repeats-fake")
    assert len(recorded.bindings) == len(PRODUCTS) * len(JUDGED) * TRIALS.n
    assert {b.request["temperature"] for b in recorded.bindings} == {TRIALS.temperature}
    trials = make_requests(connect("01-repeats-fake", lesson="01", settings=SETTINGS), inputs=load_inputs())
    assert sorted(varies_across_seeds(trials)) == sorted((pid, c) for pid in PRODUCTS for c in JUDGED)
    for (_, criterion), seen in verdicts(trials).items():
        allowed = inputs.rubric.criterion(criterion).allowed_labels
        assert seen == [allowed[0] if seed % 2 == 0 else allowed[-1] for seed in TRIALS.seeds]


def test_replay_sampled_judge_tabulates_every_seed_beside_the_temperature_0_verdict():
    from labkit.evaluator.lesson import RUN_CAPTURED as LESSON
    from labkit.evaluator.repeats import TRIALS, replay_sampled_judge
    from labkit.evaluator.report import evaluate_run

    inputs = load_inputs()
    sampled = replay_sampled_judge(evaluate_run(LESSON, inputs=inputs))
    assert sampled.provenance.startswith("01-evaluator-smollm2-repeats (captured), SmolLM2-135M-Instruct")
    assert len(sampled.trials) == TRIALS.n * len(inputs.rubric.judged())
    assert list(sampled.table.columns[:2]) == ["temperature 0", "as at 0"]
