"""The four illustrative tickets and the typed, team-scoped tool that counts them.

The model may choose only the intent (`CountTickets`); the caller's team comes
from the application (`count_tickets(args, team)`), so no model reply can count
another team's tickets.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.errors import LabkitError

#: The intents a count may ask about; the tool's input schema allows no other.
Intent = Literal["get_refund", "track_order", "cancel_order"]

#: The book's four illustrative tickets: three for team-a, one for team-b; none cancels an order.
TICKETS: tuple[dict[str, str | int], ...] = (
    {"id": 1, "team": "team-a", "intent": "get_refund"},
    {"id": 2, "team": "team-a", "intent": "get_refund"},
    {"id": 3, "team": "team-a", "intent": "track_order"},
    {"id": 4, "team": "team-b", "intent": "get_refund"},
)
#: The teams the application knows; a count for any other team is refused, not answered with 0.
TEAMS: tuple[str, ...] = tuple(sorted({str(t["team"]) for t in TICKETS}))


class UnknownTeam(LabkitError, LookupError):
    """A request names a team the application does not know."""


def check_team(team: str) -> str:
    """Return ``team`` if the application knows it; else raise `UnknownTeam`, naming the known."""
    if team not in TEAMS:
        raise UnknownTeam(
            f"unknown team {team!r}: the known teams are {', '.join(TEAMS)}; pass one of them"
        )
    return team


class CountTickets(BaseModel):
    """The count tool's arguments: the only thing a model reply may choose."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    intent: Intent = Field(description="Which kind of ticket to count.")


def count_tickets(args: CountTickets, team: str) -> dict[str, str | int]:
    """Count the caller's team's tickets with the requested intent.

    ``team`` comes from the application, never from the model's arguments.
    """
    if not isinstance(args, CountTickets):
        raise TypeError(
            f"count_tickets takes validated CountTickets arguments, not {type(args).__name__}"
        )
    check_team(team)
    rows = [t for t in TICKETS if t["team"] == team and t["intent"] == args.intent]
    return {"intent": args.intent, "team": team, "count": len(rows)}
