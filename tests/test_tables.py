import re

import pandas as pd

from labkit.tables import shorten, text_table


def _frame():
    return pd.DataFrame({"id": [1, 2], "error": ["short", "a much longer message"], "score": [0.5, 0.25]})


def test_text_columns_are_left_aligned_and_numbers_keep_pandas_alignment():
    page = text_table(_frame())._repr_html_()
    # index header is child 1, id 2, error 3, score 4: only error is text
    assert re.findall(r"td:nth-child\((\d+)\)", page) == ["3"]
    assert "text-align: left" in page and "white-space: normal" in page


def test_text_table_keeps_the_data_and_the_plain_text_of_pandas():
    frame = _frame()
    table = text_table(frame)
    assert repr(table) == repr(frame) and table.equals(frame)
    assert type(table.set_index("id")) is type(table), "operations keep the readable HTML"


def test_tables_are_marked_so_mathjax_leaves_dollar_signs_alone():
    page = text_table(pd.DataFrame({"cost": ["$0.5 (limit $1)"]}))._repr_html_()
    assert 'class="dataframe tex2jax_ignore' in page and "$0.5 (limit $1)" in page


def test_shorten_cuts_at_a_word_with_an_ellipsis_and_leaves_short_text_alone():
    assert shorten("one two three four", width=12) == "one two …"
    assert shorten("one two", width=12) == "one two"
    assert len(shorten("word " * 50)) <= 110 and shorten("word " * 50).endswith(" …")
