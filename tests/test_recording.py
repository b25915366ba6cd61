import json

import pytest

from labkit.errors import FixtureChanged, RecordedRunError
from labkit.recording import (
    Binding,
    RecordedRun,
    fixture_hashes,
    load_run,
    read_manifest,
    request_key,
    run_content_sha256,
    save_run,
    seal_run,
    verify_runs,
)


def _request(text="What is the refund window?"):
    return {"model": "SmolLM2-135M-Instruct", "messages": [{"role": "user", "content": text}], "temperature": 0}


def _binding(request, *, response_id="authored-1", **extra):
    response = {
        "id": response_id,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "30 days"}, "finish_reason": "stop"}],
    }
    return Binding.make(request, response).model_dump(mode="json") | extra


def _sealed(data):
    """Give a run dict its content hash, as the run writers do (a run that fails validation gets a dummy)."""
    try:
        fields = {k: v for k, v in data.items() if k not in ("schema_version", "content_sha256")}
        return seal_run(**fields).model_dump(mode="json")
    except Exception:
        return {"content_sha256": "0" * 64, **data}


def _captured(request, **extra):
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    return _binding(
        request, response_id="chatcmpl-1", usage=usage, latency_s=0.4, recorded_at="2026-11-29T00:00:01Z", **extra
    )


