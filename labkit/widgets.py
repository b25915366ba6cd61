"""Notebook widgets: `TraceViewer` shows a trace as a timeline of expandable events."""

from __future__ import annotations

import html
import itertools
import uuid
from typing import Any

from labkit.traces import Trace, TraceEvent, dumps_event_data

_COLOURS = {
    "request_rejected": "#b00020",
    "retrieval_refused": "#b00020",
    "replay_refused": "#b00020",
    "reply_rejected": "#b00020",
    "model_skipped": "#8a6d00",
    "request_completed": "#1b5e20",
}


def _diff_table(diff: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td><code>{html.escape(str(d.get('path')))}</code></td>"
        f"<td>{html.escape(str(d.get('recorded')))}</td><td>{html.escape(str(d.get('actual')))}</td></tr>"
        for d in diff
    )
    return (
        "<p><b>What differs from the nearest recorded request</b></p>"
        "<table><tr><th>field</th><th>recorded</th><th>this request</th></tr>" + rows + "</table>"
    )


def event_html(event: TraceEvent) -> str:
    """Return the HTML body shown when an event is expanded (a refusal shows its diff first)."""
    parts = []
    if event.data.get("diff"):
        parts.append(_diff_table(event.data["diff"]))
    parts.append(f"<pre style='white-space: pre-wrap'>{html.escape(dumps_event_data(event))}</pre>")
    return "".join(parts)


def event_title(event: TraceEvent) -> str:
    """Return the one-line title of an event in the timeline."""
    return f"#{event.sequence}  {event.kind}"


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
    """A timeline of a trace's events; each one expands to show its data.

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
        items = []
        for event in self.trace:
            colour = _COLOURS.get(event.kind, "#1f3a93")
            body = widgets.HTML(event_html(event))
            accordion = widgets.Accordion(children=[body])
            accordion.set_title(0, event_title(event))
            accordion.selected_index = None
            marker = widgets.HTML(f"<span style='color:{colour}; font-size:18px'>&#9679;</span>")
            items.append(widgets.HBox([marker, accordion], layout=widgets.Layout(width="100%")))
        header = widgets.HTML(f"<b>{html.escape(self.title)}</b>: {len(self.trace)} events")
        return widgets.VBox([header, *items])

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):  # a stable plain-text form, for nbval and for terminals
            bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"TraceViewer({len(self.trace)} events)"
