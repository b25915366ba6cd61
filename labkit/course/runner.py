"""Run the course's notebooks headless, offline, in replay mode, and report each one's status and time."""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from labkit.errors import LabkitError
from labkit.paths import atomic_write, notebooks_dir, writable_folder

#: Seconds one cell may run before the notebook counts as failed.
CELL_TIMEOUT_S = 300


class NotebookUnreadable(LabkitError, ValueError):
    """A notebook file is missing, not a regular file, or not a valid notebook."""


class NotebookLocked(LabkitError, BlockingIOError):
    """Another ``labkit run --update`` is rewriting the same notebook right now."""


class KernelDied(LabkitError, RuntimeError):
    """The notebook's kernel process ended while a cell ran (``os._exit``, out of memory, a crash)."""


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
    offline_guard: str = ""
    """Which offline guard the kernel ran under (see `labkit.offline.offline_guard`)."""


def course_notebooks(folder: Path | None = None) -> list[Path]:
    """Return the numbered notebooks in teaching order (``02a_...`` and ``02b_...`` are the two parts of lesson 02)."""
    folder = folder or notebooks_dir()
    return sorted(p for p in folder.glob("[0-9][0-9]*_*.ipynb"))


def notebook_matches(path: Path, name: str) -> bool:
    """Tell whether ``name`` names this notebook: its file name, its stem, its number (``02b``), or its lesson (``02``).

    A lesson's number names all its parts: ``02`` is ``02a_rag_trace.ipynb`` and ``02b_filings_rag.ipynb``.
    """
    number = path.name.partition("_")[0]
    return name in (path.name, path.stem, number, number[:2])


def read_notebook(path: Path) -> Any:
    """Read a notebook, refusing with one line a missing or special file (FIFO, device) or a corrupt one."""
    import nbformat

    if not path.is_file():
        what = "no such file" if not path.exists() else "not a regular file"
        raise NotebookUnreadable(f"{path}: {what}; give the path of a .ipynb notebook file")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises JSON, Unicode and schema errors of several kinds
        reason = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise NotebookUnreadable(
            f"{path}: not a readable notebook ({type(exc).__name__}: {reason[:200]}); "
            f"restore it with `git checkout -- {path.name}` or open and re-save it in Jupyter"
        ) from None


@contextmanager
def notebook_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on a notebook while it is re-executed and saved; a second holder fails at once.

    The lock is taken on the notebook file itself (``flock``), so no lock file is left
    behind. Where ``fcntl`` is missing (Windows) no lock is taken.
    """
    try:
        import fcntl
    except ImportError:
        fcntl = None  # type: ignore[assignment]
    if fcntl is None or not path.is_file():  # a missing or special file is refused by `read_notebook`, unopened
        yield
        return
    busy = NotebookLocked(
        f"{path.name} is being updated by another `labkit run --update`; wait for it to finish, then run again"
    )
    with open(path, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        if os.fstat(handle.fileno()).st_ino != os.stat(path).st_ino:  # replaced by the holder we waited behind
            raise busy
        yield


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


def kernel_manager(folder: Path, *, asynchronous: bool = False) -> Any:
    """Return a python3 kernel manager; on POSIX over Unix sockets in ``folder`` (no TCP port, no warning).

    The runner uses the asynchronous manager: with it nbclient polls the kernel
    process while a cell runs, so a kernel that dies ends the cell within seconds.
    """
    from jupyter_client.manager import AsyncKernelManager, KernelManager

    cls = AsyncKernelManager if asynchronous else KernelManager
    if os.name == "posix":
        return cls(kernel_name="python3", transport="ipc", ip=str(folder / "kernel"))
    return cls(kernel_name="python3")


#: nbconvert's lab page with no script from another host: no require.js and no widget manager (each
#: widget output carries its own HTML form), and MathJax and Mermaid inlined from `labkit.course.page_scripts`
#: (only in a page that has a formula or a diagram) instead of fetched from a CDN. Mermaid's diagrams are
#: drawn by nbconvert's own rendering code, handed the inlined library through a one-line module (the
#: library's own start-on-load is turned off first, or it would draw each diagram before nbconvert reads it).
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{% from 'mermaidjs.html.j2' import mermaid_js %}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}
{%- if resources.labkit_mathjax %}
<script>window.MathJax = {{ resources.labkit_mathjax_config }};</script>
<script>{{ resources.labkit_mathjax }}</script>
{%- endif -%}
{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}
{%- if resources.labkit_mermaid %}
<script>{{ resources.labkit_mermaid }}</script>
<script>mermaid.initialize({startOnLoad: false});</script>
{{ mermaid_js("data:text/javascript,export default globalThis.mermaid", "") }}
{%- endif -%}
{%- endblock html_head_js_mermaidjs -%}
"""

