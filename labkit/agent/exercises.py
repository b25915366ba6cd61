"""Checks for lesson 04's exercises that need more set-up than a learner should read past.

Each check calls the learner's function on fresh data it arranges itself, raises
`AssertionError` saying what went wrong (never the expected answer), and returns
a one-line pass message.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import Any

from labkit.agent.dataset import APPROVED_SCOPE, load_scope
from labkit.agent.identity import authorize
from labkit.agent.runs import refresh_after_first_filter
from labkit.agent.tools import CountRows, IntentFilter, RowRefRefused, SupportData, SupportTools
from labkit.agent.validator import AnswerRejected, format_answer


def _audit(tools: SupportTools) -> list[tuple[str, str]]:
    return [(entry["tool"], entry["outcome"]) for entry in tools.data.audit]


def _analyst(session: str) -> SupportTools:
    return SupportTools(authorize("analyst-ana", session, APPROVED_SCOPE), SupportData())


MAX_FILTERS = 10  # exercise 4: more filters than this on restless data is a retry without end


def _expect_refusal(count_with_refilter: Callable[..., Any], tools: SupportTools, reason: str) -> None:
    try:
        count_with_refilter(tools, "complaint")
    except RowRefRefused as exc:
        assert exc.reason == reason, f"expected the {reason} refusal to go through, got {exc.reason!r}"
    else:
        raise AssertionError(f"a {reason} reference was counted")
    counts = [tool for tool, _ in _audit(tools)].count("count_rows")
    retries = "retry once, not more" if reason == "stale" else "a tampered reference is refused, not filtered around"
    assert counts == (2 if reason == "stale" else 1), retries


def check_stale_recount(count_with_refilter: Callable[[SupportTools, str], str]) -> str:
    """Check exercise 4's ``count_with_refilter(tools, intent)`` on six arranged datasets.

    A refresh right after the first filter must lead to exactly one more filter and
    count; calm data to no retry; data that changes after every filter to one
    retry, then the stale refusal; a foreign or forged reference to its refusal,
    with no second filter; a filter that hands back another intent's set to the
    final check's ``wrong_intent`` rejection, so an answer formatted but never
    checked fails.
    """
    refreshed = _analyst("exercise-4a")
    refresh_after_first_filter(refreshed)
    rows, _ = load_scope(APPROVED_SCOPE)
    expected = format_answer(sum(r.intent == "track_refund" for r in rows), "track_refund", APPROVED_SCOPE)
    assert count_with_refilter(refreshed, "track_refund") == expected, "recount the refreshed data"
    assert _audit(refreshed) == [
        ("filter_by_intent", "ok"),
        ("count_rows", "refused:stale"),
        ("filter_by_intent", "ok"),
        ("count_rows", "ok"),
    ], "expected filter, stale count, filter, count"
    calm = _analyst("exercise-4b")
    count_with_refilter(calm, "complaint")
    assert _audit(calm) == [("filter_by_intent", "ok"), ("count_rows", "ok")], "no needless retry"

    restless = _analyst("exercise-4c")
    versions = iter(range(100))
    filter_once = restless.filter_by_intent

    def filter_then_refresh(args: Any) -> dict[str, Any]:
        if [tool for tool, _ in _audit(restless)].count("filter_by_intent") >= MAX_FILTERS:
            raise AssertionError(
                f"count_with_refilter filtered {MAX_FILTERS} times on data that changes after every filter; "
                "it would never stop: bound the retries"
            )
        result = filter_once(args)
        restless.data.publish(f"support-refresh-{next(versions)}")
        return result

    restless.filter_by_intent = filter_then_refresh  # type: ignore[method-assign]  # data that changes every time
    _expect_refusal(count_with_refilter, restless, "stale")

    tampered = _analyst("exercise-4d")
    lee = SupportTools(authorize("lead-lee", "exercise-4d", APPROVED_SCOPE), tampered.data)
    tampered.filter_by_intent = lee.filter_by_intent  # type: ignore[method-assign]  # hands over lee's reference
    _expect_refusal(count_with_refilter, tampered, "foreign")

    forging = _analyst("exercise-4e")
    forging.filter_by_intent = lambda args: {"row_ref": "rows-0123456789abcdef", "preview": []}  # type: ignore[method-assign]  # a forged reference
    _expect_refusal(count_with_refilter, forging, "forged")

    misfiled = _analyst("exercise-4f")
    filter_asked = misfiled.filter_by_intent
    misfiled.filter_by_intent = lambda args: filter_asked(  # type: ignore[method-assign]  # another intent's set
        IntentFilter(intent="track_refund", limit=args.limit)
    )
    try:
        count_with_refilter(misfiled, "get_refund")
    except AnswerRejected as exc:
        assert exc.reason == "wrong_intent", f"a count of another intent was rejected as {exc.reason!r}"
    else:
        raise AssertionError("a count of another intent came back as the answer: it was never checked")
    assert _audit(misfiled) == [("filter_by_intent", "ok"), ("count_rows", "ok")], "no retry on a checked count"
    return "ex:stale-recount passed"


def _required_fields() -> dict[str, list[str]]:
    """Each tool's required argument names, as its Pydantic class declares them."""
    from labkit.agent.tools import TOOL_ARGUMENTS

    return {
        tool: [name for name, field in model.model_fields.items() if field.is_required()]
        for tool, model in TOOL_ARGUMENTS.items()
    }


