"""Repeated trials: the same request sent again with another sampling seed, so a behaviour is measured, not met once.

Exact binding refuses to answer one request twice from a recording, and that is
right: a recorded reply is the reply to that request. A repeated trial is therefore
a *different* request: the same messages with another ``seed``, at a stated
``temperature`` above zero, so the model samples instead of decoding greedily.
The seed is part of the request, so each trial has its own binding and replay
stays exact::

    TRIALS = Trials(n=5, temperature=0.7, first_seed=100)
    for trial in TRIALS.each(boundary):          # trial.seed is 100, 101, ... 104
        run_case(case, trial)                    # trial.generate(...) sends that seed

A paraphrase is not a repeat: four wordings of one question, each run once, say
how robust the behaviour is to wording; N seeds of one wording say how often the
same request succeeds (the Wilson interval below is over those N).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import pandas as pd

K = TypeVar("K")


class Trials(BaseModel):
    """How a lesson repeats each case: ``n`` requests with seeds ``first_seed .. first_seed + n - 1``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(ge=2, le=100)
    """Trials per case (a lesson that reports a rate uses at least 5)."""
    temperature: float = Field(gt=0, le=2)
    """Sampling temperature of every trial; at 0 every seed would give the same greedy reply."""
    first_seed: int = Field(ge=0)
    """The seed of the first trial; trial ``i`` sends ``first_seed + i``."""

    @property
    def seeds(self) -> list[int]:
        """The seed each trial sends, in order."""
        return [self.first_seed + i for i in range(self.n)]

    def settings_for(self, settings: Mapping[str, Any], trial: int) -> dict[str, Any]:
        """Return ``settings`` with this plan's temperature and trial ``trial``'s seed (a copy)."""
        if not 0 <= trial < self.n:
            raise IndexError(f"trial {trial} is outside 0..{self.n - 1}")
        return {**settings, "temperature": self.temperature, "seed": self.first_seed + trial}

    def each(self, adapter: Any) -> Iterator[TrialAdapter]:
        """Yield one adapter per trial, each sending its own seed and this plan's temperature through ``adapter``."""
        for trial in range(self.n):
            yield TrialAdapter(
                adapter, trial=trial, settings=self.settings_for(getattr(adapter, "settings", {}), trial)
            )

    def describe(self) -> str:
        """Return one sentence stating the plan, for a run's description."""
        return (
            f"Each case was sent {self.n} times at temperature {self.temperature:g} with seeds "
            f"{self.first_seed}..{self.first_seed + self.n - 1}."
        )


@dataclass
class TrialAdapter:
    """Passes each request to the adapter it wraps with one trial's seed and temperature as per-call settings."""

    adapter: Any
    trial: int
    """The trial's number, from 0."""
    settings: dict[str, Any]
    """The wrapped adapter's settings with this trial's seed and temperature (what the request will carry)."""

    @property
    def seed(self) -> int:
        """The seed this trial sends."""
        return int(self.settings["seed"])

    @property
    def model(self) -> Any:
        """The wrapped adapter's model id."""
        return getattr(self.adapter, "model", None)

    @property
    def mode(self) -> Any:
        """The wrapped adapter's mode (replay, live, record), so code that asks it learns where replies come from."""
        return getattr(self.adapter, "mode", None)

    @property
    def run_id(self) -> Any:
        """The wrapped adapter's run id (the recorded run a replaying boundary answers from)."""
        return getattr(self.adapter, "run_id", None)

    @property
    def run_sha256(self) -> Any:
        """The SHA-256 of the run file the wrapped adapter replays (a trace names it)."""
        return getattr(self.adapter, "run_sha256", None)

    @property
    def origin(self) -> Any:
        """The wrapped adapter's origin (authored or captured, for a replaying boundary)."""
        return getattr(self.adapter, "origin", None)

    def generate(self, question: str, messages: list[dict[str, Any]], **settings: Any) -> Any:
        """Send ``messages`` through the wrapped adapter with this trial's seed and temperature."""
        per_call = {key: self.settings[key] for key in ("temperature", "seed")}
        return self.adapter.generate(question, messages, **per_call, **settings)


def wilson(successes: int, trials: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Return the Wilson score interval for a success rate (95% by default), rounded to 3 places.

    SciPy computes it (``binomtest(k, n).proportion_ci(method="wilson")``), with
    the exact normal quantile (1.95996... at 95%), not a rounded 1.96.
    """
    from scipy.stats import binomtest

    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0, got {successes}/{trials}")
    ci = binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    return round(float(ci.low), 3), round(float(ci.high), 3)


def pattern(passes: Sequence[bool]) -> str:
    """Return a case's trials as marks in order, ``✓`` for a pass and ``✗`` for a failure (``✓✗✓✓✓``)."""
    return "".join("✓" if ok else "✗" for ok in passes)


def verdict(passes: Sequence[bool]) -> str:
    """Return ``always``, ``never`` or ``sometimes``: whether every trial, no trial or only some passed."""
    if not passes:
        raise ValueError("a case needs at least one trial to have a verdict")
    if all(passes):
        return "always"
    return "never" if not any(passes) else "sometimes"


def repeat_table(outcomes: Mapping[str, Sequence[bool]]) -> pd.DataFrame:
    """Return one row per case: its trials in order, passes/n, rate, Wilson interval, and the first trial's verdict.

    ``first trial`` is what a single trace would have shown; ``verdict`` is what the
    repeats show. A case whose first trial passed but that is not ``always`` is one a
    single trace would have misled you about.
    """
    import pandas as pd

    rows = []
    for case, passes in outcomes.items():
        if not passes:
            raise ValueError(f"case {case!r} has no trials; every case in the table needs at least one")
        passed = sum(bool(p) for p in passes)
        low, high = wilson(passed, len(passes))
        rows.append(
            {
                "case": case,
                "trials": pattern(passes),
                "passed": f"{passed}/{len(passes)}",
                "rate": round(passed / len(passes), 3),
                "wilson_low": low,
                "wilson_high": high,
                "first trial": "pass" if passes[0] else "fail",
                "verdict": verdict(passes),
            }
        )
    return pd.DataFrame(rows, columns=_COLUMNS)


_COLUMNS = ["case", "trials", "passed", "rate", "wilson_low", "wilson_high", "first trial", "verdict"]


def misled_by_one_trace(outcomes: Mapping[K, Sequence[Any]]) -> list[K]:
    """Return the cases whose first trial disagrees with a later one: one trace would have misled you about them.

    An outcome is whatever a trial ends with: a pass or fail, or a verdict such as a judge's label.
    """
    return [case for case, seen in outcomes.items() if seen and any(outcome != seen[0] for outcome in seen[1:])]
