"""Exercise 3's check passes the worked solution and refuses the tempting wrong ones."""

import pytest

from labkit.agent.exercises import check_stale_recount
from labkit.agent.tools import CountRows, IntentFilter, RowRefRefused
from labkit.agent.validator import format_answer


def _recount(refilter_on):
    def count_with_refilter(tools, intent):
        for attempt in (1, 2):
            row_ref = tools.filter_by_intent(IntentFilter(intent=intent, limit=3))["row_ref"]
            try:
                counted = tools.count_rows(CountRows(rows=row_ref))
                break
            except RowRefRefused as exc:
                if exc.reason not in refilter_on or attempt == 2:
                    raise
        return format_answer(counted["count"], intent, counted["caller_scope"])

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


def test_the_stale_recount_check_refuses_the_plain_path_without_a_retry():
    with pytest.raises(RowRefRefused, match="filter again"):
        check_stale_recount(_recount(set()))


def test_the_stale_recount_check_refuses_a_retry_loop_without_end():
    def keeps_trying(tools, intent):
        while True:
            row_ref = tools.filter_by_intent(IntentFilter(intent=intent, limit=3))["row_ref"]
            try:
                counted = tools.count_rows(CountRows(rows=row_ref))
                return format_answer(counted["count"], intent, counted["caller_scope"])
            except RowRefRefused as exc:
                if exc.reason != "stale" or len(tools.data.audit) > 10:
                    raise

    with pytest.raises(AssertionError, match="retry once"):
        check_stale_recount(keeps_trying)


@pytest.fixture(scope="module")
def captured_results():
    from labkit.agent import runs
    from labkit.boundary import connect

    return runs.make_requests(connect(runs.RUN_CAPTURED, lesson="04", settings=runs.SETTINGS))


def _failures_of(kinds):
    def proposal_failures(results):
        events = [e for r in results for e in (r.state or {}).get("events", [])]
        return {name: sum(e["kind"] in which for e in events) for name, which in kinds.items()}

    return proposal_failures


def test_the_proposal_failures_check_passes_counting_each_agent_event_kind(captured_results):
    from labkit.agent.exercises import check_proposal_failures

    right = _failures_of({"unparsed": {"proposal_invalid"}, "wrong arguments": {"arguments_invalid"}})
    assert check_proposal_failures(right, captured_results) == "ex:proposal-failures passed"


def test_the_proposal_failures_check_refuses_router_replies_counted_and_the_figures_typed_in(captured_results):
    from labkit.agent.exercises import check_proposal_failures

    with_router = _failures_of(
        {"unparsed": {"proposal_invalid", "route_invalid"}, "wrong arguments": {"arguments_invalid"}}
    )
    with pytest.raises(AssertionError, match="captured"):
        check_proposal_failures(with_router, captured_results)
    typed = _failures_of({"unparsed": {"proposal_invalid"}, "wrong arguments": {"arguments_invalid"}})(captured_results)
    with pytest.raises(AssertionError, match="scripted run"):
        check_proposal_failures(lambda results: typed, captured_results)


def _backed(pick):
    from labkit.agent.validator import AnswerRejected, verify_final

    def verify_backed_count(answer, calls):
        counts = [c["observation"] for c in calls if c["step"] == "count_rows"]
        if not counts or "count" not in counts[-1]:
            raise AnswerRejected("not_backed", "no count backs this answer")
        return verify_final(answer, result=pick(counts, calls))

    return verify_backed_count


def test_the_backed_count_check_passes_when_the_latest_count_decides():
    from labkit.agent.exercises import check_backed_count

    assert check_backed_count(_backed(lambda counts, calls: counts[-1])) == "ex:backed-count passed"


def test_the_backed_count_check_refuses_verifying_against_the_first_count():
    from labkit.agent.exercises import check_backed_count

    with pytest.raises(AssertionError, match="rejected"):
        check_backed_count(_backed(lambda counts, calls: counts[0]))


def test_the_backed_count_check_refuses_verifying_against_the_last_call_whatever_its_step():
    from labkit.agent.exercises import check_backed_count

    with pytest.raises(KeyError):  # the filter after the count is a preview: it has no count to compare
        check_backed_count(_backed(lambda counts, calls: calls[-1]["observation"]))


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
        check_backed_count(lambda answer, calls: verify_final(answer, result=_PREVIEW_AS_COUNT))


def test_the_backed_count_check_refuses_the_lexicographically_newest_version():
    from labkit.agent.exercises import check_backed_count

    def newest(counts, calls):
        return max((c for c in counts if "count" in c), key=lambda c: c["dataset_version"])

    with pytest.raises(AssertionError, match="rejected"):
        check_backed_count(_backed(newest))


def test_the_backed_count_check_refuses_an_answer_when_the_latest_count_was_refused():
    from labkit.agent.exercises import check_backed_count
    from labkit.agent.validator import AnswerRejected, verify_final

    def last_successful(answer, calls):
        counts = [c["observation"] for c in calls if c["step"] == "count_rows" and "count" in c["observation"]]
        if not counts:
            raise AnswerRejected("not_backed", "no count backs this answer")
        return verify_final(answer, result=counts[-1])

    with pytest.raises(AssertionError, match="not_backed"):
        check_backed_count(last_successful)
