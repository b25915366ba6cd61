import re
from html import unescape

from labkit.traces import Trace
from labkit.widgets import STATUS_COLOURS, TraceViewer, event_html, event_status, viewer_html

# The CSS properties JupyterLab 4's HTML sanitizer keeps in a style attribute (its `allowedStyles`, from
# @jupyterlab/apputils' sanitizer): anything else is dropped from an untrusted notebook's outputs.
SANITIZER_PROPERTIES = {
    "background", "background-color", "border", "border-bottom", "border-collapse", "border-color", "border-left",
    "border-radius", "border-right", "border-style", "border-top", "border-width", "box-sizing", "color", "cursor",
    "display", "float", "font", "font-family", "font-size", "font-style", "font-weight", "height", "line-height",
    "list-style", "margin", "margin-bottom", "margin-left", "margin-right", "margin-top", "max-width", "min-width",
    "overflow", "overflow-wrap", "padding", "padding-left", "padding-right", "text-align", "vertical-align",
    "white-space", "width", "word-break",
}  # fmt: skip


def _refused_trace():
    trace = Trace()
    trace.emit("request_accepted", question="q", run_id="02-rag-authored")
    trace.emit(
        "replay_refused",
        error="no reply",
        diff=[{"path": "messages[0].content", "recorded": "old <policy>", "actual": "new"}],
    )
    return trace


def _rows(page, where="lk-rows"):
    part = page.split(f"<div class='{where}'>")[1]
    if where == "lk-all-rows":
        part = part.split("<div class='lk-rows'>")[0]
    return re.findall(r"<details class='lk-ev[^>]*>", part)


def test_viewer_has_one_expandable_row_per_event_collapsed_at_first():
    page = viewer_html(_refused_trace(), "t")
    rows = _rows(page)
    assert len(rows) == 2 and not any(" open>" in row for row in rows)
    assert re.search(r"#2</span><span class='lk-name'[^>]*>replay_refused</span>", page)
    assert "2 events (1 ok, 1 refused)" in page


def test_show_all_is_one_control_that_works_with_or_without_scripts():
    page = viewer_html(_refused_trace(), "t")
    assert page.count("show all</summary>") == 1 and "<input" not in page and "<button" not in page
    assert all(" open>" in row for row in _rows(page, "lk-all-rows")), (
        "without scripts, the disclosure holds every row open"
    )
    handler = re.search(r'onclick="([^"]*)">show all', page).group(1)
    assert "preventDefault" in handler and ".lk-rows > details.lk-ev" in handler and "d.open = open" in handler


def test_the_widget_and_the_untrusted_html_form_are_the_same_viewer():
    viewer = TraceViewer(_refused_trace(), title="a <b> title")
    (content,) = viewer.widget.children
    bundle = viewer._repr_mimebundle_()
    assert content.value == bundle["text/html"] == viewer_html(_refused_trace(), "a <b> title")
    assert "a &lt;b&gt; title" in content.value


def test_every_style_is_inline_and_survives_jupyterlabs_sanitizer():
    page = viewer_html(_refused_trace(), "t", passed=False, reason="r", origin="o")
    assert "<style" not in page and "<script" not in page and "var(" not in page and "--" not in page
    used = {
        declaration.split(":")[0].strip()
        for style in re.findall(r"style='([^']*)'", page) + re.findall(r'style="([^"]*)"', page)
        for declaration in style.split(";")
        if declaration.strip()
    }
    assert used and used <= SANITIZER_PROPERTIES, f"dropped when untrusted: {sorted(used - SANITIZER_PROPERTIES)}"


def test_rows_are_coloured_by_status():
    trace = _refused_trace()
    trace.emit("tool_failed", error="boom")
    trace.emit("arguments_invalid", tool="count_rows")
    trace.emit("result", status="invalid_output")
    assert [event_status(e) for e in trace] == ["ok", "refused", "error", "refused", "refused"]
    page = viewer_html(trace, "t")
    for status in ("ok", "refused", "error"):
        assert (
            f"lk-ev lk-{status}' style='border: 1px solid #e0e0e0; border-left: 5px solid {STATUS_COLOURS[status]}"
            in page
        )


