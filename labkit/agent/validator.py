"""The final-answer validator: an answer must state exactly what the current tool result supports.

The agent's final wording is a proposal. `verify_final` accepts it only when it
is the checkable claim ``<count> <intent noun> requests in <scope>`` and the
number, the scope and the intent all equal the current count result. Anything
more (an explanation, a trend, a cause) is something no tool observed, so it is
rejected as unsupported rather than passed along.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labkit.errors import LabkitError

#: How an intent is named in an answer; the rest use their words ("track order requests").
INTENT_NOUNS = {"get_refund": "refund"}
#: The one answer form `verify_final` accepts; a trailing period is allowed.
CLAIM = re.compile(r"^(?P<count>\d+) (?P<noun>[a-z ]+?) requests in (?P<scope>[a-z_]+)\.?$")


class AnswerRejected(LabkitError, ValueError):
    """A final answer does not match the current tool result, or says more than the tools observed."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def intent_noun(intent: str) -> str:
    """Return the words an answer uses for an intent (``get_refund`` -> ``refund``)."""
    return INTENT_NOUNS.get(intent, intent.replace("_", " "))


def format_answer(count: int, intent: str, caller_scope: str) -> str:
    """Return the one claim a count result supports, e.g. ``27 refund requests in approved_support_dataset``."""
    return f"{count} {intent_noun(intent)} requests in {caller_scope}"


@dataclass(frozen=True)
class VerifiedAnswer:
    """An answer that passed the validator, with the result it was checked against."""

    answer: str
    """The accepted answer text."""
    count: int
    """The count the answer states, equal to the tool's."""
    caller_scope: str
    """The scope the answer names, equal to the tool's."""
    intent: str
    """The intent the tool counted."""
    dataset_version: str
    """The dataset version of the count result."""


def verify_final(answer: str, *, result: dict, expected_intent: str | None = None) -> VerifiedAnswer:
    """Check ``answer`` against the current count ``result``; return it verified or raise `AnswerRejected`."""
    text = answer.strip()
    match = CLAIM.match(text)
    if match is None:
        raise AnswerRejected(
            "unsupported",
            f"{text!r} is not the one form verify_final accepts, '<count> <intent> requests in <scope>'; "
            "any other wording, an added explanation or a true rewording, cannot be checked",
        )
    count = int(match["count"])
    if count != result["count"]:
        raise AnswerRejected("wrong_count", f"the answer says {count}, the tool counted {result['count']}")
    if match["scope"] != result["caller_scope"]:
        raise AnswerRejected(
            "wrong_scope", f"the answer names {match['scope']!r}, the tool read {result['caller_scope']!r}"
        )
    if expected_intent is not None and result["intent"] != expected_intent:
        raise AnswerRejected(
            "wrong_intent", f"the tool counted {result['intent']!r}, the question asked about {expected_intent!r}"
        )
    if match["noun"] != intent_noun(result["intent"]):
        raise AnswerRejected(
            "wrong_intent",
            f"the answer speaks of {match['noun']!r} requests, the tool counted "
            f"{result['intent']!r} ({intent_noun(result['intent'])!r})",
        )
    return VerifiedAnswer(text, count, result["caller_scope"], result["intent"], result["dataset_version"])
