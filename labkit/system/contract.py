"""The reply contract and the one function that calls the model.

`ModelReply` checks a reply's structure and its field combinations before any
tool can run: an ``answer`` carries text and citations only, a ``tool_call``
carries tool arguments only, ``insufficient_evidence`` carries neither. These
checks say nothing about whether a cited page supports the answer.

`call_model` sends the messages through the lesson's adapter (a `ModelBoundary`
in replay, live or record mode) and returns the raw reply text with a
`ModelCallRecord`: model id, input and output tokens, and latency, saying
where the latency comes from.
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labkit.errors import LabkitError
from labkit.explore import is_explore_answer
from labkit.serve import local_response_format
from labkit.system.tickets import CountTickets


class ModelReplyMissing(LabkitError, ValueError):
    """The model's response holds no choice or no text, so there is no reply to check."""


class ModelUsageMissing(LabkitError, ValueError):
    """A real model answered but its endpoint reported no token usage, so the call's cost is unknown."""


class UnscriptedRequest(LabkitError, LookupError):
    """A `ScriptedModel` was asked a request it has no scripted reply for."""


#: The fields each kind of reply fills; a reply leaves every other field empty.
REPLY_FIELDS: dict[str, tuple[str, ...]] = {
    "answer": ("text", "citation_ids"),
    "tool_call": ("tool_args",),
    "insufficient_evidence": (),
}


class ModelReply(BaseModel):
    """What the model must reply: a kind, and only the fields that kind allows."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["answer", "tool_call", "insufficient_evidence"] = Field(
        description="answer from the evidence, call the count tool, or decline."
    )
    text: str = Field(default="", description="The answer, for kind answer only.")
    citation_ids: list[str] = Field(
        default_factory=list, description="Citation ids of the evidence used, for kind answer only."
    )
    tool_args: CountTickets | None = Field(
        default=None, description="The count tool's arguments, for kind tool_call only."
    )

    @model_validator(mode="after")
    def check_fields(self) -> ModelReply:
        """Refuse a reply that leaves a field of its kind empty, or fills a field its kind has no use for."""
        own = REPLY_FIELDS[self.kind]
        filled = {
            "text": self.text != "",
            "citation_ids": bool(self.citation_ids),
            "tool_args": self.tool_args is not None,
        }
        missing = [
            name for name in own if not filled[name] or (name == "text" and not self.text.strip())
        ]
        extra = [name for name in filled if filled[name] and name not in own]
        if missing or extra:
            said = [f"needs {' and '.join(missing)}"] if missing else []
            said += [f"must leave {' and '.join(extra)} empty"] if extra else []
            raise ValueError(f"a reply of kind {self.kind} {', and '.join(said)}")
        return self


#: Every generation setting, sent with each request and so part of each replay binding. The
#: ``response_format`` carries the contract's JSON schema in the form the bundled llama-cpp
#: server turns into a grammar; replies are validated all the same.
SETTINGS: dict[str, Any] = {
    "temperature": 0,
    "seed": 5,
    "max_tokens": 300,
    "response_format": local_response_format(ModelReply.model_json_schema()),
}


class ModelCallRecord(BaseModel):
    """What one model call cost and who answered it, as kept in the generate step of a trace."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = Field(description="The model id sent with the request.")
    input_tokens: int | None = Field(
        description="Prompt tokens the endpoint reported; None when nothing measured them."
    )
    output_tokens: int | None = Field(
        description="Reply tokens the endpoint reported; None when nothing measured them."
    )
    latency_ms: int | None = Field(
        description="Milliseconds the model took; None when no model ran."
    )
    latency_source: Literal["measured", "recorded", "none"] = Field(
        description="measured now (live), recorded with a captured run (replay), "
        "or none (authored or scripted)."
    )


@lru_cache(maxsize=8)
def _load_run(path: str, mtime_ns: int) -> Any:
    from labkit.recording import load_run

    return load_run(Path(path))


