"""Lesson 04's repeated trials: N seeds per case in the captured run, exact replay, and a table graded from the replies."""

import json
from collections import defaultdict

import pytest

from labkit.agent import repeats
from labkit.agent.tools import SummarizeRequests
from labkit.boundary import connect
from labkit.recording import load_run
from labkit.trials import repeat_table


@pytest.fixture(scope="module")
def run():
    return load_run(repeats.RUN_CAPTURED)


@pytest.fixture(scope="module")
def replayed():
    return repeats.make_requests(connect(repeats.RUN_CAPTURED, lesson="04", settings=repeats.SETTINGS))


def replies_by_trial(run):
    """Return ``{(question key, seed): reply text}`` read straight from the run's bindings."""
    return {
        (b.question, b.request["seed"]): b.response["choices"][0]["message"]["content"]
        for b in run.bindings
        if b.response
    }


def passed_from_replies(case, seed, replies):
    """Grade one trial from the recorded replies alone, without the agent graph or the outcome check."""
    try:
        route = json.loads(replies[(f"route:{case.question}", seed)]).get("route")
    except ValueError:
        return False
    if route == "out_of_scope":
        return case.expected_status == "out_of_scope"
    if route == "profile":  # the profile node answers every message it is given, with status ok
        return case.expected_status == "ok" and case.expected_final is None and case.expected_route == "profile"
    if route not in ("structured", "unstructured") or case.expected_status != "ok":
        return False  # an invalid route falls back; the agent never ends out_of_scope
    agent = [replies[key] for key in sorted(replies) if key[1] == seed and key[0].startswith(f"agent:{case.question}:")]
    decisions = []
    for reply in agent:
        try:
            decisions.append(json.loads(reply))
        except ValueError:
            decisions.append({})
    last = decisions[-1] if decisions else {}
    if last.get("decision") == "summarize_requests":  # the summary ends the run with status ok, if its arguments hold
        try:
            SummarizeRequests.model_validate(last.get("arguments"))
        except ValueError:
            return False
        return case.expected_final is None and case.expected_route == route
    if last.get("decision") == "final_answer":  # only a count the tools made can back a final answer
        counted = any(d.get("decision") == "count_rows" for d in decisions[:-1])
        answer = last.get("arguments", {}).get("answer")
        return (
            counted and route == case.expected_route and (case.expected_final is None or answer == case.expected_final)
        )
    return False


def test_captured_repeats_hold_n_trials_per_case_with_distinct_seeds_at_the_stated_temperature(run):
    assert run.origin == "captured" and run.model.id == "SmolLM2-135M-Instruct"
    assert repeats.TRIALS.n >= 5 and repeats.TRIALS.temperature > 0
    assert {b.request["temperature"] for b in run.bindings} == {repeats.TRIALS.temperature}
    seeds_per_case = defaultdict(list)
    for b in run.bindings:
        if b.question.startswith("route:"):
            seeds_per_case[b.question.removeprefix("route:")].append(b.request["seed"])
    assert {q: sorted(s) for q, s in seeds_per_case.items()} == {
        case.question: repeats.TRIALS.seeds for case in repeats.REPEATED_CASES
    }
    assert len(set(repeats.TRIALS.seeds)) == repeats.TRIALS.n
    assert repeats.TRIALS.describe() in run.description


def test_every_repeated_case_reaches_the_model_and_the_headline_count_is_among_them():
    assert all(case.expected_route is not None for case in repeats.REPEATED_CASES)
    assert repeats.REPEATED_CASES[0].question == "How many refund requests are in the dataset?"
    assert [case.id for case in repeats.REPEATED_CASES] == list(repeats.REPEATED_IDS)


def test_replaying_the_repeats_answers_every_request_with_its_own_binding(run, replayed):
    requests = [request for trials in replayed.values() for result in trials for request in result.requests]
    assert len(requests) == len(run.bindings)
    assert {run.binding_for(request).key for request in requests} == {b.key for b in run.bindings}
    assert all(len(trials) == repeats.TRIALS.n for trials in replayed.values())
    for trials in replayed.values():
        assert [result.requests[0]["seed"] for result in trials] == repeats.TRIALS.seeds