#: MathJax 3's settings for an exported page: the delimiters and escapes nbconvert's MathJax setup uses,
#: and the classes the course puts on tables and trace viewers to keep dollar signs in data as text.
MATHJAX_CONFIG = {
    "tex": {
        "inlineMath": [["$", "$"], ["\\(", "\\)"]],
        "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
        "processEscapes": True,
        "processEnvironments": True,
        "tags": "ams",
    },
    "options": {"ignoreHtmlClass": "tex2jax_ignore|mathjax_ignore", "processHtmlClass": "tex2jax_process"},
    "svg": {"fontCache": "global"},
}

_MATH = re.compile(r"\$|\\\(|\\\[|\\begin\{")


def _texts(nb: Any) -> Iterator[tuple[str, str]]:
    """Yield (kind, text) for every markdown cell and every markdown, LaTeX or Mermaid output."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            yield "text/markdown", cell.source
        for output in cell.get("outputs", []):
            for mime in ("text/markdown", "text/latex", "text/vnd.mermaid"):
                value = output.get("data", {}).get(mime)
                if value is not None:
                    yield mime, "".join(value) if isinstance(value, list) else str(value)


def page_needs(nb: Any) -> dict[str, bool]:
    """Return which scripts an exported page of ``nb`` needs: ``mathjax`` for a formula, ``mermaid`` for a diagram."""
    texts = list(_texts(nb))
    return {
        "mathjax": any(mime != "text/vnd.mermaid" and _MATH.search(text) for mime, text in texts),
        "mermaid": any(mime == "text/vnd.mermaid" or "```mermaid" in text for mime, text in texts),
    }


def export_html(nb: Any, path: Path) -> Path:
    """Write an executed notebook as a standalone HTML page that needs no network (for sharing a run with a room).

    Widgets are shown by the static HTML form each output carries beside its widget
    view (`labkit.widgets.TraceViewer` has one), so the page needs no widget manager;
    images are embedded; formulas and Mermaid diagrams render from the MathJax and
    Mermaid inlined in the page; no script or style sheet comes from another host.
    """
    import copy
    import json

    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    from labkit.course.page_scripts import script_text

    page = copy.deepcopy(nb)
    page.metadata.pop("widgets", None)  # without widget state nbconvert shows each output's text/html form
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"labkit_offline.html.j2": OFFLINE_TEMPLATE})],
        template_file="labkit_offline.html.j2",
        embed_images=True,
    )
    needs = page_needs(page)
    resources = {
        "labkit_mathjax": script_text("mathjax") if needs["mathjax"] else "",
        "labkit_mathjax_config": json.dumps(MATHJAX_CONFIG),
        "labkit_mermaid": script_text("mermaid") if needs["mermaid"] else "",
    }
    body, _ = exporter.from_notebook_node(page, resources=resources)
    return atomic_write(writable_folder(path.parent) / path.name, body)


def _exit_reason(manager: Any) -> str:
    process = getattr(getattr(manager, "provisioner", None), "process", None)
    code = process.poll() if process is not None else None
    if code is None:
        return "the kernel stopped answering"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit code {code}"


def save_widget_state(client: Any) -> None:
    """Replace the notebook's saved widget state with this run's, so every widget view in its outputs has a model.

    Models saved by earlier runs are dropped; a run that made no widget leaves no state.
    """
    client.nb.metadata.pop("widgets", None)
    client.set_widgets_metadata()


def execute(nb: Any, folder: Path, *, timeout: int = CELL_TIMEOUT_S, allow_errors: bool = False) -> float:
    """Execute a notebook node in place in a fresh offline kernel started in ``folder``; return the seconds.

    Kernel start is not counted. Each run has its own scratch folder (``LABKIT_SCRATCH``),
    removed afterwards. Without ``allow_errors`` the first failing cell raises
    nbclient's error; with it, every cell runs and errors stay in the cells' outputs. A
    kernel that dies raises `KernelDied` (naming the code cell and exit reason) in
    either case. The error carries the seconds so far as ``labkit_seconds`` and the index
    of the cell it came from as ``labkit_cell`` (-1 before the first).
    """
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    from labkit.offline import offline_kernel_env

    with tempfile.TemporaryDirectory(prefix="labkit-run-") as tmp:
        env = offline_kernel_env(ipython_dir=Path(tmp))
        env["LABKIT_SCRATCH"] = str(Path(tmp) / "scratch")
        with _environment(env):
            manager = kernel_manager(Path(tmp), asynchronous=True)
            client = NotebookClient(
                nb,
                timeout=timeout,
                km=manager,
                record_timing=False,
                allow_errors=allow_errors,
                resources={"metadata": {"path": str(folder)}},
            )
            start = None
            code_cell = 0
            index = -1
            try:
                with client.setup_kernel():
                    start = time.perf_counter()
                    for index, cell in enumerate(nb.cells):
                        code_cell += cell.cell_type == "code"
                        client.execute_cell(cell, index)
                    save_widget_state(client)
            except DeadKernelError:
                died = KernelDied(
                    f"the kernel died in code cell {code_cell} ({_exit_reason(manager)}); "
                    "the notebook stopped there. Look for os._exit, a crash or a cell that uses too much memory"
                )
                died.labkit_seconds = time.perf_counter() - start if start else 0.0  # type: ignore[attr-defined]
                raise died from None
            except Exception as exc:
                exc.labkit_seconds = time.perf_counter() - start if start else 0.0  # type: ignore[attr-defined]
                exc.labkit_cell = index  # type: ignore[attr-defined]  # which cell failed or ran out of time
                raise
            finally:
                if manager.has_kernel:  # the client shuts down only kernels it started itself
                    run_sync(manager.shutdown_kernel)(now=True)
            return time.perf_counter() - start


def run_notebook(
    path: Path, *, timeout: int = CELL_TIMEOUT_S, html_dir: Path | None = None, write_back: bool = False
) -> NotebookResult:
    """Execute one notebook in a fresh offline kernel; the notebook file is left as it is unless asked.

    With ``html_dir``, the executed notebook (failed ones included, up to the failing cell) is
    also written there as ``<name>.html``. With ``write_back``, the notebook is locked for the
    whole run (a second ``--update`` of it fails at once) and, if it passed, saved in place
    atomically with its new outputs (each cell's stream output merged into one piece, no
    timings), which is how a lesson's committed outputs are refreshed. A missing or corrupt
    notebook, or a locked one, is a failed result, never an exception, so the others still run.
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    from labkit.offline import offline_guard

    guard = offline_guard()
    try:
        with notebook_lock(path) if write_back else nullcontext():
            nb = read_notebook(path)
            try:
                seconds = execute(nb, path.parent, timeout=timeout)
            except (CellExecutionError, CellTimeoutError, KernelDied) as exc:
                first_line = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
                detail = getattr(exc, "ename", type(exc).__name__)
                message = f"{detail}: {getattr(exc, 'evalue', first_line)}"
                seconds_so_far = round(getattr(exc, "labkit_seconds", 0.0), 2)
                result = NotebookResult(path.name, "failed", seconds_so_far, message[:300], guard)
            else:
                result = NotebookResult(path.name, "passed", round(seconds, 2), offline_guard=guard)
            if html_dir is not None:
                export_html(nb, html_dir / f"{path.stem}.html")
            if write_back and result.status == "passed":
                from nbconvert.preprocessors import CoalesceStreamsPreprocessor

                nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
                atomic_write(path, nbformat.writes(nb).rstrip("\n") + "\n")
    except (NotebookUnreadable, NotebookLocked) as exc:
        result = NotebookResult(path.name, "failed", 0.0, f"{type(exc).__name__}: {exc}", guard)
    return result


def results_table(results: list[NotebookResult]) -> str:
    """Return a plain-text table of notebook, status and seconds."""
    width = max([len("notebook")] + [len(r.notebook) for r in results])
    guards = sorted({r.offline_guard for r in results if r.offline_guard})
    lines = [f"offline guard: {', '.join(guards)}"] if guards else []
    lines.append(f"{'notebook':<{width}}  {'status':<6}  {'seconds':>7}")
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
