"""The support-data agent as a LangGraph graph: allowed nodes, a step budget, an iteration cap and a trace.

Nodes: ``route`` (the model proposes a route; the application validates it),
``decline`` (out of scope: no data tool runs), ``profile`` (the user's profile,
kept apart from the data), ``agent`` (the model proposes the next tool call or
its final answer), ``tools`` (the application validates the arguments and runs
the tool as the caller), ``finalize`` (the final-answer validator) and
``fallback`` (the recorded stop when a limit or an invalid reply ends the run).
No other node exists, and every conditional edge names its targets.

Each route or tool call spends one step of ``steps_left``; each model proposal
is one agent iteration, and the run stops at ``max_iterations`` with a recorded
fallback. The events list holds routes, proposals, calls, observations,
remaining budget and the stop reason; `agent_trace` turns it into a `Trace`.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from pydantic import ValidationError

from labkit.agent.identity import Caller, ScopeRefused
from labkit.agent.router import parse_decision, route_question
from labkit.agent.tools import TOOL_ARGUMENTS, RowRefRefused, SupportTools
from labkit.agent.validator import AnswerRejected, verify_final
from labkit.traces import Trace, run_identity

#: The nodes the graph may contain; a test checks the compiled graph against this list.
ALLOWED_NODES = ("route", "decline", "profile", "agent", "tools", "finalize", "fallback")
DEFAULT_STEPS = 6
DEFAULT_MAX_ITERATIONS = 5
FALLBACK_ANSWER = "I could not complete this request within the agent's limits, so no answer is given."
DECLINE_ANSWER = "I can only answer questions about the support requests you may read."

AGENT_POLICY = (
    "You answer questions about labelled support requests with tools. filter_by_intent {intent, limit}: a row_ref "
    "to all matching rows and a preview. count_rows {rows: row_ref}: the exact count. summarize_requests {intent, "
    "limit}: a summary. final_answer {answer: '<count> <intent words> requests in <caller_scope>'}. Count with "
    "count_rows, never from a preview. Intents are standard names such as get_refund.\n"
    'Reply with only JSON: {"decision": a tool name or final_answer, "arguments": {...}}.'
)


class AgentState(TypedDict, total=False):
    """The graph's state; ``events`` is appended to, every other key is replaced."""

    question: str
    user_id: str
    session_id: str
    caller_scope: str
    dataset_version: str
    expected_intent: str | None  # the question's intent, when the application knows it (`SupportAgent.run`)
    steps_left: int
    iterations: int
    max_iterations: int
    route: str | None
    proposal: dict[str, Any] | None
    history: list[dict[str, str]]
    last_result: dict[str, Any] | None
    final: str | None
    status: str | None
    stop_reason: str | None
    events: Annotated[list[dict[str, Any]], operator.add]


def agent_messages(state: AgentState) -> list[dict[str, str]]:
    """Return the agent's conversation: policy, the caller's scope and question, then each proposal and observation."""
    head = [
        {"role": "system", "content": AGENT_POLICY},
        {"role": "user", "content": json.dumps({"caller_scope": state["caller_scope"], "question": state["question"]})},
    ]
    return head + list(state.get("history", []))


def after_route(state: AgentState) -> str:
    """Choose the node after ``route``: the route's own node, or ``fallback`` when no step is left to use it.

    An invalid route (None) goes to ``fallback``; ``out_of_scope`` to ``decline``,
    so a declined question never reaches a data tool; ``profile`` to ``profile``;
    ``structured`` and ``unstructured`` to ``agent``, if a step is left for a tool.
    """
    route = state.get("route")
    if route is None or (route in ("structured", "unstructured") and state["steps_left"] <= 0):
        return "fallback"
    return {"out_of_scope": "decline", "profile": "profile"}.get(route, "agent")


