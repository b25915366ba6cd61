"""The recorded-run file format: what a run holds, how it is loaded, checked and saved.

A run lives in ``recorded_runs/<run-id>/run.json``. It says where it came from
(``origin``: ``captured`` from a real model call, or ``authored`` by the course
to show a behaviour), which model and settings produced it, the SHA-256 of
every fixture file it depends on, and its bindings: each exact request with
the response it received.

Three hashes make a run tamper-evident. Each binding's ``key`` is the SHA-256
of its request as the model received it (endpoint path, query parameters and
body, keys in the order sent; see `binding_key`), and ``response_sha256`` that
of its response; ``content_sha256`` covers the whole run file except itself.
``recorded_runs/manifest.json`` lists every run id with its file's SHA-256 and
origin; only the run writers (`save_run`, `labkit record`) change it, so a
run edited, added or removed by hand shows up in `verify_runs`.

The hashes detect edits, but anyone can recompute them all and rewrite the
manifest too. What anchors a run is its signature (`labkit.signing`): the run
writer signs the file's exact bytes with the key `LABKIT_SIGNING_KEY` names
(``run.json.sig``), and `verify_runs` refuses a signature that does not verify,
one by a key ``recorded_runs/allowed_signers`` does not list, and a captured
run with none. A re-sealed edit keeps its hashes consistent but breaks the
signature; forging one needs a listed private key, or a reviewed change to
``allowed_signers``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, model_validator

from labkit.canonical import (
    MAX_RUN_BYTES,
    file_sha256,
    load_strict,
    loads_strict,
    ordered_pretty_json,
    pretty_json,
    read_strict_bytes,
    request_sha256,
)
from labkit.errors import FixtureChanged, LabkitError, RecordedRunError, validation_problems
from labkit.paths import atomic_write, project_root, recorded_runs_dir
from labkit.tables import text_table

if TYPE_CHECKING:
    from labkit.signing import RunSignature

SCHEMA_VERSION: Literal[2] = 2
RUN_FILE = "run.json"
MANIFEST_FILE = "manifest.json"
#: The endpoint path the `openai` client posts a chat completion to, under a ``/v1`` base URL.
CHAT_PATH = "/v1/chat/completions"
#: The model id an authored run's requests carry: it names the author, not a model.
AUTHORED_MODEL = "authored-by-course"
#: An authored response's id starts with this; a captured one carries the id the endpoint returned.
AUTHORED_ID_PREFIX = "authored-"
#: A run id is a folder name: lower-case letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit.
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"

Origin = Literal["captured", "authored"]


def binding_key(request: dict[str, Any], *, path: str = CHAT_PATH, query: list[tuple[str, str]] | None = None) -> str:
    """Return the binding key of a request as the model receives it: endpoint path, query and body, in order.

    Key order inside the body counts (spelling is normalised as `request_json` says); query
    parameters such as ``api-version`` count too.
    """
    return request_sha256({"path": path, "query": [list(pair) for pair in query or []], "body": request})


def response_sha256(response: dict[str, Any] | None) -> str | None:
    """Return the SHA-256 of a response body (keys in their stored order), or None when there is none."""
    return None if response is None else request_sha256(response)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Usage(_Strict):
    """Token counts the endpoint reported for one exchange."""

    prompt_tokens: int = Field(ge=0, description="Tokens in the request, as the endpoint counted them.")
    completion_tokens: int = Field(ge=0, description="Tokens in the reply.")
    total_tokens: int = Field(ge=0, description="Their sum, as reported.")


class TransportFailure(_Strict):
    """One failed attempt before the recorded response (a timeout, a 429, a dropped connection)."""

    attempt: int = Field(ge=1, description="Which attempt failed, counting from 1.")
    error: str = Field(description="What went wrong, as the client reported it.")
    at: str = Field(description="ISO 8601 time of the failure.")


class ModelIdentity(_Strict):
    """Which model produced (or, for an authored run, is said to stand in for) the replies."""

    id: str = Field(min_length=1, description="The model id sent in each request.")
    endpoint_kind: Literal["local-llama-cpp", "openai-compatible", "authored"] = Field(
        description="What answered: the bundled local server, another OpenAI-compatible endpoint, or nobody."
    )


class Binding(_Strict):
    """One exact request bound to the response it received."""

    key: str = Field(description="SHA-256 of the request as received: `binding_key(request, path=, query=)`.")
    path: str = Field(default=CHAT_PATH, description="The endpoint path the request was posted to.")
    query: list[tuple[str, str]] = Field(
        default_factory=list, description="The URL query parameters sent (such as api-version), in order."
    )
    request: dict[str, Any] = Field(
        description="The exact chat-completions request body, keys in the order sent: model, messages, settings."
    )
    response: dict[str, Any] | None = Field(description="The response body, or None when every attempt failed.")
    response_sha256: str | None = Field(
        default=None, description="SHA-256 of `response` as stored; None only when there is no response."
    )
    status_code: int = Field(default=200, description="HTTP status of the recorded response; 0 when no response came.")
    question: str | None = Field(
        default=None, description="The learner's question this request was built from, if any."
    )
    usage: Usage | None = Field(default=None, description="Token usage (captured runs only).")
    latency_s: float | None = Field(
        default=None, ge=0, description="Measured seconds for the exchange (captured only)."
    )
    recorded_at: str | None = Field(default=None, description="ISO 8601 time the response arrived (captured only).")
    retries: int = Field(default=0, ge=0, description="Attempts made beyond the first.")
    transport_errors: list[TransportFailure] = Field(default_factory=list, description="Each failed attempt.")

    @classmethod
    def make(
        cls,
        request: dict[str, Any],
        response: dict[str, Any] | None,
        *,
        path: str = CHAT_PATH,
        query: list[tuple[str, str]] | None = None,
        **fields: Any,
    ) -> Binding:
        """Return a binding of ``request`` to ``response`` with its key and response hash computed."""
        query = [(str(k), str(v)) for k, v in query or []]
        return cls(
            key=binding_key(request, path=path, query=query),
            path=path,
            query=query,
            request=request,
            response=response,
            response_sha256=response_sha256(response),
            **fields,
        )

    @model_validator(mode="after")
    def hashes_match(self) -> Binding:
        """Refuse, when a run is loaded, a binding whose request or reply is not the one its hashes name."""
        # the specific problem first: a stale hash only says that something changed
        problems = []
        if self.status_code == 200 and self.response is None:
            problems.append(f"binding {self.key[:12]}… has status 200 but no response (a 200 always carries its reply)")
        expected = binding_key(self.request, path=self.path, query=self.query)
        if self.key != expected:
            problems.append(
                f"field 'request' (or its 'path' or 'query') was edited after recording: key {self.key[:12]}… "
                f"is not the SHA-256 of the request ({expected[:12]}…); record the run again instead of editing it"
            )
        actual = response_sha256(self.response)
        if self.response_sha256 != actual:
            problems.append(
                f"field 'response' was edited after recording: its SHA-256 is {str(actual)[:12]}…, the binding "
                f"recorded {str(self.response_sha256)[:12]}…; restore the run from git or record it again"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self


class StreamingNotRecorded(RecordedRunError):
    """A request asked for a streamed reply, which no mode records or replays."""


def request_body(raw: bytes, *, url: str) -> dict[str, Any]:
    """Parse a chat-completion request body as sent (key order kept), refusing streaming and non-objects."""
    body = loads_strict(raw, source=f"request body to {url}")
    if not isinstance(body, dict):
        raise RecordedRunError(f"the request body to {url} is not a JSON object; send a chat-completions request")
    if body.get("stream"):
        raise StreamingNotRecorded(
            "streaming is not recorded; call without stream=True (replay, record and live modes answer "
            "whole replies only, so that each one can be bound to its exact request)"
        )
    return body


def _response_id(binding: Binding) -> Any:
    return (binding.response or {}).get("id")


class RecordedRun(_Strict):
    """One recorded run: its provenance, the fixtures it depends on, and its bindings."""

    schema_version: Literal[2] = Field(description="Version of this file format.")
    content_sha256: str = Field(
        description="SHA-256 of this run's JSON without this field (keys in file order); see `run_content_sha256`."
    )
    run_id: str = Field(pattern=RUN_ID_PATTERN, description="Folder name under recorded_runs/.")
    origin: Origin = Field(description="`captured` from a real model call, or `authored` by the course.")
    created_at: str = Field(description="ISO 8601 time the run was made.")
    lesson: str = Field(pattern=r"^0[1-6]$", description="The notebook number this run serves.")
    description: str = Field(min_length=1, description="One sentence on what the run shows and how it was made.")
    model: ModelIdentity = Field(description="Which model produced the replies.")
    settings: dict[str, Any] = Field(description="Generation settings shared by the requests.")
    fixtures: dict[str, str] = Field(description="Fixture path (relative to the project root) to its SHA-256.")
    bindings: list[Binding] = Field(description="Each exact request with its response.")

    _file_sha256: str | None = PrivateAttr(default=None)
    _signature: Any = PrivateAttr(default=None)

    @property
    def file_sha256(self) -> str | None:
        """The SHA-256 of the run file's exact bytes, when the run was loaded from a file."""
        return self._file_sha256

    @property
    def signature(self) -> RunSignature | None:
        """Who signed the run file (`labkit.signing.RunSignature`), when `verify_runs` checked it."""
        return self._signature

    @model_validator(mode="after")
    def _origin_is_honest(self) -> RecordedRun:
        keys = [b.key for b in self.bindings]
        if len(set(keys)) != len(keys):
            raise ValueError("two bindings share one request key; each exact request may be bound once")
        answered = [b for b in self.bindings if b.response is not None and b.status_code == 200]
        if self.origin == "authored":
            if self.model.endpoint_kind != "authored":
                raise ValueError("an authored run must say endpoint_kind 'authored': no endpoint produced it")
            claimed = [b.key[:12] for b in self.bindings if b.usage or b.latency_s is not None or b.recorded_at]
            if claimed:
                raise ValueError(
                    f"an authored run claims usage, latency or recording time in bindings {claimed}; "
                    "only captured runs measure those"
                )
            foreign = [
                b.key[:12]
                for b in answered
                if not str(_response_id(b)).startswith(AUTHORED_ID_PREFIX) or "usage" in (b.response or {})
            ]
            if foreign:
                raise ValueError(
                    f"an authored run holds responses with an endpoint's id or usage in bindings {foreign}; "
                    "a reply an endpoint returned belongs in a captured run"
                )
        else:
            if self.model.endpoint_kind == "authored" or self.model.id == AUTHORED_MODEL:
                raise ValueError(
                    "a captured run must name the model and kind of endpoint that answered, not 'authored'"
                )
            missing = [
                b.key[:12]
                for b in self.bindings
                if b.status_code == 200 and (b.usage is None or b.latency_s is None or b.recorded_at is None)
            ]
            if missing:
                raise ValueError(f"captured bindings {missing} lack usage, latency or recording time")
            unreturned = [
                b.key[:12]
                for b in answered
                if not isinstance(_response_id(b), str)
                or not _response_id(b)
                or str(_response_id(b)).startswith(AUTHORED_ID_PREFIX)
            ]
            if unreturned:
                raise ValueError(
                    f"captured bindings {unreturned} lack the response id the endpoint returned "
                    "(or carry an authored one): an authored run cannot be relabelled captured"
                )
        return self

    @model_validator(mode="after")
    def _content_unchanged(self, info: ValidationInfo) -> RecordedRun:
        if info.context and info.context.get("sealing"):
            return self
        expected = run_content_sha256(self.model_dump(mode="json"))
        if self.content_sha256 != expected:
            raise ValueError(
                f"field 'content_sha256' ({self.content_sha256[:12]}…) does not match the run's content "
                f"({expected[:12]}…): the run was edited after recording; restore it from git or record it again"
            )
        return self

    def binding_for(self, request: dict[str, Any]) -> Binding | None:
        """Return the binding of this request, or None.

        The exact key is tried first; a request built as a dict by lesson code
        (whose key order the `openai` client may change when it sends it) is then
        matched by value, if exactly one binding has an equal body.
        """
        key = binding_key(request)
        found = next((b for b in self.bindings if b.key == key), None)
        if found is not None:
            return found
        equal = [b for b in self.bindings if b.request == request]
        return equal[0] if len(equal) == 1 else None


