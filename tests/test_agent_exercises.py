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
