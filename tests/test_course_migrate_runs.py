"""Migrating schema-1 runs: values unchanged, the sent key order recovered, idempotent, never re-hashing a schema-2 run."""

import json
import shutil

import pytest

from labkit.canonical import canonical_sha256, pretty_json
from labkit.course.migrate_runs import migrate_runs
from labkit.recording import read_manifest, verify_runs

RUNS = ["02-rag-authored", "02-rag-smollm2", "06-routing-smollm2"]


def _as_schema_1(data):
    """Return a schema-2 run as schema 1 wrote it: sorted keys, no path, query, response or content hashes."""
    bindings = []
    for b in data["bindings"]:
        old = {k: v for k, v in b.items() if k not in ("path", "query", "response_sha256")}
        bindings.append({**old, "key": canonical_sha256(b["request"])})
    rest = {k: v for k, v in data.items() if k not in ("content_sha256", "bindings")}
    return json.loads(pretty_json({**rest, "schema_version": 1, "bindings": bindings}))


@pytest.fixture
def schema_1_runs(course):
    """The course copy with a few committed runs turned back into schema-1 files (and no manifest entries)."""
    runs = course / "recorded_runs"
    committed = {}
    for run_id in RUNS:
        path = runs / run_id / "run.json"
        committed[run_id] = path.read_bytes()
        path.write_text(pretty_json(_as_schema_1(json.loads(committed[run_id]))), encoding="utf-8")
    (runs / "manifest.json").unlink()
    for other in runs.iterdir():
        if other.is_dir() and other.name not in RUNS:
            shutil.rmtree(other)
    return runs, committed


def test_migration_recovers_the_committed_runs_byte_for_byte(schema_1_runs):
    runs, committed = schema_1_runs
    before = {r: json.loads((runs / r / "run.json").read_text(encoding="utf-8")) for r in RUNS}
    assert {m.run_id: m.status for m in migrate_runs(runs)} == dict.fromkeys(RUNS, "migrated")
    for run_id in RUNS:
        after = json.loads((runs / run_id / "run.json").read_text(encoding="utf-8"))
        for old, new in zip(before[run_id]["bindings"], after["bindings"], strict=True):
            assert canonical_sha256(old["request"]) == canonical_sha256(new["request"])
            assert canonical_sha256(old["response"]) == canonical_sha256(new["response"])
        assert (runs / run_id / "run.json").read_bytes() == committed[run_id]
    assert sorted(read_manifest(runs)) == RUNS
    assert all(problem == "" for _, _, problem in verify_runs(runs))


def test_migration_is_idempotent(schema_1_runs):
    runs, _ = schema_1_runs
    migrate_runs(runs)
    files = {p: p.read_bytes() for p in runs.rglob("*.json")}
    assert {m.status for m in migrate_runs(runs)} == {"already schema 2"}
    assert {p: p.read_bytes() for p in runs.rglob("*.json")} == files


def test_migration_never_rehashes_an_edited_schema_2_run(course):
    path = course / "recorded_runs" / "02-rag-smollm2" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][0]["response"]["choices"][0]["message"]["content"] = "edited"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    edited = path.read_bytes()
    migrate_runs(course / "recorded_runs")
    assert path.read_bytes() == edited
    assert "field 'response' was edited" in dict((n, p) for n, _, p in verify_runs())["02-rag-smollm2"]


def test_a_schema_1_run_is_refused_at_load_with_the_migration_command(schema_1_runs):
    from labkit.errors import RecordedRunError
    from labkit.recording import load_run

    with pytest.raises(RecordedRunError, match=r"python -m labkit\.course\.migrate_runs"):
        load_run("02-rag-authored")


def test_a_request_no_lesson_code_makes_keeps_its_stored_order_and_is_reported(schema_1_runs, capsys):
    from labkit.course.migrate_runs import main

    runs, _ = schema_1_runs
    path = runs / "06-routing-smollm2" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    extra = json.loads(json.dumps(data["bindings"][0]))
    extra["request"]["messages"][1]["content"] = '{"id": "t99", "message": "A ticket the lesson never sends."}'
    extra["key"] = canonical_sha256(extra["request"])
    data["bindings"].append(extra)
    path.write_text(pretty_json(data), encoding="utf-8")
    assert main(["--runs-dir", str(runs)]) == 1
    out = capsys.readouterr().out
    assert "06-routing-smollm2: migrated (10 requests in sent order; 1 made by no lesson code" in out
    assert "Record those runs again" in out
