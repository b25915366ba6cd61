import json

import pytest

from labkit.canonical import canonical_sha256
from labkit.errors import FixtureChanged, RecordedRunError
from labkit.recording import RecordedRun, fixture_hashes, load_run, save_run


def _request(text="What is the refund window?"):
    return {"model": "SmolLM2-135M-Instruct", "messages": [{"role": "user", "content": text}], "temperature": 0}


def _binding(request, **extra):
    response = {
        "id": "r1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "30 days"}, "finish_reason": "stop"}],
    }
    return {"key": canonical_sha256(request), "request": request, "response": response, **extra}


def _run(tmp_path, origin="authored", bindings=None, **overrides):
    fixture = tmp_path / "fixtures" / "policy.txt"
    fixture.parent.mkdir(parents=True, exist_ok=True)
    if not fixture.exists():
        fixture.write_text("Refunds within 30 days.\n", encoding="utf-8")
    data = {
        "schema_version": 1,
        "run_id": "05-demo",
        "origin": origin,
        "created_at": "2026-11-29T00:00:00Z",
        "lesson": "05",
        "description": "A demonstration run.",
        "model": {
            "id": "SmolLM2-135M-Instruct",
            "endpoint_kind": "authored" if origin == "authored" else "local-llama-cpp",
        },
        "settings": {"temperature": 0},
        "fixtures": fixture_hashes([fixture], root=tmp_path),
        "bindings": bindings if bindings is not None else [_binding(_request())],
    }
    data.update(overrides)
    return data


def _write(tmp_path, data):
    folder = tmp_path / "recorded_runs" / data.get("run_id", "05-demo")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_saved_run_loads_back_unchanged(tmp_path):
    run = RecordedRun.model_validate(_run(tmp_path))
    path = save_run(run, runs_dir=tmp_path / "recorded_runs")
    assert load_run(path.parent, root=tmp_path) == run
    assert path.read_text(encoding="utf-8").endswith("}\n")


def test_run_without_origin_is_refused_with_both_choices_named(tmp_path):
    data = _run(tmp_path)
    del data["origin"]
    with pytest.raises(RecordedRunError, match=r"'captured'.*'authored'"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_unknown_origin_is_refused(tmp_path):
    with pytest.raises(RecordedRunError, match="origin"):
        load_run(_write(tmp_path, _run(tmp_path, origin="simulated")), root=tmp_path)


def test_changed_fixture_refuses_the_run_and_says_how_to_rerecord(tmp_path):
    folder = _write(tmp_path, _run(tmp_path))
    (tmp_path / "fixtures" / "policy.txt").write_text("Refunds within 60 days.\n", encoding="utf-8")
    with pytest.raises(FixtureChanged, match=r"fixtures/policy.txt.*labkit record 05"):
        load_run(folder, root=tmp_path)


def test_missing_fixture_refuses_the_run(tmp_path):
    folder = _write(tmp_path, _run(tmp_path))
    (tmp_path / "fixtures" / "policy.txt").unlink()
    with pytest.raises(FixtureChanged, match="missing"):
        load_run(folder, root=tmp_path)


def test_authored_run_claiming_latency_is_refused(tmp_path):
    data = _run(tmp_path, bindings=[_binding(_request(), latency_s=0.4)])
    with pytest.raises(RecordedRunError, match="authored run claims"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_authored_run_naming_a_real_endpoint_is_refused(tmp_path):
    data = _run(tmp_path)
    data["model"]["endpoint_kind"] = "local-llama-cpp"
    with pytest.raises(RecordedRunError, match="endpoint_kind 'authored'"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_captured_run_without_usage_is_refused(tmp_path):
    data = _run(
        tmp_path, origin="captured", bindings=[_binding(_request(), latency_s=0.4, recorded_at="2026-11-29T00:00:01Z")]
    )
    with pytest.raises(RecordedRunError, match="lack usage"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_captured_run_with_measurements_loads(tmp_path):
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    data = _run(
        tmp_path,
        origin="captured",
        bindings=[_binding(_request(), latency_s=0.4, usage=usage, recorded_at="2026-11-29T00:00:01Z")],
    )
    run = load_run(_write(tmp_path, data), root=tmp_path)
    assert run.bindings[0].usage.total_tokens == 15


def test_request_edited_after_recording_is_refused(tmp_path):
    binding = _binding(_request())
    binding["request"]["temperature"] = 0.7
    with pytest.raises(RecordedRunError, match="edited after recording"):
        load_run(_write(tmp_path, _run(tmp_path, bindings=[binding])), root=tmp_path)


def test_duplicate_bindings_are_refused(tmp_path):
    data = _run(tmp_path, bindings=[_binding(_request()), _binding(_request())])
    with pytest.raises(RecordedRunError, match="share one request key"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_unexpected_field_is_refused(tmp_path):
    data = _run(tmp_path)
    data["score"] = 1.0
    with pytest.raises(RecordedRunError, match="score"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_run_id_must_match_its_folder(tmp_path):
    data = _run(tmp_path)
    folder = _write(tmp_path, data)
    renamed = folder.with_name("05-other")
    folder.rename(renamed)
    with pytest.raises(RecordedRunError, match="does not match its folder"):
        load_run(renamed, root=tmp_path)


def test_existing_run_is_never_overwritten(tmp_path):
    run = RecordedRun.model_validate(_run(tmp_path))
    save_run(run, runs_dir=tmp_path / "recorded_runs")
    before = (tmp_path / "recorded_runs" / "05-demo" / "run.json").read_bytes()
    with pytest.raises(RecordedRunError, match="never overwritten"):
        save_run(run, runs_dir=tmp_path / "recorded_runs")
    assert (tmp_path / "recorded_runs" / "05-demo" / "run.json").read_bytes() == before


def test_binding_for_finds_the_exact_request_only(tmp_path):
    run = RecordedRun.model_validate(_run(tmp_path))
    assert run.binding_for(_request()) is run.bindings[0]
    assert run.binding_for(_request("What is the refund window ?")) is None


def test_unknown_run_id_says_how_to_find_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    with pytest.raises(RecordedRunError, match="labkit verify"):
        load_run("no-such-run")
