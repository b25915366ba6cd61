"""Show the real source of a labkit function or class in a notebook, syntax-highlighted.

The code is read with `inspect` from the module that runs, so a listing can
never drift from what the lesson executes. A listing that is longer than a
page is refused: split the function into named steps and show each step.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from labkit.errors import LabkitError

#: The longest listing a notebook shows, in lines; longer code is split into named steps first.
MAX_LINES = 40


class ListingTooLong(LabkitError, ValueError):
    """A listing is longer than a notebook page; the code should be split into named steps."""


@dataclass(frozen=True)
class Listing:
    """The source of one object, as a notebook shows it: highlighted HTML, and plain text for nbval."""

    qualname: str
    """The object's dotted name, as a learner would import it."""
    path: str
    """The file inside the package, for example ``labkit/replay.py``."""
    first_line: int
    """The line number of the first line shown."""
    source: str
    """The code, dedented."""
    note: str | None = None
    """One line on how the listing maps to the book's listing."""

    @property
    def lines(self) -> int:
        return self.source.count("\n") + 1

    def header(self) -> str:
        where = f"{self.path}, line {self.first_line}"
        return f"{self.qualname}  ({where})" + (f"\n{self.note}" if self.note else "")

    def __repr__(self) -> str:  # the text nbval compares: what is shown, without markup
        return f"{self.header()}\n\n{self.source}"

    def _repr_html_(self) -> str:
        import html

        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        formatter = HtmlFormatter(
            nowrap=False, noclasses=True, style="default", linenos="inline", linenostart=self.first_line
        )
        code = highlight(self.source, PythonLexer(), formatter)
        note = f"<div style='margin:2px 0 4px 0'>{html.escape(self.note)}</div>" if self.note else ""
        return (
            "<div class='labkit-listing' style='border-left:3px solid #3465a4;padding-left:8px'>"
            f"<div style='font-family:monospace;color:#555'>{html.escape(self.qualname)} "
            f"<span style='color:#888'>({html.escape(self.path)}, line {self.first_line})</span></div>"
            f"{note}{code}</div>"
        )


def _package_path(filename: str) -> str:
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("labkit") :]) if "labkit" in parts else parts[-1]


def show_source(obj: Any, *, note: str | None = None, max_lines: int = MAX_LINES) -> Listing:
    """Return the real source of ``obj`` (a function, class or method) as a `Listing` a notebook displays.

    ``note`` is one line on how the code maps to the book's listing. Code longer
    than ``max_lines`` raises `ListingTooLong`: split it into named steps first.
    """
    target = inspect.unwrap(obj)
    lines, first = inspect.getsourcelines(target)
    source = textwrap.dedent("".join(lines)).rstrip("\n")
    module = inspect.getmodule(target)
    qualname = f"{module.__name__ if module else '?'}.{getattr(target, '__qualname__', repr(target))}"
    listing = Listing(qualname, _package_path(inspect.getsourcefile(target) or "?"), first, source, note)
    if listing.lines > max_lines:
        raise ListingTooLong(
            f"{qualname} is {listing.lines} lines; a notebook shows at most {max_lines}. "
            "Split it into named steps and show each one, or pass a larger max_lines."
        )
    return listing
