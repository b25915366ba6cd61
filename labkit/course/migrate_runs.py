"""Migrate recorded runs from schema 1 to schema 2: ``python -m labkit.course.migrate_runs``.

Schema 2 binds each request as the model received it (keys in the order sent,
endpoint path and query included), hashes each response, hashes the whole run
file, and lists every run in ``recorded_runs/manifest.json``. Schema 1 files
were written with sorted keys, so the order in which a request was sent is not
in them. The migration recovers it from the code that made the request: it
runs the lesson's own ``make_requests`` through the real `openai` client, and
for each request the client sends, finds the schema-1 binding with the same
value (sorted canonical JSON) and keeps the body exactly as sent. Values never
change: every request and response is checked equal to the old one, and
responses are copied as stored. A binding no lesson code makes again keeps its
stored (sorted) order and is reported.

Runs already at schema 2 are left alone (never re-hashed: that would hide an
edit), so the command is idempotent and safe to run again after merging
branches that add schema-1 runs.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from labkit.authored import authored_response
from labkit.canonical import canonical_sha256, load_strict
from labkit.course.lessons import run_modules
from labkit.errors import LabkitError, RecordedRunError
from labkit.paths import recorded_runs_dir, relative_to_root
from labkit.recording import (
    AUTHORED_ID_PREFIX,
    MAX_RUN_BYTES,
    RUN_FILE,
    Binding,
    RecordedRun,
    check_fixtures,
    request_body,
    seal_run,
    write_run_file,
)


class MigrationRefused(RecordedRunError):
    """A run cannot be migrated without changing what it recorded."""


@dataclass
class Migration:
    """What migrating one run did."""

    run_id: str
    status: str
    """``migrated``, ``already schema 2`` or ``refused``."""
    reordered: int = 0
    """Bindings whose request key order was recovered from the lesson code."""
    kept_order: list[str] = field(default_factory=list)
    """Bindings (key prefixes) no lesson code made again: their stored order was kept."""
    problem: str = ""


class _SentOrderTransport(httpx2.BaseTransport):
    """Answers the `openai` client from a schema-1 run by value, keeping each request body as it was sent."""

    def __init__(self, old: list[dict[str, Any]]) -> None:
        self.by_value = {canonical_sha256(b["request"]): b for b in old}
        self.sent: dict[str, tuple[dict[str, Any], str, list[tuple[str, str]]]] = {}

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        from labkit.replay import FieldDiff, ReplayRequestMismatch

        body = request_body(request.read(), url=str(request.url))
        value = canonical_sha256(body)
        old = self.by_value.get(value)
        if old is None:
            raise ReplayRequestMismatch(
                "not in the run being migrated", diff=[FieldDiff("request", None, None)], nearest_key=None, run_id=None
            )
        self.sent.setdefault(value, (body, request.url.path, list(request.url.params.multi_items())))
        if old.get("response") is None:
            raise httpx2.ConnectError("recorded transport failure, replayed during migration", request=request)
        return httpx2.Response(old.get("status_code", 200), json=copy.deepcopy(old["response"]), request=request)


class _MigrationAdapter:
    """Stands where the model boundary would, so a lesson's own code makes its requests again."""

    mode = "migration"
    run_sha256 = None

    def __init__(self, data: dict[str, Any], settings: dict[str, Any]) -> None:
        import openai

        self.run_id = data["run_id"]
        self.lesson = data["lesson"]
        self.origin = data["origin"]
        self.model = data["model"]["id"]
        self.settings = dict(settings)
        self.transport = _SentOrderTransport(data["bindings"])
        self.client = openai.OpenAI(
            api_key="migration-needs-no-key",
            base_url="http://migration.labkit.invalid/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=self.transport),
        )

    def chat(self, messages: list[dict[str, Any]], *, question: str | None = None, **settings: Any) -> Any:
        """Send one request as `ModelBoundary.chat` does."""
        return self.client.chat.completions.create(
            **{"model": self.model, "messages": messages, **self.settings, **settings}
        )

    def generate(self, question: str, messages: list[dict[str, Any]], **settings: Any) -> Any:
        """Send the messages built for ``question``, as `ModelBoundary.generate` does."""
        return self.chat(messages, question=question, **settings)


def _sent_requests(data: dict[str, Any]) -> tuple[dict[str, tuple[dict[str, Any], str, list[tuple[str, str]]]], Any]:
    """Run every module of the run's lesson against it; return value hash -> (body as sent, path, query)."""
    sent: dict[str, tuple[dict[str, Any], str, list[tuple[str, str]]]] = {}
    order_of_settings = None
    for module in run_modules(data["lesson"]):
        settings = getattr(module, "SETTINGS", {})
        if settings == data.get("settings"):
            order_of_settings = settings
        adapter = _MigrationAdapter(data, settings)
        # a module of the other part of the lesson asks other questions; what it did send still counts
        with contextlib.suppress(LabkitError, ValueError, LookupError):
            module.make_requests(adapter)
        for value, item in adapter.transport.sent.items():
            sent.setdefault(value, item)
    return sent, order_of_settings


