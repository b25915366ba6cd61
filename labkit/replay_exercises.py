"""The checks of lesson 03's two exercises, kept here so the notebook's check cells are one call each.

Each check runs the learner's function on the recorded run's requests, sends
what it returns through the real `openai` client under replay, and raises
`AssertionError` with what to fix. A check prints nothing: it never shows the
answer before it passes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from labkit.canonical import request_json
from labkit.course.shortcuts import calls_to
from labkit.recording import RecordedRun
from labkit.replay import (
    SAME_JSON,
    BindingStore,
    FieldDiff,
    ReplayRequestMismatch,
    explain_difference,
    replay_client,
    request_diff,
    text_diff,
)

#: The two kinds of rewrite exercise 1 asks for: equal under ``==``, refused by replay.
REWRITE_KINDS = ("key order", "a number written another way")


def rewrite_kind(diff: list[FieldDiff]) -> str:
    """Say what kind of rewrite a refusal's diff shows: one of `REWRITE_KINDS`, or "another change"."""
    if diff and all(d.note == SAME_JSON and d.path.endswith("(key order)") for d in diff):
        return REWRITE_KINDS[0]
    if diff and all(_same_number(d.recorded, d.actual) for d in diff):
        return REWRITE_KINDS[1]
    return "another change"


def _same_number(recorded: Any, actual: Any) -> bool:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (recorded, actual))
    return numbers and recorded == actual and json.dumps(recorded) != json.dumps(actual)


def check_equal_yet_refused(
    equal_yet_refused: Callable[[dict[str, Any]], list[dict[str, Any]]], run: RecordedRun
) -> None:
    """Check exercise 1 on every request of ``run``.

    ``equal_yet_refused(request)`` must leave ``request`` unchanged and return
    two requests, each ``==`` to it and each refused under replay: one that
    differs only in key order, one only in how a number is written.
    """
    client = replay_client(BindingStore.from_run(run))
    for binding in run.bindings:
        request = copy.deepcopy(binding.request)
        variants = equal_yet_refused(request)
        if request_json(request) != request_json(binding.request):
            raise AssertionError("equal_yet_refused changed the request it was given: rewrite a copy")
        if len(variants) != 2:
            raise AssertionError(f"return two requests, not {len(variants)}")
        kinds = []
        for variant in variants:
            if variant != binding.request:
                raise AssertionError("a rewrite is not == the request: change how it is written, not what it holds")
            try:
                client.chat.completions.create(**copy.deepcopy(variant))
            except ReplayRequestMismatch as error:
                kinds.append(rewrite_kind(error.diff))
            else:
                raise AssertionError("a rewrite got the recorded reply: the client sent the recorded bytes")
        if sorted(kinds) != sorted(REWRITE_KINDS):
            raise AssertionError(f"your rewrites are refused as {kinds}; write one of each kind: {list(REWRITE_KINDS)}")


def _with_user_content(request: dict[str, Any], edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    changed = copy.deepcopy(request)
    content = json.loads(changed["messages"][1]["content"])
    edit(content)
    changed["messages"][1]["content"] = json.dumps(content, ensure_ascii=False)
    return changed


def request_changes(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Return changed copies of a recorded RAG request: one or two fields each, settings and prompt."""
    policy = request["messages"][0]["content"] + " Be brief."
    return [
        {**request, "temperature": 0.3},
        {**request, "seed": request["seed"] + 1},
        {**request, "temperature": float(request["temperature"])},
        {**request, "seed": float(request["seed"])},
        {**request, "max_tokens": request["max_tokens"] - 1},
        {**request, "model": "another-model"},
        {**request, "top_p": 0.9},
        {key: value for key, value in request.items() if key != "seed"},
        {**request, "temperature": 0.3, "frequency_penalty": 0.5},
        {**request, "messages": [{"role": "system", "content": policy}, request["messages"][1]]},
        _with_user_content(request, lambda c: c.update(question="How long are backups kept?")),
        _with_user_content(request, lambda c: c["passages"].reverse()),
    ]


def check_changed_fields(changed_fields: Callable[[Any, Any], list[str]], run: RecordedRun) -> None:
    """Check exercise 2 on the last request of ``run``.

    ``changed_fields(recorded, actual)`` must return the sorted paths that the
    refusal's diff names for each of `request_changes`, ``[]`` for an unchanged
    copy and for the schema's properties in another order, and must not call
    labkit's own diff (`request_diff`, `text_diff`, `explain_difference`).
    """
    recorded = run.bindings[-1].request
    client = replay_client(BindingStore.from_run(run))
    for number, changed in enumerate(request_changes(recorded), start=1):
        want = sorted(d.path for d in request_diff(recorded, changed))
        with calls_to(request_diff, text_diff, explain_difference) as called:
            yours = changed_fields(recorded, changed)
        if called:
            raise AssertionError(f"changed_fields called labkit's {called[0]}: compare the requests yourself")
        if sorted(yours) == want != yours:
            raise AssertionError(f"change {number}: the right paths, but not sorted: {yours}")
        if yours != want:
            raise AssertionError(f"change {number}: yours {yours}, the refusal's diff names {want}")
        try:
            client.chat.completions.create(**changed)
        except ReplayRequestMismatch:
            pass
        else:  # pragma: no cover - each change is a new request
            raise AssertionError(f"change {number}: a changed request got a recorded reply")
    if changed_fields(recorded, copy.deepcopy(recorded)) != []:
        raise AssertionError("an unchanged copy of the request must give []")
    reordered = copy.deepcopy(recorded)
    schema = reordered["response_format"]["schema"]
    schema["properties"] = dict(reversed(schema["properties"].items()))
    yours = changed_fields(recorded, reordered)
    if yours != []:
        raise AssertionError(f"the schema's properties in another order hold equal values: yours {yours}, not []")
    client.chat.completions.create(**copy.deepcopy(recorded))  # the unchanged request is still bound
