"""One model call of lesson 01: its exact request, its reply text, and what was measured, priced from a table.

Latency and token counts come from where they were measured: a captured
run's binding (replay), the endpoint's usage and a clock (live and record).
An authored run measured nothing: its latency stays empty and its tokens are
estimated (characters / 4), labelled ``usage_source="estimated"``. Cost is
always tokens times the price table's prices; no model reply is ever read
for it.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labkit.canonical import load_strict
from labkit.errors import LabkitError
from labkit.evaluator.products import EvaluatorFixtureError
from labkit.explore import is_explore_answer
from labkit.paths import fixtures_dir
from labkit.recording import binding_key
from labkit.replay import as_sent


class UnknownPrice(LabkitError, LookupError):
    """The price table has no price for a model, so its cost cannot be computed."""


class ModelPrice(BaseModel):
    """What one model costs per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input_per_million_tokens: float = Field(ge=0, description="Price of a million prompt tokens.")
    output_per_million_tokens: float = Field(ge=0, description="Price of a million completion tokens.")


class PriceTable(BaseModel):
    """The price table fixture: prices by model id, in one currency."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    currency: Literal["USD"] = Field(description="Currency of every price.")
    note: str = Field(description="Where the prices come from.")
    models: dict[str, ModelPrice] = Field(description="Model id -> its prices.")

    def cost(self, model_id: str, *, prompt_tokens: int, completion_tokens: int) -> float:
        """Return the cost of one call: tokens times this table's prices (never anything a model said)."""
        if model_id not in self.models:
            raise UnknownPrice(
                f"no price for model {model_id!r} in the price table; add it to fixtures/evaluator/prices.json "
                f"(known: {', '.join(sorted(self.models))})"
            )
        price = self.models[model_id]
        return (
            prompt_tokens * price.input_per_million_tokens + completion_tokens * price.output_per_million_tokens
        ) / 1e6


def prices_path() -> Path:
    """Return the committed price table."""
    return fixtures_dir() / "evaluator" / "prices.json"


def load_prices(path: Path | None = None) -> PriceTable:
    """Load the price table fixture."""
    path = path or prices_path()
    data, _ = load_strict(path)
    try:
        return PriceTable.model_validate(data)
    except ValueError as exc:
        raise EvaluatorFixtureError(f"{path}: not a valid price table: {exc}") from None


class ModelCall(BaseModel):
    """One request to the model, its reply text and its measurements."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str = Field(description="What the request is for, e.g. 'describe:p07' or 'judge:p07:tone'.")
    request_sha256: str = Field(description="SHA-256 of the exact request (its replay binding key).")
    request: dict[str, Any] = Field(description="The exact request: model, messages, every setting.")
    reply_text: str = Field(description="The reply's text, exactly as returned.")
    model_id: str = Field(description="The model id the request named.")
    origin: Literal["authored", "captured", "live"] = Field(description="Who produced the reply.")
    prompt_tokens: int = Field(ge=0, description="Prompt tokens: reported by the endpoint, or estimated.")
    completion_tokens: int = Field(ge=0, description="Completion tokens: reported, or estimated.")
    usage_source: Literal["reported", "estimated"] = Field(description="Whether an endpoint counted the tokens.")
    latency_s: float | None = Field(description="Measured seconds; None when nothing was measured (authored).")
    cost_usd: float = Field(ge=0, description="Tokens times the price table's prices.")


def estimate_tokens(text: str) -> int:
    """Return a rough token count for text no endpoint counted: one token per four characters."""
    return math.ceil(len(text) / 4)


class Caller:
    """Makes lesson 01's model calls through an adapter, with per-call settings, and measures each.

    ``adapter`` is what `labkit.course.lessons` hands a lesson: a `ModelBoundary` (replay,
    live, record) or the authoring adapter. Both build each request from their
    ``settings`` plus the call's own (its reply schema, its token limit), passed to
    ``generate``. An identical request is asked once and its call reused.
    """

    def __init__(self, adapter: Any, *, prices: PriceTable) -> None:
        self.adapter = adapter
        self.prices = prices
        self.calls: dict[str, ModelCall] = {}
        self._run: Any = None

    def _binding(self, request: dict[str, Any]) -> Any:
        from labkit.recording import load_run

        if self._run is None:
            self._run = load_run(self.adapter.run_id)
        return self._run.binding_for(request)

    def ask(self, key: str, messages: list[dict[str, Any]], *, settings: dict[str, Any]) -> ModelCall:
        """Send one request with these extra settings; return its `ModelCall`."""
        base = dict(self.adapter.settings)
        request = {"model": self.adapter.model, "messages": messages, **base, **settings}
        digest = binding_key(as_sent(request))  # the replay binding key: the request as the client sends it
        if digest in self.calls:
            return self.calls[digest]
        started = time.perf_counter()
        completion = self.adapter.generate(key, messages, **settings)
        elapsed = time.perf_counter() - started
        text = completion.choices[0].message.content or ""
        mode = getattr(self.adapter, "mode", "authoring")
        if mode == "explore":  # the course's run answered (as in replay), or a live model did (as in live)
            mode = "live" if is_explore_answer(completion) else "replay"
        origin: Literal["authored", "captured", "live"] = "authored"
        usage, latency = None, None
        if mode == "replay":
            origin = self.adapter.origin
            binding = self._binding(request) if origin == "captured" else None
            if binding is not None:
                usage, latency = binding.usage, binding.latency_s
        elif mode in ("live", "record"):
            origin, usage, latency = "live" if mode == "live" else "captured", completion.usage, round(elapsed, 4)
        source: Literal["reported", "estimated"]
        if usage is not None:
            tokens, source = (usage.prompt_tokens, usage.completion_tokens), "reported"
        else:
            prompt_text = "".join(str(m.get("content", "")) for m in messages)
            tokens, source = (estimate_tokens(prompt_text), estimate_tokens(text)), "estimated"
        call = ModelCall(
            key=key,
            request_sha256=digest,
            request=request,
            reply_text=text,
            model_id=self.adapter.model,
            origin=origin,
            prompt_tokens=tokens[0],
            completion_tokens=tokens[1],
            usage_source=source,
            latency_s=latency,
            cost_usd=self.prices.cost(self.adapter.model, prompt_tokens=tokens[0], completion_tokens=tokens[1]),
        )
        self.calls[digest] = call
        return call
