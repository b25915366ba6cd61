import json
import re
from pathlib import Path

import nbformat
import pytest

from labkit.cli import main
from labkit.course.runner import course_notebooks, results_table, run_notebook


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture
def course(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    return tmp_path / "notebooks"


def test_passing_notebook_is_reported_passed_and_left_unchanged(course):
    path = _notebook(course / "01_ok.ipynb", "x = 1 + 1", "print(x)")
    before = path.read_bytes()
    result = run_notebook(path)
    assert (result.notebook, result.status, result.error) == ("01_ok.ipynb", "passed", "")
    assert path.read_bytes() == before


def test_failing_notebook_is_reported_with_its_error(course):
    result = run_notebook(_notebook(course / "02_bad.ipynb", "raise ValueError('broken cell')"))
    assert result.status == "failed"
    assert "ValueError" in result.error and "broken cell" in result.error


def test_notebook_kernel_runs_offline_in_replay_mode(course):
    code = "import os, socket\nassert os.environ['LABKIT_MODE'] == 'replay'\nsocket.getaddrinfo('example.com', 80)"
    result = run_notebook(_notebook(course / "03_net.ipynb", code))
    assert result.status == "failed" and "NetworkBlocked" in result.error


def test_notebooks_are_found_in_teaching_order(course):
    for name in ("06_b.ipynb", "01_a.ipynb", "scratchpad.ipynb"):
        _notebook(course / name, "pass")
    assert [p.name for p in course_notebooks()] == ["01_a.ipynb", "06_b.ipynb"]


def test_run_prints_a_table_and_exits_nonzero_on_any_failure(course, capsys):
    _notebook(course / "01_ok.ipynb", "pass")
    _notebook(course / "02_bad.ipynb", "1/0")
    assert main(["run"]) == 1
    out = capsys.readouterr().out
    assert "01_ok.ipynb" in out and "passed" in out
    assert "02_bad.ipynb" in out and "ZeroDivisionError" in out
    assert "1 of 2 notebooks passed" in out


def test_notebooks_run_at_once_are_reported_in_teaching_order(course, capsys):
    _notebook(course / "01_slow.ipynb", "import time\ntime.sleep(1.5)")  # finishes after the next two
    _notebook(course / "02_bad.ipynb", "1/0")
    _notebook(course / "03_ok.ipynb", "pass")
    assert main(["run", "--jobs", "2", "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert [(r["notebook"], r["status"]) for r in summary] == [
        ("01_slow.ipynb", "passed"),
        ("02_bad.ipynb", "failed"),
        ("03_ok.ipynb", "passed"),
    ]


def test_notebooks_run_at_once_still_run_offline_and_say_how_many_at_a_time(course, capsys):
    code = "import socket\nsocket.getaddrinfo('example.com', 80)"
    _notebook(course / "01_net.ipynb", code)
    _notebook(course / "02_net.ipynb", code)
    assert main(["run", "--jobs", "2"]) == 1
    out = capsys.readouterr().out
    assert "running 2 notebooks, 2 at a time" in out and out.count("NetworkBlocked") == 2


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_a_job_count_below_one_is_refused(course, capsys, jobs):
    with pytest.raises(SystemExit):
        main(["run", "--jobs", jobs])
    assert "--jobs" in capsys.readouterr().err


def test_run_of_one_notebook_by_number_with_json_summary(course, capsys):
    _notebook(course / "01_ok.ipynb", "pass")
    _notebook(course / "02_bad.ipynb", "1/0")
    assert main(["run", "01", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [(r["notebook"], r["status"]) for r in summary] == [("01_ok.ipynb", "passed")]


def test_unknown_notebook_is_a_one_line_error(course, capsys):
    _notebook(course / "01_ok.ipynb", "pass")
    assert main(["run", "09"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "no notebook '09'" in captured.err


def test_run_with_no_notebooks_fails(course, capsys):
    assert main(["run"]) == 1


def test_results_table_counts_passes():
    from labkit.course.runner import NotebookResult

    table = results_table([NotebookResult("01_a.ipynb", "passed", 1.234)])
    assert "1.23" in table and "1 of 1 notebooks passed" in table


def test_run_exports_each_executed_notebook_as_html(course, tmp_path, capsys):
    _notebook(course / "01_ok.ipynb", "print('hello from the room')")
    assert main(["run", "--html", str(tmp_path / "html")]) == 0
    page = (tmp_path / "html" / "01_ok.html").read_text(encoding="utf-8")
    assert "hello from the room" in page


def test_update_saves_new_outputs_in_one_stream_piece_and_no_timings(course):
    path = _notebook(course / "01_ok.ipynb", "import sys\nfor i in range(3):\n    print(i)\n    sys.stdout.flush()")
    assert main(["run", "01", "--update"]) == 0
    (cell,) = nbformat.read(path, as_version=4).cells
    assert [o["text"] for o in cell.outputs] == ["0\n1\n2\n"]
    assert "execution" not in cell.metadata


def test_update_leaves_a_failing_notebook_untouched(course):
    path = _notebook(course / "01_bad.ipynb", "1/0")
    before = path.read_bytes()
    assert main(["run", "01", "--update"]) == 1
    assert path.read_bytes() == before


def test_no_kernel_process_outlives_its_notebook(course):
    import psutil

    run_notebook(_notebook(course / "01_ok.ipynb", "pass"))
    run_notebook(_notebook(course / "02_bad.ipynb", "1/0"))
    kernels = [p for p in psutil.Process().children(recursive=True) if "ipykernel" in " ".join(p.cmdline())]
    assert kernels == []


_VIEWER = (
    "from labkit.traces import Trace\nfrom labkit.widgets import TraceViewer\n"
    "t = Trace()\nt.emit('request_accepted', question='q')\nt.emit('replay_refused', error='no reply')\n"
    "TraceViewer(t)"
)


def _widget_views(nb):
    return [
        out["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    ]


def _stale(path):
    nb = nbformat.read(path, as_version=4)
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {"stale": {}}, "version_major": 2, "version_minor": 0}
    }
    nbformat.write(nb, path)
    return path


def test_update_saves_the_widget_state_of_this_run_and_drops_stale_models(course):
    path = _stale(_notebook(course / "01_viewer.ipynb", _VIEWER, _VIEWER))
    assert run_notebook(path, write_back=True).status == "passed"
    nb = nbformat.read(path, as_version=4)
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    views = _widget_views(nb)
    assert len(views) == 2 and all(view in state for view in views)
    assert "stale" not in state


def test_update_of_a_run_without_widgets_keeps_no_widget_state(course):
    path = _stale(_notebook(course / "01_plain.ipynb", "1 + 1"))
    assert run_notebook(path, write_back=True).status == "passed"
    assert "widgets" not in nbformat.read(path, as_version=4).metadata


def _remote_references(page: str) -> list[str]:
    from html.parser import HTMLParser

    found: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend(v for k, v in attrs if k in ("src", "href", "data", "srcset", "action") and v)

    Links().feed(page)
    found += re.findall(r"url\(\s*['\"]?([^'\")]+)", page) + re.findall(r"@import\s+['\"]([^'\"]+)", page)
    return [ref for ref in found if re.match(r"(?i)([a-z][a-z0-9+.-]*:)?//", ref) and not ref.startswith("file:")]


def test_html_export_shows_the_trace_viewer_and_plots_and_loads_nothing_from_another_host(course, tmp_path):
    plot = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nplt.show()"
    path = _notebook(course / "01_viewer.ipynb", _VIEWER, plot, "print('$0.5 (limit $1)')")
    assert run_notebook(path, html_dir=tmp_path / "html").status == "passed"
    page = (tmp_path / "html" / "01_viewer.html").read_text(encoding="utf-8")
    # two rows, and the same two held open inside "show all" for a page without scripts
    assert len(re.findall(r"<details class=.lk-ev", page)) == 4 and "show all" in page
    assert re.search(r"<img [^>]*src=.data:image/png;base64,", page)
    assert "widget-view+json" not in page and "MathJax" not in page and "require.js" not in page
    assert _remote_references(page) == []


def test_remote_reference_finder_sees_scripts_styles_and_protocol_relative_urls():
    page = (
        '<script src="https://cdn.example/x.js"></script><link href="//cdn.example/a.css">'
        "<style>@import 'http://h/b.css'; div { background: url(https://h/i.png) }</style>"
        '<a href="#local"></a><img src="data:image/png;base64,AA">'
    )
    assert _remote_references(page) == [
        "https://cdn.example/x.js",
        "//cdn.example/a.css",
        "https://h/i.png",
        "http://h/b.css",
    ]


@pytest.mark.parametrize("path", course_notebooks(), ids=lambda p: p.stem)
def test_committed_notebook_saves_the_model_of_every_widget_view_and_no_other_run(path):
    nb = nbformat.read(path, as_version=4)
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    views = _widget_views(nb)
    assert [view for view in views if view not in state] == [], "regenerate with `labkit run NN --update`"
    if not views:
        assert not state, "widget models saved by an earlier run: regenerate with `labkit run NN --update`"


def test_a_kernel_that_dies_fails_its_notebook_and_the_others_still_run(course, capsys):
    _notebook(course / "01_dies.ipynb", "print('before')", "import os\nos._exit(3)", "print('never')")
    _notebook(course / "02_ok.ipynb", "print('still runs')")
    assert main(["run", "--json"]) == 1
    summary = {r["notebook"]: r for r in json.loads(capsys.readouterr().out)}
    assert summary["02_ok.ipynb"]["status"] == "passed"
    died = summary["01_dies.ipynb"]
    assert died["status"] == "failed" and "KernelDied" in died["error"]
    assert "code cell 2" in died["error"] and "exit code 3" in died["error"]


def test_a_kernel_killed_by_a_signal_names_the_signal(course):
    result = run_notebook(_notebook(course / "01_oom.ipynb", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"))
    assert result.status == "failed" and "SIGKILL" in result.error and "code cell 1" in result.error


def test_a_corrupt_notebook_is_a_failed_row_and_the_others_still_run(course, capsys):
    (course / "01_corrupt.ipynb").write_text("{not json", encoding="utf-8")
    _notebook(course / "02_ok.ipynb", "pass")
    assert main(["run"]) == 1
    out = capsys.readouterr().out
    assert "NotebookUnreadable" in out and "01_corrupt.ipynb: not a readable notebook" in out
    assert "1 of 2 notebooks passed" in out


def test_each_run_has_its_own_scratch_folder(course, tmp_path):
    code = (
        "from labkit.paths import scratch_dir\n"
        "marker = scratch_dir() / 'marker.txt'\n"
        "assert not marker.exists(), 'scratch shared with another run'\n"
        "marker.write_text('x')"
    )
    path = _notebook(course / "01_scratch.ipynb", code)
    assert [run_notebook(path).status for _ in range(2)] == ["passed", "passed"]
    assert not (course.parent / "scratch" / "marker.txt").exists()


def test_update_of_a_locked_notebook_fails_at_once_and_leaves_it_alone(course):
    from labkit.course.runner import notebook_lock

    path = _notebook(course / "01_ok.ipynb", "print('new output')")
    before = path.read_bytes()
    with notebook_lock(path):
        result = run_notebook(path, write_back=True)
    assert result.status == "failed" and "NotebookLocked" in result.error and "another" in result.error
    assert path.read_bytes() == before


def test_update_writes_only_the_notebook_itself(course):
    path = _notebook(course / "01_ok.ipynb", "print('fresh')")
    _notebook(course / "02_other.ipynb", "pass")
    other = (course / "02_other.ipynb").read_bytes()
    assert run_notebook(path, write_back=True).status == "passed"
    assert sorted(p.name for p in course.iterdir()) == ["01_ok.ipynb", "02_other.ipynb"]
    assert (course / "02_other.ipynb").read_bytes() == other
    assert nbformat.read(path, as_version=4).cells[0].outputs[0]["text"] == "fresh\n"


def test_html_pointing_at_a_file_is_refused_before_any_notebook_runs(course, tmp_path, capsys):
    _notebook(course / "01_ok.ipynb", "pass")
    (tmp_path / "page.html").write_text("x", encoding="utf-8")
    assert main(["run", "--html", str(tmp_path / "page.html")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "page.html is a file, not a folder" in captured.err
    assert captured.err.count("\n") == 1


def test_the_runner_reports_which_offline_guard_holds(course, capsys):
    from labkit.offline import offline_guard

    _notebook(course / "01_ok.ipynb", "pass")
    assert main(["run"]) == 0
    assert f"offline guard: {offline_guard()}" in capsys.readouterr().out


EGRESS = """\
import _socket, socket, subprocess, sys
outcomes = {}
try:
    _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM).connect(("192.0.2.1", 80))
    outcomes["raw"] = "connected"
except OSError as exc:
    outcomes["raw"] = type(exc).__name__
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 53))
    outcomes["udp"] = "sent"
except OSError as exc:
    outcomes["udp"] = type(exc).__name__
if CHILD:
    probe = "import socket; s = socket.socket(); s.settimeout(5); s.connect(('192.0.2.1', 80)); print('connected')"
    child = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    outcomes["child"] = (child.stdout + child.stderr).strip().splitlines()[-1]
print(outcomes)
"""


def test_raw_udp_and_child_process_egress_fail_inside_a_replayed_kernel(course):
    from labkit.course.runner import execute
    from labkit.offline import network_namespace_available

    child = network_namespace_available()  # without a namespace a child process is not covered: said in the report
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"CHILD = {child}\n" + EGRESS)]
    execute(nb, course)
    text = nb.cells[0].outputs[0]["text"]
    assert "'raw': 'NetworkBlocked'" in text and "'udp': 'NetworkBlocked'" in text
    if child:
        assert "'child': 'OSError: [Errno 101] Network is unreachable'" in text


def test_a_lesson_number_names_all_its_parts_and_a_part_number_only_its_own():
    from labkit.course.runner import notebook_matches

    part_a, part_b, three = Path("02a_rag_trace.ipynb"), Path("02b_filings_rag.ipynb"), Path("03_bound_replay.ipynb")
    assert [notebook_matches(p, "02") for p in (part_a, part_b, three)] == [True, True, False]
    assert [notebook_matches(p, "02b") for p in (part_a, part_b, three)] == [False, True, False]
    assert notebook_matches(part_a, "02a_rag_trace") and notebook_matches(part_a, "02a_rag_trace.ipynb")
    assert not notebook_matches(three, "0") and not notebook_matches(three, "03_bound")