def run_content_sha256(data: dict[str, Any]) -> str:
    """Return the SHA-256 of a run's JSON without its ``content_sha256`` field (keys in their order)."""
    return request_sha256({k: v for k, v in data.items() if k != "content_sha256"})


def seal_run(**fields: Any) -> RecordedRun:
    """Build a `RecordedRun` from its fields (and `Binding` objects), computing ``content_sha256``."""
    data = {"schema_version": SCHEMA_VERSION, "content_sha256": "", **fields}
    data["bindings"] = [b.model_dump(mode="json") if isinstance(b, Binding) else b for b in data.get("bindings", [])]
    draft = RecordedRun.model_validate(data, context={"sealing": True})
    digest = run_content_sha256(draft.model_dump(mode="json"))
    return RecordedRun.model_validate({**draft.model_dump(mode="json"), "content_sha256": digest})


def run_path(run: str | Path) -> Path:
    """Resolve a run id, run folder or run file to the run's ``run.json``."""
    path = Path(run)
    if path.suffix == ".json":
        return path
    if path.is_dir():
        return path / RUN_FILE
    return recorded_runs_dir() / str(run) / RUN_FILE


def _inside(root: Path, rel: str) -> Path | None:
    """Return the fixture's path if ``rel`` is a relative path that stays inside ``root``, else None."""
    if Path(rel).is_absolute() or "\\" in rel:
        return None
    path = (root / rel).resolve()
    try:
        path.relative_to(root.resolve())
    except ValueError:
        return None
    return path


