import re

import pandas as pd
import pytest

from labkit.tables import TEXT_CELL_STYLE, interval, text_table


def _frame():
    return pd.DataFrame({"id": [1, 2], "error": ["short", "a much longer message"], "score": [0.5, 0.25]})


def _cells(page, tag="td"):
    """Return each body row's cells as (style attribute or None, text)."""
    body = page.split("<tbody>")[1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.DOTALL)
    return [re.findall(rf"<{tag}(?: style=\"([^\"]*)\")?>(.*?)</{tag}>", row, re.DOTALL) for row in rows]


def test_text_columns_are_left_aligned_by_inline_styles_and_numbers_keep_pandas_alignment():
    page = text_table(_frame())._repr_html_()
    sheets = re.findall(r"<style.*?</style>", page, re.DOTALL)
    assert not any("text-align: left" in sheet for sheet in sheets), "JupyterLab drops <style> when untrusted"
    for row in _cells(page):
        (id_style, _), (error_style, _), (score_style, _) = row
        assert error_style == TEXT_CELL_STYLE and not id_style and not score_style
    header = re.findall(r"<th(?: style=\"([^\"]*)\")?>([^<]*)</th>", page.split("<tbody>")[0])
    assert ("", "id") in header and (TEXT_CELL_STYLE, "error") in header
    assert "text-align: left" in TEXT_CELL_STYLE and "white-space: normal" in TEXT_CELL_STYLE


def test_text_cells_are_never_cut():
    long = "word " * 60
    page = text_table(pd.DataFrame({"error": [long.strip()]}))._repr_html_()
    assert long.strip() in page and "..." not in page and "…" not in page


def test_index_levels_shift_the_styled_cells():
    frame = pd.DataFrame({"case": ["a", "b"], "note": ["x y", "z"], "n": [1, 2]}).set_index("case")
    page = text_table(frame)._repr_html_()
    assert _cells(page)[0] == [(TEXT_CELL_STYLE, "x y"), ("", "1")]
    assert re.search(r"<th>a</th>", page), "the index cell is left as pandas wrote it"


def test_text_table_keeps_the_data_and_the_plain_text_of_pandas():
    frame = _frame()
    table = text_table(frame)
    assert repr(table) == repr(frame) and table.equals(frame)
    assert type(table.set_index("id")) is type(table), "operations keep the readable HTML"


def test_tables_are_marked_so_mathjax_leaves_dollar_signs_alone():
    page = text_table(pd.DataFrame({"cost": ["$0.5 (limit $1)"]}))._repr_html_()
    assert 'class="dataframe tex2jax_ignore mathjax_ignore"' in page and "$0.5 (limit $1)" in page


@pytest.mark.parametrize(
    ("low", "high", "shown"),
    [
        (-0.32, 0.78, "[-0.32, 0.78]"),
        (0.5, 1.0, "[0.50, 1.00]"),
        (-1.0, -0.25, "[-1.00, -0.25]"),
        (None, 0.3, "undefined"),
    ],
)
def test_an_interval_reads_as_two_ends_never_as_a_subtraction(low, high, shown):
    assert interval(low, high) == shown
    assert not re.search(r"\d-\d", interval(low, high))


def test_an_interval_can_show_more_places():
    assert interval(0.1234, 0.5, places=3) == "[0.123, 0.500]"


def test_no_lesson_formats_an_interval_by_hand():
    from pathlib import Path

    import labkit

    hand = re.compile(r"""\{[^{}]*(low|lo)\b[^{}]*\}-\{[^{}]*(high|hi)\b[^{}]*\}""")
    offenders = [
        f"{path.relative_to(Path(labkit.__file__).parent)}:{n}"
        for path in Path(labkit.__file__).parent.rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if hand.search(line)
    ]
    assert offenders == [], "format intervals with labkit.tables.interval"
