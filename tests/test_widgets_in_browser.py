"""The notebooks as a learner sees them: JupyterLab in a real Chromium, and the ``--html`` pages with the network off.

For each notebook: Restart Kernel and Run All through JupyterLab's menu, wait
(bounded) for the run to finish, then check there is no error output, every
widget rendered as a widget, every figure loaded, and a trace viewer answers a
click and its "show all" toggle (a round trip through the kernel). The notebook
is saved, exported as the runner's offline HTML page and opened with every
request to another host refused. A screenshot per notebook goes to
``scratch/browser/`` in the checkout, to look at.

Runs against a copy of the course in tmp_path (JupyterLab autosaves), on the
Chromium installed on the machine (``apt-get install chromium``), driven by
Playwright (``pip install -e ".[browser]"``); skipped with the reason when either
is missing.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labkit.paths import project_root

pytestmark = pytest.mark.browser

NOTEBOOKS = sorted(p.name for p in (project_root() / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
RUN_TIMEOUT_S = 90
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _chromium() -> str | None:
    found = os.environ.get("LABKIT_CHROMIUM")
    return found if found else next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _write_settings(folder: Path) -> None:
    """Render every cell (no windowing, so every output is in the page) and ask for no news from the internet."""
    settings = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
    }
    for name, value in settings.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")


def _wait_for_line(process: subprocess.Popen[str], needle: str, *, timeout: float) -> None:
    assert process.stderr is not None
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    seen: list[str] = []
    while (left := deadline - time.monotonic()) > 0:
        if not selector.select(timeout=left):
            break
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return
    raise AssertionError(f"JupyterLab did not start (stopped, or took over {timeout:.0f} s):\n{''.join(seen[-30:])}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The machine's Chromium, driven by Playwright, for every test of this module (one Playwright per thread)."""
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set LABKIT_CHROMIUM to its path)")
    pytest.importorskip("playwright.sync_api", reason='Playwright is not installed: pip install -e ".[browser]"')
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def lab(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A JupyterLab server on 127.0.0.1 (random port and token) over a copy of the course, stopped afterwards."""
    home = tmp_path_factory.mktemp("browser")
    course = home / "course"
    for name in ("notebooks", "fixtures", "recorded_runs"):
        shutil.copytree(project_root() / name, course / name)
    _write_settings(home / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "LABKIT_ROOT": str(course),
        "LABKIT_SCRATCH": str(home / "scratch"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),  # its own notebook-trust database: nothing here is trusted yet
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",  # CI runs as root
        "--LabApp.extension_manager=readonly",  # never ask PyPI about extensions
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={course}",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
    ]
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _wait_for_line(server, f"127.0.0.1:{port}/lab", timeout=90)
        url = f"http://127.0.0.1:{port}"
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()  # one JupyterLab page for every notebook: the app loads once
            refused = _refuse_other_hosts(page, (url + "/", "data:", "blob:"))
            page.goto(f"{url}/lab?reset&token={token}")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')",
                timeout=60000,
            )
            page.evaluate("async () => { await window.jupyterapp.restored; }")
            yield {"course": course, "context": context, "page": page, "refused": refused, "env": env}
        finally:
            context.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _refuse_other_hosts(page: Any, local: tuple[str, ...]) -> list[str]:
    refused: list[str] = []

    def handle(route: Any) -> None:
        url = route.request.url
        if url.startswith(local):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    page.route("**/*", handle)
    return refused


# Reads the open notebook through the app object JupyterLab exposes (expose_app_in_browser).
_STATE_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.model) return null;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = [];
  for (const cell of panel.content.model.cells) {
    if (cell.type !== 'code') continue;
    cells.push({source: cell.sharedModel.getSource(), count: cell.executionCount,
                tags: cell.getMetadata('tags') || [], outputs: cell.outputs.toJSON()});
  }
  return {status: kernel ? kernel.status : 'none', cells};
}"""


# True once the kernel is idle and every non-empty code cell has run, or a cell has failed that Run All stops at.
# A cell tagged raises-exception (a student copy's exercise check) fails without stopping Run All, so its error
# does not end the wait: the kernel is idle for a moment between cells, and the run goes on after it.
_FINISHED_JS = f"""() => {{
  const state = ({_STATE_JS})();
  if (!state || state.status !== 'idle') return false;
  const cells = state.cells.filter(c => c.source.trim());
  const stopped = c => !c.tags.includes('raises-exception') && c.outputs.some(o => o.output_type === 'error');
  return cells.some(stopped) || cells.every(c => c.count !== null);
}}"""


def _run_all_from_the_menu(page: Any) -> dict[str, Any]:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel and Run All Cells").click()
    page.locator(".jp-Dialog button.jp-mod-accept").click()
    page.wait_for_function(_FINISHED_JS, timeout=RUN_TIMEOUT_S * 1000, polling=250)
    state: dict[str, Any] = page.evaluate(_STATE_JS)
    return state


def _check_viewer_is_live(page: Any) -> None:
    viewer = page.locator(".jp-OutputArea-output .lk-trace-viewer").first
    viewer.scroll_into_view_if_needed()
    first = viewer.locator(".lk-rows > details.lk-ev").first
    first.locator("summary").click()
    assert first.evaluate("d => d.open"), "clicking a trace event did not expand it"
    viewer.locator(".lk-all-toggle").click()  # with scripts: every row opens in place
    events = viewer.locator(".lk-rows > details.lk-ev")
    page.wait_for_function(
        "el => [...el.querySelectorAll('.lk-rows > details.lk-ev')].every(d => d.open)",
        arg=viewer.element_handle(),
        timeout=10000,
    )
    assert events.count() > 0 and not viewer.locator("details.lk-all").evaluate("d => d.open")


def _check_lab_outputs(page: Any, name: str, state: dict[str, Any]) -> int:
    """Check a finished run's outputs as rendered; return how many widget views it has."""
    errors = [
        f"{o.get('ename')}: {o.get('evalue')}"
        for c in state["cells"]
        for o in c["outputs"]
        if o["output_type"] == "error"
    ]
    assert errors == [], f"{name} has error output: {errors}"
    views = sum(
        "application/vnd.jupyter.widget-view+json" in o.get("data", {}) for c in state["cells"] for o in c["outputs"]
    )
    rendered = page.locator(".jp-OutputArea-output > .jupyter-widgets")
    fallback = page.locator(
        '.jp-OutputArea-output[data-mime-type="text/html"] .lk-trace, '
        '.jp-OutputArea-output[data-mime-type="text/plain"]:has-text("TraceViewer(")'
    )
    assert rendered.count() == views and fallback.count() == 0, "a widget output fell back to text"
    assert page.locator(".lk-trace-viewer").count() == views
    assert page.get_by_text("Error displaying widget").count() == 0
    images = page.locator(".jp-OutputArea-output img")
    for index in range(images.count()):
        images.nth(index).scroll_into_view_if_needed()
        assert images.nth(index).evaluate("img => img.complete && img.naturalWidth > 0"), "a figure did not load"
    if views:
        _check_viewer_is_live(page)
    elif images.count():
        images.first.scroll_into_view_if_needed()
    return views


_OPEN_JS = """async path => {
  const app = window.jupyterapp;
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
}"""

# The notebook is open and its first kernel is ready (restarting one that is still starting can lose the run).
_KERNEL_IDLE_JS = """path => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.context && panel.context.path === path && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  return Boolean(kernel) && kernel.status === 'idle';
}"""

_CLOSE_JS = """async path => {
  for (const widget of [...window.jupyterapp.shell.widgets('main')]) {
    if (widget.context && widget.context.path === path) {
      await widget.sessionContext.shutdown();
      widget.dispose();
    }
  }
}"""


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_jupyterlab_and_its_export_renders_offline(lab: dict[str, Any], name: str) -> None:
    import nbformat

    from labkit.course.runner import export_html

    shots = _shots()
    page, path = lab["page"], f"notebooks/{name}"
    lab["refused"].clear()
    page.evaluate(_OPEN_JS, path)
    try:
        try:
            page.wait_for_function(_KERNEL_IDLE_JS, arg=path, timeout=60000)
            state = _run_all_from_the_menu(page)
            views = _check_lab_outputs(page, name, state)
        except Exception:
            page.screenshot(path=str(shots / f"{Path(name).stem}.failed.png"))
            raise
        page.screenshot(path=str(shots / f"{Path(name).stem}.png"))
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=20000)
    finally:
        page.evaluate(_CLOSE_JS, path)
    assert lab["refused"] == [], f"JupyterLab asked another host for {lab['refused']}"

    saved = nbformat.read(lab["course"] / path, as_version=4)
    exported = export_html(saved, lab["course"] / "html" / f"{Path(name).stem}.html")
    offline = lab["context"].new_page()
    try:
        refused = _refuse_other_hosts(offline, ("file:", "data:", "blob:"))
        offline.goto(exported.as_uri())
        viewers = offline.locator(".lk-trace")
        assert viewers.count() == views, "the exported page does not show every trace viewer"
        if views:
            viewers.first.scroll_into_view_if_needed()
            viewers.first.locator(".lk-all-toggle").click()
            assert viewers.first.locator(".lk-rows > details.lk-ev:not([open])").count() == 0
            offline.screenshot(path=str(shots / f"{Path(name).stem}.html.png"))
        shown = offline.locator("img")
        for index in range(shown.count()):
            assert shown.nth(index).evaluate("img => img.complete && img.naturalWidth > 0"), "a figure is broken"
        assert refused == [], f"the exported page asked another host for {refused}"
    finally:
        offline.close()