def _outside_fixtures(run_id: Any, lesson: Any, fixtures: Any, root: Path) -> str:
    """Return why ``fixtures`` names a path outside the checkout, or ""; ``fixtures`` may be unvalidated JSON."""
    if not isinstance(fixtures, dict):
        return ""
    outside = [rel for rel in sorted(map(str, fixtures)) if _inside(root, rel) is None]
    if not outside:
        return ""
    return (
        f"run {run_id!r}: field 'fixtures' names {outside}, outside the checkout; a run may depend only "
        f"on files under {root}. Record the run again with `labkit record {lesson}`."
    )


def check_fixtures(run: RecordedRun, *, root: Path | None = None) -> None:
    """Raise `FixtureChanged` unless every fixture the run names is in the checkout with its recorded SHA-256."""
    root = root or project_root()
    outside = _outside_fixtures(run.run_id, run.lesson, run.fixtures, root)
    if outside:
        raise FixtureChanged(outside)
    changed = []
    for rel, expected in sorted(run.fixtures.items()):
        path = root / rel
        if not path.is_file():
            changed.append(f"{rel} (missing)")
        elif file_sha256(path) != expected:
            changed.append(f"{rel} (now {file_sha256(path)[:12]}…, recorded {expected[:12]}…)")
    if changed:
        raise FixtureChanged(
            f"run {run.run_id!r} was recorded against other fixtures: {'; '.join(changed)}. "
            f"Restore the fixtures from git, or record the run again with `labkit record {run.lesson}`."
        )