def _answered():
    trace = Trace()
    trace.emit("request", question="What is the home address of the support manager?", team="team-a")
    trace.emit("result", status="answered", text="2 get_refund tickets")
    return trace


def test_an_answer_the_lesson_judges_wrong_is_not_all_green():
    page = viewer_html(_answered(), "t", passed=False, reason="expected insufficient_evidence")
    assert "2 events (1 ok, 1 wrong)" in page and "judged wrong" in page and "expected insufficient_evidence" in page
    last = _rows(page)[-1]
    assert "lk-wrong" in last and STATUS_COLOURS["wrong"] in last
    assert STATUS_COLOURS["wrong"] != STATUS_COLOURS["ok"]
    right = viewer_html(_answered(), "t", passed=True)
    assert "2 events (2 ok)" in right and "judged right" in right
    assert "judged" not in viewer_html(_answered(), "t"), "no verdict is shown unless the lesson gives one"


def test_each_row_says_what_the_event_did():
    trace = Trace()
    trace.emit("tool_proposed", raw='{"decision": "count_rows", "arguments": {"rows": "rows-1"}}')
    page = viewer_html(trace, "t")
    assert "<span class='lk-what'" in page and "count_rows(rows=rows-1)</span>" in page


def test_the_heading_has_a_place_for_where_the_answer_came_from():
    assert "replayed from 02-rag-authored" in viewer_html(_refused_trace(), "t")
    trace = _refused_trace()
    trace.emit("model_reply_returned", reply="{}", origin="captured now from m, your change")
    page = viewer_html(trace, "t")
    head = page.split("<details")[0]
    assert "captured now from m, your change" in head, "an event's origin label goes to the heading"
    assert "told by the caller" in viewer_html(trace, "t", origin="told by the caller").split("<details")[0]


def test_duration_bar_only_where_the_event_has_a_duration():
    trace = Trace()
    trace.emit("retrieve")
    trace.emit("generate", latency_ms=300)
    trace.emit("generate", latency_ms=75)
    rows = viewer_html(trace, "t").split("<div class='lk-rows'>")[1]
    assert re.findall(r"width: ([0-9.]+)%; background-color", rows) == ["100.0", "25.0"]
    assert "300 ms" in rows and "75 ms" in rows and rows.count("class='lk-bar'") == 2


def test_json_inside_a_string_is_shown_as_json_not_escaped():
    trace = Trace()
    trace.emit("generate", raw_reply='{"kind": "answer", "text": "two \\"quoted\\" words"}')
    text = unescape(re.sub(r"<[^>]+>", "", event_html(trace.events[0])))
    assert '"raw_reply": {' in text and '"kind": "answer"' in text and '\\"kind' not in text


def test_long_strings_show_real_line_breaks_and_wrap():
    trace = Trace()
    trace.emit("model_request_ready", prompt="line one\nline two")
    body = event_html(trace.events[0])
    text = unescape(re.sub(r"<[^>]+>", "", body))
    assert "line one\n" in text and "\\n" not in text
    assert "white-space: pre-wrap" in body


def test_refusal_shows_its_diff_escaped():
    html = event_html(_refused_trace().events[1])
    assert "messages[0].content" in html and "old &lt;policy&gt;" in html
    assert html.index("What differs") < html.index("<pre")


def test_viewer_plain_text_is_stable():
    bundle = TraceViewer(_refused_trace())._repr_mimebundle_()
    assert bundle["text/plain"] == "TraceViewer(2 events)"


def test_viewer_html_is_the_same_on_every_run_and_keeps_mathjax_off():
    one = TraceViewer(_refused_trace(), title="t")._repr_mimebundle_()
    two = TraceViewer(_refused_trace(), title="t")._repr_mimebundle_()
    assert one["text/html"] == two["text/html"], "the HTML form is compared by nbval: it must not change between runs"
    assert "tex2jax_ignore" in one["text/html"]
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
    assert len(set(ids)) == len(ids) > 3


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
