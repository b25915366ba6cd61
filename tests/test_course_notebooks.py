"""Guards for strict nbval: what nbval cannot compare in a committed notebook must be checked another way.

nbval compares a code cell's saved outputs with a fresh run, but it skips a cell saved without an
execution count, it sees a figure only as ``<Figure size ...>`` and a trace viewer only as
``TraceViewer(N events)``. So, for every committed notebook:

1. every code cell was executed (has an execution count), and a cell whose last line is a bare value
   (a name, attribute, subscript, literal: something that always displays) has its output saved;
2. every figure's data is asserted: the figure's cell or the next code cell runs a check (``check(`` or
   ``assert``), or the plotting function it calls is exercised by a unit test under tests/;
3. every trace viewer has a text summary beside it (in its own cell or the code cell just before or
   after it) that nbval compares.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from labkit.paths import project_root

NOTEBOOKS = sorted((project_root() / "notebooks").glob("[0-9][0-9]*_*.ipynb"))

# Known violations in the committed notebooks, as (notebook, cell index, rule): none. Never add to it to pass a
# new notebook; fix the cell instead.
KNOWN_VIOLATIONS: set[tuple[str, int, str]] = set()


def _code_cells(path: Path) -> list[tuple[int, dict]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(index, cell) for index, cell in enumerate(cells) if cell["cell_type"] == "code"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _text_of(output: dict) -> str:
    stream = output["output_type"] == "stream"
    text = output.get("text", "") if stream else output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _always_displays(source: str) -> bool:
    """Tell whether a cell's last statement is a bare value that Jupyter always displays (not a call, no ``;``)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False  # an IPython magic or shell line; nothing to decide
    if not body or source.rstrip().endswith(";"):
        return False
    last = body[-1]
    return isinstance(last, ast.Expr) and not isinstance(last.value, ast.Call | ast.Await | ast.Yield)


def _is_figure(output: dict) -> bool:
    data = output.get("data", {})
    return "image/png" in data or "image/svg+xml" in data or _text_of(output).startswith("<Figure size")


def _is_viewer(output: dict) -> bool:
    return re.match(r"TraceViewer\(\d+ events?\)", _text_of(output)) is not None


def _called_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names - {""}


def _unit_test_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((project_root() / "tests").glob("test_*.py")))


def violations(path: Path, unit_tests: str) -> set[tuple[str, int, str]]:
    """Return (notebook, cell index, rule) for every cell of ``path`` that breaks one of the rules above."""
    found = set()
    cells = _code_cells(path)
    for position, (index, cell) in enumerate(cells):
        source, outputs = _source(cell), cell.get("outputs", [])
        if not source.strip():
            continue
        if cell.get("execution_count") is None:
            found.add((path.name, index, "no execution count"))
        if not outputs and _always_displays(source):
            found.add((path.name, index, "no saved output"))
        neighbours = [cells[p][1] for p in (position - 1, position + 1) if 0 <= p < len(cells)]
        if any(_is_figure(o) for o in outputs):
            following = _source(cells[position + 1][1]) if position + 1 < len(cells) else ""
            checked = re.search(r"\bcheck\(|\bassert\b", source + "\n" + following) is not None
            plotted = {name for name in _called_names(source) if name.startswith("plot")}
            tested = any(re.search(rf"\b{re.escape(name)}\(", unit_tests) for name in plotted)
            if not (checked or tested):
                found.add((path.name, index, "figure without a check"))
        if any(_is_viewer(o) for o in outputs):
            beside = [o for c in [cell, *neighbours] for o in c.get("outputs", []) if not _is_viewer(o)]
            if not any(_text_of(o).strip() for o in beside):
                found.add((path.name, index, "trace viewer without a text summary"))
    return found


def test_there_are_notebooks_to_guard():
    assert len(NOTEBOOKS) >= 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_keeps_what_strict_nbval_cannot_compare_checked(path):
    found = violations(path, _unit_test_text())
    known = {v for v in KNOWN_VIOLATIONS if v[0] == path.name}
    assert found - known == set(), "fix these cells (see the rules in this file's docstring)"
    assert known <= found, f"fixed: remove {sorted(known - found)} from KNOWN_VIOLATIONS"


def _notebook(tmp_path: Path, *cells: dict) -> Path:
    path = tmp_path / "99_example.ipynb"
    path.write_text(json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _code(source: str, outputs: list[dict], count: int | None = 1) -> dict:
    return {"cell_type": "code", "source": source, "outputs": outputs, "execution_count": count, "metadata": {}}


def _result(text: str, **data: str) -> dict:
    return {"output_type": "execute_result", "data": {"text/plain": text, **data}, "metadata": {}, "execution_count": 1}


def _stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_a_cell_saved_without_an_execution_count_is_caught(tmp_path):
    path = _notebook(tmp_path, _code("x = 1", [], count=None))
    assert violations(path, "") == {("99_example.ipynb", 0, "no execution count")}


def test_a_bare_value_saved_without_its_output_is_caught_but_a_call_or_semicolon_is_not(tmp_path):
    path = _notebook(tmp_path, _code("table", []), _code("run()", []), _code("table;", []), _code("x = 2", []))
    assert violations(path, "") == {("99_example.ipynb", 0, "no saved output")}


def test_a_figure_needs_a_check_or_a_unit_tested_plot_function(tmp_path):
    figure = _result("<Figure size 640x480 with 1 Axes>", **{"image/png": "iVBOR"})
    unchecked = _notebook(tmp_path, _code("fig = plot_hits(rows)", [figure]), _code("print(1)", [_stream("1\n")]))
    assert violations(unchecked, "") == {("99_example.ipynb", 0, "figure without a check")}
    assert violations(unchecked, "def test_x():\n    plot_hits(rows)\n") == set()
    checked = _notebook(tmp_path, _code("fig = draw(rows)", [figure]), _code("check(rows == [1])", []))
    assert violations(checked, "") == set()


def test_a_trace_viewer_needs_a_text_summary_beside_it(tmp_path):
    viewer = _result("TraceViewer(8 events)")
    alone = _notebook(tmp_path, _code("TraceViewer(trace)", [viewer]), _code("x = 1", []))
    assert violations(alone, "") == {("99_example.ipynb", 0, "trace viewer without a text summary")}
    summarised = _notebook(tmp_path, _code("TraceViewer(trace)", [viewer]), _code("s", [_stream("8 events\n")]))
    assert violations(summarised, "") == set()