def copy_fixtures(run: RecordedRun, folder: Path, *, replace: dict[str, Path] | None = None) -> Path:
    """Copy the fixtures ``run`` names into ``folder``, at their paths in the repository, and return ``folder``.

    ``replace`` maps a fixture's path to a file copied in its place, so that
    `check_fixtures` can be tried on a changed fixture without touching the
    repository: ``check_fixtures(run, root=copy_fixtures(run, folder, replace=...))``.
    """
    replace = replace or {}
    unknown = sorted(set(replace) - set(run.fixtures))
    if unknown:
        raise FixtureChanged(f"run {run.run_id!r} names no fixture {unknown}; replace one of {sorted(run.fixtures)}")
    for rel in run.fixtures:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path(replace.get(rel, project_root() / rel)).read_bytes())
    return folder


def write_edited_run(run_id: str, folder: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """Write a copy of a recorded run's file, changed by ``edit``, under ``folder`` and return the copy's path.

    ``edit`` changes the run's parsed JSON in place. The copy sits in a folder
    named by the run id (``folder/<run_id>/run.json``), as `load_run` expects,
    so loading it shows which check refuses the edit. The recorded run itself
    is never touched.
    """
    data = json.loads(run_path(run_id).read_text(encoding="utf-8"))
    edit(data)
    copy = folder / run_id / RUN_FILE
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return copy


def parse_run(data: Any, *, source: str = "recorded run") -> RecordedRun:
    """Validate already-parsed JSON as a `RecordedRun`, with one readable message for every problem."""
    if isinstance(data, dict) and "origin" not in data:
        raise RecordedRunError(
            f"{source}: no 'origin'. Every run must say 'captured' (from a real model call) or 'authored' (written by the course)."
        )
    if isinstance(data, dict) and data.get("schema_version") == 1:
        raise RecordedRunError(
            f"{source}: schema_version 1 has no response or content hashes; migrate it with "
            "`python -m labkit.course.migrate_runs` (requests and responses stay as recorded)"
        )
    try:
        return RecordedRun.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, whole="run")
        raise RecordedRunError(f"{source}: not a valid recorded run: {problems}") from None


