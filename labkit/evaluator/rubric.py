"""The versioned rubric, fixed before any description is generated, and the hash that pins runs to it.

A rubric names its criteria; each criterion has an anchor sentence per
allowed label, the labels that pass, who scores it (the judge or the
programmatic checks) and which checks gate it. Limits (words, title, cost)
and the agreement rule live here too. Every generation and judge run is stamped
with ``rubric_sha256`` when it runs; a run made under another rubric is refused
(`StaleRubric`). A recorded run is bound to the rubric file's exact bytes by its
``fixtures`` field (`rubric_bytes_unchanged`); `changed_rubric_copies` writes two
changed copies of that file, and `guard_table` tries both guards on them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labkit.canonical import canonical_sha256, file_sha256, load_strict
from labkit.errors import LabkitError, validation_problems
from labkit.evaluator.products import EvaluatorFixtureError
from labkit.paths import atomic_write, fixtures_dir

CheckName = Literal["schema", "length", "numeric_claims"]


class StaleRubric(LabkitError, ValueError):
    """A generation or judge run was made under another rubric than the current one."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Criterion(_Strict):
    """One rubric criterion."""

    id: str = Field(pattern=r"^[a-z][a-z_]*$", description="Criterion id, as labels and records name it.")
    question: str = Field(min_length=10, description="What the criterion asks of a description.")
    allowed_labels: list[str] = Field(min_length=2, description="The only labels a rater or judge may give.")
    anchors: dict[str, str] = Field(description="One anchor sentence per allowed label, saying when it applies.")
    pass_labels: list[str] = Field(min_length=1, description="The labels that pass this criterion.")
    scored_by: Literal["judge", "programmatic"] = Field(description="Who gives the release label.")
    checks: list[CheckName] = Field(default_factory=list, description="Programmatic checks that fail this criterion.")

    @model_validator(mode="after")
    def _labels_agree(self) -> Criterion:
        if len(set(self.allowed_labels)) != len(self.allowed_labels):
            raise ValueError(f"{self.id}: an allowed label is repeated")
        if set(self.anchors) != set(self.allowed_labels):
            raise ValueError(f"{self.id}: anchors must name exactly the allowed labels {self.allowed_labels}")
        if not set(self.pass_labels) < set(self.allowed_labels):
            raise ValueError(f"{self.id}: pass labels must be some, not all, of the allowed labels")
        return self


class Limits(_Strict):
    """Hard limits on a description, checked by code."""

    min_words: int = Field(ge=1, description="Fewest words in the description body.")
    max_words: int = Field(ge=1, description="Most words in the description body.")
    max_title_chars: int = Field(ge=1, description="Longest title, in characters.")
    max_cost_usd: float = Field(gt=0, description="Most a description may cost to generate, from the price table.")


class AgreementRule(_Strict):
    """When the judge may score a criterion: its agreement with people on the held-out subset."""

    subset: Literal["held_out"] = Field(description="Where agreement is measured.")
    reference: Literal["adjudicated"] = Field(description="Which human label the judge is compared with.")
    min_kappa: float = Field(ge=-1, le=1, description="Lowest Cohen's kappa the judge may have.")
    min_percent_agreement: float = Field(ge=0, le=1, description="Lowest share of items where judge and people agree.")
    arrangement: Literal["per_criterion", "bundled"] = Field(description="The judge arrangement the release uses.")


class Rubric(_Strict):
    """The rubric: criteria, limits, agreement rule and release rule, under one version."""

    rubric_id: str = Field(min_length=1, description="Which rubric this is.")
    version: str = Field(min_length=1, description="Its version; a change makes a new version.")
    fixed_at: str = Field(description="ISO date it was fixed, before any generation.")
    criteria: list[Criterion] = Field(min_length=1, description="The criteria, in report order.")
    limits: Limits = Field(description="Limits checked by code.")
    agreement_rule: AgreementRule = Field(description="When the judge may score a criterion.")
    release_rule: str = Field(min_length=10, description="When a description may be shown to shoppers.")

    @model_validator(mode="after")
    def _unique(self) -> Rubric:
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise ValueError("a criterion id is repeated")
        return self

    @property
    def sha256(self) -> str:
        """The rubric's hash: SHA-256 of its canonical JSON (formatting of the file does not count)."""
        return canonical_sha256(self.model_dump(mode="json"))

    def criterion(self, criterion_id: str) -> Criterion:
        """Return one criterion by id."""
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(f"the rubric has no criterion {criterion_id!r}; it has {', '.join(c.id for c in self.criteria)}")

    def judged(self) -> list[Criterion]:
        """Return the criteria the judge scores, in rubric order."""
        return [c for c in self.criteria if c.scored_by == "judge"]


