"""How an exercise's check tells the learner's own code from a call to the labkit function it asks them to write.

A check cell wraps the learner's function in `calls_to`: the block runs as usual,
and the list it yields names every one of the given functions that was called,
under any name it was imported as (the call is recognised by the function's code,
not by the name used). A check then refuses the shortcut in words:

    with calls_to(request_diff) as called:
        mine = changed_fields(recorded, actual)
    assert not called, f"changed_fields called labkit's {called[0]}: find the fields yourself"
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any, Literal

ProfileEvent = Literal["call", "return", "c_call", "c_return", "c_exception"]


@contextmanager
def calls_to(*functions: Callable[..., Any]) -> Iterator[list[str]]:
    """Run the block and yield the list of the given functions' names, filled in as each one is called."""
    watched: dict[CodeType, str] = {}
    for function in functions:
        target = inspect.unwrap(function)
        code = getattr(target, "__code__", None)
        if not isinstance(code, CodeType):
            raise TypeError(f"calls_to watches Python functions; {function!r} has no code to recognise")
        watched[code] = f"{target.__module__}.{target.__qualname__}"
    called: list[str] = []
    previous = sys.getprofile()

    def profile(frame: FrameType, event: ProfileEvent, arg: Any) -> None:
        if event == "call" and frame.f_code in watched:
            called.append(watched[frame.f_code])
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(profile)
    try:
        yield called
    finally:
        sys.setprofile(previous)