def refusal_reason(error: RecordedRunError) -> str:
    """Return why `load_run` refused a run, as one line: the field and the reason, without the file path.

    Pydantic's wording ("Value error, ") is dropped; what the message says to do stays.
    """
    text = str(error).partition("not a valid recorded run: ")[2] or str(error)
    return text.replace("Value error, ", "").splitlines()[0]


def load_run(run: str | Path, *, root: Path | None = None) -> RecordedRun:
    """Load a recorded run by id, folder or file, refusing it if malformed, edited, or if its fixtures changed."""
    path = run_path(run)
    if not path.is_file():
        raise RecordedRunError(
            f"no recorded run at {path}. List the runs with `labkit verify`, or record one with `labkit record`."
        )
    data, digest = load_strict(path, max_bytes=MAX_RUN_BYTES)
    # the problems a stale content hash would hide are named first, from the file as it is
    named: list[tuple[type[RecordedRunError], str]] = []
    if isinstance(data, dict):
        if "run_id" in data and data["run_id"] != path.parent.name:
            named.append(
                (
                    RecordedRunError,
                    f"{path}: run_id {data['run_id']!r} does not match its folder {path.parent.name!r}; move the "
                    "folder back or restore the run from git",
                )
            )
        outside = _outside_fixtures(
            data.get("run_id"), data.get("lesson"), data.get("fixtures"), root or project_root()
        )
        if outside:
            named.append((FixtureChanged, outside))
    try:
        recorded = parse_run(data, source=str(path))
    except RecordedRunError as exc:
        if not named:
            raise
        raise named[0][0]("; ".join(message for _, message in named) + f"; also {exc}") from None
    if named:
        raise named[0][0]("; ".join(message for _, message in named))
    check_fixtures(recorded, root=root)
    recorded._file_sha256 = digest
    return recorded


def fixture_hashes(paths: Sequence[str | Path], *, root: Path | None = None) -> dict[str, str]:
    """Return ``{path relative to the root: sha256}``, sorted by path, for fixture files (relative to the root)."""
    root = (root or project_root()).resolve()
    result = {}
    for p in paths:
        path = (root / p).resolve()  # an absolute path stays as it is
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            raise RecordedRunError(
                f"fixture {p} is outside the checkout {root}; a run may depend only on files inside it"
            ) from None
        result[rel] = file_sha256(path)
    return dict(sorted(result.items()))