def _shots() -> Path:
    shots = project_root() / "scratch" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _open(lab: dict[str, Any], path: str) -> None:
    lab["page"].evaluate(_OPEN_JS, path)
    lab["page"].wait_for_function(_KERNEL_IDLE_JS, arg=path, timeout=60000)


# For each element of the viewer as rendered, the inline declarations of the same element in the HTML the
# notebook holds that the page lost (JupyterLab's sanitizer drops a property it does not allow).
_DROPPED_STYLES_JS = """([viewer, source]) => {
  const original = new DOMParser().parseFromString(source, 'text/html').body.firstElementChild;
  const wanted = [original, ...original.querySelectorAll('*')];
  const shown = [viewer, ...viewer.querySelectorAll('*')];
  if (wanted.length !== shown.length) return [`${shown.length} elements rendered of ${wanted.length}`];
  const dropped = [];
  wanted.forEach((el, i) => {
    for (const name of el.style) {
      if (shown[i].style.getPropertyValue(name) !== el.style.getPropertyValue(name)) {
        dropped.push(`${el.tagName.toLowerCase()}.${el.className} ${name}: ${el.style.getPropertyValue(name)}`);
      }
    }
  });
  return dropped;
}"""


def test_an_untrusted_notebooks_trace_viewer_is_styled_and_its_rows_say_what_happened(lab: dict[str, Any]) -> None:
    """05 executed headless (as `labkit run 05 --update` saves it), then opened in JupyterLab, neither run nor trusted."""
    import html
    import re

    import nbformat

    from labkit.course.runner import execute, read_notebook

    source = project_root() / "notebooks" / "05_minimal_system.ipynb"
    nb = read_notebook(source)
    execute(nb, source.parent)
    saved = lab["course"] / "untrusted" / source.name
    saved.parent.mkdir(exist_ok=True)
    nbformat.write(nb, saved)
    viewers_html = [
        output["data"]["text/html"]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if "lk-trace" in str(output.get("data", {}).get("text/html", ""))
    ]
    page, path = lab["page"], f"untrusted/{source.name}"
    _open(lab, path)
    try:
        trusted = page.evaluate(
            "() => [...window.jupyterapp.shell.currentWidget.content.widgets].map(c => c.model.trusted)"
        )
        assert not any(trusted), "the notebook was meant to be opened untrusted"
        shown = page.locator('.jp-OutputArea-output[data-mime-type="text/html"] .lk-trace')
        assert shown.count() == len(viewers_html) >= 1, "an untrusted notebook shows each viewer's HTML form"
        viewer = shown.last  # the captured "home address" request
        viewer.scroll_into_view_if_needed()
        source_html = "".join(viewers_html[-1]) if isinstance(viewers_html[-1], list) else viewers_html[-1]
        assert page.evaluate(_DROPPED_STYLES_JS, [viewer.element_handle(), source_html]) == []
        row = viewer.locator(".lk-rows > details.lk-ev").nth(4)
        style = row.evaluate("d => { const s = getComputedStyle(d); return [s.borderLeftColor, s.borderLeftWidth]; }")
        assert style == ["rgb(46, 125, 50)", "5px"]
        badge = row.locator(".lk-status").evaluate(
            "b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).color]"
        )
        assert badge == ["rgb(46, 125, 50)", "rgb(255, 255, 255)"]
        names = row.locator(".lk-name").evaluate("n => getComputedStyle(n).fontWeight")
        assert int(names) >= 600, "the event kind stands out from its summary"
        assert row.locator(".lk-what").inner_text() == "count 2 (get_refund, team-a)"
        expected = [html.unescape(t) for t in re.findall(r"<span class='lk-what'[^>]*>([^<]*)</span>", source_html)]
        texts = viewer.locator(".lk-rows > details.lk-ev .lk-what").all_inner_texts()
        assert texts == expected[len(expected) // 2 :], "every row shows its one-line summary"
        viewer.locator(".lk-rows").scroll_into_view_if_needed()
        page.screenshot(path=str(_shots() / "untrusted_viewer.png"))
        viewer.locator(".lk-all-toggle").click()  # no script here: the disclosure opens on every row, open
        copies = viewer.locator(".lk-all-rows > details.lk-ev")
        assert copies.count() == len(texts) and copies.evaluate_all("ds => ds.every(d => d.open)")
        assert copies.first.is_visible()
        viewer.locator(".lk-all-toggle").scroll_into_view_if_needed()
        page.screenshot(path=str(_shots() / "untrusted_viewer_show_all.png"))
    finally:
        page.evaluate(_CLOSE_JS, path)
    assert lab["refused"] == [], f"JupyterLab asked another host for {lab['refused']}"


def _offline_page(browser: Any, page_path: Path) -> tuple[Any, list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    refused = _refuse_other_hosts(page, ("file:", "data:", "blob:"))
    page.goto(page_path.as_uri())
    return page, refused


def test_the_export_renders_formulas_and_diagrams_with_every_other_host_refused(browser: Any, tmp_path: Path) -> None:
    from labkit.course.runner import export_html, read_notebook

    notebooks = project_root() / "notebooks"
    formula = export_html(read_notebook(notebooks / "01_product_evaluator.ipynb"), tmp_path / "01.html")
    page, refused = _offline_page(browser, formula)
    try:
        page.wait_for_selector("mjx-container[display='true'] svg", timeout=30000)
        shown = page.locator("mjx-container[display='true']").first
        shown.scroll_into_view_if_needed()
        assert shown.evaluate("m => m.getBoundingClientRect().height") > 20, "the kappa formula is typeset"
        assert page.get_by_text("$$\\kappa").count() == 0, "no raw TeX is left on the page"
        page.screenshot(path=str(_shots() / "export_formula.png"))
        assert refused == [], f"the exported page asked another host for {refused}"
    finally:
        page.context.close()

    diagram = export_html(read_notebook(notebooks / "05_minimal_system.ipynb"), tmp_path / "05.html")
    page, refused = _offline_page(browser, diagram)
    try:
        drawn = page.locator(".jp-RenderedMermaid:not(.jp-mod-warning) figure img")
        drawn.first.wait_for(timeout=30000)
        drawn.first.scroll_into_view_if_needed()
        height = drawn.first.evaluate("async img => { await img.decode(); return img.getBoundingClientRect().height; }")
        assert height > 100, "the LangGraph diagram is drawn"
        assert page.locator(".jp-Mermaid pre.mermaid:visible").count() == 0, "no Mermaid source is left showing"
        page.screenshot(path=str(_shots() / "export_diagram.png"))
        assert refused == [], f"the exported page asked another host for {refused}"
    finally:
        page.context.close()


def test_the_report_card_page_exists_after_evaluate_committed_and_shows_its_plots(browser: Any, tmp_path: Path) -> None:
    import re

    env = {**os.environ, "LABKIT_SCRATCH": str(tmp_path / "scratch")}
    done = subprocess.run(
        [sys.executable, "-m", "labkit", "evaluate", "--committed", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr  # the committed SmolLM2 runs fail the rules against the ideal
    found = re.search(r"report written to (\S+)", done.stderr)
    assert found, f"no report path printed: {done.stderr[-500:]}"
    report = Path(found.group(1))
    assert report.is_file() and report.parent.parent == tmp_path / "scratch" / "evaluations"
    page, refused = _offline_page(browser, report)
    try:
        plots = page.locator("img")
        assert plots.count() == 5, "one plot per lesson that calls a model"
        for index in range(plots.count()):
            assert plots.nth(index).evaluate("img => img.complete && img.naturalWidth > 400"), "a plot is broken"
        page.screenshot(path=str(_shots() / "report_card.png"), full_page=True)
        assert refused == []
    finally:
        page.context.close()


def test_an_exported_student_notebook_runs_all_the_way_to_its_last_cell(lab: dict[str, Any]) -> None:
    exported = subprocess.run(
        [sys.executable, "-m", "labkit", "workshop", "export", str(lab["course"] / "student")],
        env=lab["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    page, path = lab["page"], "student/01_product_evaluator.ipynb"
    _open(lab, path)
    try:
        state = _run_all_from_the_menu(page)
        code = [c for c in state["cells"] if c["source"].strip()]
        page.locator(".jp-Cell").last.scroll_into_view_if_needed()
        page.screenshot(path=str(_shots() / "student_run_all.png"))
        ran = sum(c["count"] is not None for c in code)
        errors = [
            f"{o.get('ename')}: {o.get('evalue')}\n" + "\n".join(o.get("traceback", [])[-3:])
            for c in code
            for o in c["outputs"]
            if o["output_type"] == "error"
        ]
        assert code[-1]["count"] is not None, (
            f"Run All stopped after {ran} of {len(code)} code cells (kernel {state['status']}): {errors}"
        )
    finally:
        page.evaluate(_CLOSE_JS, path)