def after_agent(state: AgentState) -> str:
    """Choose the node after the model's proposal: run a tool, check the final answer, ask again, or stop.

    The iteration cap ends the loop in ``fallback``; an invalid proposal goes back
    to ``agent`` (the next iteration, which the cap bounds); ``final_answer`` goes to
    ``finalize`` (the validator); a tool call goes to ``tools`` only while a step is left.
    """
    proposal = state.get("proposal")
    if state.get("stop_reason") == "iteration_cap":
        return "fallback"
    if proposal is None:
        return "agent"
    if proposal["decision"] == "final_answer":
        return "finalize"
    return "tools" if state["steps_left"] > 0 else "fallback"


def after_tools(state: AgentState) -> str:
    """End after a tool whose result is the answer (a summary); otherwise the model sees the observation."""
    return "end" if state.get("status") == "ok" else "agent"


def proposal_record(
    state: AgentState, raw: str, *, problem: str | None, ignored: list[str], iteration: int, final: bool = False
) -> dict[str, Any]:
    """Return the history and event a proposal adds: the raw reply, and its error fed back when it had one.

    A proposal with a ``problem`` is recorded as ``proposal_invalid`` and its error goes
    back to the model as the next user message; otherwise it is ``answer_proposed`` when
    it is the ``final`` answer and ``tool_proposed`` when it is a tool call.
    """
    history = [*state.get("history", []), {"role": "assistant", "content": raw}]
    if problem:
        history.append({"role": "user", "content": json.dumps({"error": problem})})
    event = {
        "kind": "proposal_invalid" if problem else "answer_proposed" if final else "tool_proposed",
        "iteration": iteration,
        "raw": raw,
        "problem": problem,
        "ignored_fields": ignored,
        "steps_left": state["steps_left"],
    }
    return {"history": history, "events": [event]}


