"""Notebook widgets: `TraceViewer` shows a trace as a timeline of expandable events.

The viewer is one block of HTML: a heading (title, how the events ended, the
lesson's verdict, where the answer came from), a "show all" control, and one
``<details>`` row per event whose one-line summary says what the event did and
which opens on the event's data. Every style is inline and uses only CSS
properties JupyterLab's HTML sanitizer keeps, because the outputs of a notebook
nobody has trusted (committed outputs, as a learner first opens them) are
sanitized: ``<style>`` elements, scripts and event handlers are removed there.

The same HTML is the widget's content (an ipywidgets ``HTML`` view, for a
notebook that runs or is trusted) and the output's ``text/html`` form (for an
untrusted notebook and for an HTML export), so the viewer looks and works the
same in each. "show all" is a ``<details>`` summary: where scripts run, a click
opens or closes every row in place; where the sanitizer removed the script,
the click opens the native disclosure, which holds every event already open.
"""

from __future__ import annotations

import html
import itertools
import uuid
from typing import Any, Literal

from labkit.traces import Trace, TraceEvent, display_json, event_summary

Status = Literal["ok", "refused", "error", "wrong"]

#: Colour of each event status: the row's left edge and its status label. ``wrong`` is the lesson's
#: verdict on the request's outcome (its last event), where the lesson judged the answer wrong.
STATUS_COLOURS: dict[Status, str] = {"ok": "#2e7d32", "refused": "#e65100", "error": "#c62828", "wrong": "#ad1457"}

#: Data keys that hold how long an event took, in milliseconds.
DURATION_KEYS = ("duration_ms", "latency_ms")

#: Outcome statuses that mean the request did not get through (a check rejected the reply, the agent gave up).
REFUSED_STATUSES = ("refused", "rejected", "invalid_output", "invalid_citation", "answer_rejected", "fallback")

# Inline styles, with only the properties (and value forms) JupyterLab's sanitizer keeps: no custom
# properties, no var(), no pseudo-elements. tests/test_widgets_in_browser.py checks none is dropped.
_FONT = "font-family: system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"
_MONO = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
_BOX_STYLE = f"{_FONT}; font-size: 13px; color: #1a1a1a; line-height: 1.45; max-width: 100%"
_HEAD_STYLE = "margin: 2px 0 4px 0"
_ROW_STYLE = "border: 1px solid #e0e0e0; border-left: 5px solid {colour}; border-radius: 3px; margin: 3px 0"
_LINE_STYLE = "cursor: pointer; padding: 3px 8px"
_SEQ_STYLE = "display: inline-block; min-width: 2.2em; text-align: right; color: #666666"
_NAME_STYLE = f"{_MONO}; font-weight: bold; margin-left: 6px"
_BADGE_STYLE = "color: #ffffff; background-color: {colour}; border-radius: 8px; padding: 0 7px; font-size: 11px"
_WHAT_STYLE = "color: #333333; margin-left: 8px"
_ORIGIN_STYLE = "color: #6a1b9a; font-style: italic; margin-left: 8px"
_DUR_STYLE = "float: right; color: #444444; margin-left: 12px"
_BAR_STYLE = (
    "display: inline-block; width: 90px; height: 8px; margin-right: 6px; border-radius: 4px; overflow: hidden; "
    "background-color: #eef1f4"
)
_BAR_FILL_STYLE = "display: block; height: 100%; width: {width:.1f}%; background-color: #5c7cbb"
_BODY_STYLE = "padding: 4px 10px 8px 28px; border-top: 1px solid #eeeeee"
_PRE_STYLE = f"white-space: pre-wrap; overflow-wrap: break-word; margin: 0; font-size: 12px; line-height: 1.35; {_MONO}"
_CODE_BOX_STYLE = "background-color: #f7f8fa; padding: 6px 8px; border-radius: 3px"
_ALL_STYLE = "cursor: pointer; font-size: 12px; color: #37474f; margin: 2px 0 4px 0"
_TABLE_STYLE = "border-collapse: collapse; margin: 4px 0 8px 0"
_CELL_STYLE = (
    "text-align: left; vertical-align: top; border: 1px solid #dddddd; padding: 2px 6px; white-space: pre-wrap"
)

#: Where scripts run, "show all" opens or closes every row in place (and the disclosure never opens);
#: a sanitized page has no script, so the click opens the disclosure, which holds every row open.
_SHOW_ALL_SCRIPT = (
    "event.preventDefault(); const box = this.closest('.lk-trace'); const open = this.textContent === 'show all'; "
    "box.querySelectorAll('.lk-rows > details.lk-ev').forEach(d => { d.open = open; }); "
    "this.textContent = open ? 'collapse all' : 'show all';"
)


