"""The recorded-run file format: what a run holds, how it is loaded, checked and saved.

A run lives in ``recorded_runs/<run-id>/run.json``. It says where it came from
(``origin``: ``captured`` from a real model call, or ``authored`` by the course
to show a behaviour), which model and settings produced it, the SHA-256 of
every fixture file it depends on, and its bindings: each exact request with
the response it received. Loading refuses a run whose fixtures have changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labkit.canonical import canonical_sha256, file_sha256, load_strict, pretty_json
from labkit.errors import FixtureChanged, RecordedRunError, validation_problems
from labkit.paths import atomic_write, project_root, recorded_runs_dir

SCHEMA_VERSION = 1
#: Recorded runs may be larger than ordinary inputs, but not unboundedly so.
MAX_RUN_BYTES = 20_000_000
RUN_FILE = "run.json"
#: A run id is a folder name: lower-case letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit.
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"

Origin = Literal["captured", "authored"]


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

    key: str = Field(description="SHA-256 of the canonical JSON of `request`.")
    request: dict[str, Any] = Field(description="The exact chat-completions request body: model, messages, settings.")
    response: dict[str, Any] | None = Field(description="The response body, or None when every attempt failed.")
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

    @model_validator(mode="after")
    def _key_matches_request(self) -> Binding:
        expected = canonical_sha256(self.request)
        if self.key != expected:
            raise ValueError(
                f"binding key {self.key[:12]}… is not the SHA-256 of its request ({expected[:12]}…); "
                "the request was edited after recording: record the run again instead of editing it"
            )
        if self.status_code == 200 and self.response is None:
            raise ValueError(f"binding {self.key[:12]}… has status 200 but no response")
        return self


class RecordedRun(_Strict):
    """One recorded run: its provenance, the fixtures it depends on, and its bindings."""

    schema_version: Literal[1] = Field(description="Version of this file format.")
    run_id: str = Field(pattern=RUN_ID_PATTERN, description="Folder name under recorded_runs/.")
    origin: Origin = Field(description="`captured` from a real model call, or `authored` by the course.")
    created_at: str = Field(description="ISO 8601 time the run was made.")
    lesson: str = Field(pattern=r"^0[1-6]$", description="The notebook number this run serves.")
    description: str = Field(min_length=1, description="One sentence on what the run shows and how it was made.")
    model: ModelIdentity = Field(description="Which model produced the replies.")
    settings: dict[str, Any] = Field(description="Generation settings shared by the requests.")
    fixtures: dict[str, str] = Field(description="Fixture path (relative to the project root) to its SHA-256.")
    bindings: list[Binding] = Field(description="Each exact request with its response.")

    @model_validator(mode="after")
    def _origin_is_honest(self) -> RecordedRun:
        keys = [b.key for b in self.bindings]
        if len(set(keys)) != len(keys):
            raise ValueError("two bindings share one request key; each exact request may be bound once")
        if self.origin == "authored":
            if self.model.endpoint_kind != "authored":
                raise ValueError("an authored run must say endpoint_kind 'authored': no endpoint produced it")
            claimed = [b.key[:12] for b in self.bindings if b.usage or b.latency_s is not None or b.recorded_at]
            if claimed:
                raise ValueError(
                    f"an authored run claims usage, latency or recording time in bindings {claimed}; "
                    "only captured runs measure those"
                )
        else:
            if self.model.endpoint_kind == "authored":
                raise ValueError("a captured run must name the kind of endpoint that answered, not 'authored'")
            missing = [
                b.key[:12]
                for b in self.bindings
                if b.status_code == 200 and (b.usage is None or b.latency_s is None or b.recorded_at is None)
            ]
            if missing:
                raise ValueError(f"captured bindings {missing} lack usage, latency or recording time")
        return self

    def binding_for(self, request: dict[str, Any]) -> Binding | None:
        """Return the binding of this exact request, or None."""
        key = canonical_sha256(request)
        return next((b for b in self.bindings if b.key == key), None)


def run_path(run: str | Path) -> Path:
    """Resolve a run id, run folder or run file to the run's ``run.json``."""
    path = Path(run)
    if path.suffix == ".json":
        return path
    if path.is_dir():
        return path / RUN_FILE
    return recorded_runs_dir() / str(run) / RUN_FILE


def check_fixtures(run: RecordedRun, *, root: Path | None = None) -> None:
    """Raise `FixtureChanged` unless every fixture the run names still has its recorded SHA-256."""
    root = root or project_root()
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


def parse_run(data: Any, *, source: str = "recorded run") -> RecordedRun:
    """Validate already-parsed JSON as a `RecordedRun`, with one readable message for every problem."""
    if isinstance(data, dict) and "origin" not in data:
        raise RecordedRunError(
            f"{source}: no 'origin'. Every run must say 'captured' (from a real model call) or 'authored' (written by the course)."
        )
    try:
        return RecordedRun.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, whole="run")
        raise RecordedRunError(f"{source}: not a valid recorded run: {problems}") from None


def load_run(run: str | Path, *, root: Path | None = None) -> RecordedRun:
    """Load a recorded run by id, folder or file, refusing it if malformed or if its fixtures changed."""
    path = run_path(run)
    if not path.is_file():
        raise RecordedRunError(
            f"no recorded run at {path}. List the runs with `labkit verify`, or record one with `labkit record`."
        )
    data, _ = load_strict(path, max_bytes=MAX_RUN_BYTES)
    recorded = parse_run(data, source=str(path))
    if path.parent.name != recorded.run_id:
        raise RecordedRunError(f"{path}: run_id {recorded.run_id!r} does not match its folder {path.parent.name!r}")
    check_fixtures(recorded, root=root)
    return recorded


def fixture_hashes(paths: list[str | Path], *, root: Path | None = None) -> dict[str, str]:
    """Return ``{path relative to the root: sha256}`` for fixture files (relative paths are taken from the root)."""
    root = (root or project_root()).resolve()
    absolute = [(root / p).resolve() for p in paths]  # an absolute path stays as it is
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in absolute}


def save_run(run: RecordedRun, *, runs_dir: Path | None = None, replace: bool = False) -> Path:
    """Write a new run as canonical, diff-friendly JSON, atomically; never overwrite an existing run.

    A run holding a secret is refused before anything is written. ``replace`` (for
    authored runs only, see `labkit.authored`) swaps in the new ``run.json`` and leaves
    every other file in the run's folder as it is.
    """
    from labkit.secret_scan import refuse_secrets

    data = run.model_dump(mode="json")
    refuse_secrets(data, run_id=run.run_id)
    folder = (runs_dir or recorded_runs_dir()) / run.run_id
    if folder.exists() and not replace:
        raise RecordedRunError(f"{folder} already exists; a recorded run is never overwritten. Choose a new run id.")
    folder.mkdir(parents=True, exist_ok=replace)
    return atomic_write(folder / RUN_FILE, pretty_json(data))


def verify_runs(runs_dir: Path | None = None, *, root: Path | None = None) -> list[tuple[str, RecordedRun | None, str]]:
    """Load every run under ``runs_dir``; return ``(folder name, run or None, problem or "")`` for each, sorted."""
    from labkit.errors import LabkitError

    runs_dir = runs_dir or recorded_runs_dir()
    results: list[tuple[str, RecordedRun | None, str]] = []
    for folder in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        try:
            results.append((folder.name, load_run(folder, root=root), ""))
        except LabkitError as exc:
            results.append((folder.name, None, str(exc)))
    return results


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
    return pd.DataFrame(rows)
