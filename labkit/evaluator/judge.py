"""The model judge: an explanation first, a verdict from the criterion's allowed labels second.

Two arrangements: ``per_criterion`` (one call per criterion, the criterion's
anchors in the prompt) and ``bundled`` (every judged criterion in one call).
The reply schema is built from the rubric with Pydantic, so a verdict outside
the allowed labels, a missing field or an extra one (a "cost", say) is
rejected, never repaired. Field order in the schema is a prompt convention:
it asks for the reasoning before the label, but does not prove the reasoning
right.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from labkit.errors import LabkitError
from labkit.evaluator.calls import Caller, ModelCall
from labkit.evaluator.products import Product
from labkit.evaluator.rubric import Criterion, Rubric
from labkit.serve import local_response_format

PROMPT_VERSION = "judge-v1"
Arrangement = Literal["per_criterion", "bundled"]
ARRANGEMENTS: tuple[Arrangement, ...] = ("per_criterion", "bundled")
#: Longest explanation the schema allows, so a reply cannot run past its token limit mid-string.
MAX_EXPLANATION = 300


class JudgeReplyRejected(LabkitError, ValueError):
    """A judge reply is not the schema: not JSON, a missing or extra field, or a verdict outside the allowed labels."""


def verdict_model(criterion: Criterion) -> type[BaseModel]:
    """Return the Pydantic model of one criterion's judge reply: an explanation, then a verdict.

    The verdict's type is a ``Literal`` of the rubric's allowed labels, so any other
    label fails validation; ``extra="forbid"`` refuses a field the schema does not name.
    """
    allowed: Any = Literal[tuple(criterion.allowed_labels)]  # built at run time from the rubric
    return create_model(
        f"Verdict_{criterion.id}",
        __config__=ConfigDict(extra="forbid"),
        explanation=(
            str,
            Field(min_length=1, max_length=MAX_EXPLANATION, description="Why, citing the description."),
        ),
        verdict=(allowed, Field(description=f"One of {list(criterion.allowed_labels)}.")),
    )


#: One reply model per (criterion id, allowed labels), built once: the lesson asks for them on every call.
_MODELS: dict[tuple[str, tuple[str, ...]], type[BaseModel]] = {}


def _model_of(criterion: Criterion) -> type[BaseModel]:
    key = (criterion.id, tuple(criterion.allowed_labels))
    if key not in _MODELS:
        _MODELS[key] = verdict_model(criterion)
    return _MODELS[key]


def bundled_model(rubric: Rubric) -> type[BaseModel]:
    """Return the Pydantic model of a bundled reply: one explanation-and-verdict object per judged criterion."""
    return _bundled_model(tuple(rubric.judged()))


def _bundled_model(criteria: tuple[Criterion, ...]) -> type[BaseModel]:
    key = ("(bundled)", tuple(f"{c.id}:{'|'.join(c.allowed_labels)}:{c.question}" for c in criteria))
    if key not in _MODELS:
        fields = {c.id: (_model_of(c), Field(description=c.question)) for c in criteria}
        _MODELS[key] = create_model(  # type: ignore[call-overload]  # fields built from the rubric
            "BundledVerdicts", __config__=ConfigDict(extra="forbid"), **fields
        )
    return _MODELS[key]


@functools.lru_cache(maxsize=64)
def _schema(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def _criterion_text(criterion: Criterion) -> str:
    anchors = " ".join(f"'{label}': {criterion.anchors[label]}" for label in criterion.allowed_labels)
    return f"{criterion.id}: {criterion.question} Labels: {anchors}"


def judge_messages(
    product: Product, description: str, rubric: Rubric, criteria: list[Criterion]
) -> list[dict[str, str]]:
    """Return the judge's messages: the criteria with their anchors, then the facts and the description as JSON."""
    if len(criteria) == 1:
        task = (
            "Judge one product description against one criterion. First write a short explanation that quotes the "
            "description, then give the verdict. Reply with a JSON object: explanation, then verdict."
        )
    else:
        task = (
            "Judge one product description against each criterion below. For each criterion, first write a short "
            "explanation that quotes the description, then give the verdict. Reply with one JSON object holding, "
            "for each criterion id, an object with explanation, then verdict."
        )
    system = f"{task} Rubric {rubric.version}. " + " ".join(_criterion_text(c) for c in criteria)
    data = {"facts": product.facts.for_prompt(), "description": description}
    return [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(data, ensure_ascii=False)}]


def judge_settings(rubric: Rubric, arrangement: Arrangement, criterion: Criterion | None = None) -> dict[str, Any]:
    """Return the reply schema and token limit of one judge request."""
    if arrangement == "per_criterion":
        assert criterion is not None
        return {
            "max_tokens": 120,
            "response_format": local_response_format(json.loads(_schema(_model_of(criterion)))),
        }
    return {"max_tokens": 320, "response_format": local_response_format(json.loads(_schema(bundled_model(rubric))))}


