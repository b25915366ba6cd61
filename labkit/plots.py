"""Plots the notebooks show; matplotlib is imported inside each function so `import labkit` stays fast."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def plot_route_confusion(matrices: Mapping[str, pd.DataFrame], *, title: str | None = None) -> Figure:
    """Draw one routing confusion matrix per run, side by side (rows expected, columns predicted).

    A frame may have more columns than rows (a predicted label no case expects); each axis then keeps its own labels.

    ``matrices`` maps a run's name to the frame that ``labkit.routing.grader.route_confusion`` returns.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from sklearn.metrics import ConfusionMatrixDisplay

    fig, axes = plt.subplots(1, len(matrices), figsize=(4.6 * len(matrices), 4.2), squeeze=False)
    for ax, (name, matrix) in zip(axes[0], matrices.items(), strict=True):
        if list(matrix.index) == list(matrix.columns):
            display = ConfusionMatrixDisplay(matrix.to_numpy(), display_labels=list(matrix.columns))
            display.plot(ax=ax, cmap="Blues", colorbar=False, xticks_rotation=30)
        else:  # more columns than rows (an "invalid" prediction no case expects): label each axis on its own
            values = matrix.to_numpy()
            ax.imshow(values, cmap="Blues")
            for (row, col), value in np.ndenumerate(values):
                dark = value > values.max() / 2
                ax.text(col, row, str(value), ha="center", va="center", color="white" if dark else "black")
            ax.set_xticks(range(values.shape[1]), list(matrix.columns), rotation=30, ha="right")
            ax.set_yticks(range(values.shape[0]), list(matrix.index))
        ax.set_title(name)
        ax.set_xlabel("predicted route")
        ax.set_ylabel("expected route")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
