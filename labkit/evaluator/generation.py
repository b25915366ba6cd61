"""The generation run: one description per product, each tied to its prompt version, model, rubric and costs.

The prompt gives the model the product's facts as JSON data and the rubric's
limits; the reply must be a JSON object with a title and a description
(`DescriptionOutput`). The run records, for each product, the exact request,
the reply text, latency, token counts and cost (see `labkit.evaluator.calls`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from labkit.evaluator.calls import Caller, ModelCall
from labkit.evaluator.products import Product
from labkit.evaluator.rubric import Rubric
from labkit.serve import local_response_format

PROMPT_VERSION = "describe-v1"


class DescriptionOutput(BaseModel):
    """The reply a generation must be: a title and a description, nothing else."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="The product's title as shown to shoppers.")
    description: str = Field(description="The description body shown to shoppers.")


#: Settings of every generation request, on top of the lesson's shared settings.
GENERATION_SETTINGS: dict[str, Any] = {
    "max_tokens": 160,
    "response_format": local_response_format(DescriptionOutput.model_json_schema()),
}


def generation_messages(product: Product, rubric: Rubric) -> list[dict[str, str]]:
    """Return the messages asking for one product's description: instructions, then the facts as JSON."""
    limits = rubric.limits
    system = (
        "You write product descriptions for an online shop. Use only the facts you are given: do not add numbers, "
        "materials or features that are not in them. Write in a plain, friendly tone without pressure. "
        f"Reply with a JSON object with a title (at most {limits.max_title_chars} characters) and a description "
        f"of {limits.min_words} to {limits.max_words} words that states the materials, the weight and size, "
        "and the battery life if one is given."
    )
    data = {"name": product.name, "category": product.category, "facts": product.facts.for_prompt()}
    return [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(data, ensure_ascii=False)}]


class Generation(BaseModel):
    """One generated description and everything it is linked to."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    product_id: str = Field(description="Which product it describes.")
    prompt_version: str = Field(description="Version of the generation prompt.")
    rubric_version: str = Field(description="The rubric version fixed before generation.")
    rubric_sha256: str = Field(description="That rubric's hash.")
    call: ModelCall = Field(description="The request, reply text, model id, latency, tokens and cost.")

    @property
    def text(self) -> str:
        """The reply text exactly as the model returned it."""
        return self.call.reply_text


class GenerationRun(BaseModel):
    """Every description of one run, with what they share."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str = Field(description="The recorded run the replies come from (or are written to).")
    origin: str = Field(description="authored, captured or live.")
    model_id: str = Field(description="The model that generated them.")
    prompt_version: str = Field(description="Version of the generation prompt.")
    rubric_version: str = Field(description="The rubric version.")
    rubric_sha256: str = Field(description="The rubric's hash, recorded before generation.")
    settings: dict[str, Any] = Field(description="Generation settings of every request.")
    generations: list[Generation] = Field(description="One per product, in product order.")

    def by_product(self) -> dict[str, Generation]:
        """Return the generations by product id."""
        return {g.product_id: g for g in self.generations}


def generate_descriptions(
    caller: Caller, products: dict[str, Product], rubric: Rubric, *, run_id: str
) -> GenerationRun:
    """Ask for one description per product, in product order, and return the run."""
    generations = []
    for product in products.values():
        call = caller.ask(f"describe:{product.id}", generation_messages(product, rubric), settings=GENERATION_SETTINGS)
        generations.append(
            Generation(
                product_id=product.id,
                prompt_version=PROMPT_VERSION,
                rubric_version=rubric.version,
                rubric_sha256=rubric.sha256,
                call=call,
            )
        )
    first = generations[0].call
    settings = {k: v for k, v in first.request.items() if k not in ("model", "messages")}
    return GenerationRun(
        run_id=run_id,
        origin=first.origin,
        model_id=first.model_id,
        prompt_version=PROMPT_VERSION,
        rubric_version=rubric.version,
        rubric_sha256=rubric.sha256,
        settings=settings,
        generations=generations,
    )
