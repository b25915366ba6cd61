"""Tables the notebooks show: pandas frames whose text columns read left-aligned and wrap.

`text_table` turns a ``DataFrame`` into a `TextTable`, a ``DataFrame`` in every
respect but its HTML form: text columns are left-aligned and wrap within a
readable width (pandas leaves every cell right-aligned), and the table is marked
so MathJax leaves dollar signs alone. Its plain-text form is pandas' own.
"""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Longest text cell, in characters, before `shorten` cuts it with an ellipsis.
TEXT_CELL_LIMIT = 110


def shorten(text: str, width: int = TEXT_CELL_LIMIT) -> str:
    """Return ``text`` on one line, cut at a word boundary with an ellipsis when it is longer than ``width``."""
    return textwrap.shorten(text, width=width, placeholder=" …") if len(text) > width else text


def _text_table_class() -> type:
    import pandas as pd

    class TextTable(pd.DataFrame):
        """A DataFrame whose HTML form left-aligns and wraps its text columns."""

        @property
        def _constructor(self) -> type:
            return TextTable

        def _repr_html_(self) -> str | None:
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


def styled_html(page: str, columns: list[int], *, index_levels: int = 1) -> str:
    """Return pandas' HTML for a frame with these column positions left-aligned and wrapping, MathJax kept off."""
    # Each body row is index header cells, then data cells: column i is child i + levels + 1.
    children = [c + index_levels + 1 for c in columns]
    name = "lk-table" + "".join(f"-{c}" for c in children)
    rules = "".join(
        f"table.{name} td:nth-child({c}), table.{name} thead th:nth-child({c}) "
        "{ text-align: left; white-space: normal; max-width: 48em; overflow-wrap: anywhere; }\n"
        for c in children
    )
    marked = re.sub(r'class="dataframe"', f'class="dataframe tex2jax_ignore {name}"', page, count=1)
    return f"<style>\n{rules}</style>\n{marked}" if rules else marked
