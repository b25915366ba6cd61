"""Plots the notebooks show; matplotlib is imported inside each function so `import labkit` stays fast."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def plot_route_confusion(matrices: Mapping[str, pd.DataFrame], *, title: str | None = None) -> Figure:
    """Draw one routing confusion matrix per run, side by side (rows expected, columns predicted).

    ``matrices`` maps a run's name to the frame that ``labkit.routing.grader.route_confusion`` returns.
    """
    import matplotlib.pyplot as plt
    from sklearn.metrics import ConfusionMatrixDisplay

    fig, axes = plt.subplots(1, len(matrices), figsize=(4.6 * len(matrices), 4.2), squeeze=False)
    for ax, (name, matrix) in zip(axes[0], matrices.items(), strict=True):
        display = ConfusionMatrixDisplay(matrix.to_numpy(), display_labels=list(matrix.columns))
        display.plot(ax=ax, cmap="Blues", colorbar=False, xticks_rotation=30)
        ax.set_title(name)
        ax.set_xlabel("predicted route")
        ax.set_ylabel("expected route")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