@dataclass
class SupportAgent:
    """Builds and runs the graph for one caller; the model is reached only through ``adapter.generate``."""

    caller: Caller
    tools: SupportTools
    adapter: Any
    profile: Any = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    graph: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.graph = self.build()

    def route_node(self, state: AgentState) -> dict[str, Any]:
        """Spend a step on routing: the model proposes a route, the application validates the label."""
        steps = state["steps_left"] - 1
        result = route_question(state["question"], self.caller, self.adapter)
        event = {
            "kind": "route_chosen",
            "route": result.route,
            "raw": result.raw,
            "ignored_fields": list(result.ignored),
            "steps_left": steps,
        }
        if result.problem:
            event.update(kind="route_invalid", problem=result.problem)
        return {"route": result.route, "steps_left": steps, "events": [event]}

    def decline_node(self, state: AgentState) -> dict[str, Any]:
        """Decline an out-of-scope question; no data tool runs."""
        return {
            "final": DECLINE_ANSWER,
            "status": "out_of_scope",
            "stop_reason": "declined",
            "events": [{"kind": "declined", "status": "out_of_scope", "steps_left": state["steps_left"]}],
        }

    def profile_node(self, state: AgentState) -> dict[str, Any]:
        """Answer from the user's profile (kept apart from the data), or say profiles are off."""
        if self.profile is None:
            return {
                "final": "Profiles are not enabled here.",
                "status": "not_handled",
                "stop_reason": "no_profile",
                "events": [{"kind": "profile_unavailable", "status": "not_handled"}],
            }
        answer, change = self.profile.handle(self.caller.user_id, state["question"])
        return {
            "final": answer,
            "status": "ok",
            "stop_reason": "answered",
            "events": [{"kind": "profile_updated" if change else "profile_read", "change": change, "status": "ok"}],
        }

    def agent_node(self, state: AgentState) -> dict[str, Any]:
        """Ask the model for its next proposal (a tool call or the final answer); stop at the iteration cap."""
        if state.get("iterations", 0) >= state["max_iterations"]:
            return {"proposal": None, "stop_reason": "iteration_cap"}
        iteration = state.get("iterations", 0) + 1
        messages = agent_messages(state)
        raw = self.adapter.generate(f"agent:{state['question']}:{iteration}", messages).choices[0].message.content or ""
        data, problem = parse_decision(raw)
        ignored = data.pop("ignored") if data is not None else []
        if data is not None and data["decision"] not in (*TOOL_ARGUMENTS, "final_answer"):
            problem = f"{data['decision']!r} is not a tool"
            data = None
        final = data is not None and data["decision"] == "final_answer"
        record = proposal_record(state, raw, problem=problem, ignored=ignored, iteration=iteration, final=final)
        return {"iterations": iteration, "proposal": data, "stop_reason": None, **record}

    def tools_node(self, state: AgentState) -> dict[str, Any]:
        """Spend a step running the proposed tool as the caller; an invalid or refused call becomes an observation."""
        proposal = state["proposal"]
        assert proposal is not None  # the graph routes to tools only after a valid proposal
        steps = state["steps_left"] - 1
        result: dict[str, Any] | None
        try:
            observation: dict[str, Any] = self.tools.call(proposal["decision"], proposal["arguments"])
            kind, result = "tool_returned", observation
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            observation = {"error": f"invalid arguments: {'.'.join(map(str, first['loc']))}: {first['msg']}"}
            kind, result = "arguments_invalid", state.get("last_result")
        except (RowRefRefused, ScopeRefused) as exc:
            observation, kind, result = {"error": str(exc)}, "tool_refused", state.get("last_result")
        history = [
            *state["history"],
            {"role": "user", "content": json.dumps({"observation": observation}, sort_keys=True)},
        ]
        event = {
            "kind": kind,
            "tool": proposal["decision"],
            "arguments": proposal["arguments"],
            "observation": observation,
            "steps_left": steps,
        }
        update: dict[str, Any] = {"steps_left": steps, "history": history, "last_result": result, "events": [event]}
        if kind == "tool_returned" and proposal["decision"] == "summarize_requests":
            update.update(final=summary_text(observation), status="ok", stop_reason="answered")
        return update

    def finalize_node(self, state: AgentState) -> dict[str, Any]:
        """Check the proposed final answer against the last tool result (`verify_final`)."""
        proposal = state["proposal"]
        assert proposal is not None  # the graph finalizes only after a final_answer proposal
        answer = str(proposal["arguments"].get("answer", ""))
        result = state.get("last_result")
        try:
            if not result or "count" not in result:
                raise AnswerRejected("unsupported", "no count result supports a final answer yet; call the tools first")
            verified = verify_final(answer, result=result)
        except AnswerRejected as exc:
            return answer_rejected(answer, exc)
        return {
            "final": verified.answer,
            "status": "ok",
            "stop_reason": "answered",
            "events": [
                {
                    "kind": "answer_verified",
                    "answer": verified.answer,
                    "count": verified.count,
                    "caller_scope": verified.caller_scope,
                    "intent": verified.intent,
                    "dataset_version": verified.dataset_version,
                    "status": "ok",
                }
            ],
        }

    def fallback_node(self, state: AgentState) -> dict[str, Any]:
        """Stop with the recorded fallback answer, naming the limit or the invalid reply that ended the run."""
        reason = state.get("stop_reason") or ("invalid_route" if state.get("route") is None else "budget_exhausted")
        return {
            "final": FALLBACK_ANSWER,
            "status": "fallback",
            "stop_reason": reason,
            "events": [
                {
                    "kind": "fallback",
                    "reason": reason,
                    "iterations": state.get("iterations", 0),
                    "steps_left": state["steps_left"],
                    "status": "fallback",
                }
            ],
        }

    def build(self, *, checkpointer: Any = None) -> Any:
        """Compile the graph: the allowed nodes, and edges whose every possible target is named.

        Each node is the method ``<name>_node``; the three conditional edges are the
        functions `after_route`, `after_agent` and `after_tools`. A checkpointer
        (LangGraph's saver of a run's state, so a later call can resume it) would save
        the state after every node; the agent here runs without one
        (durable sessions are a separate, smaller graph in `labkit.agent.sessions`).
        """
        from langgraph.graph import END, START, StateGraph

        builder = StateGraph(AgentState)
        for name in ALLOWED_NODES:
            builder.add_node(name, getattr(self, f"{name}_node"))
        builder.add_edge(START, "route")
        builder.add_conditional_edges("route", after_route, {n: n for n in ("fallback", "decline", "profile", "agent")})
        builder.add_conditional_edges("agent", after_agent, {n: n for n in ("fallback", "agent", "finalize", "tools")})
        builder.add_conditional_edges("tools", after_tools, {"end": END, "agent": "agent"})
        for name in ("decline", "profile", "finalize", "fallback"):
            builder.add_edge(name, END)
        return builder.compile(checkpointer=checkpointer)

    def run(self, question: str, *, steps_left: int = DEFAULT_STEPS, expected_intent: str | None = None) -> AgentState:
        """Answer one question from a fresh state; return the final state.

        ``expected_intent`` is the question's intent when the application knows it; it is
        kept in the state (no node of this class reads it) and never sent to the model.
        """
        if type(steps_left) is not int or steps_left < 1:
            from labkit.agent.trace import BudgetError

            raise BudgetError(f"steps_left must be a positive integer, not {steps_left!r}")
        state0: AgentState = {
            "question": question,
            "user_id": self.caller.user_id,
            "session_id": self.caller.session_id,
            "caller_scope": self.caller.caller_scope,
            "dataset_version": self.caller.dataset_version,
            "expected_intent": expected_intent,
            "steps_left": steps_left,
            "iterations": 0,
            "max_iterations": self.max_iterations,
            "history": [],
            "last_result": None,
            "route": None,
            "proposal": None,
            "final": None,
            "status": None,
            "stop_reason": None,
            "events": [
                {
                    "kind": "request_accepted",
                    **run_identity(self.adapter),
                    "question": question,
                    "user_id": self.caller.user_id,
                    "caller_scope": self.caller.caller_scope,
                    "steps_left": steps_left,
                    "max_iterations": self.max_iterations,
                }
            ],
        }
        # The iteration cap ends every loop first; LangGraph's recursion limit is only a backstop above it.
        limit = 4 * (self.max_iterations + steps_left) + 10
        return self.graph.invoke(state0, {"recursion_limit": limit})


