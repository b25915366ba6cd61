"""Lesson 04's exercise checks pass the worked solutions and refuse the tempting wrong ones."""

from collections import Counter

import pytest

from labkit.agent.exercises import check_stale_recount
from labkit.agent.tools import CountRows, IntentFilter, RowRefRefused
from labkit.agent.validator import format_answer, verify_final


def _recount(refilter_on, *, check=True):
    def count_with_refilter(tools, intent):
        for attempt in (1, 2):
            row_ref = tools.filter_by_intent(IntentFilter(intent=intent, limit=3))["row_ref"]
            try:
                counted = tools.count_rows(CountRows(rows=row_ref))
                break
            except RowRefRefused as exc:
                if exc.reason not in refilter_on or attempt == 2:
                    raise
        text = format_answer(counted["count"], intent, counted["caller_scope"])
        return verify_final(text, result=counted, expected_intent=intent).answer if check else text

    return count_with_refilter


def test_the_stale_recount_check_passes_a_retry_after_a_stale_reference_only():
    assert check_stale_recount(_recount({"stale"})) == "ex:stale-recount passed"


@pytest.mark.parametrize(
    ("refilter_on", "message"),
    [
        ({"stale", "foreign", "forged"}, "not filtered around"),
        ({"stale", "forged"}, "not filtered around"),
        ({"stale", "foreign"}, "not filtered around"),
    ],
)
def test_the_stale_recount_check_refuses_a_retry_on_the_wrong_refusals(refilter_on, message):
    with pytest.raises(AssertionError, match=message):
        check_stale_recount(_recount(refilter_on))


def test_the_stale_recount_check_refuses_an_answer_formatted_but_never_checked():
    with pytest.raises(AssertionError, match="never checked"):
        check_stale_recount(_recount({"stale"}, check=False))


def test_the_stale_recount_check_refuses_the_stub():
    def stub(tools, intent):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        check_stale_recount(stub)


def test_the_stale_recount_check_refuses_the_plain_path_without_a_retry():
    with pytest.raises(RowRefRefused, match="filter again"):
        check_stale_recount(_recount(set()))


def _retry_while_stale(max_audit=None):
    """A recount that filters again after every stale refusal, giving up only past ``max_audit`` audit entries."""

    def recount(tools, intent):
        while True:
            row_ref = tools.filter_by_intent(IntentFilter(intent=intent, limit=3))["row_ref"]
            try:
                counted = tools.count_rows(CountRows(rows=row_ref))
                return format_answer(counted["count"], intent, counted["caller_scope"])
            except RowRefRefused as exc:
                if exc.reason != "stale" or (max_audit is not None and len(tools.data.audit) > max_audit):
                    raise

    return recount


def test_the_stale_recount_check_refuses_a_retry_loop_without_end():
    with pytest.raises(AssertionError, match="retry once"):
        check_stale_recount(_retry_while_stale(max_audit=10))


def test_the_stale_recount_check_stops_a_retry_loop_with_no_bound_and_says_why():
    with pytest.raises(AssertionError, match="bound the retries"):
        check_stale_recount(_retry_while_stale())


@pytest.fixture(scope="module")
def captured_results():
    from labkit.agent import runs
    from labkit.boundary import connect

    return runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))


@pytest.fixture(scope="module")
def authored_results():
    from labkit.agent import runs
    from labkit.boundary import connect

    return runs.make_requests(connect(runs.RUN_AUTHORED, lesson="04", settings=runs.SETTINGS))


def _missing_of(required_only):
    from labkit.agent.tools import TOOL_ARGUMENTS

    def missing_arguments(results):
        missing = Counter()
        for r in results:
            for e in (r.state or {}).get("events", []):
                if e["kind"] == "arguments_invalid":
                    for name, field in TOOL_ARGUMENTS[e["tool"]].model_fields.items():
                        if (field.is_required() or not required_only) and name not in e["arguments"]:
                            missing[f"{e['tool']}.{name}"] += 1
        return missing

    return missing_arguments


def test_the_missing_arguments_check_passes_counting_required_fields_the_refused_calls_lacked(
    captured_results, authored_results
):
    from labkit.agent.exercises import check_missing_arguments

    right = _missing_of(required_only=True)
    assert dict(right(captured_results)) == {"filter_by_intent.intent": 15, "count_rows.rows": 9}
    assert (
        check_missing_arguments(right, captured_results, authored_results, prediction="filter_by_intent.intent")
        == "ex:missing-arguments passed\nYour prediction, filter_by_intent.intent, is right: the refused captured"
        " calls lacked it most often."
    )


