"""How an exercise's check tells the learner's own code from a call to the labkit function it asks them to write.

A check cell wraps the learner's function in `calls_to`: the block runs as usual,
and the list it yields names every one of the given functions that was called,
under any name it was imported as (the call is recognised by the function's code,
not by the name used). A check then refuses the shortcut in words:

    with calls_to(request_diff) as called:
        mine = changed_fields(recorded, actual)
    assert not called, f"changed_fields called labkit's {called[0]}: find the fields yourself"

A value the learner types (a constant, not a function) is refused by its cell's source:
`cell_that_set` returns the latest cell that assigned it, and `typed_as_number` says
whether that cell gave it a number typed out, not an expression that computes one;
`typed_as_literal` says the same of any literal, and `grade_prediction` grades a typed prediction.
"""

from __future__ import annotations

import ast
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


def cell_that_set(variable: str) -> str:
    """Return the source of the latest earlier cell run in this IPython kernel that assigns ``variable``.

    A check uses it to refuse a value computed with a labkit function instead of by hand:
    ``assert "kappa_after_one_fix" not in cell_that_set("KAPPA_AFTER_FIX")``. The current
    cell is skipped; ``""`` outside IPython or when no earlier cell assigns the name.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # not in a notebook: no cells to read
        return ""
    shell = get_ipython()
    history = shell.user_ns.get("In", []) if shell is not None else []
    for source in reversed(history[:-1]):
        if _assigns(source, variable):
            return str(source)
    return ""


def typed_as_number(variable: str) -> bool:
    """Return whether the latest earlier cell assigning ``variable`` gives it a number typed out, such as ``0.55``.

    ``round(kappa(a, b), 2)`` or any other computed value is refused, so a check can
    hold a learner to a figure worked out by hand. ``True`` when no earlier cell in the
    kernel's history assigns the name (outside IPython, or a kernel that keeps no
    history): there is no source to refuse, as with `cell_that_set`'s ``""``.
    """
    source = cell_that_set(variable)
    if not source:
        return True
    values = [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assign | ast.AnnAssign) and _node_assigns(node, variable)
    ]
    value = values[-1] if values else None
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub | ast.UAdd):
        value = value.operand
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


def _node_assigns(node: ast.AST, variable: str) -> bool:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == variable for t in targets)


def _assigns(source: str, variable: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(_node_assigns(node, variable) for node in ast.walk(tree))


def typed_as_literal(variable: str) -> bool:
    """Return whether the latest earlier notebook cell assigning ``variable`` gives it a value typed out.

    A literal (a string, a number, a list or dict of them) passes; an expression that
    computes the value (from labkit's answer, say) is refused. ``True`` when no earlier cell
    assigns the name (outside IPython): there is no source to refuse.
    """
    source = cell_that_set(variable)
    if not source:
        return True
    values: list[ast.expr | None] = []
    for node in ast.walk(ast.parse(source)):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == variable for t in targets):
            values.append(node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None)
    if not values or values[-1] is None:
        return False
    try:
        ast.literal_eval(values[-1])
    except ValueError:
        return False
    return True


def grade_prediction(
    variable: str, predicted: object, truth: object, *, choices: tuple[str, ...] = (), hint: str = "look again"
) -> None:
    """Raise AssertionError unless ``predicted`` is ``truth``, typed out; the messages never name the answer.

    With ``choices`` the prediction must be one of them; without, it must have the
    answer's shape (the same type, and for a dict the same keys).
    """
    if choices:
        assert predicted in choices, f"set {variable} to one of {', '.join(map(repr, choices))} before the check"
    else:
        shape = type(predicted) is type(truth) and (not isinstance(truth, dict) or predicted.keys() == truth.keys())  # type: ignore[attr-defined]
        assert shape, f"set {variable} to your prediction, shaped as its comment says, before the check"
    assert typed_as_literal(variable), f"type {variable} out as you predicted it, do not compute it"
    assert predicted == truth, f"{variable} = {predicted!r} is not what the check finds: {hint}"