def answer_rejected(answer: str, exc: AnswerRejected) -> dict[str, Any]:
    """Return the state update that ends a run whose final ``answer`` was rejected, the reason as its event."""
    rejected = "answer_rejected"
    event = {"kind": rejected, "answer": answer, "reason": exc.reason, "problem": str(exc), "status": rejected}
    return {"final": None, "status": rejected, "stop_reason": rejected, "events": [event]}


def summary_text(result: dict[str, Any]) -> str:
    """Return the summary the application writes from a `summarize_requests` result (and nothing else)."""
    words = ", ".join(result["common_words"]) or "none"
    return (
        f"{len(result['retrieved_rows'])} {result['intent']} requests retrieved from {result['caller_scope']}: "
        f"{result['polite']} polite, {result['colloquial']} colloquial, {result['with_typos']} with typos; "
        f"common words: {words}."
    )


def agent_trace(state: AgentState) -> Trace:
    """Return the run's events as a `Trace` (sequence numbers in the order the graph recorded them)."""
    trace = Trace()
    for event in state["events"]:
        trace.emit(event["kind"], **{k: v for k, v in event.items() if k != "kind"})
    return trace


def trajectory(state: AgentState) -> list[str]:
    """Return the run's path in short form: route, each tool or proposal, and how it stopped."""
    steps = []
    for e in state["events"]:
        if e["kind"] in ("route_chosen", "route_invalid"):
            steps.append(f"route={e.get('route')}")
        elif e["kind"] in ("tool_returned", "tool_refused", "arguments_invalid"):
            steps.append(f"{e['tool']}:{e['kind']}")
        elif e["kind"] == "proposal_invalid":
            steps.append("proposal_invalid")
    return [*steps, f"stop={state.get('stop_reason')}"]