def _as_written(response: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return an authored response in the key order the authored-run writer gives it, if its values are the same.

    An authored response is the course's own text, so its key order carries no
    evidence; keeping the writer's order lets ``labkit record NN --authored``
    reproduce a migrated authored run byte for byte.
    """
    try:
        number = int(str(response["id"]).removeprefix(AUTHORED_ID_PREFIX))  # type: ignore[index]
        written = authored_response(response["choices"][0]["message"]["content"], number=number)  # type: ignore[index]
    except (KeyError, IndexError, TypeError, ValueError):
        return response
    return written if written == response else response


def migrate_run(path: Path, *, runs_dir: Path | None = None) -> Migration:
    """Migrate one run file in place (and its manifest entry); a schema-2 run is left as it is."""
    data, _ = load_strict(path, max_bytes=MAX_RUN_BYTES)
    run_id = data.get("run_id", path.parent.name) if isinstance(data, dict) else path.parent.name
    if not isinstance(data, dict) or data.get("schema_version") not in (1, 2):
        return Migration(run_id, "refused", problem=f"{path}: not a schema 1 or 2 recorded run")
    if data["schema_version"] == 2:
        return Migration(run_id, "already schema 2")
    sent, settings_order = _sent_requests(data)
    bindings, reordered, kept = [], 0, []
    for old in data["bindings"]:
        value = canonical_sha256(old["request"])
        if value in sent:
            body, endpoint, query = sent[value]
            reordered += 1
        else:
            body, endpoint, query = old["request"], "/v1/chat/completions", []
            kept.append(old["key"][:12])
        if canonical_sha256(body) != value:
            raise MigrationRefused(f"{path}: a request would change value during migration; nothing was written")
        fields = {k: v for k, v in old.items() if k not in ("key", "request", "response")}
        response = _as_written(old["response"]) if data["origin"] == "authored" else old["response"]
        bindings.append(Binding.make(body, response, path=endpoint, query=query, **fields))
    settings = data["settings"]
    if settings_order is not None and canonical_sha256(settings_order) == canonical_sha256(settings):
        settings = copy.deepcopy(settings_order)
    fields = {k: v for k, v in data.items() if k not in ("schema_version", "bindings", "settings")}
    try:
        run = seal_run(**fields, settings=settings, bindings=bindings)
    except Exception as exc:  # a schema-1 run that schema 2 refuses (dishonest origin, say) is reported, not rewritten
        return Migration(run_id, "refused", problem=str(exc).splitlines()[0])
    _same_values(data, run)
    check_fixtures(run)
    write_run_file(run, runs_dir=runs_dir or path.parent.parent, replace=True)
    return Migration(run_id, "migrated", reordered=reordered, kept_order=kept)


def _same_values(old: dict[str, Any], new: RecordedRun) -> None:
    """Refuse a migration in which any request, response or recorded measurement changed value."""
    dumped = new.model_dump(mode="json")
    for before, after in zip(old["bindings"], dumped["bindings"], strict=True):
        for name in before:
            if name != "key" and canonical_sha256(before[name]) != canonical_sha256(after[name]):
                raise MigrationRefused(f"run {new.run_id!r}: field {name!r} of a binding would change; nothing written")
    for name in old:
        if name not in ("schema_version", "bindings") and canonical_sha256(old[name]) != canonical_sha256(dumped[name]):
            raise MigrationRefused(f"run {new.run_id!r}: field {name!r} would change; nothing was written")


def migrate_runs(runs_dir: Path | None = None) -> list[Migration]:
    """Migrate every run under ``runs_dir`` (default ``recorded_runs/``); return what happened to each."""
    runs_dir = runs_dir or recorded_runs_dir()
    results = []
    for folder in sorted(p for p in runs_dir.iterdir() if (p / RUN_FILE).is_file()):
        try:
            results.append(migrate_run(folder / RUN_FILE, runs_dir=runs_dir))
        except LabkitError as exc:
            results.append(Migration(folder.name, "refused", problem=str(exc)))
    return results


def main(argv: list[str] | None = None) -> int:
    """Command line: migrate every run, print one line per run; exit 1 if any was refused or kept a guessed order."""
    parser = argparse.ArgumentParser(prog="python -m labkit.course.migrate_runs", description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, help="folder of runs (default: recorded_runs/)")
    args = parser.parse_args(argv)
    results = migrate_runs(args.runs_dir)
    for r in results:
        detail = f"{r.reordered} requests in sent order" if r.status == "migrated" else r.problem
        if r.kept_order:
            detail += f"; {len(r.kept_order)} made by no lesson code kept their stored order: {r.kept_order}"
        print(f"{r.run_id}: {r.status}" + (f" ({detail})" if detail else ""))
    folder = args.runs_dir or recorded_runs_dir()
    print(f"manifest: {relative_to_root(folder / 'manifest.json')}")
    unordered = [r.run_id for r in results if r.kept_order]
    if unordered:
        print(
            f"runs {unordered} hold requests no lesson code makes any more: their key order is a guess (sorted), "
            "so the openai client's requests will not match them. Record those runs again with `labkit record`."
        )
    return 1 if unordered or any(r.status == "refused" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
