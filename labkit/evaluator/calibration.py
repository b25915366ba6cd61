"""Calibration: how well the judge agrees with people, and which criteria it may therefore score.

For each criterion and arrangement, on the held-out subset: percent agreement,
Cohen's kappa (scikit-learn), the base rate (the share of the most common
human label: what a judge that always said it would score), and a bootstrap
interval with a fixed seed; the two raters' agreement beside it for
reference. A rejected judge reply counts as a label of its own,
``(refused)``, which disagrees with every human label: it is never dropped.
The agreement rule then routes each criterion to the judge or to human review.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from labkit.evaluator.rubric import AgreementRule

REJECTED = "(refused)"
BOOTSTRAP_SEED = 20261101
BOOTSTRAP_RESAMPLES = 2000


def percent_agreement(a: list[str], b: list[str]) -> float:
    """Return the share of items where the two label lists agree."""
    if len(a) != len(b) or not a:
        raise ValueError("compare two non-empty label lists of the same length")
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def kappa(a: list[str], b: list[str]) -> float | None:
    """Return Cohen's kappa from scikit-learn, or None when it is undefined (both lists one and the same label)."""
    from sklearn.metrics import cohen_kappa_score

    if len(set(a) | set(b)) < 2:
        return None
    return float(cohen_kappa_score(a, b))


def base_rate(labels: list[str]) -> tuple[str, float]:
    """Return the most common label and its share: the agreement a constant judge would reach."""
    label, count = sorted(Counter(labels).items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return label, count / len(labels)


def _kappa_many(a: Any, b: Any, n_labels: int) -> Any:
    """Cohen's kappa for many resamples at once (along the last axis), the formula scikit-learn uses; NaN where undefined.

    scikit-learn's ``cohen_kappa_score`` takes one pair of label lists; called once per resample it would
    make the bootstrap of lesson 01 take tens of seconds.
    """
    import numpy as np

    observed = (a == b).mean(axis=-1)
    pa = np.stack([(a == k).mean(axis=-1) for k in range(n_labels)], axis=-1)
    pb = np.stack([(b == k).mean(axis=-1) for k in range(n_labels)], axis=-1)
    expected = (pa * pb).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)
    return result


class BootstrapInterval(TypedDict):
    """Percentile intervals of percent agreement and kappa, and how many resamples left kappa undefined."""

    agreement_low: float
    agreement_high: float
    kappa_low: float | None
    kappa_high: float | None
    kappa_undefined: int


def paired_bootstrap(samples: tuple[Any, ...], statistic: Any, *, seed: int, resamples: int, level: float) -> Any:
    """Return SciPy's paired percentile bootstrap of ``statistic`` over items (an item keeps all its values).

    ``samples`` are equally long arrays, one value per item each; ``statistic`` is vectorized
    along ``axis``, as `scipy.stats.bootstrap` asks. The seed is fixed, so the result is too.
    """
    import numpy as np
    from scipy.stats import DegenerateDataWarning, bootstrap

    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        # Every resample alike (two raters who always agree) is an answer here, not a degenerate input.
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return bootstrap(
            samples,
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=resamples,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(seed),
        )


def _percentiles(values: Any, level: float) -> tuple[float | None, float | None, int]:
    """The percentile interval of the defined (not NaN) values, and how many were undefined."""
    import numpy as np

    values = np.asarray(values)
    defined = values[~np.isnan(values)]
    if not defined.size:
        return None, None, int(values.size)
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    return float(np.percentile(defined, lo)), float(np.percentile(defined, hi)), int(values.size - defined.size)


def _as_indices(*label_lists: list[str]) -> tuple[Any, ...]:
    import numpy as np

    labels = sorted(set().union(*label_lists))
    index = {label: i for i, label in enumerate(labels)}
    return tuple(np.array([index[x] for x in labels_of]) for labels_of in label_lists)


