"""The fictional products of lesson 01 and their typed facts, each number with its unit.

A generated description may only state what these facts say. The numeric
checks (`labkit.evaluator.checks`) compare every number-with-unit in a
description with the fact of the same quantity, so each fact carries a unit
the checks can convert: hours, grams, millimetres, euros.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labkit.canonical import load_strict
from labkit.errors import LabkitError, validation_problems
from labkit.paths import fixtures_dir


class EvaluatorFixtureError(LabkitError, ValueError):
    """A fixture of lesson 01 (products, rubric, labels, prices, descriptions) is malformed or inconsistent."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Quantity(_Strict):
    """A number with its unit."""

    value: float = Field(gt=0, description="The amount, in `unit`.")
    unit: Literal["h", "g", "mm", "EUR"] = Field(description="Hours, grams, millimetres or euros.")

    def shown(self) -> str:
        """Return the quantity as a reader would write it: ``6 h``, ``340 g``, ``45.00 EUR``."""
        if self.unit == "EUR":
            return f"{self.value:.2f} EUR"
        return f"{self.value:g} {self.unit}"


class Dimensions(_Strict):
    """Outer size in millimetres."""

    length: Quantity = Field(description="Longest side.")
    width: Quantity = Field(description="Second side.")
    height: Quantity = Field(description="Third side.")

    @model_validator(mode="after")
    def _millimetres(self) -> Dimensions:
        if {self.length.unit, self.width.unit, self.height.unit} != {"mm"}:
            raise ValueError("dimensions are given in mm")
        return self

    def shown(self) -> str:
        """Return ``L x W x H mm``."""
        return f"{self.length.value:g} x {self.width.value:g} x {self.height.value:g} mm"


class ProductFacts(_Strict):
    """What the shop knows about a product; a description may state nothing else."""

    battery_life: Quantity | None = Field(description="Runtime on one charge, in hours; None if it has no battery.")
    weight: Quantity = Field(description="Weight in grams.")
    dimensions: Dimensions = Field(description="Outer size in millimetres.")
    materials: list[str] = Field(min_length=1, description="What it is made of, main material first.")
    price: Quantity = Field(description="Price in euros.")

    @model_validator(mode="after")
    def _units(self) -> ProductFacts:
        expected = {"battery_life": "h", "weight": "g", "price": "EUR"}
        for name, unit in expected.items():
            quantity = getattr(self, name)
            if quantity is not None and quantity.unit != unit:
                raise ValueError(f"{name} is given in {unit}, not {quantity.unit}")
        if any(not m.strip() for m in self.materials):
            raise ValueError("a material is blank")
        return self

    def for_prompt(self) -> dict[str, Any]:
        """Return the facts as short strings with units, the form the model and the judge see."""
        facts = {
            "weight": self.weight.shown(),
            "dimensions": self.dimensions.shown(),
            "materials": ", ".join(self.materials),
            "price": self.price.shown(),
        }
        if self.battery_life is not None:
            facts["battery_life"] = self.battery_life.shown()
        return facts


class Product(_Strict):
    """One fictional product of the shop."""

    id: str = Field(pattern=r"^p\d{2}$", description="Product id, p01 to p99.")
    name: str = Field(min_length=3, description="Product name as the shop lists it.")
    category: str = Field(min_length=3, description="What kind of product it is.")
    facts: ProductFacts = Field(description="The supplied facts.")


def products_path() -> Path:
    """Return the committed products file."""
    return fixtures_dir() / "evaluator" / "products.json"


def parse_products(data: Any, *, source: str = "products") -> dict[str, Product]:
    """Validate a products list and return it by id, refusing repeated ids or fewer than 20 products."""
    if not isinstance(data, dict) or set(data) != {"products"} or not isinstance(data["products"], list):
        raise EvaluatorFixtureError(f"{source}: expected an object with one key, 'products', holding a list")
    products: dict[str, Product] = {}
    for number, item in enumerate(data["products"]):
        try:
            product = Product.model_validate(item)
        except ValidationError as exc:
            problems = validation_problems(exc)
            raise EvaluatorFixtureError(f"{source}: product {number}: {problems}") from None
        if product.id in products:
            raise EvaluatorFixtureError(
                f"{source}: product id {product.id!r} appears twice; give each product its own id"
            )
        products[product.id] = product
    if len(products) < 20:
        raise EvaluatorFixtureError(f"{source}: {len(products)} products; the lesson needs at least 20")
    return products


def load_products(path: Path | None = None) -> dict[str, Product]:
    """Load the products fixture, by id in file order."""
    path = path or products_path()
    data, _ = load_strict(path)
    return parse_products(data, source=str(path))
