"""A named catalogue of bad replies for exercises, each run through the real check that catches it.

Every variant is authored: the course wrote its reply (or, for the rate limit,
its failed attempts) to exercise one check; no model produced it. `variant`
returns one by name, `VARIANTS` lists them all, and `demonstrate` feeds the bad
reply to the lesson's own code (lesson 05's ``check`` node, lesson 04's agent
graph, lesson 02's recorded run behind the real `openai` client) and returns
what that code decided. The same variant gives the same result on every run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from labkit.errors import LabkitError


class UnknownVariant(LabkitError, LookupError):
    """No failure variant has that name; the message lists the names there are."""


@dataclass(frozen=True)
class FailedAttempt:
    """One failed HTTP attempt a replay answers before the recorded reply."""

    status_code: int
    """The HTTP status the attempt answers, such as 429."""
    body: str
    """The JSON error body, as text."""
    retry_after_ms: int
    """The ``retry-after-ms`` header: how long the client is told to wait before retrying."""


@dataclass(frozen=True)
class FailureVariant:
    """One authored bad reply, the lesson it belongs to, and the check that must catch it."""

    name: str
    """Kebab-case name a learner selects it by, such as ``malformed-json``."""
    lesson: str
    """The lesson whose check catches it: ``"02"``, ``"04"`` or ``"05"``."""
    description: str
    """What is wrong with it, and that the course wrote it."""
    reply: str | tuple[FailedAttempt, ...]
    """The exact bad reply text, or (rate limit) the failed attempts answered before the recorded reply."""
    caught_by: str
    """The name of the check that catches it."""
    expected: str
    """The status or error that check gives."""


@dataclass(frozen=True)
class VariantResult:
    """What the real check decided when `demonstrate` ran a variant through it."""

    name: str
    """The variant's name."""
    caught_by: str
    """The check that ran."""
    outcome: str
    """The status or error the check gave; compare it with the variant's ``expected``."""
    reason: str
    """Why, in the check's own words."""
    detail: dict[str, Any] = field(default_factory=dict)
    """What else the check recorded (tool observation, iterations, retries ...)."""

    def summary(self) -> str:
        """Return the result as a few lines of text for a notebook."""
        lines = [
            f"variant:   {self.name}",
            f"caught by: {self.caught_by}",
            f"outcome:   {self.outcome}",
            f"reason:    {self.reason}",
        ]
        lines += [f"  {key}: {value}" for key, value in self.detail.items()]
        return "\n".join(lines)


