"""Notebook widgets: `TraceViewer` shows a trace as a timeline of expandable events.

The timeline is HTML (one ``<details>`` row per event) inside an ipywidgets view,
with a "show all" toggle. The same HTML, with a self-contained toggle, is the
output's ``text/html`` form, which an HTML export shows when it carries no
widget manager: the viewer looks the same in JupyterLab and in an exported page.
"""

from __future__ import annotations

import html
import itertools
import uuid
from typing import Any, Literal

from labkit.traces import Trace, TraceEvent, dumps_event_data

Status = Literal["ok", "refused", "error"]

#: Colour of each event status: the row's left edge and its status label.
STATUS_COLOURS: dict[Status, str] = {"ok": "#2e7d32", "refused": "#e65100", "error": "#c62828"}

#: Data keys that hold how long an event took, in milliseconds.
DURATION_KEYS = ("duration_ms", "latency_ms")

_CSS = """<style>
.lk-trace { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px; width: 100%;
  box-sizing: border-box; color: #1a1a1a; }
.lk-trace-head { display: flex; align-items: center; gap: 12px; margin: 2px 0 6px; }
.lk-trace-head .lk-all { font-size: 12px; cursor: pointer; user-select: none; }
.lk-trace details.lk-ev { border: 1px solid #e0e0e0; border-left: 5px solid var(--lk-c); border-radius: 3px;
  margin: 3px 0; background: #fff; }
.lk-trace summary { display: flex; align-items: center; gap: 10px; padding: 4px 8px; cursor: pointer;
  list-style: none; }
.lk-trace summary::-webkit-details-marker { display: none; }
.lk-trace summary::before { content: "\\25B8"; color: #666; width: 0.8em; }
.lk-trace details[open] > summary::before { content: "\\25BE"; }
.lk-trace .lk-seq { color: #666; min-width: 2.2em; text-align: right; font-variant-numeric: tabular-nums; }
.lk-trace .lk-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; min-width: 14em; }
.lk-trace .lk-status { color: #fff; background: var(--lk-c); border-radius: 8px; padding: 0 7px; font-size: 11px; }
.lk-trace .lk-origin { color: #6a1b9a; font-size: 12px; font-style: italic; }
.lk-trace .lk-bar { flex: 1; height: 8px; border-radius: 4px; overflow: hidden; }
.lk-trace .lk-bar.lk-timed { background: #eef1f4; }
.lk-trace .lk-bar > span { display: block; height: 100%; background: #5c7cbb; }
.lk-trace .lk-dur { min-width: 6em; text-align: right; color: #444; font-variant-numeric: tabular-nums; }
.lk-trace .lk-body { padding: 4px 10px 8px 28px; border-top: 1px solid #eee; }
.lk-trace .lk-body pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font-size: 12px;
  font-family: var(--jp-code-font-family, ui-monospace, monospace) !important;
  line-height: 1.35; }
.lk-trace .lk-body .highlight { background: #f7f8fa !important; padding: 6px 8px; border-radius: 3px; }
.lk-trace table.lk-diff { border-collapse: collapse; margin: 4px 0 8px; }
.lk-trace table.lk-diff th, .lk-trace table.lk-diff td { text-align: left; vertical-align: top;
  border: 1px solid #ddd; padding: 2px 6px; white-space: pre-wrap; }
</style>"""

_SHOW_ALL_SCRIPT = (
    "this.closest('.lk-trace').querySelectorAll('details.lk-ev').forEach(d => { d.open = this.checked; })"
)


def event_status(event: TraceEvent) -> Status:
    """Return whether an event went through (``ok``), was refused or rejected, or failed with an error."""
    if event.kind.endswith(("_refused", "_rejected")) or event.data.get("status") in ("refused", "rejected"):
        return "refused"
    if "error" in event.kind or "failed" in event.kind or event.data.get("status") in ("error", "failed"):
        return "error"
    return "ok"


def event_duration_ms(event: TraceEvent) -> float | None:
    """Return how long the event took in milliseconds, when its data says so."""
    for key in DURATION_KEYS:
        value = event.data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return None


def _diff_table(diff: list[dict[str, Any]], title: str = "What differs from the nearest recorded request") -> str:
    rows = "".join(
        f"<tr><td><code>{html.escape(str(d.get('path')))}</code></td>"
        f"<td>{html.escape(str(d.get('recorded')))}</td><td>{html.escape(str(d.get('actual')))}</td></tr>"
        for d in diff
    )
    return (
        f"<p><b>{html.escape(title)}</b></p>"
        "<table class='lk-diff'><tr><th>field</th><th>recorded</th><th>this request</th></tr>" + rows + "</table>"
    )