class JudgeLabel(BaseModel):
    """One criterion label given by the judge, with its explanation."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    criterion: str = Field(description="Which criterion.")
    explanation: str = Field(description="The judge's explanation, written before the verdict.")
    verdict: str = Field(description="The label, one of the criterion's allowed labels.")


def parse_judge_reply(text: str, rubric: Rubric, *, criterion: Criterion | None = None) -> list[JudgeLabel]:
    """Validate a judge reply against its schema and return its labels, or raise `JudgeReplyRejected`.

    With ``criterion`` the reply is a per-criterion reply; without, a bundled one.
    """
    model = _model_of(criterion) if criterion else bundled_model(rubric)
    try:
        parsed = model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        raise JudgeReplyRejected(f"judge reply refused: {where + ': ' if where else ''}{first['msg']}") from None
    if criterion:
        fields = parsed.model_dump()
        return [
            JudgeLabel(
                criterion=criterion.id,
                explanation=fields["explanation"],
                verdict=fields["verdict"],
            )
        ]
    return [
        JudgeLabel(criterion=c.id, explanation=getattr(parsed, c.id).explanation, verdict=getattr(parsed, c.id).verdict)
        for c in rubric.judged()
    ]


class JudgeCall(BaseModel):
    """One judge request: which description and criteria it judged, and the labels (or the rejection) it gave."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    product_id: str = Field(description="Which product's description.")
    description_source: Literal["labeled", "generated"] = Field(
        description="The human-labeled text, or this run's own."
    )
    description_sha256: str = Field(description="SHA-256 of the exact description text judged.")
    arrangement: Arrangement = Field(description="per_criterion or bundled.")
    criteria: list[str] = Field(description="The criteria this call judged.")
    prompt_version: str = Field(description="Version of the judge prompt.")
    rubric_sha256: str = Field(description="The rubric the judge applied.")
    labels: list[JudgeLabel] = Field(description="The labels given; empty when the reply was rejected.")
    rejected: str | None = Field(description="Why the reply was rejected, or None.")
    call: ModelCall = Field(description="The request, reply text, latency, tokens and cost (from the price table).")

    @property
    def instructions(self) -> str:
        """The judge's system message, as it was sent."""
        return str(self.call.request["messages"][0]["content"])

    @property
    def reply_fields(self) -> list[str]:
        """The reply schema's fields, in the order the judge is asked to write them."""
        return list(self.call.request["response_format"]["schema"]["properties"])


def judge_groups(rubric: Rubric, arrangement: Arrangement) -> list[tuple[Criterion | None, list[Criterion]]]:
    """Return the calls one arrangement makes: per criterion, one call each; bundled, one call for all of them.

    Each pair is (the criterion the call is about, or None when bundled; the criteria it judges).
    """
    if arrangement == "per_criterion":
        return [(c, [c]) for c in rubric.judged()]
    return [(None, rubric.judged())]


def ask_judge(
    caller: Caller,
    product: Product,
    description: str,
    rubric: Rubric,
    criteria: list[Criterion],
    *,
    criterion: Criterion | None,
    arrangement: Arrangement,
    source: Literal["labeled", "generated"],
) -> JudgeCall:
    """Send one judge call and keep its labels, or its rejected reply with the reason, never repaired."""
    call = caller.ask(
        f"judge:{source}:{product.id}:{criterion.id if criterion else 'bundled'}",
        judge_messages(product, description, rubric, criteria),
        settings=judge_settings(rubric, arrangement, criterion),
    )
    try:
        labels, rejected = parse_judge_reply(call.reply_text, rubric, criterion=criterion), None
    except JudgeReplyRejected as exc:
        labels, rejected = [], str(exc)
    return JudgeCall(
        product_id=product.id,
        description_source=source,
        description_sha256=hashlib.sha256(description.encode("utf-8")).hexdigest(),
        arrangement=arrangement,
        criteria=[c.id for c in criteria],
        prompt_version=PROMPT_VERSION,
        rubric_sha256=rubric.sha256,
        labels=labels,
        rejected=rejected,
        call=call,
    )


def judge_description(
    caller: Caller,
    product: Product,
    description: str,
    rubric: Rubric,
    *,
    arrangement: Arrangement,
    source: Literal["labeled", "generated"],
) -> list[JudgeCall]:
    """Judge one description in one arrangement: one call per group of `judge_groups`."""
    return [
        ask_judge(
            caller, product, description, rubric, criteria, criterion=criterion, arrangement=arrangement, source=source
        )
        for criterion, criteria in judge_groups(rubric, arrangement)
    ]


class JudgeRun(BaseModel):
    """Every judge call of one run, under one rubric."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str = Field(description="The recorded run the replies come from.")
    origin: str = Field(description="authored, captured or live.")
    model_id: str = Field(description="The judge model.")
    prompt_version: str = Field(description="Version of the judge prompt.")
    rubric_version: str = Field(description="The rubric version.")
    rubric_sha256: str = Field(description="The rubric's hash.")
    calls: list[JudgeCall] = Field(description="Every judge call, in the order made.")

    def labels(self, *, arrangement: Arrangement, source: str, criterion: str) -> dict[str, str | None]:
        """Return product id -> verdict (None where the reply was rejected) for one criterion and arrangement."""
        out: dict[str, str | None] = {}
        for call in self.calls:
            if call.arrangement == arrangement and call.description_source == source and criterion in call.criteria:
                label = next((lab for lab in call.labels if lab.criterion == criterion), None)
                out[call.product_id] = label.verdict if label else None
        return out

    def label_for(self, product_id: str, criterion: str, *, arrangement: Arrangement, source: str) -> JudgeLabel | None:
        """Return the judge's label (with explanation) for one description and criterion, or None."""
        for call in self.calls:
            if (call.product_id, call.arrangement, call.description_source) == (product_id, arrangement, source):
                for label in call.labels:
                    if label.criterion == criterion:
                        return label
        return None