def test_the_missing_arguments_check_refuses_held_fields_optional_fields_and_typed_figures(
    captured_results, authored_results
):
    from labkit.agent.exercises import check_missing_arguments

    def held(results):
        return Counter(
            name
            for r in results
            for e in (r.state or {}).get("events", [])
            if e["kind"] == "arguments_invalid"
            for name in e["arguments"]
        )

    with pytest.raises(AssertionError, match="captured run"):
        check_missing_arguments(held, captured_results, authored_results, prediction="filter_by_intent.intent")
    with pytest.raises(AssertionError, match="captured run"):
        check_missing_arguments(
            _missing_of(required_only=False), captured_results, authored_results, prediction="filter_by_intent.intent"
        )
    typed = dict(_missing_of(required_only=True)(captured_results))
    with pytest.raises(AssertionError, match="authored run"):
        check_missing_arguments(
            lambda results: typed, captured_results, authored_results, prediction="filter_by_intent.intent"
        )


@pytest.mark.parametrize(
    ("prediction", "source", "message"),
    [
        (None, 'PREDICTION = None  # your prediction: "<tool>.<field>"', "set it to"),  # the stub
        ("filter_by_intent.limit", 'PREDICTION = "filter_by_intent.limit"', "not a required field"),
        ("intent", 'PREDICTION = "intent"', "not a required field"),
        (  # the shortcut: the count computed, then read off as the prediction
            "filter_by_intent.intent",
            "def missing_arguments(results): ...\n"
            "counts = missing_arguments(results[runs.RUN_CAPTURED])\n"
            "PREDICTION = max(counts, key=counts.get)\n",
            "type PREDICTION out",
        ),
    ],
)
def test_the_missing_arguments_check_grades_the_prediction(
    captured_results, authored_results, prediction, source, message
):
    from labkit.agent.exercises import check_missing_arguments

    with pytest.raises(AssertionError, match=message):
        check_missing_arguments(
            _missing_of(required_only=True), captured_results, authored_results, prediction=prediction, source=source
        )


def test_the_missing_arguments_check_passes_the_right_prediction_typed_out(captured_results, authored_results):
    from labkit.agent.exercises import check_missing_arguments

    typed = 'PREDICTION = "count_rows.rows"\nPREDICTION = "filter_by_intent.intent"  # changed my mind\n'
    assert check_missing_arguments(
        _missing_of(required_only=True),
        captured_results,
        authored_results,
        prediction="filter_by_intent.intent",
        source=typed,
    ).startswith("ex:missing-arguments passed\nYour prediction, filter_by_intent.intent, is right")


def test_a_wrong_prediction_typed_out_is_said_to_be_wrong_not_failed(captured_results, authored_results):
    """The learner predicted before counting: a wrong guess is told which field was lacked most, not refused."""
    from labkit.agent.exercises import check_missing_arguments

    said = check_missing_arguments(
        _missing_of(required_only=True),
        captured_results,
        authored_results,
        prediction="count_rows.rows",
        source='PREDICTION = "count_rows.rows"',
    )
    assert said == (
        "ex:missing-arguments passed\nYour prediction, count_rows.rows, is wrong: the refused captured calls lacked"
        " filter_by_intent.intent most often. Ask which tool the model proposed first."
    )


def _backed(pick, *, expect_intent=True):
    from labkit.agent.validator import AnswerRejected, verify_final

    def verify_backed_count(answer, calls, intent):
        counts = [c["observation"] for c in calls if c["step"] == "count_rows"]
        if not counts or "count" not in counts[-1]:
            raise AnswerRejected("not_backed", "no count backs this answer")
        return verify_final(answer, result=pick(counts, calls), expected_intent=intent if expect_intent else None)

    return verify_backed_count


def test_the_backed_count_check_passes_when_the_latest_count_decides_for_the_questions_intent():
    from labkit.agent.exercises import check_backed_count

    assert check_backed_count(_backed(lambda counts, calls: counts[-1])) == "ex:backed-count passed"


def test_the_backed_count_check_refuses_the_stub():
    from labkit.agent.exercises import check_backed_count

    def stub(answer, calls, intent):
        raise NotImplementedError("hint")

    with pytest.raises(NotImplementedError):
        check_backed_count(stub)


def test_the_backed_count_check_refuses_verifying_against_the_first_count():
    from labkit.agent.exercises import check_backed_count

    with pytest.raises(AssertionError, match="rejected"):
        check_backed_count(_backed(lambda counts, calls: counts[0]))


