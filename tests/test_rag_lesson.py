"""What notebook 02 part B draws: the page-hit plot holds exactly the numbers of its table."""

import matplotlib

matplotlib.use("Agg")

from labkit.rag.lesson import page_hit_grid, plot_page_hits
from labkit.rag.metrics import Experiment


def _experiments():
    hits = {1: [True, False, False, False], 3: [True, True, False, False], 5: [True, True, True, False]}
    return [
        Experiment(
            name="k",
            settings={"k": k, "chunk_size": size, "rerank": rerank},
            hits={f"q{i}": hit if rerank else (hit and i == 0) for i, hit in enumerate(row)},
        )
        for size in (300, 800)
        for rerank in (False, True)
        for k, row in hits.items()
    ]


def test_the_page_hit_plot_draws_one_line_per_setting_with_the_tables_numbers():
    import matplotlib.pyplot as plt

    experiments = _experiments()
    fig = plot_page_hits(experiments)
    grid = page_hit_grid(experiments)
    drawn = {line.get_label(): list(zip(line.get_xdata(), line.get_ydata(), strict=True)) for line in fig.axes[0].lines}
    expected = {
        f"chunk {size}, rerank {'on' if rerank else 'off'}": [(k, grid.loc[(size, rerank), k]) for k in grid.columns]
        for size, rerank in grid.index
    }
    assert drawn == expected
    assert drawn["chunk 800, rerank on"] == [(1, 0.25), (3, 0.5), (5, 0.75)]
    assert drawn["chunk 800, rerank off"] == [(1, 0.25), (3, 0.25), (5, 0.25)]
    plt.close(fig)
