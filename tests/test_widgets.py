from labkit.traces import Trace
from labkit.widgets import TraceViewer, event_html


def _refused_trace():
    trace = Trace()
    trace.emit("request_accepted", question="q")
    trace.emit(
        "replay_refused",
        error="no reply",
        diff=[{"path": "messages[0].content", "recorded": "old <policy>", "actual": "new"}],
    )
    return trace


def test_viewer_has_one_expandable_row_per_event_collapsed_at_first():
    viewer = TraceViewer(_refused_trace())
    header, *rows = viewer.widget.children
    assert "2 events" in header.value and len(rows) == 2
    accordion = rows[1].children[1]
    assert accordion.get_title(0) == "#2  replay_refused" and accordion.selected_index is None


def test_refusal_shows_its_diff_escaped():
    html = event_html(_refused_trace().events[1])
    assert "messages[0].content" in html and "old &lt;policy&gt;" in html
    assert html.index("What differs") < html.index("<pre")


def test_viewer_plain_text_is_stable():
    bundle = TraceViewer(_refused_trace())._repr_mimebundle_()
    assert bundle["text/plain"] == "TraceViewer(2 events)"


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