def _missing_arguments(results: Any) -> dict[str, int]:
    required = _required_fields()
    return dict(
        Counter(
            f"{event['tool']}.{name}"
            for result in results
            for event in (result.state or {}).get("events", [])
            if event["kind"] == "arguments_invalid" and event["tool"] in required
            for name in required[event["tool"]]
            if name not in event["arguments"]
        )
    )


def check_missing_arguments(
    missing_arguments: Callable[[Any], dict[str, int]],
    captured: Any,
    authored: Any,
    *,
    prediction: Any,
    source: str = "",
) -> str:
    """Check exercise 3's ``missing_arguments(results)`` on the two recorded runs and three scripted runs, then grade ``prediction``.

    The answer counts, per ``"<tool>.<field>"``, the refused calls that lacked a
    field the tool's argument class requires. The scripted runs: ``count_rows``
    with an ``answer`` (lacks ``rows``); a filter with a ``limit`` but no ``intent``
    (an optional field given is not missing); a valid filter (nothing refused).
    A key counted zero times may be left out. ``prediction`` (the learner's
    ``PREDICTION``) names the ``"<tool>.<field>"`` the learner expects the refused captured calls
    to lack most often, typed out as a string (the returned text says whether it was right): ``source`` is the cell that set it
    (`labkit.course.shortcuts.cell_that_set`), and a value computed there predicts nothing.
    """
    from labkit.agent.graph import ScriptedModel
    from labkit.agent.runs import make_requests

    route = '{"route": "structured"}'
    scripted = {
        "count_rows with an answer": '{"decision": "count_rows", "arguments": {"answer": "9"}}',
        "a filter with a limit and no intent": '{"decision": "filter_by_intent", "arguments": {"limit": 3}}',
        "a valid filter": '{"decision": "filter_by_intent", "arguments": {"intent": "get_refund"}}',
    }
    runs = {"the captured run": captured, "the authored run": authored}
    for name, reply in scripted.items():
        runs[f"a scripted run proposing {name}"] = make_requests(ScriptedModel({"route:": route, "agent:": reply}))
    for name, results in runs.items():
        counted = {key: n for key, n in dict(missing_arguments(results)).items() if n}
        expected = _missing_arguments(results)
        assert counted == expected, (
            f"{name}: expected {expected}, got {counted}; count, per '<tool>.<field>', the refused calls that lack "
            "a field the tool's argument class requires (not the fields they hold, not optional ones)"
        )
    verdict = _grade_prediction(prediction, source, _missing_arguments(captured))
    return f"ex:missing-arguments passed\n{verdict}"


