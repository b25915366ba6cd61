"""FinanceBench's document names, parsed by the rule its own data follows.

Both of FinanceBench's data files name documents (``doc_name``), and its ``pdfs/`` folder names files
``<doc_name>.pdf``; the names follow one rule, with a few spellings of its date suffix::

    COMPANY[_YEAR[Qn]]_KIND[<sep>[dated<sep>]YYYY-MM-DD]      <sep> is _ or -

- COMPANY: letters, digits, ``&`` and ``.``, in one or more parts joined by ``_`` (``3M``, ``Pfizer``,
  ``JOHNSON_JOHNSON``, ``PG_E``);
- YEAR and an optional quarter (``2023Q2``); a name may leave the year out when it carries a date
  (``MCDONALDS_8K_dated-2023-01-06``), never both;
- KIND: ``10K``, ``10Q``, ``8K``, ``EARNINGS`` or ``annualreport`` (any case);
- a date, as ``_dated-2022-07-01``, ``_dated_2022-08-19``, ``-dated-2023-06-01`` or ``_2022-04-26``.

Every one of the 361 document records and the 84 question documents of FinanceBench's open sample
parses by this rule, and so does every PDF name of the development sample (``tests/test_rag_financebench_names.py``
checks them where ``../shared/financebench-sample`` is present). A name that does not parse is reported by
the command, never a reason to refuse a whole folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labkit.errors import LabkitError

#: The document kinds, as FinanceBench spells them in names.
KINDS = ("10K", "10Q", "8K", "EARNINGS", "annualreport")
_KIND = {kind.lower(): kind for kind in KINDS}
#: The rule, as a regular expression (matched case-insensitively, as a whole name).
NAME_RULE = re.compile(
    r"(?P<company>[A-Za-z0-9&.]+(?:_[A-Za-z0-9&.]+)*?)"
    r"(?:_(?P<year>\d{4})(?:Q(?P<quarter>[1-4]))?)?"
    r"_(?P<kind>10K|10Q|8K|EARNINGS|annualreport)"
    r"(?:[_-](?:dated[_-])?(?P<dated>\d{4}-\d{2}-\d{2}))?",
    re.IGNORECASE,
)
EXAMPLES = "3M_2018_10K, Pfizer_2023Q2_10Q, AMCOR_2022_8K_dated-2022-07-01, MCDONALDS_8K_dated-2023-01-06"


class DocNameError(LabkitError, ValueError):
    """A document name does not follow FinanceBench's naming rule."""


@dataclass(frozen=True)
class DocName:
    """The parts of a FinanceBench document name."""

    name: str
    """The name as written, such as ``AMCOR_2022_8K_dated-2022-07-01``."""
    company: str
    """The company part, underscores kept (``JOHNSON_JOHNSON``)."""
    year: int | None
    """The year in the name; None when the name carries only a date (``MCDONALDS_8K_dated-2023-01-06``)."""
    quarter: int | None
    """The quarter (``2023Q2``), if the name has one."""
    kind: str
    """One of `KINDS`, spelled as there whatever the name's case."""
    dated: str | None
    """The date of an 8-K or a release (``2022-07-01``), if the name has one."""

    @property
    def period(self) -> int:
        """The year the name points at: its year, else its date's year."""
        return self.year if self.year is not None else int(str(self.dated)[:4])

    @property
    def identity(self) -> tuple[str, int | None, int | None, str, str | None]:
        """What the name says, whatever its spelling: two names with one identity name one document."""
        return (self.company.upper(), self.year, self.quarter, self.kind, self.dated)


def parse_doc_name(name: str) -> DocName:
    """Parse a FinanceBench document name; raise `DocNameError` stating the rule otherwise."""
    match = NAME_RULE.fullmatch(name)
    if not match or (match["year"] is None and match["dated"] is None):
        raise DocNameError(
            f"{name!r} does not follow FinanceBench's naming rule COMPANY[_YEAR[Qn]]_KIND[_dated-YYYY-MM-DD] "
            f"(a year, a date or both; KIND one of {', '.join(KINDS)}), e.g. {EXAMPLES}"
        )
    return DocName(
        name=name,
        company=match["company"],
        year=int(match["year"]) if match["year"] else None,
        quarter=int(match["quarter"]) if match["quarter"] else None,
        kind=_KIND[match["kind"].lower()],
        dated=match["dated"],
    )


def try_parse(name: str) -> DocName | None:
    """Return the parsed name, or None when it does not follow the rule (the caller reports it)."""
    try:
        return parse_doc_name(name)
    except DocNameError:
        return None
