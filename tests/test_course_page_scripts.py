"""The scripts an exported page carries: MathJax and Mermaid, vendored from pinned npm packages, inlined when needed."""

import hashlib

import nbformat
import pytest

from labkit.course import page_scripts
from labkit.course.page_scripts import SCRIPTS, PageScriptChanged, script_text
from labkit.course.runner import OFFLINE_TEMPLATE, export_html, page_needs


def _page(tmp_path, *, markdown=(), outputs=()):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text) for text in markdown]
    for data in outputs:
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
        nb.cells.append(cell)
    return export_html(nb, tmp_path / "page.html").read_text(encoding="utf-8")


def test_each_vendored_script_matches_its_pin_and_has_its_licence():
    for name, script in SCRIPTS.items():
        text = script_text(name)
        assert hashlib.sha256(text.encode()).hexdigest() == script.sha256
        assert (page_scripts.FOLDER / f"LICENSE.{name}").is_file()
        assert script.integrity.startswith("sha512-") and script.version.count(".") == 2


def test_a_vendored_script_that_changed_is_refused(tmp_path, monkeypatch):
    for script in SCRIPTS.values():
        (tmp_path / script.file).write_bytes((page_scripts.FOLDER / script.file).read_bytes() + b"\n// edited")
    monkeypatch.setattr(page_scripts, "FOLDER", tmp_path)
    with pytest.raises(PageScriptChanged, match=r"does not match the SHA-256 pinned for mathjax 3\.2\.2"):
        script_text("mathjax")
    (tmp_path / SCRIPTS["mermaid"].file).unlink()
    with pytest.raises(PageScriptChanged, match="cannot read the vendored mermaid script"):
        script_text("mermaid")


def test_a_page_with_a_formula_carries_mathjax_and_one_without_carries_nothing(tmp_path):
    plain = _page(tmp_path, markdown=["No formula here."])
    assert "window.MathJax" not in plain and "mermaid.initialize" not in plain
    with_math = _page(tmp_path, markdown=["For $k$ successes: $$\\hat p = k/n$$"])
    assert "window.MathJax = " in with_math and script_text("mathjax")[:200] in with_math
    assert "mermaid.initialize" not in with_math
    assert '"ignoreHtmlClass": "tex2jax_ignore|mathjax_ignore"' in with_math


def test_a_page_with_a_mermaid_diagram_carries_mermaid_and_nbconverts_rendering(tmp_path):
    diagram = {"text/markdown": "```mermaid\ngraph TD;\n  a --> b;\n```", "text/plain": "graph"}
    page = _page(tmp_path, outputs=[diagram])
    assert script_text("mermaid")[:200] in page and "mermaid.initialize({startOnLoad: false})" in page
    assert '<pre class="mermaid">' in page and ".jp-Mermaid > pre.mermaid" in page
    assert "window.MathJax" not in page


def test_what_a_page_needs_is_read_from_markdown_cells_and_outputs():
    nb = nbformat.v4.new_notebook()
    assert page_needs(nb) == {"mathjax": False, "mermaid": False}
    nb.cells = [nbformat.v4.new_markdown_cell("a \\(x\\) formula")]
    assert page_needs(nb) == {"mathjax": True, "mermaid": False}
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/vnd.mermaid": "graph TD; a-->b"})]
    nb.cells = [cell]
    assert page_needs(nb) == {"mathjax": False, "mermaid": True}


def test_the_export_template_names_no_other_host():
    assert "http" not in OFFLINE_TEMPLATE and "cdn" not in OFFLINE_TEMPLATE.lower()