def test_the_table_equals_counts_graded_independently_from_the_recorded_replies(run, replayed):
    replies = replies_by_trial(run)
    expected = {
        case.id: [passed_from_replies(case, seed, replies) for seed in repeats.TRIALS.seeds]
        for case in repeats.REPEATED_CASES
    }
    outcomes = repeats.repeat_outcomes(replayed)
    assert outcomes == expected
    table = repeat_table(outcomes).set_index("case")
    for case, passes in expected.items():
        assert table.loc[case, "passed"] == f"{sum(passes)}/{len(passes)}"


def test_a_planted_change_of_one_trials_reply_changes_the_table(run, replayed):
    from openai.types.chat import ChatCompletion

    from labkit.authored import authored_response

    case = next(c for c in repeats.REPEATED_CASES if c.expected_status == "out_of_scope")
    seed = repeats.TRIALS.seeds[-1]
    before = repeats.repeat_outcomes(replayed)
    planted_route = "profile" if before[case.id][-1] else "out_of_scope"
    boundary = connect(repeats.RUN_CAPTURED, lesson="04", settings=repeats.SETTINGS)

    class PlantedReply:
        """The replay boundary, except that one trial's route reply is replaced."""

        model, settings = boundary.model, boundary.settings

        def generate(self, question, messages, **settings):
            if question == f"route:{case.question}" and settings.get("seed") == seed:
                body = authored_response(json.dumps({"route": planted_route}), number=1)
                return ChatCompletion.model_validate(body)
            return boundary.generate(question, messages, **settings)

    after = repeats.repeat_outcomes(repeats.make_requests(PlantedReply()))
    assert after[case.id][-1] is not before[case.id][-1]
    assert {c: p for c, p in after.items() if c != case.id} == {c: p for c, p in before.items() if c != case.id}
    table_before, table_after = (repeat_table(o).set_index("case") for o in (before, after))
    assert table_before.loc[case.id, "passed"] != table_after.loc[case.id, "passed"]
    assert table_before.loc[case.id, "trials"] != table_after.loc[case.id, "trials"]


def test_the_lesson_table_adds_kinds_routes_and_the_greedy_verdict_beside_the_repeats(replayed):
    from labkit.agent import runs

    greedy = runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))
    table = repeats.trials_table(replayed, greedy)
    assert list(table.index) == list(repeats.REPEATED_IDS)
    assert table.loc["c01", "95% Wilson"] == "[0.00, 0.43]" and table.loc["c05", "passed"] == "2/5"
    assert table.loc["c07", "greedy run (temperature 0)"] == "pass"
    assert table.loc["c01", "verdict"] == "no pass in 5" and table.loc["c05", "verdict"] == "mixed"
    assert table.loc["c06", "kind"] == "profile" and "out_of_scope" in table.loc["c05", "routes chosen"]
    flipped = [r if r.case.id != "c07" else type(r)(r.case, "fallback", None, None, r.state, r.audit) for r in greedy]
    assert repeats.trials_table(replayed, flipped).loc["c07", "greedy run (temperature 0)"] == "fail"


def test_the_seen_verdict_says_what_the_trials_showed_and_no_more():
    assert repeats.seen_verdict([False] * 5) == "no pass in 5"
    assert repeats.seen_verdict([True] * 3) == "no fail in 3"
    assert repeats.seen_verdict([True, False]) == "mixed"
    with pytest.raises(ValueError, match="at least one trial"):
        repeats.seen_verdict([])


def test_route_counts_say_how_often_each_route_was_chosen_most_chosen_first():
    assert (
        repeats.route_counts(["structured", "profile", "profile", "invalid", "profile"])
        == "profile 3, invalid 1, structured 1"
    )
