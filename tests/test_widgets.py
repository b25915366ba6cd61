from labkit.traces import Trace
from labkit.widgets import TraceViewer, event_html


def _refused_trace():
    trace = Trace()
    trace.emit("request_accepted", question="q")
    trace.emit("replay_refused", error="no reply", diff=[{"path": "messages[0].content", "recorded": "old <policy>", "actual": "new"}])
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
