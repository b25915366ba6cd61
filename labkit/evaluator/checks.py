"""Programmatic checks on one generated description: output schema, length and cost limits, numeric claims.

The numeric check finds every number with a unit in the description (hours,
grams or kilograms, millimetres or centimetres, euros), converts it to the
fact's unit and compares it with the supplied fact. A claim that disagrees
is kept with both values, the claimed one and the fact, so a reviewer sees
"claims 12 h, facts say 6 h" rather than a bare "fail".
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labkit.evaluator.generation import DescriptionOutput
from labkit.evaluator.products import Product
from labkit.evaluator.rubric import Limits, Rubric

Status = Literal["pass", "fail", "not_applicable"]

_NUMBER = r"(\d+(?:[.,]\d+)?)"
_TRIPLE = re.compile(_NUMBER + r"\s*[x×]\s*" + _NUMBER + r"\s*[x×]\s*" + _NUMBER + r"\s*(mm|cm)\b", re.I)  # noqa: RUF001 -- the multiplication sign is how dimensions are written
CLAIM_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("battery_life", re.compile(_NUMBER + r"[\s-]*(hours?|hrs?|h)\b", re.I)),
    ("weight", re.compile(_NUMBER + r"\s*(kg|kilograms?|g|grams?)\b", re.I)),
    ("length", re.compile(_NUMBER + r"\s*(mm|millimet(?:er|re)s?|cm|centimet(?:er|re)s?)\b", re.I)),
    ("price", re.compile(r"(?:€\s*|EUR\s*)" + _NUMBER + r"|" + _NUMBER + r"\s*(?:€|EUR\b|euros?\b)", re.I)),
)
"""What the numeric check reads: per quantity, a number (digits, ``.`` or ``,`` as decimal point) and its unit."""
_FACTORS = {"kg": 1000.0, "kilogram": 1000.0, "cm": 10.0, "centimet": 10.0}


class ClaimCheck(BaseModel):
    """One number-with-unit found in a description, and how it compares with the supplied fact."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    quantity: str = Field(description="Which fact it speaks of: battery_life, weight, dimensions, length, price.")
    text: str = Field(description="The words in the description, as written.")
    claimed: str = Field(description="The claimed value in the fact's unit, e.g. '12 h'.")
    fact: str | None = Field(description="The supplied fact, e.g. '6 h'; None when the facts have no such value.")
    status: Literal["supported", "contradicted", "unsupported"] = Field(description="How the claim compares.")


class CheckResult(BaseModel):
    """The outcome of one programmatic check."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Literal["schema", "length", "cost", "numeric_claims"] = Field(description="Which check.")
    status: Status = Field(description="pass, fail, or not_applicable when it could not run.")
    detail: str = Field(description="What was measured, in a few words.")


class CheckReport(BaseModel):
    """Every programmatic check on one description."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    product_id: str = Field(description="Which product.")
    results: list[CheckResult] = Field(description="schema, length, cost and numeric_claims, in that order.")
    claims: list[ClaimCheck] = Field(description="Every number-with-unit found, with its fact.")

    def status(self, name: str) -> Status:
        """Return one check's status."""
        return next(r.status for r in self.results if r.name == name)

    def failed_claims(self) -> list[ClaimCheck]:
        """Return the claims that disagree with, or are absent from, the facts."""
        return [c for c in self.claims if c.status != "supported"]


def parse_description(text: str) -> tuple[DescriptionOutput | None, str]:
    """Return the reply parsed as `DescriptionOutput` (or None) and the problem ('' when it parsed)."""
    try:
        return DescriptionOutput.model_validate_json(text), ""
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"]))
        return None, f"{where + ': ' if where else ''}{first['msg']}"


def _value(number: str) -> float:
    return float(number.replace(",", "."))


def _factor(unit: str) -> float:
    unit = unit.lower()
    return next((f for prefix, f in _FACTORS.items() if unit.startswith(prefix)), 1.0)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.005 * max(abs(a), abs(b))