def _grade_prediction(prediction: Any, source: str, missing: dict[str, int]) -> str:
    """Refuse a missing, malformed or computed prediction of the field the refused calls lacked most often; say
    whether a typed one was right. A wrong prediction is said, not raised: it was made before the count was seen."""
    required = sorted(f"{tool}.{name}" for tool, names in _required_fields().items() for name in names)
    assert isinstance(prediction, str), (
        f"PREDICTION is {prediction!r}: set it to the '<tool>.<field>' you expect, one of {', '.join(required)}"
    )
    assert prediction in required, (
        f"PREDICTION {prediction!r} is not a required field; choose one of {', '.join(required)}"
    )
    assert not source or _typed_string(source, "PREDICTION"), (
        "type PREDICTION out as a string such as 'count_rows.rows': a value computed from the count predicts nothing"
    )
    most = max(missing.values(), default=0)
    if missing.get(prediction, 0) == most:
        return f"Your prediction, {prediction}, is right: the refused captured calls lacked it most often."
    top = ", ".join(sorted(key for key, n in missing.items() if n == most))
    return (
        f"Your prediction, {prediction}, is wrong: the refused captured calls lacked {top} most often. "
        "Ask which tool the model proposed first."
    )


def _typed_string(source: str, variable: str) -> bool:
    """Return whether the latest assignment to ``variable`` in ``source`` is a string typed out, not an expression."""
    values = [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets)
    ]
    return bool(values) and isinstance(values[-1], ast.Constant) and isinstance(values[-1].value, str)


def _call_backed(verify_backed_count: Callable[..., Any], answer: str, calls: list[dict], intent: str) -> Any:
    try:
        return verify_backed_count(answer, calls, intent)
    except (AttributeError, KeyError, TypeError) as exc:
        raise AssertionError(
            f"verify_backed_count crashed with {type(exc).__name__} on an observation that holds no count "
            "(a route step's observation is a string, a refused count's holds an error); "
            "an answer no count backs is rejected with AnswerRejected"
        ) from None


def _expect_rejection(
    verify_backed_count: Callable[..., Any], answer: str, calls: list[dict], reason: str, intent: str = "get_refund"
) -> None:
    try:
        _call_backed(verify_backed_count, answer, calls, intent)
    except AnswerRejected as exc:
        assert exc.reason == reason, f"expected reason {reason!r}, got {exc.reason!r}"
    else:
        raise AssertionError(f"an answer that should be rejected as {reason!r} was accepted")


def _expect_verified(
    verify_backed_count: Callable[..., Any], answer: str, calls: list[dict], intent: str, count: int
) -> None:
    try:
        verified = _call_backed(verify_backed_count, answer, calls, intent)
    except AnswerRejected as exc:
        raise AssertionError(f"the answer the counts back was rejected ({exc.reason})") from None
    assert getattr(verified, "answer", None) == answer, "the answer the counts back was not verified"
    assert getattr(verified, "count", None) == count, "the answer was verified against another count"


