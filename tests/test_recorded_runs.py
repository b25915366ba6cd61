"""The committed recorded runs: each loads against today's fixtures, says its origin honestly, holds no secret."""

import pytest

from labkit.paths import recorded_runs_dir
from labkit.recording import verify_runs
from labkit.secret_scan import scan_for_secrets

RUNS = verify_runs()


def test_there_are_committed_runs_of_both_origins():
    assert {loaded.origin for _, loaded, _ in RUNS if loaded} == {"authored", "captured"}


@pytest.mark.parametrize("name,loaded,problem", RUNS, ids=[name for name, _, _ in RUNS])
def test_committed_run_loads_against_current_fixtures(name, loaded, problem):
    assert problem == "" and loaded is not None


CAPTURED = [loaded for _, loaded, _ in RUNS if loaded and loaded.origin == "captured"]


@pytest.mark.parametrize("loaded", CAPTURED, ids=[run.run_id for run in CAPTURED])
def test_captured_run_carries_model_settings_usage_and_times(loaded):
    assert loaded.model.id and loaded.settings
    assert all(b.usage and b.latency_s is not None and b.recorded_at for b in loaded.bindings if b.status_code == 200)


def test_no_file_under_recorded_runs_holds_a_key_like_string():
    assert scan_for_secrets(recorded_runs_dir()) == []


def test_bindings_table_shows_measurements_of_captured_runs_only():
    from labkit.rag.trace import RUN_AUTHORED, RUN_CAPTURED
    from labkit.recording import bindings_table, load_run

    run = load_run(RUN_CAPTURED)
    captured = bindings_table(run)
    assert captured["finish_reason"].tolist() == ["stop", "length"]
    assert captured["completion_tokens"].tolist() == [b.usage.completion_tokens for b in run.bindings]
    authored = bindings_table(load_run(RUN_AUTHORED))
    assert authored["latency_s"].isna().all() and authored["prompt_tokens"].isna().all()
