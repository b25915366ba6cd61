"""Lesson 01's plots: agreement per criterion and arrangement, and the spread of cost and latency.

matplotlib is imported inside each function so that `import labkit` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from labkit.evaluator.report import EvaluationReport

_ORDER = ("per_criterion", "bundled", "programmatic", "human-human")
#: The legend's name for each arrangement's bars, saying what each kappa compares.
ARRANGEMENT_LABELS = {
    "per_criterion": "judge per criterion vs adjudicated",
    "bundled": "judge bundled vs adjudicated",
    "programmatic": "code checks vs adjudicated (authored texts)",
    "human-human": "rater A vs rater B (authored labels)",
}


def plot_agreement(reports: dict[str, EvaluationReport], *, min_kappa: float | None = None) -> Figure:
    """Draw Cohen's kappa with its bootstrap interval per criterion and arrangement, one panel per run."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(reports), figsize=(6.2 * len(reports), 3.8), squeeze=False, sharey=True)
    for ax, (name, report) in zip(axes[0], reports.items(), strict=True):
        criteria = [c.id for c in report.inputs.rubric.criteria]
        arrangements = [a for a in _ORDER if any(r.arrangement == a for r in report.agreements)]
        width = 0.8 / len(arrangements)
        for i, arrangement in enumerate(arrangements):
            xs, ys, low, high = [], [], [], []
            for j, criterion in enumerate(criteria):
                row = report.agreement_for(criterion, arrangement)
                if row is None or row.kappa is None:
                    continue
                xs.append(j + (i - (len(arrangements) - 1) / 2) * width)
                ys.append(row.kappa)
                low.append(row.kappa - (row.kappa_low if row.kappa_low is not None else row.kappa))
                high.append((row.kappa_high if row.kappa_high is not None else row.kappa) - row.kappa)
            ax.bar(xs, ys, width=width, label=ARRANGEMENT_LABELS[arrangement], yerr=[low, high], capsize=3)
        if min_kappa is not None:
            ax.axhline(min_kappa, color="black", linestyle="--", linewidth=1, label=f"rule: kappa ≥ {min_kappa:g}")
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(criteria)), [c.replace("_", "\n") for c in criteria])
        ax.set_title(name)
        ax.set_ylim(-1.05, 1.05)
    axes[0][0].set_ylabel("Cohen's kappa (95 % bootstrap interval)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the bars, hiding none
    fig.tight_layout()
    return fig


#: What the cost axes say about their prices: the course wrote them; no vendor charges them.
PRICE_NOTE = "prices written by the course"


def plot_cost_latency(reports: dict[str, EvaluationReport]) -> Figure:
    """Draw each run's generation cost in its own panel, then the measured latency of runs that measured it.

    Costs are tokens times the prices in ``fixtures/evaluator/prices.json``, which
    the course wrote. An authored run's tokens are estimates and its model has
    its own made-up price, so each run gets its own panel, its x range fitted to
    its own costs: the panels are not drawn on one axis as if their costs were
    comparable. The cost limit is stated in each panel's title with the count of
    descriptions above it, rather than drawn as a line that would stretch the axis.
    """
    import matplotlib.pyplot as plt

    budget = next(iter(reports.values())).inputs.rubric.limits.max_cost_usd * 1e6
    fig, axes = plt.subplots(1, len(reports) + 1, figsize=(4.6 * (len(reports) + 1), 3.6), squeeze=False)
    latency_ax = axes[0][-1]
    unmeasured = []
    for cost_ax, (name, report) in zip(axes[0], reports.items(), strict=False):
        calls = [g.call for g in report.runs.generation.generations]
        costs = [c.cost_usd * 1e6 for c in calls]
        cost_ax.hist(costs, bins=12, alpha=0.8)
        over = sum(cost > budget for cost in costs)
        cost_ax.set_title(
            f"{name}: {calls[0].usage_source} tokens\ncost limit {budget:g} millionths of $: {over} of {len(costs)} above it",
            fontsize=9,
        )
        cost_ax.set_xlabel(f"cost per description (millionths of $,\n{PRICE_NOTE})", fontsize=8)
        cost_ax.set_ylabel("descriptions")
        latencies: list[Any] = [c.latency_s for c in calls if c.latency_s is not None]
        if latencies:
            latency_ax.hist(latencies, bins=12, alpha=0.6, label=name)
        else:
            unmeasured.append(name)
    latency_ax.set_xlabel("measured generation latency (s)")
    title = "measured latency"
    if unmeasured:
        title += f" ({', '.join(unmeasured)}: none measured)"
    latency_ax.set_title(title, fontsize=9)
    if latency_ax.get_legend_handles_labels()[0]:
        latency_ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