def check_backed_count(verify_backed_count: Callable[[str, list[dict], str], Any]) -> str:
    """Check exercise 1's ``verify_backed_count(answer, calls, intent)`` on call lists it builds from fresh data.

    Every call list begins, as `refund_count_trace`'s does, with the route step,
    whose observation is a string. An answer read off a preview, with no
    ``count_rows`` call, must be rejected as ``not_backed``. When a run counted twice, the data changing in between (the
    earlier count larger or smaller, from an older dataset version), and ran a filter
    after its count, the latest ``count_rows`` call decides: the earlier count is
    stale. The answer the latest count backs is verified, the earlier count's answer
    is ``wrong_count``. When that latest call was refused (its observation an
    ``error``), no count backs any answer: ``not_backed``. When the latest count is of
    another intent than the question's ``intent``, its answer is ``wrong_intent``,
    whether it names the intent counted or the one asked about; and a question about
    that other intent is answered by the same count.
    """
    tools = _analyst("exercise-1")
    filtered = tools.filter_by_intent(IntentFilter(intent="get_refund", limit=3))
    preview: list[dict[str, Any]] = [
        {"step": "route", "observation": "structured"},
        {"step": "filter_by_intent", "observation": {"preview_rows": len(filtered["preview"])}},
    ]
    _expect_rejection(
        verify_backed_count,
        format_answer(len(filtered["preview"]), "get_refund", APPROVED_SCOPE),
        preview,
        "not_backed",
    )
    counted = tools.count_rows(CountRows(rows=filtered["row_ref"]))
    right = format_answer(counted["count"], "get_refund", APPROVED_SCOPE)
    after = {"step": "filter_by_intent", "observation": {"preview_rows": 3}}
    for shift, version in ((5, "support-2026-08-01"), (-5, "support-2026-07-01")):
        earlier = {**counted, "count": counted["count"] + shift, "dataset_version": version}
        calls = [
            *preview,
            {"step": "count_rows", "observation": earlier},
            {"step": "count_rows", "observation": counted},
        ]
        _expect_verified(verify_backed_count, right, [*calls, after], "get_refund", counted["count"])
        stale = format_answer(earlier["count"], "get_refund", APPROVED_SCOPE)
        _expect_rejection(verify_backed_count, stale, [*calls, after], "wrong_count")
    refused = {"step": "count_rows", "observation": {"error": "the row_ref went stale; filter again"}}
    _expect_rejection(verify_backed_count, right, [*preview, calls[-1], refused], "not_backed")

    other = tools.count_rows(CountRows(rows=tools.filter_by_intent(IntentFilter(intent="track_refund"))["row_ref"]))
    misfiled = [*preview, {"step": "count_rows", "observation": counted}, {"step": "count_rows", "observation": other}]
    for named in ("track_refund", "get_refund"):  # the intent counted, then the one asked about, on the other's count
        _expect_rejection(
            verify_backed_count, format_answer(other["count"], named, APPROVED_SCOPE), misfiled, "wrong_intent"
        )
    answer = format_answer(other["count"], "track_refund", APPROVED_SCOPE)
    _expect_verified(verify_backed_count, answer, misfiled, "track_refund", other["count"])
    return "ex:backed-count passed"


#: The predictions `check_checked_finalize` accepts: which of the two refreshed graph runs the learner's agent rejects.
REJECT_CHOICES = ("after count", "filter then count", "both", "none")


def _final_state(agent: Any, answer: str, result: dict[str, Any] | None, expected_intent: str) -> dict[str, Any]:
    """A state as `SupportAgent.run` starts it, after the model proposed ``answer`` with ``result`` the last one."""
    caller = agent.caller
    return {
        "question": f"How many {expected_intent} requests are in the dataset?",
        "user_id": caller.user_id,
        "session_id": caller.session_id,
        "caller_scope": caller.caller_scope,
        "dataset_version": caller.dataset_version,
        "expected_intent": expected_intent,
        "steps_left": 3,
        "iterations": 3,
        "max_iterations": agent.max_iterations,
        "history": [],
        "route": "structured",
        "proposal": {"decision": "final_answer", "arguments": {"answer": answer}},
        "last_result": result,
        "final": None,
        "status": None,
        "stop_reason": None,
        "events": [],
    }


def _verdict(update: Any, answer: str, where: str) -> str:
    """``ok`` for a verified answer, else the rejection's reason; refuse an update shaped unlike finalize_node's."""
    shape = "return the update SupportAgent.finalize_node returns (final, status, stop_reason, events)"
    assert isinstance(update, dict) and update.get("events"), f"{where}: finalize_node returned {update!r}; {shape}"
    event = update["events"][-1]
    if update.get("status") == "ok":
        assert update.get("final") == answer and event.get("kind") == "answer_verified", (
            f"{where}: status ok, but not with the proposed answer and an answer_verified event; {shape}"
        )
        return "ok"
    assert update.get("status") == "answer_rejected" and update.get("final") is None, (
        f"{where}: status {update.get('status')!r}; an answer is verified (ok) or rejected (answer_rejected)"
    )
    assert event.get("kind") == "answer_rejected" and event.get("reason"), (
        f"{where}: a rejection needs an answer_rejected event with its reason (answer_rejected does that)"
    )
    return str(event["reason"])


