"""How a lesson reads: rules every committed notebook keeps, checked on the saved .ipynb.

1. code fits the page: every line of a code cell within 100 columns;
2. a lesson speaks of its subject, never of how it is tested (no nbval, sanitizer or "when this notebook is
   tested" in its prose or its printed output);
3. the first cell names the reference it teaches, with its section numbers (the book chapter, the lab or the
   walkthrough, as the README names them);
4. near its top, a notebook tells a self-learner how to get the copy without solutions;
5. prose computed by code (a cell that only displays Markdown) keeps its source hidden, so the learner reads the
   sentence once, not twice;
6. a lesson never changes the working directory;
7. every notebook has a "try your own" cell (tag ``try-your-own``).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from labkit.paths import project_root

NOTEBOOKS = sorted((project_root() / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
MAX_COLUMNS = 100
HARNESS_WORDS = re.compile(
    r"\bnbval\b|sanitiz|when (this|the) notebook is tested|is not compared|strict mode|under test\b", re.IGNORECASE
)
#: What each lesson's first cell names: the reference and at least one of its section numbers.
REFERENCES = {
    "01": (r"Integrated AI system cases", r"12\.2"),
    "02a": (r"Build a RAG pipeline", r"trace"),
    "02b": (r"Integrated AI system cases", r"12\.3"),
    "03": (r"Build a RAG pipeline", r"replay"),
    "04": (r"Integrated AI system cases", r"12\.4"),
    "05": (r"Integrated AI system cases", r"12\.7"),
    "06": (r"routing regression gate", r"walkthrough"),
}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _printed(cell: dict) -> str:
    texts = []
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain") or ""
        texts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(texts)


def _only_displays_markdown(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    if not body:
        return False
    for statement in body:
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            return False
        call = statement.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        inner = call.args[0] if call.args and isinstance(call.args[0], ast.Call) else None
        inner_name = "" if inner is None else getattr(inner.func, "id", getattr(inner.func, "attr", ""))
        if not (name == "Markdown" or (name == "display" and inner_name == "Markdown")):
            return False
    return True


def _dropped_listings(source: str) -> list[int]:
    """Lines where a bare `show_source(...)` is not the cell's last statement, so Jupyter never shows it."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return []
    return [
        statement.lineno
        for statement in body[:-1]
        if isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and getattr(statement.value.func, "id", getattr(statement.value.func, "attr", "")) == "show_source"
    ]


ids = [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_code_lines_fit_in_100_columns(path):
    long = [
        (index, number)
        for index, cell in enumerate(_cells(path))
        if cell["cell_type"] == "code"
        for number, line in enumerate(_source(cell).splitlines(), start=1)
        if len(line) > MAX_COLUMNS
    ]
    assert not long, f"{path.name}: code lines over {MAX_COLUMNS} columns at (cell, line) {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_a_lesson_never_speaks_of_its_test_harness(path):
    found = []
    for index, cell in enumerate(_cells(path)):
        text = _source(cell) if cell["cell_type"] == "markdown" else _printed(cell)
        found += [(index, m.group()) for m in HARNESS_WORDS.finditer(text)]
    assert not found, f"{path.name}: prose or output about the test harness at {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_the_first_cell_names_the_reference_and_its_sections(path):
    first = _source(_cells(path)[0])
    reference, section = REFERENCES[path.name.partition("_")[0]]
    assert re.search(reference, first), f"{path.name}: the first cell does not name its reference ({reference})"
    assert re.search(section, first), f"{path.name}: the first cell names no section of its reference ({section})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_the_top_tells_a_self_learner_how_to_get_the_copy_without_solutions(path):
    top = "\n".join(_source(c) for c in _cells(path)[:3] if c["cell_type"] == "markdown")
    assert "labkit workshop export" in top, f"{path.name}: the top does not say how to get the student copy"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_computed_prose_keeps_its_source_hidden(path):
    shown = [
        index
        for index, cell in enumerate(_cells(path))
        if cell["cell_type"] == "code"
        and _only_displays_markdown(_source(cell))
        and not cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")
    ]
    assert not shown, f"{path.name}: cells {shown} display computed prose with their source shown"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_listing_a_cell_asks_for_is_displayed(path):
    """A bare show_source(...) above a cell's last line returns a listing Jupyter silently drops."""
    dropped = {
        index: lines
        for index, cell in enumerate(_cells(path))
        if cell["cell_type"] == "code" and (lines := _dropped_listings(_source(cell)))
    }
    assert not dropped, f"{path.name}: {{cell: lines}} {dropped} call show_source without display(...)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_a_lesson_never_changes_the_working_directory(path):
    changing = [i for i, c in enumerate(_cells(path)) if c["cell_type"] == "code" and "chdir(" in _source(c)]
    assert not changing, f"{path.name}: cells {changing} change the working directory"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_lesson_has_a_try_your_own_cell(path):
    tagged = [c for c in _cells(path) if "try-your-own" in c.get("metadata", {}).get("tags", [])]
    assert tagged, f"{path.name}: no cell tagged try-your-own"


def test_the_rules_catch_what_they_guard(tmp_path):
    """Each rule fails on a notebook built to break it."""
    assert _only_displays_markdown('display(Markdown(f"{n} passed"))')
    assert _only_displays_markdown('Markdown("x")')
    assert not _only_displays_markdown('x = 1\ndisplay(Markdown("x"))')
    assert _dropped_listings("show_source(f)\nx = 1") == [1]
    assert _dropped_listings("display(show_source(f))\nx = 1") == []
    assert _dropped_listings("x = 1\nshow_source(f)") == []
    assert HARNESS_WORDS.search("the picture is not compared when this notebook is tested")
    assert HARNESS_WORDS.search("nbval checks it")
    assert not HARNESS_WORDS.search("the judge's verdict is compared with the raters'")