def test_the_backed_count_check_refuses_the_latest_count_of_another_intent_than_the_questions():
    """The rule without the question's intent: the answer repeats the count, so only the intent can refuse it."""
    from labkit.agent.exercises import check_backed_count

    with pytest.raises(AssertionError, match="'wrong_intent' was accepted"):
        check_backed_count(_backed(lambda counts, calls: counts[-1], expect_intent=False))


def test_the_backed_count_check_refuses_relabelling_the_count_with_the_questions_intent():
    from labkit.agent.exercises import check_backed_count

    with pytest.raises(AssertionError, match="'wrong_intent' was accepted"):
        check_backed_count(_backed(lambda counts, calls: {**counts[-1], "intent": "get_refund"}, expect_intent=False))


def test_the_backed_count_check_refuses_a_rule_that_expects_get_refund_whatever_the_question():
    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import AnswerRejected, verify_final

    def always_refunds(answer, calls, intent):
        counts = [c["observation"] for c in calls if c["step"] == "count_rows"]
        if not counts or "count" not in counts[-1]:
            raise AnswerRejected("not_backed", "no count backs this answer")
        return verify_final(answer, result=counts[-1], expected_intent="get_refund")

    with pytest.raises(AssertionError, match=r"counts back was rejected \(wrong_intent\)"):
        check_backed_count(always_refunds)


def test_the_backed_count_check_refuses_verifying_against_the_last_call_whatever_its_step():
    from labkit.agent.exercises import check_backed_count

    with pytest.raises(AssertionError, match="crashed with KeyError"):  # a preview has no count to compare
        check_backed_count(_backed(lambda counts, calls: calls[-1]["observation"]))


def test_the_backed_count_check_refuses_the_bare_last_observation_with_a_message():
    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import verify_final

    with pytest.raises(AssertionError, match="rejected with AnswerRejected"):
        check_backed_count(
            lambda answer, calls, intent: verify_final(answer, result=calls[-1]["observation"], expected_intent=intent)
        )


_PREVIEW_AS_COUNT = {
    "count": 3,
    "caller_scope": "approved_support_dataset",
    "intent": "get_refund",
    "dataset_version": "support-2026-09-01",
}


def test_the_backed_count_check_refuses_an_answer_read_off_a_preview():
    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import verify_final

    with pytest.raises(AssertionError, match="not_backed"):
        check_backed_count(lambda answer, calls, intent: verify_final(answer, result=_PREVIEW_AS_COUNT))


def test_the_backed_count_check_agrees_with_the_stale_rule_its_earlier_counts_are_older():
    from labkit.agent.exercises import check_backed_count

    def newest(counts, calls):  # the newest version, and of equal versions the later count
        ranked = [(c["dataset_version"], i, c) for i, c in enumerate(counts) if "count" in c]
        return max(ranked, key=lambda r: r[:2])[2]

    assert check_backed_count(_backed(newest)) == "ex:backed-count passed"


def test_the_backed_count_check_refuses_an_answer_when_the_latest_count_was_refused():
    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import AnswerRejected, verify_final

    def last_successful(answer, calls, intent):
        counts = [c["observation"] for c in calls if c["step"] == "count_rows" and "count" in c["observation"]]
        if not counts:
            raise AnswerRejected("not_backed", "no count backs this answer")
        return verify_final(answer, result=counts[-1], expected_intent=intent)

    with pytest.raises(AssertionError, match="not_backed"):
        check_backed_count(last_successful)


def test_the_backed_count_check_refuses_reading_every_observation_as_a_dict():
    """A route step's observation is a string: a solution that calls .get on every observation crashes on it."""
    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import AnswerRejected, verify_final

    def get_on_every_observation(answer, calls, intent):
        counts = [c["observation"] for c in calls if {"count", "error"} & c["observation"].keys()]
        if not counts or "count" not in counts[-1]:
            raise AnswerRejected("not_backed", "no count backs this answer")
        return verify_final(answer, result=counts[-1], expected_intent=intent)

    with pytest.raises(AssertionError, match="crashed with AttributeError"):
        check_backed_count(get_on_every_observation)