def find_claims(text: str, product: Product) -> list[ClaimCheck]:
    """Return every number-with-unit in ``text`` compared with the product's facts, in reading order."""
    facts = product.facts
    dims = sorted(q.value for q in (facts.dimensions.length, facts.dimensions.width, facts.dimensions.height))
    found = _dimension_claims(text, facts, dims)
    rest = _TRIPLE.sub(lambda m: " " * len(m.group(0)), text)  # a size triple is one claim, not three lengths
    for quantity, pattern in CLAIM_PATTERNS:
        for match in pattern.finditer(rest):
            groups = [g for g in match.groups() if g is not None]
            value = _value(groups[0]) * (_factor(groups[1]) if len(groups) > 1 else 1.0)
            fact, unit, ok = compare_with_fact(quantity, value, facts, dims)
            status: Literal["supported", "contradicted", "unsupported"] = (
                "supported" if ok else ("unsupported" if fact is None else "contradicted")
            )
            claim = ClaimCheck(
                quantity=quantity,
                text=match.group(0).strip(),
                claimed=f"{value:g} {unit}",
                fact=None if fact is None else fact.shown(),
                status=status,
            )
            found.append((match.start(), claim))
    return [claim for _, claim in sorted(found, key=lambda pair: pair[0])]


def compare_with_fact(quantity: str, value: float, facts: Any, dims: list[float]) -> tuple[Any, str, bool]:
    """Return the fact a claimed value speaks of, its unit, and whether the value matches it within 0.5 %."""
    if quantity == "battery_life":
        return facts.battery_life, "h", facts.battery_life is not None and _close(value, facts.battery_life.value)
    if quantity == "weight":
        return facts.weight, "g", _close(value, facts.weight.value)
    if quantity == "price":
        return facts.price, "EUR", _close(value, facts.price.value)
    return facts.dimensions, "mm", any(_close(value, d) for d in dims)  # a single length: any of the three sides


def _dimension_claims(text: str, facts: Any, dims: list[float]) -> list[tuple[int, ClaimCheck]]:
    """Return each ``L x W x H mm`` triple in ``text``, compared side by side with the sorted facts."""
    found = []
    for match in _TRIPLE.finditer(text):
        claimed = sorted(_value(n) * _factor(match.group(4)) for n in match.groups()[:3])
        ok = all(_close(a, b) for a, b in zip(claimed, dims, strict=True))
        claim = ClaimCheck(
            quantity="dimensions",
            text=match.group(0),
            claimed=" x ".join(f"{v:g}" for v in claimed) + " mm",
            fact=facts.dimensions.shown(),
            status="supported" if ok else "contradicted",
        )
        found.append((match.start(), claim))
    return found


def length_check(output: DescriptionOutput | None, limits: Limits) -> CheckResult:
    """Return the length check: the description's words and the title's characters within the rubric's limits."""
    if output is None:
        return CheckResult(name="length", status="not_applicable", detail="no description field to measure")
    words = len(output.description.split())
    title = len(output.title)
    ok = limits.min_words <= words <= limits.max_words and 0 < title <= limits.max_title_chars
    return CheckResult(
        name="length",
        status="pass" if ok else "fail",
        detail=f"{words} words (limit {limits.min_words}-{limits.max_words}), title {title} chars",
    )


def run_checks(text: str, product: Product, rubric: Rubric, *, cost_usd: float) -> CheckReport:
    """Run every programmatic check on one reply text; ``cost_usd`` comes from the price table."""
    limits = rubric.limits
    output, problem = parse_description(text)
    results = [
        CheckResult(
            name="schema",
            status="pass" if output else "fail",
            detail="a JSON object with title and description" if output else f"not the reply schema ({problem})",
        ),
        length_check(output, limits),
    ]
    results.append(
        CheckResult(
            name="cost",
            status="pass" if cost_usd <= limits.max_cost_usd else "fail",
            detail=f"{cost_usd:.6f} USD (limit {limits.max_cost_usd:.6f} USD)",
        )
    )
    claims = find_claims(output.title + "\n" + output.description if output else text, product)
    bad = [c for c in claims if c.status != "supported"]
    results.append(
        CheckResult(
            name="numeric_claims",
            status="fail" if bad else "pass",
            detail="; ".join(f"claims {c.claimed}, facts say {c.fact or 'nothing'}" for c in bad)
            or f"{len(claims)} claim(s), all match the facts",
        )
    )
    return CheckReport(product_id=product.id, results=results, claims=claims)