_AUTHORED = "Authored by the course to exercise this check; no model produced it. "
_CHECK_05 = "lesson 05 check node (ModelReply contract)"
_RATE_LIMIT_BODY = json.dumps(
    {
        "error": {
            "message": "Rate limit reached for requests (authored by the course for the rate-limit-retry exercise).",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    },
    sort_keys=True,
)

VARIANTS: tuple[FailureVariant, ...] = (
    FailureVariant(
        name="malformed-json",
        lesson="05",
        description=_AUTHORED + "An answer cut off before its closing brackets, as when a reply hits max_tokens: "
        "the text is not JSON at all, so no field can be read.",
        reply='{"kind": "answer", "text": "Customers can request a refund within 30 days.", '
        '"citation_ids": ["refund_policy.pdf#p1"',
        caught_by=_CHECK_05,
        expected="invalid_output",
    ),
    FailureVariant(
        name="field-combination",
        lesson="05",
        description=_AUTHORED + "Well-formed JSON whose fields do not fit its kind: a tool_call that also carries "
        "answer text, which the contract forbids.",
        reply='{"kind": "tool_call", "text": "You have 3 refund tickets.", "citation_ids": [], '
        '"tool_args": {"intent": "get_refund"}}',
        caught_by=_CHECK_05,
        expected="invalid_output",
    ),
    FailureVariant(
        name="wrong-tool-arguments",
        lesson="05",
        description=_AUTHORED + "A tool call that smuggles a team into the count tool's arguments; the team comes "
        "from the application, so the arguments' schema has no such field.",
        reply='{"kind": "tool_call", "text": "", "citation_ids": [], '
        '"tool_args": {"intent": "get_refund", "team": "team-b"}}',
        caught_by=_CHECK_05,
        expected="invalid_output",
    ),
    FailureVariant(
        name="unsupported-citation",
        lesson="05",
        description=_AUTHORED + "A well-formed answer citing a page that is not among the evidence retrieved for "
        "the request (the policy has two pages).",
        reply='{"kind": "answer", "text": "Customers can request a refund within 90 days.", '
        '"citation_ids": ["refund_policy.pdf#p3"], "tool_args": null}',
        caught_by="lesson 05 check node (citations against the request's evidence)",
        expected="invalid_citation",
    ),
    FailureVariant(
        name="iteration-cap-loop",
        lesson="04",
        description=_AUTHORED + "The agent's proposal repeated on every iteration: the same filter call, never a "
        "final answer, so only the iteration cap ends the run.",
        reply='{"decision": "filter_by_intent", "arguments": {"intent": "get_refund", "limit": 3}}',
        caught_by="lesson 04 SupportAgent iteration cap",
        expected="iteration_cap",
    ),
    FailureVariant(
        name="rate-limit-retry",
        lesson="02",
        description=_AUTHORED + "One HTTP 429 answered before lesson 02's recorded reply; the real openai client "
        "retries it, and the recording transport keeps the failed attempt.",
        reply=(FailedAttempt(status_code=429, body=_RATE_LIMIT_BODY, retry_after_ms=1),),
        caught_by="openai client retry (max_retries=1) under labkit.capture.RecordingTransport",
        expected="retries=1",
    ),
)

_BY_NAME = {v.name: v for v in VARIANTS}


def variant(name: str) -> FailureVariant:
    """Return the variant called ``name``, or raise `UnknownVariant` listing the names there are."""
    found = _BY_NAME.get(name) if isinstance(name, str) else None
    if found is None:
        raise UnknownVariant(f"no failure variant {name!r}; choose one of: {', '.join(_BY_NAME)}")
    return found


def demonstrate(name: str) -> VariantResult:
    """Run the variant's bad reply through the real check of its lesson and return what that check decided."""
    chosen = variant(name)
    if chosen.lesson == "05":
        return _through_system(chosen)
    if chosen.lesson == "04":
        return _through_agent(chosen)
    return _through_retry(chosen)


# --- lesson 05: the workflow graph with a scripted model ---------------------------------------------


def _through_system(chosen: FailureVariant) -> VariantResult:
    from labkit.system.contract import ScriptedModel
    from labkit.system.golden import GOLDEN
    from labkit.system.policy import load_policy_index
    from labkit.system.workflow import build_graph

    assert isinstance(chosen.reply, str)
    case = GOLDEN[1] if '"tool_call"' in chosen.reply else GOLDEN[0]  # the count question, or the refund-window one
    question = case.question
    graph = build_graph(load_policy_index(), ScriptedModel(chosen.reply))
    final = graph.invoke({"question": question, "team": case.team}, config={"configurable": {"thread_id": chosen.name}})
    result = final["result"]
    steps = [step["step"] for step in final["trace"]]
    detail = {"question": question, "steps": " -> ".join(steps), "tool ran": "tool" in steps}
    if result["status"] == "invalid_citation":
        detail["evidence"] = sorted({e["citation_id"] for e in final["evidence"]})
    return VariantResult(chosen.name, chosen.caught_by, result["status"], result.get("reason", ""), detail)


# --- lesson 04: the agent graph with a model that keeps calling tools --------------------------------


def _through_agent(chosen: FailureVariant) -> VariantResult:
    from labkit.agent.dataset import APPROVED_SCOPE
    from labkit.agent.graph import ScriptedModel, SupportAgent, trajectory
    from labkit.agent.identity import authorize
    from labkit.agent.tools import SupportData, SupportTools

    assert isinstance(chosen.reply, str)
    caller = authorize("analyst-ana", "variant-loop", APPROVED_SCOPE)
    model = ScriptedModel({"route:": '{"route": "structured"}', "agent:": chosen.reply})
    agent = SupportAgent(caller, SupportTools(caller, SupportData()), model)
    state = agent.run("How many refund requests are in the dataset?", steps_left=20)
    fallback = state["events"][-1]
    reason = (
        f"{fallback['kind']} after {state['iterations']} of {agent.max_iterations} iterations, "
        f"{state['steps_left']} steps left"
    )
    detail = {"status": state["status"], "final": state["final"], "trajectory": " ".join(trajectory(state))}
    return VariantResult(chosen.name, chosen.caught_by, str(state["stop_reason"]), reason, detail)


# --- lesson 02: a recorded reply behind failed attempts, through the real openai client ---------------


class _FailingFirst:
    """An httpx2 transport that answers the variant's failed attempts first, then passes requests to replay."""

    def __init__(self, attempts: tuple[FailedAttempt, ...], inner: Any) -> None:
        self.attempts = list(attempts)
        self.inner = inner
        self.calls = 0

    def handle_request(self, request: Any) -> Any:
        import httpx2

        self.calls += 1
        if self.attempts:
            attempt = self.attempts.pop(0)
            request.read()
            return httpx2.Response(
                attempt.status_code,
                content=attempt.body.encode("utf-8"),
                request=request,
                headers={"content-type": "application/json", "retry-after-ms": str(attempt.retry_after_ms)},
            )
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Nothing to release."""


def _through_retry(chosen: FailureVariant) -> VariantResult:
    import httpx2
    import openai

    from labkit.capture import RecordingTransport
    from labkit.rag.trace import QUESTIONS, RUN_AUTHORED
    from labkit.recording import load_run
    from labkit.replay import REPLAY_BASE_URL, BindingStore, ReplayTransport

    assert isinstance(chosen.reply, tuple)
    run = load_run(RUN_AUTHORED)
    binding = next(b for b in run.bindings if b.question == QUESTIONS["answered"])
    failing = _FailingFirst(
        chosen.reply, ReplayTransport(BindingStore([binding], run_id=run.run_id, lesson=run.lesson))
    )
    recorder = RecordingTransport(inner=failing)  # type: ignore[arg-type]
    client = openai.OpenAI(
        api_key="replay-needs-no-key",
        base_url=REPLAY_BASE_URL,
        max_retries=len(chosen.reply),
        http_client=httpx2.Client(transport=recorder),
    )
    completion = client.chat.completions.create(**binding.request)
    kept = recorder.bindings[0]
    errors = [failure.error for failure in kept.transport_errors]
    reason = f"attempt 1 answered {errors[0]}; the client retried and attempt {failing.calls} got the recorded reply"
    detail = {
        "attempts": failing.calls,
        "retries recorded": kept.retries,
        "transport errors": errors,
        "reply": completion.choices[0].message.content,
        "from run": run.run_id,
    }
    return VariantResult(chosen.name, chosen.caught_by, f"retries={kept.retries}", reason, detail)
