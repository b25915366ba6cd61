"""The errors labkit raises: one tree under `LabkitError`, each also a fitting built-in.

    LabkitError
    ├── InvalidJSON(ValueError)            a JSON file is malformed, ambiguous or too large
    ├── RecordedRunError(ValueError)       a recorded run is malformed or mislabelled
    │   └── FixtureChanged                 a fixture a run depends on no longer matches its hash
    ├── RouteGradeError(ValueError)        routing-gate inputs are invalid
    ├── FixtureOverwriteRefused(FileExistsError)   a fixture script would overwrite a captured run
    ├── MissingExtra(ImportError)          an optional extra is not installed
    └── (defined beside the code that raises them)
        ReplayRequestMismatch(ValueError)  replay.py: no reply is recorded for this exact request
        ReplayUnsupported(NotImplementedError)   replay.py: replay answers chat completions only
        BoundaryConfigError(ValueError)    boundary.py: LABKIT_MODE or the endpoint settings are wrong
        NetworkBlocked(OSError)            offline.py: a connection to another machine while offline
        UnrecordedText(KeyError)           embeddings.py: no saved vector for this exact text
        InvalidEmbeddingsFile(ValueError), EmbeddingsOverwriteRefused(FileExistsError),
        UnknownEmbeddingSet(LookupError)   embeddings.py
        LocalServerError(RuntimeError)     serve.py: the bundled local model failed to start
        CorpusError, StaleIndex, ReplyRejected (ValueError)   rag_trace.py
        TraceFormatError(ValueError)       traces.py
        UnknownLesson(LookupError)         lessons.py

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
