"""Run the course's notebooks headless, offline, in replay mode, and report each one's status and time."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from labkit.paths import notebooks_dir

#: Seconds one cell may run before the notebook counts as failed.
CELL_TIMEOUT_S = 300


@dataclass(frozen=True)
class NotebookResult:
    """How one notebook fared."""

    notebook: str
    """File name, such as ``06_routing_gate.ipynb``."""
    status: Literal["passed", "failed"]
    """``passed`` when every cell ran without an error."""
    seconds: float
    """Seconds spent executing cells, kernel start excluded."""
    error: str = ""
    """The first error's name and message, for a failed notebook."""


def course_notebooks(folder: Path | None = None) -> list[Path]:
    """Return the numbered notebooks in teaching order."""
    folder = folder or notebooks_dir()
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


@contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def kernel_manager(folder: Path) -> Any:
    """Return a python3 kernel manager; on POSIX over Unix sockets in ``folder`` (no TCP port, no warning)."""
    from jupyter_client.manager import KernelManager

    if os.name == "posix":
        return KernelManager(kernel_name="python3", transport="ipc", ip=str(folder / "kernel"))
    return KernelManager(kernel_name="python3")


#: nbconvert's lab page without the scripts it would fetch from public CDNs (require.js, the
#: widget manager, MathJax, Mermaid): an exported page must open with the network off.
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def export_html(nb: Any, path: Path) -> Path:
    """Write an executed notebook as a standalone HTML page that needs no network (for sharing a run with a room).

    Widgets are shown by the static HTML form each output carries beside its widget
    view (`labkit.widgets.TraceViewer` has one), so the page needs no widget manager;
    images are embedded; no script or style sheet comes from another host.
    """
    import copy

    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    page = copy.deepcopy(nb)
    page.metadata.pop("widgets", None)  # without widget state nbconvert shows each output's text/html form
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"labkit_offline.html.j2": OFFLINE_TEMPLATE})],
        template_file="labkit_offline.html.j2",
        embed_images=True,
    )
    body, _ = exporter.from_notebook_node(page)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    return path


def save_widget_state(client: Any) -> None:
    """Replace the notebook's saved widget state with this run's, so every widget view in its outputs has a model.

    Models saved by earlier runs are dropped; a run that made no widget leaves no state.
    """
    client.nb.metadata.pop("widgets", None)
    client.set_widgets_metadata()


def execute(nb: Any, folder: Path, *, timeout: int = CELL_TIMEOUT_S, allow_errors: bool = False) -> float:
    """Execute a notebook node in place in a fresh offline kernel started in ``folder``; return the seconds.

    Kernel start is not counted. Without ``allow_errors`` the first failing cell raises
    nbclient's error (which carries the seconds so far as ``labkit_seconds``); with it,
    every cell runs and errors stay in the cells' outputs.
    """
    from nbclient import NotebookClient

    from labkit.offline import offline_kernel_env

    with (
        tempfile.TemporaryDirectory(prefix="labkit-run-") as tmp,
        _environment(offline_kernel_env(ipython_dir=Path(tmp))),
    ):
        manager = kernel_manager(Path(tmp))
        client = NotebookClient(
            nb,
            timeout=timeout,
            km=manager,
            record_timing=False,
            allow_errors=allow_errors,
            resources={"metadata": {"path": str(folder)}},
        )
        start = None
        try:
            with client.setup_kernel():
                start = time.perf_counter()
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
                save_widget_state(client)
        except Exception as exc:
            exc.labkit_seconds = time.perf_counter() - start if start else 0.0  # type: ignore[attr-defined]
            raise
        finally:
            if manager.has_kernel:  # the client shuts down only kernels it started itself
                manager.shutdown_kernel(now=True)
        return time.perf_counter() - start


def run_notebook(
    path: Path, *, timeout: int = CELL_TIMEOUT_S, html_dir: Path | None = None, write_back: bool = False
) -> NotebookResult:
    """Execute one notebook in a fresh offline kernel; the notebook file is left as it is unless asked.

    With ``html_dir``, the executed notebook (failed ones included, up to the failing cell) is
    also written there as ``<name>.html``. With ``write_back``, a notebook that passed is saved
    in place with its new outputs (each cell's stream output merged into one piece, no timings),
    which is how a lesson's committed outputs are refreshed.
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    try:
        seconds = execute(nb, path.parent, timeout=timeout)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        first_line = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        detail = getattr(exc, "ename", type(exc).__name__)
        message = f"{detail}: {getattr(exc, 'evalue', first_line)}"
        result = NotebookResult(path.name, "failed", round(getattr(exc, "labkit_seconds", 0.0), 2), message[:300])
    else:
        result = NotebookResult(path.name, "passed", round(seconds, 2))
    if html_dir is not None:
        export_html(nb, html_dir / f"{path.stem}.html")
    if write_back and result.status == "passed":
        from nbconvert.preprocessors import CoalesceStreamsPreprocessor

        nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
        nbformat.write(nb, path)
    return result


def results_table(results: list[NotebookResult]) -> str:
    """Return a plain-text table of notebook, status and seconds."""
    width = max([len("notebook")] + [len(r.notebook) for r in results])
    lines = [f"{'notebook':<{width}}  {'status':<6}  {'seconds':>7}"]
    for r in results:
        lines.append(f"{r.notebook:<{width}}  {r.status:<6}  {r.seconds:>7.2f}")
        if r.error:
            lines.append(f"{'':<{width}}  -> {r.error}")
    passed = sum(r.status == "passed" for r in results)
    lines.append(f"{passed} of {len(results)} notebooks passed")
    return "\n".join(lines)


def results_json(results: list[NotebookResult]) -> list[dict[str, object]]:
    """Return the results as JSON-ready dicts, for scripts."""
    return [asdict(r) for r in results]
