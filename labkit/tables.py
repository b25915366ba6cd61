"""Tables the notebooks show: pandas frames whose text columns read left-aligned and wrap, and intervals as ``[a, b]``.

`text_table` turns a ``DataFrame`` into a `TextTable`, a ``DataFrame`` in every
respect but its HTML form: text columns are left-aligned and wrap within a
readable width instead of being right-aligned and cut (pandas does both), and
the table is marked so MathJax leaves dollar signs alone. The alignment is
written as inline styles on the cells, because JupyterLab removes ``<style>``
elements from the outputs of a notebook that is not trusted, as committed
outputs are. Its plain-text form is pandas' own.

`interval` is the one way the course prints an interval.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Inline style of a text cell: left-aligned, wrapping at word boundaries (properties JupyterLab's sanitizer keeps).
TEXT_CELL_STYLE = "text-align: left; white-space: normal; overflow-wrap: break-word; min-width: 8em; max-width: 48em"


def interval(low: float | None, high: float | None, *, places: int = 2) -> str:
    """Return an interval as ``[-0.32, 0.78]`` (brackets and a comma, so a negative end never reads as a subtraction).

    ``undefined`` when either end is None (a kappa no resample could define).
    """
    if low is None or high is None:
        return "undefined"
    return f"[{low:.{places}f}, {high:.{places}f}]"


def _text_table_class() -> type:
    import pandas as pd

    class TextTable(pd.DataFrame):
        """A DataFrame whose HTML form left-aligns and wraps its text columns, cutting no cell."""

        @property
        def _constructor(self) -> type:
            return TextTable

        def _repr_html_(self) -> str | None:
            with pd.option_context("display.max_colwidth", None):
                page = super()._repr_html_()
            if page is None:
                return None
            return styled_html(page, text_columns(self), index_levels=self.index.nlevels)

    return TextTable


_CLASS: list[type] = []


def text_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Return ``frame`` as a `TextTable` (same data, same plain text; readable text columns in HTML)."""
    if not _CLASS:
        _CLASS.append(_text_table_class())
    table: pd.DataFrame = _CLASS[0](frame)
    return table


def text_columns(frame: Any) -> list[int]:
    """Return the positions of the columns that hold text (a text or object dtype, with a string in them)."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    return [
        position
        for position, (_, column) in enumerate(frame.items())
        if (is_object_dtype(column.dtype) or is_string_dtype(column.dtype))
        and any(isinstance(value, str) for value in column)
    ]


_ROW = re.compile(r"<tr\b[^>]*>.*?</tr>", re.DOTALL)
_CELL = re.compile(r"<(td|th)\b([^>]*)>")


def _style_row(row: str, wanted: set[int]) -> str:
    cells = iter(range(10**9))

    def style(match: re.Match[str]) -> str:
        position = next(cells)
        tag, attributes = match.group(1), match.group(2)
        if position not in wanted or "colspan" in attributes:
            return match.group(0)
        return f'<{tag}{attributes} style="{TEXT_CELL_STYLE}">'

    return _CELL.sub(style, row)


def styled_html(page: str, columns: list[int], *, index_levels: int = 1) -> str:
    """Return pandas' HTML for a frame with these column positions left-aligned and wrapping, MathJax kept off.

    Each row is its index cells, then one cell per column: column ``i`` is cell
    ``i + index_levels`` of a row that has one cell per column (header rows that
    span columns are left as pandas wrote them).
    """
    wanted = {c + index_levels for c in columns}
    marked = re.sub(r'class="dataframe"', 'class="dataframe tex2jax_ignore mathjax_ignore"', page, count=1)
    if not wanted:
        return marked
    return _ROW.sub(lambda row: _style_row(row.group(0), wanted), marked)