def _run(tmp_path, origin="authored", bindings=None, **overrides):
    fixture = tmp_path / "fixtures" / "policy.txt"
    fixture.parent.mkdir(parents=True, exist_ok=True)
    if not fixture.exists():
        fixture.write_text("Refunds within 30 days.\n", encoding="utf-8")
    data = {
        "schema_version": 2,
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
    return _sealed(data)


def _write(tmp_path, data):
    folder = tmp_path / "recorded_runs" / data.get("run_id", "05-demo")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_saved_run_loads_back_unchanged(tmp_path):
    run = RecordedRun.model_validate(_run(tmp_path))
    path = save_run(run, runs_dir=tmp_path / "recorded_runs")
    loaded = load_run(path.parent, root=tmp_path)
    assert loaded.model_dump() == run.model_dump()
    assert loaded.file_sha256 == read_manifest(tmp_path / "recorded_runs")["05-demo"]["sha256"]
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
    data["content_sha256"] = run_content_sha256(data)
    with pytest.raises(RecordedRunError, match="endpoint_kind 'authored'"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_captured_run_without_usage_is_refused(tmp_path):
    data = _run(
        tmp_path, origin="captured", bindings=[_binding(_request(), latency_s=0.4, recorded_at="2026-11-29T00:00:01Z")]
    )
    with pytest.raises(RecordedRunError, match="lack usage"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_captured_run_with_measurements_loads(tmp_path):
    data = _run(tmp_path, origin="captured", bindings=[_captured(_request())])
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
    data["content_sha256"] = run_content_sha256(data)
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


# --- tamper evidence: response hashes, content hash, manifest ------------------------------------


def _saved(tmp_path, data):
    """Save a run through the run writer (which adds it to the manifest); return its file."""
    return save_run(RecordedRun.model_validate(data), runs_dir=tmp_path / "recorded_runs")


def _edit(path, change):
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _problems(tmp_path):
    return {name: problem for name, _, problem in verify_runs(tmp_path / "recorded_runs", root=tmp_path)}


def test_an_edited_reply_is_refused_naming_the_run_and_the_field(tmp_path):
    path = _saved(tmp_path, _run(tmp_path, origin="captured", bindings=[_captured(_request())]))
    _edit(path, lambda d: d["bindings"][0]["response"]["choices"][0]["message"].update(content="60 days"))
    with pytest.raises(RecordedRunError, match=r"05-demo.*bindings\.0.*field 'response' was edited"):
        load_run(path.parent, root=tmp_path)
    assert "field 'response' was edited" in _problems(tmp_path)["05-demo"]


def test_a_reply_edited_with_its_hashes_recomputed_is_caught_by_the_manifest(tmp_path):
    path = _saved(tmp_path, _run(tmp_path, origin="captured", bindings=[_captured(_request())]))
    data = json.loads(path.read_text(encoding="utf-8"))
    old = data["bindings"][0]
    old["response"]["choices"][0]["message"]["content"] = "60 days"
    measured = {k: old[k] for k in ("usage", "latency_s", "recorded_at")}
    data["bindings"] = [Binding.make(old["request"], old["response"], **measured)]
    forged = seal_run(**{k: v for k, v in data.items() if k not in ("schema_version", "content_sha256")})
    path.write_text(json.dumps(forged.model_dump(mode="json")), encoding="utf-8")
    load_run(path.parent, root=tmp_path)  # every hash inside the file agrees with the forgery
    assert "the file was edited after recording" in _problems(tmp_path)["05-demo"]


def test_an_edited_description_breaks_the_content_hash(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    _edit(path, lambda d: d.update(description="A run that shows something else."))
    with pytest.raises(RecordedRunError, match="field 'content_sha256'"):
        load_run(path.parent, root=tmp_path)


def test_an_edited_origin_is_named_against_the_manifest(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    _edit(path, lambda d: d.update(origin="captured"))
    assert "field 'origin' says 'captured' but manifest.json recorded 'authored'" in _problems(tmp_path)["05-demo"]


def test_an_authored_run_relabelled_captured_with_invented_usage_is_refused(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(origin="captured", model={"id": "SmolLM2-135M-Instruct", "endpoint_kind": "local-llama-cpp"})
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    data["bindings"][0].update(usage=usage, latency_s=0.5, recorded_at="2026-11-29T00:00:01Z")
    data["content_sha256"] = run_content_sha256(data)  # a careful forger recomputes the content hash
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RecordedRunError, match="lack the response id the endpoint returned"):
        load_run(path.parent, root=tmp_path)
    assert "manifest.json recorded 'authored'" in _problems(tmp_path)["05-demo"]


def test_a_captured_run_must_carry_the_response_ids_the_endpoint_returned(tmp_path):
    binding = _captured(_request())
    del binding["response"]["id"]
    binding = Binding.make(binding["request"], binding["response"]).model_dump(mode="json") | {
        k: binding[k] for k in ("usage", "latency_s", "recorded_at")
    }
    with pytest.raises(RecordedRunError, match="lack the response id"):
        load_run(_write(tmp_path, _run(tmp_path, origin="captured", bindings=[binding])), root=tmp_path)


def test_an_authored_run_may_not_hold_an_endpoint_response(tmp_path):
    data = _run(tmp_path, bindings=[_binding(_request(), response_id="chatcmpl-9")])
    with pytest.raises(RecordedRunError, match="endpoint's id or usage"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_a_run_added_outside_the_manifest_is_refused(tmp_path):
    _saved(tmp_path, _run(tmp_path))
    other = _run(tmp_path, run_id="05-other")
    _write(tmp_path, other)
    assert "not in manifest.json" in _problems(tmp_path)["05-other"]
    assert _problems(tmp_path)["05-demo"] == ""


def test_a_run_missing_from_its_folder_is_reported_from_the_manifest(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    path.unlink()
    path.parent.rmdir()
    assert "listed in manifest.json but missing" in _problems(tmp_path)["05-demo"]


def test_a_fixture_path_outside_the_checkout_is_refused(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("Refunds within 30 days.\n", encoding="utf-8")
    data = _run(tmp_path)
    data["fixtures"] = {f"../{outside.name}": fixture_hashes([outside], root=tmp_path.parent)[outside.name]}
    data["content_sha256"] = run_content_sha256(data)
    with pytest.raises(FixtureChanged, match=r"field 'fixtures'.*outside the checkout"):
        load_run(_write(tmp_path, data), root=tmp_path)
    with pytest.raises(RecordedRunError, match="outside the checkout"):
        fixture_hashes([outside], root=tmp_path)


def test_the_key_covers_key_order_path_and_query():
    request = _request()
    reordered = dict(reversed(list(request.items())))
    assert request == reordered
    assert request_key(request) != request_key(reordered)
    assert request_key(request) != request_key(request, query=[("api-version", "2024-10-21")])
    assert request_key(request) != request_key(request, path="/openai/deployments/d/chat/completions")