def read_manifest(runs_dir: Path | None = None) -> dict[str, dict[str, str]]:
    """Return the manifest of ``runs_dir``: run id -> ``{"sha256": run file SHA-256, "origin": ...}``."""
    path = (runs_dir or recorded_runs_dir()) / MANIFEST_FILE
    if not path.is_file():
        return {}
    data, _ = load_strict(path)
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, dict) or not all(
        isinstance(v, dict) and set(v) == {"sha256", "origin"} for v in runs.values()
    ):
        raise RecordedRunError(
            f"{path}: a manifest holds {{'runs': {{run id: {{'sha256': ..., 'origin': ...}}}}}}; restore it from git"
        )
    return runs


def _write_manifest(runs: dict[str, dict[str, str]], runs_dir: Path) -> None:
    body = {
        "about": "Run id -> SHA-256 of its run.json and its origin. Written only by labkit record and the run "
        "writers; `labkit verify` refuses a run that differs from its entry. Never edit by hand.",
        "runs": dict(sorted(runs.items())),
    }
    atomic_write(runs_dir / MANIFEST_FILE, pretty_json(body))


def write_run_file(run: RecordedRun, *, runs_dir: Path | None = None, replace: bool = False) -> Path:
    """Write a run's file atomically, record its SHA-256 and origin in the manifest, and sign it.

    Only the run writers call this: `save_run` (new runs) and the authored-run
    writer or migration (``replace=True``). Key order is kept as recorded. The
    file is signed when `LABKIT_SIGNING_KEY` names a key (see
    `labkit.signing.sign_written_run`); signing comes last, so a run that cannot
    be signed is still saved, and `SigningFailed` says how to sign it later.
    """
    from labkit.secret_scan import refuse_secrets
    from labkit.signing import sign_written_run

    data = run.model_dump(mode="json")
    refuse_secrets(data, run_id=run.run_id)  # a run holding a secret is refused before anything is written
    runs_dir = runs_dir or recorded_runs_dir()
    folder = runs_dir / run.run_id
    path = folder / RUN_FILE
    if path.exists() and not replace:
        raise RecordedRunError(f"{path} already exists; a recorded run is never overwritten. Choose a new run id.")
    text = ordered_pretty_json(data)
    if len(text.encode("utf-8")) > MAX_RUN_BYTES:  # `load_run` would refuse it: it is never written
        raise RecordedRunError(
            f"run {run.run_id!r} was not saved: it would be {len(text.encode('utf-8')):,} bytes, over the "
            f"{MAX_RUN_BYTES:,}-byte limit of a run; record fewer or shorter replies"
        )
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    runs = read_manifest(runs_dir)
    runs[run.run_id] = {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "origin": run.origin}
    _write_manifest(runs, runs_dir)
    sign_written_run(path)
    return path


def save_run(run: RecordedRun, *, runs_dir: Path | None = None, replace: bool = False) -> Path:
    """Write a new run as diff-friendly JSON and add it to the manifest; never overwrite an existing run.

    A run holding a secret is refused before anything is written. ``replace`` (for
    authored runs only, see `labkit.authored`) swaps in the new ``run.json`` and leaves
    every other file in the run's folder as it is.
    """
    folder = (runs_dir or recorded_runs_dir()) / run.run_id
    if folder.exists() and not replace:
        raise RecordedRunError(f"{folder} already exists; a recorded run is never overwritten. Choose a new run id.")
    return write_run_file(run, runs_dir=runs_dir, replace=replace)