def test_exercise_1s_reference_rule_refuses_the_wrong_intent_but_not_the_outdated_count_of_the_finalize_gap():
    """Notebook 04 says Exercise 1's rule refuses the gap's wrong-intent count and accepts its outdated one: a log of
    calls holds no request version to compare; only check_count_result refuses both."""
    from labkit.agent.dataset import APPROVED_SCOPE
    from labkit.agent.graph import gap_counts
    from labkit.agent.identity import authorize
    from labkit.agent.validator import AnswerRejected, format_answer

    rule = _backed(lambda counts, calls: counts[-1])  # the rule check_backed_count passes
    counts, _, _ = gap_counts(authorize("analyst-ana", "gap", APPROVED_SCOPE))
    verdicts = []
    for counted in counts.values():
        calls = [
            {"step": "route", "observation": "structured"},
            {"step": "filter_by_intent", "observation": {"row_ref": "rows-0123456789abcdef", "preview_rows": 5}},
            {"step": "count_rows", "observation": counted},
        ]
        answer = format_answer(counted["count"], counted["intent"], counted["caller_scope"])
        try:
            verdicts.append(rule(answer, calls, "get_refund").intent)
        except AnswerRejected as exc:
            verdicts.append(exc.reason)
    assert verdicts == ["get_refund", "wrong_intent"]


def test_exercise_1s_check_refuses_an_answer_vouched_for_with_another_count():
    import dataclasses

    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import AnswerRejected

    def vouches(answer, calls, intent):  # wrong: takes the answer on trust, and makes up the count beside it
        counts = [c["observation"] for c in calls if c["step"] == "count_rows"]
        if not counts or "count" not in counts[-1]:
            raise AnswerRejected("not_backed", "no count backs it")
        verified = verify_final(answer, result=counts[-1], expected_intent=intent)
        return dataclasses.replace(verified, count=verified.count + 1)

    with pytest.raises(AssertionError, match="verified against another count"):
        check_backed_count(vouches)


def _checked_agent(expected_intent, current_version, *, plain_first=True):
    """A CheckedAgent whose final node expects ``expected_intent(state, result)`` and, unless ``current_version`` is
    None, rejects a count whose version differs from ``current_version(agent, state)`` as stale."""
    from labkit.agent.graph import SupportAgent, answer_rejected
    from labkit.agent.validator import AnswerRejected, verify_final

    class CheckedAgent(SupportAgent):
        def finalize_node(self, state):
            update = super().finalize_node(state) if plain_first else {"status": "ok"}
            if update["status"] != "ok":
                return update
            answer = str(state["proposal"]["arguments"]["answer"])
            result = state["last_result"]
            try:
                verified = verify_final(answer, result=result, expected_intent=expected_intent(state, result))
                if current_version is not None and result["dataset_version"] != current_version(self, state):
                    raise AnswerRejected("stale", "the count is outdated")
            except AnswerRejected as exc:
                return answer_rejected(answer, exc)
            return update if plain_first else {**SupportAgent.finalize_node(self, state), "final": verified.answer}

    return CheckedAgent


def _questions_intent(state, result):
    return state["expected_intent"]


def _data_now(agent, state):
    return agent.tools.data.dataset_version


def test_the_checked_finalize_check_passes_a_node_that_rejects_another_intent_and_an_outdated_count():
    from labkit.agent.exercises import check_checked_finalize

    said = check_checked_finalize(
        _checked_agent(_questions_intent, _data_now), prediction="after count", source='REJECTS = "after count"'
    )
    assert said.splitlines() == [
        "ex:checked-finalize passed",
        "Your prediction, 'after count', is right: it rejects the count made just before the data changed (stale)"
        " and answers the recount made after it (current).",
        "Both graphs, on the authored run's replies (written by the course, not a model):",
        "  the refund question: SupportAgent ok, yours ok (27 refund requests in approved_support_dataset)",
        "  the same, the data refreshed right after its count: SupportAgent ok, yours answer_rejected (stale)",
        "  the track refund question, refreshed between filter and count: SupportAgent ok, yours ok"
        " (10 track refund requests in approved_support_dataset)",
    ]


def test_the_checked_finalize_check_says_a_wrong_prediction_is_wrong_without_failing():
    from labkit.agent.exercises import check_checked_finalize

    said = check_checked_finalize(
        _checked_agent(_questions_intent, _data_now), prediction="both", source='REJECTS = "both"'
    )
    assert said.splitlines()[1].startswith("Your prediction, 'both', is wrong: it rejects the count made just before")


def test_the_checked_finalize_check_refuses_the_stub():
    from labkit.agent.exercises import check_checked_finalize
    from labkit.agent.graph import SupportAgent

    class CheckedAgent(SupportAgent):
        def finalize_node(self, state):
            raise NotImplementedError("hint")

    with pytest.raises(NotImplementedError):
        check_checked_finalize(CheckedAgent, prediction=None)


def test_the_checked_finalize_check_refuses_the_plain_node_unchanged():
    from labkit.agent.exercises import check_checked_finalize
    from labkit.agent.graph import SupportAgent

    class CheckedAgent(SupportAgent):
        pass

    with pytest.raises(AssertionError, match=r"'get_refund, before a new version'.* was verified"):
        check_checked_finalize(CheckedAgent, prediction="after count")


