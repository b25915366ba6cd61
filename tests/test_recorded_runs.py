"""The committed recorded runs: each loads against today's fixtures, says its origin honestly, holds no secret."""

import pytest

from labkit.paths import recorded_runs_dir
from labkit.recording import verify_runs
from labkit.secret_scan import scan_for_secrets


@pytest.fixture(scope="module")
def runs():
    """Every committed run, loaded inside a test: a load failure fails a test instead of emptying a parameter list."""
    loaded = verify_runs()
    assert loaded, f"no recorded runs found under {recorded_runs_dir()}"
    return loaded


def test_there_are_committed_runs_of_both_origins(runs):
    assert {loaded.origin for _, loaded, _ in runs if loaded} == {"authored", "captured"}


def test_every_committed_run_loads_against_current_fixtures(runs):
    problems = {name: problem for name, loaded, problem in runs if problem or loaded is None}
    assert problems == {}
    assert [name for name, _, _ in runs] == sorted(p.name for p in recorded_runs_dir().iterdir() if p.is_dir())


def test_every_captured_run_carries_model_settings_usage_and_times(runs):
    captured = [loaded for _, loaded, _ in runs if loaded and loaded.origin == "captured"]
    assert captured
    for loaded in captured:
        assert loaded.model.id and loaded.settings, loaded.run_id
        assert all(
            b.usage and b.latency_s is not None and b.recorded_at for b in loaded.bindings if b.status_code == 200
        ), loaded.run_id


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
