"""The report card of `labkit evaluate` as one offline HTML page: the table, each lesson's rule and verdict, a plot each.

Each lesson's plot puts the candidate beside the baseline and the authored ideal
(one bar, labelled so, when the baseline *is* the ideal, as with ``--committed``).
Measures of different kinds get their own panel: shares on 0 to 1, scores such
as Cohen's kappa on -1 to 1 (negative values drawn left of zero), counts on their
own scale, and measures where lower is better apart from the others and marked.
Every bar is labelled with the value the table prints, so ``0/3`` reads as zero
and a measure with nothing to measure reads "not gradable", never as a gap.
"""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from labkit.scorecard import Card, Measure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from labkit.course.evaluate import Evaluation, LessonCard

Kind = Literal["share", "score", "count"]

#: The colour of each side of a plot (colour-blind-safe; the candidate darkest).
SIDE_COLOURS = {"candidate": "#1f4e79", "baseline": "#e69f00", "ideal": "#009e73"}


@dataclass(frozen=True)
class Side:
    """One bar per measure in a lesson's plot: whose run it is and its label in the legend."""

    key: str
    label: str
    card: Card | None


def sides(lesson: LessonCard, *, baseline: str) -> list[Side]:
    """Return the runs a lesson's plot compares; the baseline and the ideal are one side when they are one run."""
    candidate = Side("candidate", "candidate", lesson.candidate)
    if lesson.baseline is lesson.ideal:
        return [candidate, Side("ideal", f"baseline = authored ideal (one run, {baseline})", lesson.ideal)]
    return [
        candidate,
        Side("baseline", f"baseline ({baseline} run)", lesson.baseline),
        Side("ideal", "authored ideal", lesson.ideal),
    ]


def measure_kind(measure: Measure) -> Kind:
    """Return how a measure is drawn: a ``share`` (``2/3``), a ``count`` (a whole number) or a ``score`` (kappa)."""
    if re.match(r"^\d+/\d+", measure.shown):
        return "share"
    if measure.value is not None and float(measure.value).is_integer() and re.fullmatch(r"-?\d+", measure.shown):
        return "count"
    return "score"


def panels(measures: list[Measure]) -> list[tuple[Kind, bool, list[str]]]:
    """Group measure names by kind and direction, in order: each group is one panel of the plot."""
    groups: dict[tuple[Kind, bool], list[str]] = {}
    for measure in measures:
        groups.setdefault((measure_kind(measure), measure.lower_is_better), []).append(measure.name)
    return [(kind, lower, names) for (kind, lower), names in groups.items()]


def _limits(kind: Kind, values: list[float]) -> tuple[float, float]:
    if kind == "share":
        return 0.0, 1.0
    if kind == "score":
        return min(-1.0, *values) if values and min(values) < 0 else -0.05, 1.0
    return 0.0, max(1.0, *values)


def _panel_title(kind: Kind, lower: bool) -> str:
    what = {"share": "share (0 to 1)", "score": "score (-1 to 1)", "count": "count"}[kind]
    return f"{what}: lower is better ▼" if lower else f"{what}: higher is better ▲"


def lesson_figure(lesson: LessonCard, *, baseline: str) -> Figure:
    """Draw the lesson's bar chart: one panel per kind and direction of measure, one bar per side, each labelled."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    compared = sides(lesson, baseline=baseline)
    measures = (lesson.candidate or lesson.baseline or lesson.ideal or Card([])).measures
    groups = panels(measures)
    heights = [0.4 + 0.3 * len(compared) * len(names) for _, _, names in groups] or [1.0]
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(8.6, 0.6 + 0.55 * len(heights) + sum(heights)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    bar = 0.8 / len(compared)
    for ax, (kind, lower, names) in zip(axes[:, 0], groups, strict=False):
        values: list[float] = []
        for i, side in enumerate(compared):
            for j, name in enumerate(names):
                found = next((m for m in side.card.measures if m.name == name), None) if side.card else None
                y = j + i * bar
                if found is None or found.value is None:
                    ax.text(
                        0, y, "  " + (found.shown if found else "not run"), va="center", color="#666666", style="italic"
                    )
                    continue
                values.append(found.value)
                ax.barh(y, found.value, height=bar * 0.92, color=SIDE_COLOURS[side.key])
                ax.plot([0], [y], marker="|", markersize=9, color=SIDE_COLOURS[side.key])  # a zero still shows
                ax.text(found.value, y, f" {found.shown} ", va="center", ha="left" if found.value >= 0 else "right")
        low, high = _limits(kind, values)
        ax.set_xlim(low, high + 0.18 * (high - low))  # room for the label right of the longest bar
        if kind == "count":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.set_xticks([t / 10 for t in range(round(low * 10), 11, 2 if low >= 0 else 5)])
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_yticks([j + bar * (len(compared) - 1) / 2 for j in range(len(names))], names, fontsize=10)
        ax.invert_yaxis()
        ax.set_title(_panel_title(kind, lower), fontsize=10, loc="left", color="#b71c1c" if lower else "#1a1a1a")
        ax.tick_params(axis="x", labelsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=SIDE_COLOURS[side.key]) for side in compared]
    axes[0, 0].legend(
        handles,
        [side.label for side in compared],
        loc="lower left",
        bbox_to_anchor=(0, 1.12),
        ncol=len(compared),
        fontsize=11,
        frameon=False,
        borderaxespad=0,
    )
    fig.tight_layout()
    return fig


def plot_lesson(lesson: LessonCard, *, baseline: str) -> str:
    """Return `lesson_figure` as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = lesson_figure(lesson, baseline=baseline)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


_STYLE = (
    "body{font-family:sans-serif;max-width:64em;margin:2em auto;color:#1a1a1a}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}img{max-width:100%}"
)


def write_html(report: Evaluation, path: Path) -> Path:
    """Write the report as one self-contained HTML page (table, rules, one plot per lesson); no external URL."""
    from labkit.course.evaluate import table_rows
    from labkit.paths import atomic_write

    rows = table_rows(report)
    names = ("lesson", "measure", "candidate", f"baseline ({report.baseline})", "authored ideal", "rule")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in names)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(r[c])}</td>" for c in r) + "</tr>" for r in rows)
    same = report.lessons and all(lesson.baseline is lesson.ideal for lesson in report.lessons)
    note = "<p>The baseline is the authored ideal itself: one run, drawn as one bar labelled so.</p>" if same else ""
    sections = []
    for lesson in report.lessons:
        reason = lesson.error or (lesson.verdict.reason if lesson.verdict else "")
        image = (
            ""
            if lesson.error
            else f"<img alt='{html.escape(lesson.lesson)} {html.escape(lesson.title)}: candidate, baseline and ideal' "
            f"src='data:image/png;base64,{plot_lesson(lesson, baseline=report.baseline)}'>"
        )
        sections.append(
            f"<h2>{html.escape(lesson.lesson)} {html.escape(lesson.title)}</h2>"
            f"<p><b>Rule:</b> {html.escape(lesson.rule)}.<br><b>Verdict:</b> {html.escape(reason)}</p>{image}"
        )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>labkit report card</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>Report card: {html.escape(report.model)}</h1>"
        f"<p>Baseline: {html.escape(report.baseline)}. Exit code {report.exit_code}.</p>{note}"
        f"<table><tr>{head}</tr>{body}</table>{''.join(sections)}</body></html>"
    )
    return atomic_write(path, page)