def test_the_checked_finalize_check_refuses_exercise_1s_rule_alone_which_lets_the_outdated_count_through():
    from labkit.agent.exercises import check_checked_finalize

    with pytest.raises(AssertionError, match=r"'get_refund, before a new version'.* was verified"):
        check_checked_finalize(_checked_agent(_questions_intent, None), prediction="after count")


def test_the_checked_finalize_check_refuses_expecting_the_intent_the_result_names():
    from labkit.agent.exercises import check_checked_finalize

    with pytest.raises(AssertionError, match=r"'track_refund, current version'.* was verified"):
        check_checked_finalize(
            _checked_agent(lambda state, result: result["intent"], _data_now), prediction="after count"
        )


def test_the_checked_finalize_check_refuses_comparing_the_version_the_request_started_at():
    from labkit.agent.exercises import check_checked_finalize

    started = _checked_agent(_questions_intent, lambda agent, state: state["dataset_version"])
    with pytest.raises(AssertionError, match=r"count at the current version was rejected \(stale\)"):
        check_checked_finalize(started, prediction="after count")


def test_the_checked_finalize_check_refuses_expecting_get_refund_whatever_the_question():
    from labkit.agent.exercises import check_checked_finalize

    refunds = _checked_agent(lambda state, result: "get_refund", _data_now)
    with pytest.raises(AssertionError, match=r"track_refund question was rejected \(wrong_intent\)"):
        check_checked_finalize(refunds, prediction="after count")


def test_the_checked_finalize_check_refuses_check_count_result_as_the_final_check():
    from labkit.agent.exercises import check_checked_finalize
    from labkit.agent.graph import SupportAgent, answer_rejected
    from labkit.agent.trace import StaleResult, check_count_result
    from labkit.agent.validator import AnswerRejected

    class CheckedAgent(SupportAgent):
        def finalize_node(self, state):
            update = super().finalize_node(state)
            if update["status"] != "ok":
                return update
            request = {"caller_scope": state["caller_scope"], "dataset_version": self.tools.data.dataset_version}
            try:
                check_count_result(state["last_result"], request)
            except StaleResult as exc:
                return answer_rejected(update["final"], AnswerRejected("stale", str(exc)))
            return update

    with pytest.raises(AssertionError, match="rejected as 'stale'; expected reason 'wrong_intent'"):
        check_checked_finalize(CheckedAgent, prediction="after count")


def test_the_checked_finalize_check_refuses_a_node_that_skips_the_plain_nodes_refusals():
    """Without the plain node's check first, a state with no count result crashes the node: the check says so."""
    from labkit.agent.exercises import check_checked_finalize

    with pytest.raises(AssertionError, match="no count result: finalize_node crashed with TypeError"):
        check_checked_finalize(
            _checked_agent(_questions_intent, _data_now, plain_first=False), prediction="after count"
        )


def test_the_checked_finalize_check_refuses_a_rejection_shaped_unlike_the_plain_nodes():
    from labkit.agent.exercises import check_checked_finalize
    from labkit.agent.graph import SupportAgent

    class CheckedAgent(SupportAgent):
        def finalize_node(self, state):
            update = super().finalize_node(state)
            result = state["last_result"]
            if update["status"] == "ok" and result["dataset_version"] != self.tools.data.dataset_version:
                return {"final": None, "status": "stale", "events": [{"kind": "stale"}]}
            return update

    with pytest.raises(AssertionError, match="status 'stale'; an answer is verified"):
        check_checked_finalize(CheckedAgent, prediction="after count")


def test_the_checked_finalize_check_refuses_a_class_that_is_not_a_support_agent():
    from labkit.agent.exercises import check_checked_finalize

    with pytest.raises(AssertionError, match="subclasses SupportAgent"):
        check_checked_finalize(lambda state: {}, prediction="after count")


@pytest.mark.parametrize(
    ("prediction", "source", "message"),
    [
        (None, "REJECTS = None  # your prediction", "set it to one of"),  # the stub's
        ("the second run", 'REJECTS = "the second run"', "set it to one of"),
        ("after count", "REJECTS = REJECT_CHOICES[0]", "type REJECTS out"),
    ],
)
def test_the_checked_finalize_check_grades_the_prediction(prediction, source, message):
    from labkit.agent.exercises import check_checked_finalize

    with pytest.raises(AssertionError, match=message):
        check_checked_finalize(_checked_agent(_questions_intent, _data_now), prediction=prediction, source=source)