def event_status(event: TraceEvent) -> Status:
    """Return whether an event went through (``ok``), was refused or rejected, or failed with an error."""
    status = event.data.get("status")
    if event.kind.endswith(("_refused", "_rejected", "_invalid")) or event.kind == "fallback":
        return "refused"
    if status in REFUSED_STATUSES:
        return "refused"
    if "error" in event.kind or "failed" in event.kind or status in ("error", "failed"):
        return "error"
    return "ok"


def event_duration_ms(event: TraceEvent) -> float | None:
    """Return how long the event took in milliseconds, when its data says so."""
    for key in DURATION_KEYS:
        value = event.data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return None


def _table(title: str, diff: list[dict[str, Any]]) -> str:
    cell = f"<td style='{_CELL_STYLE}'>"
    rows = "".join(
        f"<tr>{cell}<code>{html.escape(str(d.get('path')))}</code></td>"
        f"{cell}{html.escape(str(d.get('recorded')))}</td>{cell}{html.escape(str(d.get('actual')))}</td></tr>"
        for d in diff
    )
    head = "".join(f"<th style='{_CELL_STYLE}'>{name}</th>" for name in ("field", "recorded", "this request"))
    return (
        f"<p><b>{html.escape(title)}</b></p><table class='lk-diff' style='{_TABLE_STYLE}'><tr>{head}</tr>{rows}</table>"
    )


def json_html(text: str) -> str:
    """Return JSON text as syntax-coloured HTML with inline colours, wrapping long lines."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import JsonLexer

    formatter = HtmlFormatter(noclasses=True, nobackground=True, prestyles=_PRE_STYLE, cssstyles=_CODE_BOX_STYLE)
    return highlight(text, JsonLexer(), formatter)


def event_html(event: TraceEvent) -> str:
    """Return the HTML body shown when an event is expanded: origin, diffs and hints first, then the data."""
    parts = []
    if isinstance(event.data.get("origin"), str):  # an answer that did not come from the course's runs
        parts.append(f"<p class='lk-origin' style='{_ORIGIN_STYLE}'><b>{html.escape(event.data['origin'])}</b></p>")
    if event.data.get("diff"):
        parts.append(_table("What differs from the nearest recorded request", event.data["diff"]))
    if event.data.get("your_change"):
        parts.append(_table("Your change, against the nearest recorded request", event.data["your_change"]))
    parts.extend(f"<p>{html.escape(str(hint))}</p>" for hint in event.data.get("hints") or [])
    parts.append(json_html(display_json(event)))
    return "".join(parts)


def _badge(text: str, colour: str, css_class: str) -> str:
    return f"<span class='{css_class}' style='{_BADGE_STYLE.format(colour=colour)}'>{html.escape(text)}</span>"


def event_row(
    event: TraceEvent, *, status: Status | None = None, longest_ms: float | None = None, open_: bool = False
) -> str:
    """Return one timeline row: number, kind, status, what the event did, duration, and its data when expanded."""
    status = status or event_status(event)
    colour = STATUS_COLOURS[status]
    duration, timing = event_duration_ms(event), ""
    if duration is not None:
        width = 100.0 * duration / longest_ms if longest_ms else 0.0
        timing = (
            f"<span class='lk-dur' style='{_DUR_STYLE}'><span class='lk-bar' style='{_BAR_STYLE}'>"
            f"<span style='{_BAR_FILL_STYLE.format(width=width)}'></span></span>{duration:g} ms</span>"
        )
    label = event.data.get("origin")
    origin = (
        f"<span class='lk-origin' style='{_ORIGIN_STYLE}'>{html.escape(label)}</span>" if isinstance(label, str) else ""
    )
    return (
        f"<details class='lk-ev lk-{status}' style='{_ROW_STYLE.format(colour=colour)}'{' open' if open_ else ''}>"
        f"<summary class='lk-line' style='{_LINE_STYLE}'>{timing}"
        f"<span class='lk-seq' style='{_SEQ_STYLE}'>#{event.sequence}</span>"
        f"<span class='lk-name' style='{_NAME_STYLE}'>{html.escape(event.kind)}</span> "
        f"{_badge(status, colour, 'lk-status')}"
        f"<span class='lk-what' style='{_WHAT_STYLE}'>{html.escape(event_summary(event))}</span>{origin}"
        f"</summary><div class='lk-body' style='{_BODY_STYLE}'>{event_html(event)}</div></details>"
    )


def event_statuses(trace: Trace, *, passed: bool | None = None) -> list[Status]:
    """Return each event's status; the last event is ``wrong`` when the lesson judged the outcome wrong."""
    statuses = [event_status(e) for e in trace]
    if passed is False and statuses and statuses[-1] == "ok":
        statuses[-1] = "wrong"
    return statuses


