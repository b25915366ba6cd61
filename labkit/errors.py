"""The errors labkit raises: one tree under `LabkitError`, each also a fitting built-in.

    LabkitError
    ├── InvalidJSON(ValueError)            a JSON file is malformed, ambiguous or too large
    ├── RecordedRunError(ValueError)       a recorded run is malformed or mislabelled
    │   └── FixtureChanged                 a fixture a run depends on no longer matches its hash
    ├── RouteGradeError(ValueError)        routing-gate inputs are invalid
    ├── FixtureOverwriteRefused(FileExistsError)   a fixture script would overwrite a captured run
    └── MissingExtra(ImportError)          an optional extra is not installed

Every message names what is wrong and what to do next; an ordinary
``except ValueError`` keeps working because each class subclasses a built-in.
"""

from __future__ import annotations


class LabkitError(Exception):
    """Base class of every error labkit raises on purpose."""


class InvalidJSON(LabkitError, ValueError):
    """A JSON file or string is malformed, ambiguous (repeated keys, NaN) or over the size limit."""


class RecordedRunError(LabkitError, ValueError):
    """A recorded run is malformed, unlabelled or inconsistent."""


class FixtureChanged(RecordedRunError):
    """A fixture that a recorded run depends on has changed since the run was recorded."""


class RouteGradeError(LabkitError, ValueError):
    """The routing gate's suite or runs are invalid, so no verdict can be given."""


class FixtureOverwriteRefused(LabkitError, FileExistsError):
    """A fixture script refused to overwrite a folder that holds a captured run."""


class MissingExtra(LabkitError, ImportError):
    """An optional extra is not installed; the message gives the pip command."""

    def __init__(self, extra: str, purpose: str) -> None:
        self.extra = extra
        super().__init__(
            f"{purpose} needs the optional extra '{extra}'. "
            f'Install it with: pip install -c constraints.txt -e ".[{extra}]"'
        )