def json_html(text: str) -> str:
    """Return JSON text as syntax-coloured HTML (inline colours, so it looks the same on any page)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import JsonLexer

    return highlight(text, JsonLexer(), HtmlFormatter(noclasses=True, nobackground=True))


def event_html(event: TraceEvent) -> str:
    """Return the HTML body shown when an event is expanded (a refusal shows its diff first)."""
    parts = []
    if isinstance(event.data.get("origin"), str):  # an answer explore mode got from a live model
        parts.append(f"<p class='lk-origin'><b>{html.escape(event.data['origin'])}</b></p>")
    if event.data.get("diff"):
        parts.append(_diff_table(event.data["diff"]))
    if event.data.get("your_change"):
        parts.append(_diff_table(event.data["your_change"], "Your change, against the nearest recorded request"))
    parts.extend(f"<p>{html.escape(hint)}</p>" for hint in event.data.get("hints") or [])
    parts.append(json_html(dumps_event_data(event)))
    return "".join(parts)


def event_title(event: TraceEvent) -> str:
    """Return the one-line title of an event in the timeline."""
    return f"#{event.sequence}  {event.kind}"


def event_row(event: TraceEvent, *, longest_ms: float | None = None, open_: bool = False) -> str:
    """Return one timeline row: number, name, status, duration bar, and the data when expanded."""
    status = event_status(event)
    duration = event_duration_ms(event)
    bar, dur = "<span class='lk-bar'></span>", ""
    if duration is not None:
        width = 100.0 * duration / longest_ms if longest_ms else 0.0
        bar = f"<span class='lk-bar lk-timed'><span style='width: {width:.1f}%'></span></span>"
        dur = f"{duration:g} ms"
    label = event.data.get("origin")
    origin = f"<span class='lk-origin'>{html.escape(label)}</span>" if isinstance(label, str) else ""
    return (
        f"<details class='lk-ev lk-{status}' style='--lk-c: {STATUS_COLOURS[status]}'"
        f"{' open' if open_ else ''}><summary>"
        f"<span class='lk-seq'>#{event.sequence}</span><span class='lk-name'>{html.escape(event.kind)}</span>"
        f"<span class='lk-status'>{status}</span>{origin}{bar}<span class='lk-dur'>{dur}</span>"
        f"</summary><div class='lk-body'>{event_html(event)}</div></details>"
    )


#: The viewer's box; the last two classes keep MathJax off dollar signs in the data.
_BOX = "lk-trace tex2jax_ignore mathjax_ignore"


def _rows(trace: Trace, *, open_: bool) -> str:
    durations = [d for d in map(event_duration_ms, trace) if d is not None]
    longest = max(durations, default=None)
    return "".join(event_row(e, longest_ms=longest, open_=open_) for e in trace)


def timeline_html(trace: Trace, *, open_: bool = False) -> str:
    """Return the rows of a trace's timeline, with the viewer's style sheet."""
    return f"{_CSS}<div class='{_BOX}'><div class='lk-rows'>{_rows(trace, open_=open_)}</div></div>"


def heading_html(trace: Trace, title: str) -> str:
    """Return the viewer's heading: its title and how many events ended in each status."""
    counts = {status: 0 for status in STATUS_COLOURS}
    for event in trace:
        counts[event_status(event)] += 1
    tally = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    return f"<b>{html.escape(title)}</b>: {len(trace)} events" + (f" ({tally})" if tally else "")


def static_html(trace: Trace, title: str) -> str:
    """Return the whole viewer as one static HTML block whose "show all" box needs no kernel."""
    head = (
        f"<div class='lk-trace-head'><span>{heading_html(trace, title)}</span>"
        f"<label class='lk-all'><input type='checkbox' onchange=\"{_SHOW_ALL_SCRIPT}\"> show all</label></div>"
    )
    return f"{_CSS}<div class='{_BOX}'>{head}<div class='lk-rows'>{_rows(trace, open_=False)}</div></div>"


#: Widget ids come from this namespace and a counter rather than random UUIDs, so that a notebook
#: executed twice saves the same bytes (nbconvert stores every widget's id).
_WIDGET_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "labkit.widgets.TraceViewer")
_widget_numbers = itertools.count(1)


def _numbered_ids(previous: Any) -> Any:
    def name(widget: Any) -> None:
        if widget._model_id is None:  # runs before the widget opens its comm, which takes this id
            widget._model_id = uuid.uuid5(_WIDGET_NAMESPACE, str(next(_widget_numbers))).hex
        if callable(previous):
            previous(widget)

    return name


class TraceViewer:
    """A timeline of a trace's events, one row each; a row expands to show the event's data.

    In a notebook the viewer displays itself. Widget views are not compared by
    nbval, so a lesson prints `Trace.summary` next to it. Its widgets get
    numbered ids, so re-running a notebook saves the same bytes.
    """

    def __init__(self, trace: Trace, *, title: str = "Request trace") -> None:
        self.trace = trace
        self.title = title
        self.widget = self._build()

    def _build(self) -> Any:
        import ipywidgets as widgets

        previous = widgets.Widget._widget_construction_callback
        widgets.Widget.on_widget_constructed(_numbered_ids(previous))
        try:
            return self._widgets(widgets)
        finally:
            widgets.Widget.on_widget_constructed(previous)

    def _widgets(self, widgets: Any) -> Any:
        heading = widgets.HTML(heading_html(self.trace, self.title))
        show_all = widgets.ToggleButton(
            value=False, description="show all", tooltip="expand or collapse every event", icon="expand"
        )
        show_all.layout.width = "auto"
        show_all.layout.margin = "0 0 0 12px"
        rows = widgets.HTML(timeline_html(self.trace), layout=widgets.Layout(width="100%"))

        def toggle(change: dict[str, Any]) -> None:
            rows.value = timeline_html(self.trace, open_=bool(change["new"]))

        show_all.observe(toggle, names="value")
        head = widgets.HBox([heading, show_all], layout=widgets.Layout(align_items="center"))
        box = widgets.VBox([head, rows], layout=widgets.Layout(width="100%"))
        box.add_class("lk-trace-viewer")
        return box

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):  # stable text for nbval and terminals; static HTML for exported pages
            bundle["text/plain"] = repr(self)
            bundle["text/html"] = static_html(self.trace, self.title)
        return bundle

    def __repr__(self) -> str:
        return f"TraceViewer({len(self.trace)} events)"