def _rows(trace: Trace, statuses: list[Status], *, open_: bool) -> str:
    durations = [d for d in map(event_duration_ms, trace) if d is not None]
    longest = max(durations, default=None)
    return "".join(
        event_row(e, status=s, longest_ms=longest, open_=open_) for e, s in zip(trace, statuses, strict=True)
    )


def origin_label(trace: Trace, origin: str | None = None) -> str | None:
    """Return where the trace's answer came from: ``origin`` if given, else an event's own label, else its run."""
    if origin:
        return origin
    labelled = next((e.data["origin"] for e in trace if isinstance(e.data.get("origin"), str)), None)
    if labelled:
        return str(labelled)
    run = next((e.data["run_id"] for e in trace if isinstance(e.data.get("run_id"), str)), None)
    return f"replayed from {run}" if run else None


def heading_html(
    trace: Trace, title: str, *, passed: bool | None = None, reason: str | None = None, origin: str | None = None
) -> str:
    """Return the viewer's heading: title, how many events ended in each status, the verdict and the origin."""
    statuses = event_statuses(trace, passed=passed)
    tally = ", ".join(f"{statuses.count(s)} {s}" for s in STATUS_COLOURS if statuses.count(s))
    parts = [f"<b>{html.escape(title)}</b>: {len(trace)} events" + (f" ({tally})" if tally else "")]
    if passed is not None:
        verdict = _badge(
            "judged right" if passed else "judged wrong", STATUS_COLOURS["ok" if passed else "wrong"], "lk-verdict"
        )
        parts.append(verdict + (f" <span class='lk-reason'>{html.escape(reason)}</span>" if reason else ""))
    where = origin_label(trace, origin)
    if where:
        parts.append(f"<span class='lk-origin' style='{_ORIGIN_STYLE}'>{html.escape(where)}</span>")
    return " ".join(parts)


#: The viewer's box; the last two classes keep MathJax off dollar signs in the data.
_BOX = "lk-trace tex2jax_ignore mathjax_ignore"


def viewer_html(
    trace: Trace,
    title: str = "Request trace",
    *,
    passed: bool | None = None,
    reason: str | None = None,
    origin: str | None = None,
) -> str:
    """Return the whole viewer as one HTML block that needs no style sheet, no kernel and no widget manager."""
    statuses = event_statuses(trace, passed=passed)
    head = (
        f"<div class='lk-trace-head' style='{_HEAD_STYLE}'>"
        f"{heading_html(trace, title, passed=passed, reason=reason, origin=origin)}</div>"
    )
    show_all = (
        f"<details class='lk-all'><summary class='lk-all-toggle' style='{_ALL_STYLE}' "
        f'onclick="{_SHOW_ALL_SCRIPT}">show all</summary>'
        f"<div class='lk-all-rows'>{_rows(trace, statuses, open_=True)}</div></details>"
    )
    rows = f"<div class='lk-rows'>{_rows(trace, statuses, open_=False)}</div>"
    return f"<div class='{_BOX}' style='{_BOX_STYLE}'>{head}{show_all}{rows}</div>"


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

    ``passed`` is the lesson's verdict on the request's outcome, where it has one
    (`labkit.system.golden.passed` for a golden case): a wrong answer colours the
    last event and the heading, so an answer the lesson judges wrong never looks
    all green. ``reason`` says why in a few words; ``origin`` says where the
    answer came from (by default an event's own ``origin`` label, else the run
    the first event names).

    In a notebook the viewer displays itself. Widget views are not compared by
    nbval, so a lesson prints `Trace.summary` next to it. Its widgets get
    numbered ids, so re-running a notebook saves the same bytes.
    """

    def __init__(
        self,
        trace: Trace,
        *,
        title: str = "Request trace",
        passed: bool | None = None,
        reason: str | None = None,
        origin: str | None = None,
    ) -> None:
        self.trace = trace
        self.title = title
        self.html = viewer_html(trace, title, passed=passed, reason=reason, origin=origin)
        self.widget = self._build()

    def _build(self) -> Any:
        import ipywidgets as widgets

        previous = widgets.Widget._widget_construction_callback
        widgets.Widget.on_widget_constructed(_numbered_ids(previous))
        try:
            content = widgets.HTML(self.html, layout=widgets.Layout(width="100%"))
            box = widgets.VBox([content], layout=widgets.Layout(width="100%"))
            box.add_class("lk-trace-viewer")
            return box
        finally:
            widgets.Widget.on_widget_constructed(previous)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):  # stable text for nbval and terminals; the same HTML for untrusted pages
            bundle["text/plain"] = repr(self)
            bundle["text/html"] = self.html
        return bundle

    def __repr__(self) -> str:
        return f"TraceViewer({len(self.trace)} events)"