def recorded_binding(run_id: str, request: dict[str, Any]) -> Any:
    """Return the binding of this exact request in the recorded run ``run_id``, or None."""
    from labkit.recording import run_path

    path = run_path(run_id)
    return _load_run(str(path), path.stat().st_mtime_ns).binding_for(request)


def call_model(
    adapter: Any, key: str, messages: list[dict[str, Any]]
) -> tuple[str, ModelCallRecord]:
    """Send ``messages`` for the request ``key``; return the raw reply text and its record."""
    started = time.perf_counter()
    completion = adapter.generate(key, messages)
    elapsed_s = time.perf_counter() - started
    return reply_text(completion, key), call_record(adapter, messages, completion, elapsed_s)


def reply_text(completion: Any, key: str) -> str:
    """Return the reply's text, or raise `ModelReplyMissing` when the response holds none."""
    if not completion.choices or completion.choices[0].message.content is None:
        finish = completion.choices[0].finish_reason if completion.choices else "none"
        raise ModelReplyMissing(
            f"the response to {key!r} holds no reply text (finish reason {finish}); "
            "check the endpoint's log"
        )
    return str(completion.choices[0].message.content)


def call_record(
    adapter: Any, messages: list[dict[str, Any]], completion: Any, elapsed_s: float
) -> ModelCallRecord:
    """Return what one model call cost: its tokens, and a latency that says where it comes from.

    Live, the latency is measured now. In replay it is the one recorded with the run
    (a captured run measured it; an authored run claims none), never the replay's own time.
    A live reply without usage is refused (`ModelUsageMissing`); only a replayed or scripted
    reply may leave the tokens None, which says nothing measured them.
    """
    mode = getattr(adapter, "mode", None)
    if mode == "explore":  # the course's run answered (as in replay), or a live model did
        mode = "live" if is_explore_answer(completion) else "replay"
    latency_ms: int | None = None
    source: Literal["measured", "recorded", "none"] = "none"
    if mode in ("live", "record"):
        latency_ms, source = round(1000 * elapsed_s), "measured"
    elif mode == "replay":
        request = {"model": adapter.model, "messages": messages, **adapter.settings}
        binding = recorded_binding(adapter.run_id, request)
        if binding is not None and binding.latency_s is not None:
            latency_ms, source = round(1000 * binding.latency_s), "recorded"
    usage = completion.usage
    if usage is None and source == "measured":  # a real model answered now: its cost must be known
        raise ModelUsageMissing(
            f"the endpoint answered {getattr(adapter, 'model', None) or completion.model!r} but "
            "reported no token usage; use an endpoint that returns `usage` (the local servers "
            "of `labkit serve` do), or ask it for usage in the request"
        )
    return ModelCallRecord(
        model=getattr(adapter, "model", None) or completion.model,
        input_tokens=usage.prompt_tokens if usage else None,
        output_tokens=usage.completion_tokens if usage else None,
        latency_ms=latency_ms,
        latency_source=source,
    )


class ScriptedModel:
    """Stands where the model would and answers every request with reply text the caller wrote.

    For tests and notebook probes that exercise the checks; its model id says
    the replies are scripted, it claims no tokens and no latency, and every
    request it received is kept in ``requests``.
    """

    mode = "scripted"
    model = "scripted-by-caller"

    def __init__(self, replies: str | dict[str, str]) -> None:
        self.replies = replies
        self.requests: list[tuple[str, list[dict[str, Any]]]] = []

    def generate(self, key: str, messages: list[dict[str, Any]]) -> Any:
        """Return the scripted reply for ``key`` (or the single reply) as a ChatCompletion."""
        from openai.types.chat import ChatCompletion

        if isinstance(self.replies, str):
            text = self.replies
        elif key in self.replies:
            text = self.replies[key]
        else:
            raise UnscriptedRequest(
                f"no scripted reply for {key!r}; script one or use a recorded run"
            )
        self.requests.append((key, messages))
        return ChatCompletion.model_validate(
            {
                "id": f"scripted-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
            }
        )
