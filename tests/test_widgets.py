import re
from html import unescape

from labkit.traces import Trace
from labkit.widgets import STATUS_COLOURS, TraceViewer, event_html, event_status


def _refused_trace():
    trace = Trace()
    trace.emit("request_accepted", question="q")
    trace.emit(
        "replay_refused",
        error="no reply",
        diff=[{"path": "messages[0].content", "recorded": "old <policy>", "actual": "new"}],
    )
    return trace


def _parts(viewer):
    head, rows = viewer.widget.children
    heading, show_all = head.children
    return heading, show_all, rows


def test_viewer_has_one_expandable_row_per_event_collapsed_at_first():
    heading, _, rows = _parts(TraceViewer(_refused_trace()))
    assert "2 events" in heading.value and "1 ok, 1 refused" in heading.value
    assert len(re.findall(r"<details class='lk-ev", rows.value)) == 2 and " open>" not in rows.value
    assert re.search(r"#2</span><span class='lk-name'>replay_refused</span>", rows.value)


def test_show_all_toggle_opens_and_closes_every_event():
    _, show_all, rows = _parts(TraceViewer(_refused_trace()))
    show_all.value = True
    assert rows.value.count(" open>") == 2
    show_all.value = False
    assert " open>" not in rows.value


def test_rows_are_coloured_by_status():
    trace = _refused_trace()
    trace.emit("tool_failed", error="boom")
    assert [event_status(e) for e in trace] == ["ok", "refused", "error"]
    rows = _parts(TraceViewer(trace))[2].value
    for status, colour in STATUS_COLOURS.items():
        assert f"lk-ev lk-{status}' style='--lk-c: {colour}'" in rows


def test_duration_bar_only_where_the_event_has_a_duration():
    trace = Trace()
    trace.emit("retrieve")
    trace.emit("generate", latency_ms=300)
    trace.emit("generate", latency_ms=75)
    rows = _parts(TraceViewer(trace))[2].value
    assert re.findall(r"<span style='width: ([0-9.]+)%'>", rows) == ["100.0", "25.0"]
    assert "300 ms" in rows and "75 ms" in rows and rows.count("class='lk-bar lk-timed'") == 2


def test_json_inside_a_string_is_shown_as_json_not_escaped():
    trace = Trace()
    trace.emit("generate", raw_reply='{"kind": "answer", "text": "two \\"quoted\\" words"}')
    html = event_html(trace.events[0])
    text = unescape(re.sub(r"<[^>]+>", "", html))
    assert '"raw_reply": {' in text and '"kind": "answer"' in text and '\\"kind' not in text


def test_refusal_shows_its_diff_escaped():
    html = event_html(_refused_trace().events[1])
    assert "messages[0].content" in html and "old &lt;policy&gt;" in html
    assert html.index("What differs") < html.index("<pre")


def test_viewer_plain_text_is_stable():
    bundle = TraceViewer(_refused_trace())._repr_mimebundle_()
    assert bundle["text/plain"] == "TraceViewer(2 events)"


def test_viewer_carries_a_static_html_form_with_a_show_all_box_and_no_widget_manager():
    one = TraceViewer(_refused_trace(), title="a <b> title")._repr_mimebundle_()
    two = TraceViewer(_refused_trace(), title="a <b> title")._repr_mimebundle_()
    page = one["text/html"]
    assert page == two["text/html"], "the static form is compared by nbval: it must not change between runs"
    assert page.count("<details class='lk-ev") == 2 and "a &lt;b&gt; title" in page
    assert "type='checkbox'" in page and "show all" in page and "<script" not in page
    assert "tex2jax_ignore" in page and "tex2jax_ignore" in _parts(TraceViewer(_refused_trace()))[2].value
    assert (
        one["application/vnd.jupyter.widget-view+json"]["model_id"]
        != two["application/vnd.jupyter.widget-view+json"]["model_id"]
    )


def _tree_ids(widget):
    ids = [widget.model_id]
    for part in ("layout", "style"):
        if getattr(widget, part, None) is not None:
            ids.append(getattr(widget, part).model_id)
    for child in getattr(widget, "children", ()):
        ids.extend(_tree_ids(child))
    return ids


def test_viewer_numbers_its_widgets_from_the_counter(monkeypatch):
    import itertools
    import uuid

    from labkit import widgets

    start = 10**9  # far from the numbers the other tests draw, so no id is opened twice
    monkeypatch.setattr(widgets, "_widget_numbers", itertools.count(start))
    ids = _tree_ids(TraceViewer(_refused_trace()).widget)
    end = next(widgets._widget_numbers)
    assert sorted(ids) == sorted(uuid.uuid5(widgets._WIDGET_NAMESPACE, str(n)).hex for n in range(start, end))
    assert len(set(ids)) == len(ids) > 5


def test_viewer_ids_do_not_repeat_within_a_kernel():
    one, two = _tree_ids(TraceViewer(_refused_trace()).widget), _tree_ids(TraceViewer(_refused_trace()).widget)
    assert not set(one) & set(two)


def test_viewer_restores_the_widget_construction_callback():
    import ipywidgets

    seen = []
    ipywidgets.Widget.on_widget_constructed(seen.append)
    try:
        TraceViewer(_refused_trace())
        assert ipywidgets.Widget._widget_construction_callback == seen.append
    finally:
        ipywidgets.Widget.on_widget_constructed(None)
    assert seen
