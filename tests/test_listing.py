import inspect

import pytest

from labkit.listing import Listing, ListingTooLong, show_source
from labkit.replay import BoundReplay, request_diff


def test_listing_is_the_source_that_runs():
    listing = show_source(request_diff)
    assert listing.source == inspect.getsource(request_diff).rstrip("\n")
    assert listing.qualname == "labkit.replay.request_diff"
    assert listing.path == "labkit/replay.py"
    assert listing.first_line == inspect.getsourcelines(request_diff)[1]


def test_plain_text_shows_header_note_and_code_for_nbval():
    text = repr(show_source(request_diff, note="Listing 3.2 of the lab"))
    assert text.startswith("labkit.replay.request_diff  (labkit/replay.py, line ")
    assert "\nListing 3.2 of the lab\n\ndef request_diff(" in text


def test_html_is_highlighted_with_line_numbers_from_the_file():
    listing = show_source(request_diff)
    page = listing._repr_html_()
    assert "labkit-listing" in page and "<span" in page
    assert str(listing.first_line) in page


def test_a_method_is_dedented():
    listing = show_source(BoundReplay.__init__, max_lines=200)
    assert listing.source.startswith("def __init__")


def test_a_listing_longer_than_a_page_is_refused_with_what_to_do():
    with pytest.raises(ListingTooLong, match="Split it into named steps"):
        show_source(BoundReplay, max_lines=5)


def test_listing_reports_its_length():
    assert Listing("q", "p", 1, "a\nb\nc").lines == 3