def rubric_path() -> Path:
    """Return the committed rubric file."""
    return fixtures_dir() / "evaluator" / "rubric.json"


RUBRIC_FIXTURE = "fixtures/evaluator/rubric.json"
"""The rubric file's key in a recorded run's ``fixtures`` field."""


def rubric_bytes_unchanged(fixtures: Mapping[str, str], *, path: Path | None = None) -> bool:
    """Return whether the rubric file's bytes hash to the SHA-256 a recorded run holds for it in ``fixtures``.

    This byte hash, not the ``rubric_sha256`` stamp, binds a recorded run to its rubric:
    loading the run refuses it (`FixtureChanged`) when the two differ, even after a change of
    layout only. Raise `StaleRubric` if ``fixtures`` names no rubric file.
    """
    if RUBRIC_FIXTURE not in fixtures:
        raise StaleRubric(
            f"the run records no hash for {RUBRIC_FIXTURE}, so nothing binds it to a rubric; "
            "record it again with `labkit record`."
        )
    return file_sha256(path or rubric_path()) == fixtures[RUBRIC_FIXTURE]


def changed_rubric_copies(folder: Path) -> dict[str, Path]:
    """Write two changed copies of the rubric file into ``folder`` and return their paths by name.

    ``re-laid`` holds the same JSON indented by four spaces (its bytes change, its
    ``rubric_sha256`` does not); ``reworded`` changes one word of the release rule,
    "every criterion" to "each criterion" (both change).
    """
    data = json.loads(rubric_path().read_text(encoding="utf-8"))
    relaid = atomic_write(folder / "rubric-relaid.json", json.dumps(data, indent=4) + "\n")
    data["release_rule"] = data["release_rule"].replace("every criterion", "each criterion")
    reworded = atomic_write(folder / "rubric-reworded.json", json.dumps(data, indent=2) + "\n")
    return {"re-laid": relaid, "reworded": reworded}


def guard_table(run_id: str, folder: Path | None = None) -> Any:
    """Try both guards on `changed_rubric_copies`, written under ``folder`` (default: scratch), and tabulate them.

    Per copy: whether its ``rubric_sha256`` is the current rubric's, what `ensure_same_rubric`
    says of a run stamped with the copy's hash, and what the recorded run ``run_id``'s fixture
    check (`check_fixtures`, as `load_run` runs it) says on a checkout holding the copy.
    """
    import pandas as pd

    from labkit.errors import FixtureChanged
    from labkit.paths import scratch_dir
    from labkit.recording import check_fixtures, copy_fixtures, load_run
    from labkit.tables import text_table

    folder = folder or scratch_dir()
    rubric, run = load_rubric(), load_run(run_id)
    rows = []
    for name, path in changed_rubric_copies(folder).items():
        copy = load_rubric(path)
        try:
            ensure_same_rubric(RubricStamp(rubric_sha256=copy.sha256), rubric)
            stamp = "passes"
        except StaleRubric:
            stamp = "StaleRubric"
        try:
            check_fixtures(run, root=copy_fixtures(run, folder / name, replace={RUBRIC_FIXTURE: path}))
            fixture = "passes"
        except FixtureChanged:
            fixture = "FixtureChanged"
        rows.append(
            {
                "copy": name,
                "rubric_sha256": "same" if copy.sha256 == rubric.sha256 else "changed",
                "stamp check": stamp,
                "fixture check": fixture,
            }
        )
    return text_table(pd.DataFrame(rows).set_index("copy"))


def parse_rubric(data: Any, *, source: str = "rubric") -> Rubric:
    """Validate rubric data, with one readable message for every problem."""
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, whole="rubric")
        raise EvaluatorFixtureError(f"{source}: not a valid rubric: {problems}") from None


def load_rubric(path: Path | None = None) -> Rubric:
    """Load the rubric fixture."""
    path = path or rubric_path()
    data, _ = load_strict(path)
    return parse_rubric(data, source=str(path))


@dataclass(frozen=True)
class RubricStamp:
    """The one field `ensure_same_rubric` reads from a run: the hash of the rubric it was made under."""

    rubric_sha256: str


def ensure_same_rubric(run: Any, rubric: Rubric) -> None:
    """Raise `StaleRubric` unless ``run`` (anything with ``rubric_sha256``) was made under ``rubric``."""
    if run.rubric_sha256 != rubric.sha256:
        raise StaleRubric(
            f"this run was made under rubric {run.rubric_sha256[:12]}…, but the current rubric {rubric.version} is "
            f"{rubric.sha256[:12]}…; its labels answer other criteria. Generate and judge again under the current "
            "rubric, or restore the rubric the run was made under."
        )
