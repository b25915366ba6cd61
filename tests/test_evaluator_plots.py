"""Lesson 01's plots draw from the report's numbers: one kappa bar per criterion and arrangement."""

import matplotlib

matplotlib.use("Agg")

from labkit.evaluator.plots import plot_agreement, plot_cost_latency
from labkit.evaluator.report import evaluate_run


def test_agreement_plot_has_one_bar_per_defined_kappa_and_cost_plot_states_the_limit():
    import matplotlib.pyplot as plt

    report = evaluate_run("01-evaluator-authored")
    fig = plot_agreement({"authored": report}, min_kappa=0.6)
    heights = sorted(round(p.get_height(), 6) for p in fig.axes[0].patches)
    assert heights == sorted(round(a.kappa, 6) for a in report.agreements if a.kappa is not None)
    fig2 = plot_cost_latency({"authored": report})
    limit = report.inputs.rubric.limits.max_cost_usd * 1e6
    assert f"cost limit {limit:g} millionths of $: 0 of 24 above it" in fig2.axes[0].get_title()
    plt.close("all")


def test_cost_plot_gives_each_run_its_own_panel_labelled_with_the_course_prices():
    import matplotlib.pyplot as plt

    from labkit.evaluator.plots import PRICE_NOTE

    authored = evaluate_run("01-evaluator-authored")
    captured = evaluate_run("01-evaluator-smollm2")
    fig = plot_cost_latency({"authored": authored, "captured": captured})
    cost_axes = fig.axes[:2]
    assert [len(ax.patches) > 0 for ax in cost_axes] == [True, True]
    assert all(PRICE_NOTE in ax.get_xlabel() for ax in cost_axes)
    for ax, report in zip(cost_axes, (authored, captured), strict=True):
        costs = [g.call.cost_usd * 1e6 for g in report.runs.generation.generations]
        low, high = ax.get_xlim()
        assert low >= min(costs) - (max(costs) - min(costs)) and high <= 2 * max(costs)  # its own data's range
    assert "authored: none measured" in fig.axes[2].get_title()
    assert "captured" not in fig.axes[2].get_title()
    plt.close("all")


def test_agreement_plot_names_the_human_human_bars_rater_against_rater():
    import matplotlib.pyplot as plt

    fig = plot_agreement({"authored": evaluate_run("01-evaluator-authored")}, min_kappa=0.6)
    legend = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert "rater A vs rater B (authored labels)" in legend
    assert [name for name in legend if "adjudicated" in name] == [
        "judge per criterion vs adjudicated",
        "judge bundled vs adjudicated",
        "code checks vs adjudicated (authored texts)",
    ]
    assert "adjudicated" not in fig.axes[0].get_ylabel()
    plt.close("all")