def _expect_final(agent: Any, where: str, answer: str, result: Any, intent: str, want: str) -> None:
    try:
        update = agent.finalize_node(_final_state(agent, answer, result, intent))
    except (AttributeError, KeyError, TypeError) as exc:
        raise AssertionError(
            f"{where}: finalize_node crashed with {type(exc).__name__}: {exc}; an answer the node cannot check "
            "is rejected, as the plain node rejects an answer with no count result"
        ) from None
    got = _verdict(update, answer, where)
    if want == "ok":
        assert got == "ok", f"{where} was rejected ({got}); it must be verified"
    else:
        assert got != "ok", f"{where} was verified; it must be rejected"
        assert got == want, f"{where} was rejected as {got!r}; expected reason {want!r}"


def _refresh_after_count(tools: SupportTools, version: str) -> None:
    """Make ``tools``' data publish ``version`` right after each count, so the count just made is outdated."""
    count_once = tools.count_rows

    def count_then_refresh(args: Any) -> dict[str, Any]:
        counted = count_once(args)
        tools.data.publish(version)
        return counted

    tools.count_rows = count_then_refresh  # type: ignore[method-assign]


def _graph_runs(agent_class: type) -> list[dict[str, Any]]:
    """Run the refund question three ways through ``agent_class``'s graph and `SupportAgent`'s, replies authored."""
    from labkit.agent.graph import SupportAgent
    from labkit.agent.runs import ALL_CASES, REFRESHED_VERSION, RUN_AUTHORED, refresh_after_first_filter, replay
    from labkit.agent.trace import REFUND_QUESTION

    c12 = next(case for case in ALL_CASES if case.id == "c12")
    scenarios = [
        ("the refund question", REFUND_QUESTION, "get_refund", None),
        ("the same, the data refreshed right after its count", REFUND_QUESTION, "get_refund", "count"),
        ("the track refund question, refreshed between filter and count", c12.question, "track_refund", "filter"),
    ]
    adapter = replay(RUN_AUTHORED)
    rows = []
    for label, question, intent, refresh in scenarios:
        row: dict[str, Any] = {"run": label}
        for name, cls in (("SupportAgent", SupportAgent), ("yours", agent_class)):
            tools = _analyst("exercise-2-graph")
            if refresh == "count":
                _refresh_after_count(tools, REFRESHED_VERSION)
            elif refresh == "filter":
                refresh_after_first_filter(tools)
            state = cls(tools.caller, tools, adapter).run(question, expected_intent=intent)
            reasons = [e["reason"] for e in state["events"] if e["kind"] == "answer_rejected"]
            row[name] = f"{state['status']} ({reasons[-1]})" if reasons else str(state["status"])
            row["answer"] = state["final"]
        rows.append(row)
    return rows


