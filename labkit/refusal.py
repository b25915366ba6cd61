"""What a replay refusal suggests next: how to see a real answer, and when to restart the kernel instead.

`ReplayRequestMismatch` stays a refusal in replay mode; its message ends with the
lines `refusal_hints` returns. The first says how to see what a model answers to
the changed request (explore mode, or an endpoint). The second appears only when
the change looks like stale kernel state rather than an edit: every field that
differs from the nearest recorded request holds the recorded value with a piece
appended that repeats (text added again by a cell run twice) or a recorded list
extended by a repeat of its own items (messages appended again). The test is
deliberately narrow: one genuine edit anywhere in the request, a piece appended
only once, or a repeated piece shorter than `MIN_REPEATED_CHARS` characters, and
it says nothing, since a wrong "restart your kernel" would hide a real change.
"""

from __future__ import annotations

from typing import Any

from labkit.canonical import json_inside

#: The line every refusal ends with: how to see an answer to the changed request.
EXPLORE_HINT = (
    "To see what a model answers to this request instead: install the local extra and set LABKIT_MODE=explore "
    "(`python3 course.py lab --explore` does both), or point LABKIT_BASE_URL and LABKIT_MODEL at an endpoint."
)
#: The line added when the change looks like a cell run twice or out of order.
STALE_HINT = (
    "This looks like stale kernel state (the same content appended again, as by a cell run twice or out of "
    "order): choose Kernel > Restart Kernel and Run All Cells."
)
#: The shortest repeated text (ignoring surrounding spaces) taken as appended twice; shorter repeats, such as
#: "!!", are more likely a learner's own edit.
MIN_REPEATED_CHARS = 4


def _repeats(unit: str, text: str) -> bool:
    """Return whether ``text`` is ``unit`` written two or more times."""
    return (
        len(unit.strip()) >= MIN_REPEATED_CHARS
        and len(text) >= 2 * len(unit)
        and text == unit * (len(text) // len(unit))
    )


def appended_again(recorded: str, actual: str) -> bool:
    """Return whether ``actual`` is ``recorded`` with text appended that repeats: itself, or the end of ``recorded``."""
    if not actual.startswith(recorded) or len(actual) == len(recorded):
        return False
    added = actual[len(recorded) :]
    if len(added.strip()) >= MIN_REPEATED_CHARS and recorded.endswith(added):
        return True  # the recorded text already ended with the piece that was added once more
    return any(_repeats(added[:size], added) for size in range(1, len(added) // 2 + 1) if len(added) % size == 0)


def extended_by_repeat(recorded: list[Any], actual: list[Any]) -> bool:
    """Return whether ``actual`` is ``recorded`` followed by a repeat: of its last items, or of new items twice."""
    if len(actual) <= len(recorded) or actual[: len(recorded)] != recorded or not recorded:
        return False
    added = actual[len(recorded) :]
    if len(added) <= len(recorded) and added == recorded[len(recorded) - len(added) :]:
        return True  # the last items (or all of them) sent once more
    return any(
        added == added[:size] * (len(added) // size) for size in range(1, len(added) // 2 + 1) if len(added) % size == 0
    )


def _stale(recorded: Any, actual: Any) -> bool | None:
    """None when equal; True when every difference is a repeat appended; False when any difference is an edit."""
    recorded, actual = json_inside(recorded), json_inside(actual)
    if recorded == actual:
        return None
    if isinstance(recorded, dict) and isinstance(actual, dict):
        if list(recorded) != list(actual):
            return False
        verdicts = [_stale(recorded[key], actual[key]) for key in recorded]
        return False if False in verdicts else True if True in verdicts else None
    if isinstance(recorded, list) and isinstance(actual, list):
        if len(recorded) != len(actual):
            return extended_by_repeat(recorded, actual)
        verdicts = [_stale(r, a) for r, a in zip(recorded, actual, strict=True)]
        return False if False in verdicts else True if True in verdicts else None
    if isinstance(recorded, str) and isinstance(actual, str):
        return appended_again(recorded, actual)
    return False


def looks_like_stale_state(recorded: dict[str, Any] | None, actual: dict[str, Any]) -> bool:
    """Return whether ``actual`` differs from the recorded request only by content appended again."""
    return recorded is not None and _stale(recorded, actual) is True


def refusal_hints(recorded: dict[str, Any] | None, actual: dict[str, Any]) -> str:
    """Return the lines a refusal ends with: how to see an answer, and a restart when the state looks stale."""
    lines = [EXPLORE_HINT]
    if looks_like_stale_state(recorded, actual):
        lines.append(STALE_HINT)
    return "\n" + "\n".join(lines)


def hints_in(message: str) -> list[str]:
    """Return the hint lines a refusal's message holds (what a trace event or a widget shows beside the diff)."""
    return [line for line in message.splitlines() if line in (EXPLORE_HINT, STALE_HINT)]
