"""The team-scoped count tool: the application supplies the team, the model only the intent."""

import pytest
from pydantic import ValidationError

from labkit.system.tickets import TICKETS, CountTickets, count_tickets


def test_the_count_is_limited_to_the_team_the_application_supplies():
    args = CountTickets(intent="get_refund")
    assert count_tickets(args, team="team-a") == {"intent": "get_refund", "team": "team-a", "count": 2}
    assert count_tickets(args, team="team-b")["count"] == 1


def test_an_intent_with_no_tickets_for_the_team_counts_zero():
    assert count_tickets(CountTickets(intent="track_order"), team="team-b")["count"] == 0
    assert count_tickets(CountTickets(intent="cancel_order"), team="team-a")["count"] == 0


def test_an_intent_outside_the_enum_is_rejected():
    with pytest.raises(ValidationError):
        CountTickets(intent="delete_everything")


def test_the_arguments_cannot_carry_a_team():
    with pytest.raises(ValidationError):
        CountTickets.model_validate({"intent": "get_refund", "team": "team-b"})


def test_unvalidated_arguments_are_refused():
    with pytest.raises(TypeError, match="CountTickets"):
        count_tickets({"intent": "get_refund"}, team="team-a")


def test_the_illustrative_tickets_are_the_books_four():
    assert [(t["team"], t["intent"]) for t in TICKETS] == [
        ("team-a", "get_refund"),
        ("team-a", "get_refund"),
        ("team-a", "track_order"),
        ("team-b", "get_refund"),
    ]


def test_counting_for_an_unknown_team_is_refused_not_zero():
    from labkit.system.tickets import UnknownTeam

    with pytest.raises(UnknownTeam, match="team-zz"):
        count_tickets(CountTickets(intent="get_refund"), team="team-zz")