def check_checked_finalize(agent_class: type, *, prediction: Any, source: str = "") -> str:
    """Check exercise 2's ``CheckedAgent`` node by node and in its graph, then grade ``prediction``.

    ``agent_class`` is a `SupportAgent` whose ``finalize_node`` also rejects a count
    of another intent than the state's ``expected_intent`` (``wrong_intent``) and a
    count whose dataset version is not the one the data serves now (``stale``),
    and still rejects what the plain node rejects. Its node is handed the two counts of
    `gap_counts`, the right current count, a track-refund count for a track-refund
    question, an answer off by one and a state with no count result. Then its graph
    and `SupportAgent`'s answer the refund question on the authored run's replies,
    with the data calm, refreshed right after the count (the count is outdated) and,
    for case ``c12``, refreshed between filter and count (the recount is current).
    ``prediction`` names which of the two refreshed runs the learner's agent rejects (one of
    `REJECT_CHOICES`), typed out: ``source`` is the cell that set it, and a wrong
    prediction is said, not raised.
    """
    from labkit.agent.graph import ScriptedModel, SupportAgent, gap_counts

    assert isinstance(agent_class, type) and issubclass(agent_class, SupportAgent), (
        "CheckedAgent must be a class that subclasses SupportAgent, so its finalize_node replaces the plain one"
    )
    caller = authorize("analyst-ana", "exercise-2", APPROVED_SCOPE)
    counts, _, gap_agent = gap_counts(caller)
    tools = gap_agent.tools
    agent = agent_class(caller, tools, ScriptedModel({}))
    filtered = tools.filter_by_intent(IntentFilter(intent="get_refund"))
    current = tools.count_rows(CountRows(rows=filtered["row_ref"]))
    right = format_answer(current["count"], "get_refund", APPROVED_SCOPE)
    _expect_final(agent, "the refund question's count at the current version", right, current, "get_refund", "ok")
    (outdated, other), labels = counts.values(), list(counts)
    for counted, label, want in ((outdated, labels[0], "stale"), (other, labels[1], "wrong_intent")):
        answer = format_answer(counted["count"], counted["intent"], APPROVED_SCOPE)
        _expect_final(agent, f"the gap's count {label!r}, for the refund question", answer, counted, "get_refund", want)
    answer = format_answer(other["count"], "track_refund", APPROVED_SCOPE)
    _expect_final(
        agent, "a current track_refund count for a track_refund question", answer, other, "track_refund", "ok"
    )
    off_by_one = format_answer(current["count"] + 1, "get_refund", APPROVED_SCOPE)
    _expect_final(agent, "an answer one more than the count", off_by_one, current, "get_refund", "wrong_count")
    _expect_final(agent, "an answer with no count result", right, None, "get_refund", "unsupported")

    rows = _graph_runs(agent_class)
    wants = ("ok", "answer_rejected (stale)", "ok")
    for row, want in zip(rows, wants, strict=True):
        assert row["yours"] == want, f"in the graph, {row['run']}: your agent ended {row['yours']!r}"
    graph = "\n".join(
        f"  {row['run']}: SupportAgent {row['SupportAgent']}, yours {row['yours']}"
        + (f" ({row['answer']})" if row["answer"] else "")
        for row in rows
    )
    verdict = _grade_reject_prediction(prediction, source, rows)
    return (
        f"ex:checked-finalize passed\n{verdict}\n"
        f"Both graphs, on the authored run's replies (written by the course, not a model):\n{graph}"
    )


def _grade_reject_prediction(prediction: Any, source: str, rows: list[dict[str, Any]]) -> str:
    """Refuse a missing, unknown or computed prediction of the refreshed runs the learner's agent rejects; say whether
    a typed one was right (read from the graph runs ``rows``, after the agent passed)."""
    choices = ", ".join(map(repr, REJECT_CHOICES))
    assert prediction in REJECT_CHOICES, f"REJECTS is {prediction!r}: set it to one of {choices}"
    assert not source or _typed_string(source, "REJECTS"), (
        "type REJECTS out as a string such as 'both': a value computed from the runs predicts nothing"
    )
    rejected = [name for name, row in zip(REJECT_CHOICES[:2], rows[1:], strict=True) if row["yours"] != "ok"]
    truth = "both" if len(rejected) == 2 else rejected[0] if rejected else "none"
    said = (
        "it rejects the count made just before the data changed (stale) and answers the recount made after it (current)"
    )
    if prediction == truth:
        return f"Your prediction, {prediction!r}, is right: {said}."
    return f"Your prediction, {prediction!r}, is wrong: {said}. Ask which version each count carries."