def bootstrap_interval(
    a: list[str], b: list[str], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES, level: float = 0.95
) -> BootstrapInterval:
    """Return percentile intervals of percent agreement and kappa over item resamples drawn with a fixed seed.

    SciPy draws the resamples (``scipy.stats.bootstrap``, paired: an item keeps
    both its labels) and gives the agreement interval. A resample in which kappa
    is undefined (every label the same) is counted in ``kappa_undefined`` and left
    out of the kappa interval only, so that interval is the same percentiles taken
    over SciPy's bootstrap distribution without those resamples.
    """
    import numpy as np

    ai, bi = _as_indices(a, b)
    n_labels = len(set(a) | set(b))

    def agreement_of(x: Any, y: Any, axis: int = -1) -> Any:
        return (x == y).mean(axis=axis)

    def kappa_of(x: Any, y: Any, axis: int = -1) -> Any:
        return _kappa_many(np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1), n_labels)

    options: dict[str, Any] = {"seed": seed, "resamples": resamples, "level": level}
    agree = paired_bootstrap((ai, bi), agreement_of, **options)  # SciPy's percentile interval
    kappas = paired_bootstrap((ai, bi), kappa_of, **options).bootstrap_distribution  # NaN: undefined
    kappa_low, kappa_high, undefined = _percentiles(kappas, level)  # of the defined draws only
    return {
        "agreement_low": float(agree.confidence_interval.low),
        "agreement_high": float(agree.confidence_interval.high),
        "kappa_low": kappa_low,
        "kappa_high": kappa_high,
        "kappa_undefined": undefined,
    }