class ScriptedModel:
    """A stand-in for the model that answers every request of one kind with a fixed text (no model runs).

    ``replies`` maps a key prefix (``route:`` or ``agent:``) to the reply text;
    it is how the lesson forces a loop the iteration cap must stop.
    """

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = dict(replies)
        self.keys: list[str] = []

    def generate(self, key: str, messages: list[dict[str, Any]]) -> Any:
        """Return the scripted reply for ``key``'s kind as a ChatCompletion."""
        from openai.types.chat import ChatCompletion

        from labkit.authored import authored_response

        self.keys.append(key)
        kind = key.split(":", 1)[0] + ":"
        return ChatCompletion.model_validate(authored_response(self.replies[kind], number=len(self.keys)))


def same_filter_forever() -> ScriptedModel:
    """Return a `ScriptedModel` that routes ``structured`` and then proposes the same refund filter every time.

    No model runs. Only the iteration cap or the step budget can stop an agent it drives.
    """
    return ScriptedModel(
        {
            "route:": '{"route": "structured"}',
            "agent:": '{"decision": "filter_by_intent", "arguments": {"intent": "get_refund", "limit": 3}}',
        }
    )


def gap_counts(caller: Caller) -> tuple[dict[str, dict[str, Any]], dict[str, str], SupportAgent]:
    """Return `finalize_gap`'s two counts (by label), the request they answer, and the agent whose finalize node
    they go to (its tools hold the data, now at the new version).

    ``get_refund`` is counted, the data publishes a new version, then ``track_refund``
    is counted: each count is the latest in its own log, and each has one problem only.
    """
    from labkit.agent.tools import CountRows, IntentFilter, SupportData

    data = SupportData()
    tools = SupportTools(caller, data)

    def count(intent: str) -> dict[str, Any]:
        return tools.count_rows(CountRows(rows=tools.filter_by_intent(IntentFilter(intent=intent))["row_ref"]))

    counts = {"get_refund, before a new version": count("get_refund")}
    data.publish(f"{data.dataset_version}-refreshed")
    counts["track_refund, current version"] = count("track_refund")
    request = {"caller_scope": caller.caller_scope, "dataset_version": data.dataset_version}
    return counts, request, SupportAgent(caller, tools, ScriptedModel({}))


def finalize_gap(caller: Caller) -> list[dict[str, Any]]:
    """Hand `SupportAgent.finalize_node` two counts the plain trace refuses for the refund question; return each verdict.

    Each count comes from the real tools, with an answer that repeats it word for word,
    and each has one problem only: ``get_refund`` counted before the data published a
    new version (outdated, the right intent), and ``track_refund`` counted after it (the
    current version, the wrong intent). A row gives the finalize node's status and what
    the plain trace's `check_count_result` says of the same count, naming the field it refused.
    What exercise 1's rule says of them is for the learner to predict (exercise 2).
    """
    from labkit.agent.trace import StaleResult, check_count_result
    from labkit.agent.validator import format_answer

    counts, request, agent = gap_counts(caller)
    rows = []
    for label, counted in counts.items():
        answer = format_answer(counted["count"], counted["intent"], counted["caller_scope"])
        proposal = {"decision": "final_answer", "arguments": {"answer": answer}}
        state: AgentState = {"proposal": proposal, "last_result": counted}
        try:
            check_count_result(counted, request)
            trace = "accepted"
        except StaleResult:
            wrong = [
                f
                for f, want in (("dataset_version", request["dataset_version"]), ("intent", "get_refund"))
                if counted[f] != want
            ]
            trace = f"refused: {', '.join(wrong)}"
        rows.append(
            {
                "last_result counted": label,
                "answer proposed": answer,
                "finalize_node": agent.finalize_node(state)["status"],
                "check_count_result": trace,
            }
        )
    return rows