def _manifest_problem(name: str, path: Path, entry: dict[str, str] | None) -> str:
    """Return how a run file disagrees with its manifest entry, naming the field, or ""."""
    if entry is None:
        return (
            f"run {name!r} is not in {MANIFEST_FILE}: it was added outside `labkit record`; "
            "record it with `labkit record` or remove it"
        )
    problems = []
    try:
        data = loads_strict(read_strict_bytes(path, max_bytes=MAX_RUN_BYTES), source=str(path))
    except Exception:  # an unreadable file is reported by load_run already
        data = None
    if isinstance(data, dict) and data.get("origin") != entry["origin"]:
        problems.append(f"field 'origin' says {data.get('origin')!r} but {MANIFEST_FILE} recorded {entry['origin']!r}")
    digest = file_sha256(path)
    if digest != entry["sha256"]:
        problems.append(
            f"run file SHA-256 is {digest[:12]}…, {MANIFEST_FILE} recorded {entry['sha256'][:12]}…: "
            "the file was edited after recording; restore it from git or record it again"
        )
    return "; ".join(problems)


def verify_runs(
    runs_dir: Path | None = None, *, root: Path | None = None, signatures: bool = True
) -> list[tuple[str, RecordedRun | None, str]]:
    """Load every run under ``runs_dir``, check it against the manifest, and check its signature.

    Returns ``(run id, run or None, problem or "")`` for each run folder and each
    manifest entry without one, sorted by id; a run that passes carries its
    `RecordedRun.signature`. With ``signatures=False`` (for signing runs that have
    none yet) signatures are not checked.
    """
    runs_dir = runs_dir or recorded_runs_dir()
    try:
        manifest = read_manifest(runs_dir)
        manifest_error = ""
    except LabkitError as exc:
        manifest, manifest_error = {}, str(exc)
    results: list[tuple[str, RecordedRun | None, str]] = []
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    check_signature = _signature_checker(runs_dir) if signatures and folders else None
    for folder in folders:
        problems = []
        loaded: RecordedRun | None = None
        try:
            loaded = load_run(folder, root=root)
        except LabkitError as exc:
            problems.append(str(exc))
        path = folder / RUN_FILE
        if path.is_file():
            entry = manifest.get(folder.name)
            problem = manifest_error or _manifest_problem(folder.name, path, entry)
            if problem:
                problems.append(problem)
            if check_signature is not None:
                origin = loaded.origin if loaded is not None else (entry or {}).get("origin")
                signature, problem = check_signature(folder.name, path, origin)
                if problem:
                    problems.append(problem)
                if loaded is not None:
                    loaded._signature = signature
        results.append((folder.name, None if problems else loaded, "; ".join(problems)))
    names = {folder.name for folder in folders}
    for name in sorted(set(manifest) - names):
        results.append(
            (name, None, f"run {name!r} is listed in {MANIFEST_FILE} but missing: restore it from git or record it")
        )
    return sorted(results, key=lambda item: item[0])


def _signature_checker(runs_dir: Path) -> Any:
    """Return ``check(run id, run file, origin) -> (RunSignature or None, problem or "")`` for ``runs_dir``."""
    from labkit.signing import check_signature, read_allowed_signers, signature_problem

    try:
        allowed, unreadable = read_allowed_signers(runs_dir), ""
    except LabkitError as exc:
        allowed, unreadable = [], str(exc)

    def check(run_id: str, path: Path, origin: str | None) -> tuple[RunSignature | None, str]:
        if unreadable:
            return None, unreadable
        signature = check_signature(path, allowed=allowed)
        return signature, signature_problem(run_id, origin, signature)

    return check


def bindings_table(run: RecordedRun) -> Any:
    """Return a pandas table of a run's bindings: question, finish reason, tokens and measured seconds.

    An authored run measured nothing, so its token and latency cells are empty.
    """
    import pandas as pd

    rows = []
    for binding in run.bindings:
        choices = (binding.response or {}).get("choices") or [{}]
        usage = binding.usage
        rows.append(
            {
                "question": binding.question,
                "finish_reason": choices[0].get("finish_reason"),
                "prompt_tokens": usage.prompt_tokens if usage else None,
                "completion_tokens": usage.completion_tokens if usage else None,
                "latency_s": binding.latency_s,
            }
        )
    return text_table(pd.DataFrame(rows))