def kappa_difference_interval(
    reference: list[str],
    baseline: Sequence[str | None],
    changed: Sequence[str | None],
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Return a paired bootstrap interval of kappa(changed) - kappa(baseline), both against ``reference``.

    Each resample draws items (an item keeps its three labels), so the two kappas
    move together as they would on another draw of items like these. A rejected
    reply (None) is a label of its own, as in `agreement`. Resamples where either
    kappa is undefined are left out; the interval is None when none is defined.
    """
    import numpy as np

    as_labels = [REJECTED if x is None else x for x in baseline], [REJECTED if x is None else x for x in changed]
    ri, bi, ci = _as_indices(reference, *as_labels)
    n_labels = len(set(reference).union(*as_labels))

    def difference(r: Any, x: Any, y: Any, axis: int = -1) -> Any:
        r, x, y = (np.moveaxis(v, axis, -1) for v in (r, x, y))
        return _kappa_many(r, y, n_labels) - _kappa_many(r, x, n_labels)

    resampled = paired_bootstrap((ri, bi, ci), difference, seed=seed, resamples=resamples, level=level)
    low, high, _ = _percentiles(resampled.bootstrap_distribution, level)
    return low, high


class Agreement(BaseModel):
    """Agreement between two label sources on one criterion, over the same items."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    criterion: str = Field(description="Which criterion.")
    arrangement: str = Field(description="per_criterion, bundled, programmatic, or human-human.")
    items: int = Field(description="How many items were compared.")
    rejected: int = Field(description="Judge replies rejected by the schema (counted as disagreements).")
    percent_agreement: float = Field(description="Share of items with the same label.")
    kappa: float | None = Field(description="Cohen's kappa (scikit-learn); None when undefined.")
    base_rate_label: str = Field(description="The most common reference label.")
    base_rate: float = Field(description="Its share: what always giving that label would agree.")
    agreement_low: float = Field(description="Bootstrap interval of percent agreement, low end.")
    agreement_high: float = Field(description="... high end.")
    kappa_low: float | None = Field(description="Bootstrap interval of kappa, low end (None if never defined).")
    kappa_high: float | None = Field(description="... high end.")
    kappa_undefined: int = Field(description="Resamples where kappa was undefined.")


def agreement(criterion: str, arrangement: str, reference: list[str], other: Sequence[str | None]) -> Agreement:
    """Measure how ``other`` (judge, checks or a second rater) agrees with ``reference`` on one criterion."""
    labels = [REJECTED if x is None else x for x in other]
    label, rate = base_rate(reference)
    return Agreement(
        criterion=criterion,
        arrangement=arrangement,
        items=len(reference),
        rejected=sum(x is None for x in other),
        percent_agreement=percent_agreement(reference, labels),
        kappa=kappa(reference, labels),
        base_rate_label=label,
        base_rate=rate,
        **bootstrap_interval(reference, labels),
    )


class Routing(BaseModel):
    """Who scores a criterion in release, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    criterion: str = Field(description="Which criterion.")
    scorer: Literal["judge", "human_review", "programmatic"] = Field(description="Who gives the release label.")
    reason: str = Field(description="The evidence for the decision, in one sentence.")


def route_criterion(evidence: Agreement | None, rule: AgreementRule, *, scored_by: str = "judge") -> Routing:
    """Apply the agreement rule: the judge scores a criterion only where it meets both thresholds."""
    if scored_by == "programmatic":
        return Routing(
            criterion=evidence.criterion if evidence else "?",
            scorer="programmatic",
            reason="scored by code (schema and length checks), not by the judge",
        )
    assert evidence is not None
    k = "undefined" if evidence.kappa is None else f"{evidence.kappa:.2f}"
    meets = (
        evidence.kappa is not None
        and evidence.kappa >= rule.min_kappa
        and evidence.percent_agreement >= rule.min_percent_agreement
    )
    facts = (
        f"kappa {k} (needs {rule.min_kappa:.2f}), agreement {evidence.percent_agreement:.0%} "
        f"(needs {rule.min_percent_agreement:.0%}) on {evidence.items} held-out items"
    )
    if meets:
        return Routing(criterion=evidence.criterion, scorer="judge", reason=f"meets the rule: {facts}")
    return Routing(criterion=evidence.criterion, scorer="human_review", reason=f"below the rule: {facts}")


def meets_rule(reference: list[str], judge: list[str], rule: AgreementRule) -> bool:
    """Return whether ``judge`` reaches both of the rule's thresholds against ``reference`` (an undefined kappa never does)."""
    k = kappa(reference, judge)
    return k is not None and k >= rule.min_kappa and percent_agreement(reference, judge) >= rule.min_percent_agreement


def fewest_fixes(reference: list[str], judge: list[str], rule: AgreementRule) -> int | None:
    """Return the fewest judge labels that must be set to the reference's for the judge to meet ``rule``.

    Every set of that many disagreements is tried, smallest sets first; None when not even
    fixing every disagreement helps (kappa undefined: both lists one and the same label).
    Fixing the item that raises kappa most, one at a time, gives the same count: each fix
    adds one item to p_o, and moves p_e by an amount that depends only on the reference's
    counts of the item's two labels, which no fix changes.
    """
    from itertools import combinations

    wrong = [i for i, (r, j) in enumerate(zip(reference, judge, strict=True)) if r != j]
    for size in range(len(wrong) + 1):
        for fixed in combinations(wrong, size):
            fixed_judge = [reference[i] if i in fixed else label for i, label in enumerate(judge)]
            if meets_rule(reference, fixed_judge, rule):
                return size
    return None


def kappa_after_one_fix(reference: list[str], judge: list[str], label: str) -> float | None:
    """Return kappa after the judge's first disagreement on an item the reference labels ``label`` is fixed.

    A *fix* sets the judge's label on that one item to the reference's. Raises
    ``ValueError`` when the judge disagrees on no item labeled ``label``.
    """
    pairs = list(zip(reference, judge, strict=True))
    item = next((i for i, (r, j) in enumerate(pairs) if r == label != j), None)
    if item is None:
        raise ValueError(f"the judge disagrees on no item labeled {label!r}; pick a label it misses")
    return kappa(reference, [r if i == item else j for i, (r, j) in enumerate(pairs)])


def most_influential_item(reference: list[str], judge: list[str]) -> int:
    """Return the index of the item whose removal moves kappa the most, up or down (ties: the first such item).

    Each item is left out in turn and kappa is computed on the others: how much one
    item of a small set decides the figure. Every leave-one-out kappa must be defined.
    """
    full = kappa(reference, judge)
    if full is None:
        raise ValueError("kappa is undefined on these lists: give lists with at least two labels between them")
    moves = []
    for i in range(len(reference)):
        left_out = kappa(reference[:i] + reference[i + 1 :], judge[:i] + judge[i + 1 :])
        if left_out is None:
            raise ValueError(f"kappa is undefined without item {i}: give lists that keep two labels without any item")
        moves.append(abs(left_out - full))
    return moves.index(max(moves))
