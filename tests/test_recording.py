import json

import pytest

from labkit.errors import FixtureChanged, RecordedRunError
from labkit.recording import (
    Binding,
    RecordedRun,
    binding_key,
    fixture_hashes,
    load_run,
    read_manifest,
    run_content_sha256,
    save_run,
    seal_run,
    verify_runs,
)
from tests.signers import list_key, make_key, needs_ssh_keygen


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


@needs_ssh_keygen
def test_a_run_added_outside_the_manifest_is_refused(tmp_path, monkeypatch):
    _sign_as_instructor(tmp_path, monkeypatch)  # verify refuses an unsigned run, authored or captured
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
    assert binding_key(request) != binding_key(reordered)
    assert binding_key(request) != binding_key(request, query=[("api-version", "2024-10-21")])
    assert binding_key(request) != binding_key(request, path="/openai/deployments/d/chat/completions")


# --- keys, bindings and request bodies ---------------------------------------------------------


def test_a_key_is_the_sha256_of_path_query_and_body_written_compactly_in_order():
    import hashlib

    request = _request()
    text = json.dumps(
        {"path": "/v1/chat/completions", "query": [["api-version", "1"]], "body": request},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert binding_key(request, query=[("api-version", "1")]) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_every_committed_run_keeps_the_keys_it_was_recorded_with():
    from labkit.paths import recorded_runs_dir

    runs = sorted(recorded_runs_dir().glob("*/run.json"))
    assert runs
    for path in runs:
        data = json.loads(path.read_text(encoding="utf-8"))
        for binding in data["bindings"]:
            assert binding_key(binding["request"], path=binding["path"], query=binding["query"]) == binding["key"]


def test_no_response_has_no_hash():
    from labkit.recording import response_sha256

    assert response_sha256(None) is None
    failed = Binding.make(_request(), None, status_code=0)
    assert failed.response_sha256 is None


def test_a_binding_keeps_its_path_and_query_as_text():
    binding = Binding.make(_request(), None, status_code=0, path="/v2/chat/completions", query=[("api-version", 2)])
    assert (binding.path, binding.query) == ("/v2/chat/completions", [("api-version", "2")])
    assert binding.key == binding_key(_request(), path="/v2/chat/completions", query=[("api-version", "2")])


def test_a_request_body_must_be_one_json_object_without_streaming():
    from labkit.canonical import InvalidJSON
    from labkit.recording import StreamingNotRecorded, request_body

    url = "http://127.0.0.1:9/v1/chat/completions"
    assert request_body(b'{"model": "m", "stream": false}', url=url) == {"model": "m", "stream": False}
    with pytest.raises(RecordedRunError, match=rf"^the request body to {url} is not a JSON object; send a chat"):
        request_body(b"[1]", url=url)
    with pytest.raises(InvalidJSON, match=rf"^request body to {url}: malformed JSON"):
        request_body(b"{", url=url)
    with pytest.raises(StreamingNotRecorded) as caught:
        request_body(b'{"model": "m", "stream": true}', url=url)
    assert str(caught.value) == (
        "streaming is not recorded; call without stream=True (replay, record and live modes answer "
        "whole replies only, so that each one can be bound to its exact request)"
    )


def test_binding_for_matches_a_reordered_dict_by_value_only_when_one_binding_has_it(tmp_path):
    first, second = _request(), _request("How long does shipping take?")
    run = RecordedRun.model_validate(_run(tmp_path, bindings=[_binding(first), _binding(second)]))
    assert run.binding_for(second) is run.bindings[1]
    assert run.binding_for(dict(reversed(list(second.items())))) is run.bindings[1]
    assert run.binding_for(_request("Anything else?")) is None


def test_a_run_sealed_without_bindings_has_none():
    run = seal_run(
        run_id="05-demo",
        origin="authored",
        created_at="2026-11-29T00:00:00Z",
        lesson="05",
        description="A demonstration run.",
        model={"id": "authored-by-course", "endpoint_kind": "authored"},
        settings={},
        fixtures={},
    )
    assert run.bindings == [] and run.content_sha256 == run_content_sha256(run.model_dump(mode="json"))


# --- where runs live, what refuses them ----------------------------------------------------------


def test_a_run_is_found_by_file_folder_or_id(tmp_path):
    from labkit.paths import recorded_runs_dir
    from labkit.recording import run_path

    assert run_path(tmp_path / "elsewhere.json") == tmp_path / "elsewhere.json"
    assert run_path(tmp_path) == tmp_path / "run.json"
    assert run_path("05-demo") == recorded_runs_dir() / "05-demo" / "run.json"


def test_a_fixture_path_written_with_backslashes_is_refused(tmp_path):
    data = _run(tmp_path)
    data["fixtures"] = {"fixtures\\policy.txt": next(iter(data["fixtures"].values()))}
    data["content_sha256"] = run_content_sha256(data)
    with pytest.raises(FixtureChanged, match=r"names \['fixtures\\\\policy.txt'\], outside the checkout"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_changed_fixtures_are_each_named_with_both_hashes(tmp_path):
    import hashlib

    data = _run(tmp_path)
    other = tmp_path / "fixtures" / "terms.txt"
    other.write_text("Shipping in 5 days.\n", encoding="utf-8")
    data["fixtures"] = fixture_hashes([tmp_path / "fixtures" / "policy.txt", other], root=tmp_path)
    data = _sealed(data)
    recorded = dict(data["fixtures"])
    for path in (tmp_path / "fixtures" / "policy.txt", other):
        path.write_text("changed\n", encoding="utf-8")
    now = hashlib.sha256(b"changed\n").hexdigest()[:12]
    with pytest.raises(FixtureChanged) as caught:
        load_run(_write(tmp_path, data), root=tmp_path)
    assert (
        f"fixtures: fixtures/policy.txt (now {now}…, recorded {recorded['fixtures/policy.txt'][:12]}…); "
        f"fixtures/terms.txt (now {now}…, recorded {recorded['fixtures/terms.txt'][:12]}…). "
    ) in str(caught.value)


def test_an_old_schema_is_sent_to_the_migration():
    from labkit.recording import parse_run

    with pytest.raises(RecordedRunError) as caught:
        parse_run({"origin": "captured", "schema_version": 1})
    assert str(caught.value) == (
        "recorded run: schema_version 1 has no response or content hashes; migrate it with "
        "`python -m labkit.course.migrate_runs` (requests and responses stay as recorded)"
    )


def test_a_problem_of_the_whole_run_is_named_as_the_run(tmp_path):
    from labkit.recording import parse_run

    data = _run(tmp_path)
    data["model"]["endpoint_kind"] = "local-llama-cpp"
    with pytest.raises(RecordedRunError, match=r"^run\.json: not a valid recorded run: run: Value error, an authored"):
        parse_run(data, source="run.json")


@needs_ssh_keygen
def test_a_run_file_up_to_the_run_limit_loads(tmp_path, monkeypatch):
    _sign_as_instructor(tmp_path, monkeypatch)
    long_answer = "x" * 1_100_000  # over the 1 MB limit of ordinary JSON inputs, under the run limit
    request = _request()
    response = {
        "id": "authored-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": long_answer}, "finish_reason": "stop"}],
    }
    path = _saved(tmp_path, _run(tmp_path, bindings=[Binding.make(request, response).model_dump(mode="json")]))
    assert path.stat().st_size > 1_000_000
    assert load_run(path.parent, root=tmp_path).bindings[0].response == response
    assert _problems(tmp_path) == {"05-demo": ""}
    _edit(path, lambda d: d.update(origin="captured"))
    assert "field 'origin' says 'captured' but manifest.json recorded 'authored'" in _problems(tmp_path)["05-demo"]


# --- the manifest and the run writers ------------------------------------------------------------


@pytest.mark.parametrize(
    "manifest",
    [[], {"runs": []}, {"runs": {"05-demo": {"sha256": "0" * 64, "origin": "authored", "note": "x"}}}],
)
def test_a_malformed_manifest_is_refused_and_reported_for_every_run(tmp_path, manifest):
    _saved(tmp_path, _run(tmp_path))
    (tmp_path / "recorded_runs" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(RecordedRunError, match=r"a manifest holds \{'runs': \{run id: "):
        read_manifest(tmp_path / "recorded_runs")
    [(name, run, problem)] = verify_runs(tmp_path / "recorded_runs", root=tmp_path)
    assert (name, run) == ("05-demo", None) and "a manifest holds" in problem


def test_the_manifest_lists_exactly_the_saved_runs_and_says_who_writes_it(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    manifest = json.loads((tmp_path / "recorded_runs" / "manifest.json").read_text(encoding="utf-8"))
    assert (
        "Run id -> SHA-256 of its run.json and its origin. Written only by labkit record and the run writers; "
        in (manifest["about"])
    )
    assert manifest["about"].endswith("`labkit verify` refuses a run that differs from its entry. Never edit by hand.")
    assert manifest["runs"] == {"05-demo": {"sha256": hashlib_of(path), "origin": "authored"}}


def hashlib_of(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_holding_a_secret_is_refused_before_anything_is_written(tmp_path):
    from labkit.secret_scan import SecretFound

    leaky = _binding(_request("my key is s" + "k-" + "a1B2c3D4e5F6g7H8i9J0k1L2"))
    with pytest.raises(SecretFound, match=r"^run '05-demo' was not saved: it holds a secret"):
        _saved(tmp_path, _run(tmp_path, bindings=[leaky]))
    assert not (tmp_path / "recorded_runs").exists()


def test_the_run_writer_never_overwrites_unless_asked_to_replace(tmp_path):
    from labkit.recording import write_run_file

    run = RecordedRun.model_validate(_run(tmp_path))
    runs = tmp_path / "recorded_runs"
    path = write_run_file(run, runs_dir=runs)
    with pytest.raises(RecordedRunError, match=r"run\.json already exists; a recorded run is never overwritten"):
        write_run_file(run, runs_dir=runs)
    changed = RecordedRun.model_validate(_run(tmp_path, description="Replaced by the authored-run writer."))
    assert write_run_file(changed, runs_dir=runs, replace=True) == path
    assert load_run(path.parent, root=tmp_path).description == "Replaced by the authored-run writer."


def test_save_run_refuses_an_existing_folder_and_replaces_only_when_asked(tmp_path):
    runs = tmp_path / "recorded_runs"
    (runs / "05-demo").mkdir(parents=True)
    run = RecordedRun.model_validate(_run(tmp_path))
    with pytest.raises(RecordedRunError, match=r"05-demo already exists; a recorded run is never overwritten"):
        save_run(run, runs_dir=runs)
    save_run(run, runs_dir=runs, replace=True)
    changed = RecordedRun.model_validate(_run(tmp_path, description="Replaced."))
    save_run(changed, runs_dir=runs, replace=True)
    assert load_run(runs / "05-demo", root=tmp_path).description == "Replaced."


def test_verify_names_each_problem_of_a_run_against_the_manifest(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    recorded = read_manifest(tmp_path / "recorded_runs")["05-demo"]["sha256"]
    _edit(path, lambda d: d.update(origin="captured"))
    problem = _problems(tmp_path)["05-demo"]
    assert "; field 'origin' says" in problem and not problem.startswith("field")  # after the load error
    assert (
        "field 'origin' says 'captured' but manifest.json recorded 'authored'; "
        f"run file SHA-256 is {hashlib_of(path)[:12]}…, manifest.json recorded {recorded[:12]}…: "
        "the file was edited after recording; restore it from git or record it again"
    ) in problem


@needs_ssh_keygen
def test_verify_names_a_run_added_outside_the_manifest_and_returns_good_runs_loaded(tmp_path, monkeypatch):
    _sign_as_instructor(tmp_path, monkeypatch)
    _saved(tmp_path, _run(tmp_path))
    extra = _run(tmp_path, run_id="05-extra")
    _write(tmp_path, extra)
    results = verify_runs(tmp_path / "recorded_runs", root=tmp_path)
    assert [name for name, _, _ in results] == ["05-demo", "05-extra"]
    assert isinstance(results[0][1], RecordedRun) and results[0][2] == ""
    assert results[1][1] is None
    assert results[1][2].startswith(
        "run '05-extra' is not in manifest.json: it was added outside `labkit record`; "
        "record it with `labkit record` or remove it; authored run '05-extra' is unsigned"
    )
    assert verify_runs(tmp_path / "no-runs-here", root=tmp_path) == []


def test_the_bindings_table_shows_question_finish_reason_tokens_and_seconds(tmp_path):
    import pandas as pd

    from labkit.recording import bindings_table

    failed = Binding.make(_request("Is anyone there?"), None, status_code=0).model_dump(mode="json")
    run = RecordedRun.model_validate(
        _run(
            tmp_path, origin="captured", bindings=[_captured(_request(), question="What is the refund window?"), failed]
        )
    )
    table = bindings_table(run)
    assert table.to_dict("records")[0] == {
        "question": "What is the refund window?",
        "finish_reason": "stop",
        "prompt_tokens": 12,
        "completion_tokens": 3,
        "latency_s": 0.4,
    }
    second = table.to_dict("records")[1]
    assert all(pd.isna(second[column]) for column in second)  # no question, no reply, nothing measured
    assert list(table.columns) == ["question", "finish_reason", "prompt_tokens", "completion_tokens", "latency_s"]


def test_binding_for_prefers_the_exact_key_over_a_reordered_twin(tmp_path):
    request = _request()
    twin = dict(reversed(list(request.items())))
    run = RecordedRun.model_validate(_run(tmp_path, bindings=[_binding(request), _binding(twin)]))
    assert run.binding_for(request) is run.bindings[0]
    assert run.binding_for(twin) is run.bindings[1]


# --- the specific problem first, the stale hash second -------------------------------------------


def _before(message, first, second):
    """Assert that ``first`` and ``second`` are both in ``message``, in that order."""
    assert first in message and second in message, message
    assert message.index(first) < message.index(second), message


def test_a_run_id_changed_without_resealing_names_the_folder_before_the_stale_hash(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    _edit(path, lambda d: d.update(run_id="05-other"))
    with pytest.raises(RecordedRunError) as refused:
        load_run(path.parent, root=tmp_path)
    _before(str(refused.value), "run_id '05-other' does not match its folder '05-demo'", "field 'content_sha256'")


def test_a_reply_removed_from_a_status_200_binding_says_so_before_the_stale_hash(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    _edit(path, lambda d: d["bindings"][0].update(response=None))
    with pytest.raises(RecordedRunError) as refused:
        load_run(path.parent, root=tmp_path)
    _before(str(refused.value), "has status 200 but no response", "field 'response' was edited after recording")


def test_a_fixture_outside_the_checkout_added_without_resealing_is_named_before_the_stale_hash(tmp_path):
    path = _saved(tmp_path, _run(tmp_path))
    _edit(path, lambda d: d["fixtures"].update({"../outside.txt": "0" * 64}))
    with pytest.raises(FixtureChanged) as refused:
        load_run(path.parent, root=tmp_path)
    _before(
        str(refused.value), "field 'fixtures' names ['../outside.txt'], outside the checkout", "field 'content_sha256'"
    )


# --- an authored run holds only the course's own replies -----------------------------------------


def test_an_authored_run_whose_reply_carries_an_endpoints_usage_block_is_refused(tmp_path):
    request = _request()
    response = _binding(request)["response"] | {
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    }
    data = _run(tmp_path, bindings=[Binding.make(request, response).model_dump(mode="json")])
    with pytest.raises(RecordedRunError, match=r"endpoint's id or usage in bindings \['[0-9a-f]{12}'\]"):
        load_run(_write(tmp_path, data), root=tmp_path)


def test_an_authored_run_whose_reply_carries_an_endpoints_id_is_refused(tmp_path):
    data = _run(tmp_path, bindings=[_binding(_request(), response_id="chatcmpl-9")])
    with pytest.raises(RecordedRunError, match=r"endpoint's id or usage in bindings \['[0-9a-f]{12}'\]"):
        load_run(_write(tmp_path, data), root=tmp_path)
    assert load_run(_write(tmp_path, _run(tmp_path)), root=tmp_path).origin == "authored"  # authored-1: accepted


# --- the run writer signs what it seals ----------------------------------------------------------


def _signed_problems(tmp_path):
    from labkit.recording import verify_runs

    return {name: (run, problem) for name, run, problem in verify_runs(tmp_path / "recorded_runs", root=tmp_path)}


def _sign_as_instructor(tmp_path, monkeypatch):
    """Make a key, list it in tmp_path's allowed_signers as 'instructor', and name it in LABKIT_SIGNING_KEY."""
    key = make_key(tmp_path / "keys")
    (tmp_path / "recorded_runs").mkdir()
    list_key(tmp_path / "recorded_runs", key, "instructor")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(key))


@needs_ssh_keygen
def test_a_run_saved_with_a_signing_key_is_signed_by_it(tmp_path, monkeypatch):
    _sign_as_instructor(tmp_path, monkeypatch)
    path = _saved(tmp_path, _run(tmp_path, origin="captured", bindings=[_captured(_request())]))
    assert (path.parent / "run.json.sig").is_file()
    run, problem = _signed_problems(tmp_path)["05-demo"]
    assert problem == "" and (run.signature.status, run.signature.principal) == ("signed", "instructor")


def test_a_captured_run_saved_without_a_key_is_kept_unsigned_and_verify_says_how_to_sign(tmp_path):
    path = _saved(tmp_path, _run(tmp_path, origin="captured", bindings=[_captured(_request())]))
    assert path.is_file() and not (path.parent / "run.json.sig").exists()
    run, problem = _signed_problems(tmp_path)["05-demo"]
    assert run is None and problem == (
        "captured run '05-demo' is unsigned, so nothing shows who sealed it (and an edit with its hashes recomputed "
        "would pass). Sign it with `labkit sign 05-demo` (LABKIT_SIGNING_KEY names your private key; docs/recording.md)"
    )


def test_a_run_that_cannot_be_signed_is_still_saved_and_the_error_says_how_to_sign_it(tmp_path, monkeypatch):
    from labkit.signing import SigningFailed

    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(tmp_path / "no-such-key"))
    with pytest.raises(
        SigningFailed, match=r"the run was saved as .*05-demo/run\.json, unsigned: .*labkit sign 05-demo"
    ):
        _saved(tmp_path, _run(tmp_path, origin="captured", bindings=[_captured(_request())]))
    assert "05-demo" in read_manifest(tmp_path / "recorded_runs")
    assert load_run(tmp_path / "recorded_runs" / "05-demo", root=tmp_path).origin == "captured"


@needs_ssh_keygen
def test_rewriting_a_run_keeps_a_signature_that_still_holds_and_drops_one_that_does_not(tmp_path, monkeypatch):
    from labkit.recording import write_run_file

    _sign_as_instructor(tmp_path, monkeypatch)
    run = RecordedRun.model_validate(_run(tmp_path))
    signature = write_run_file(run, runs_dir=tmp_path / "recorded_runs").with_name("run.json.sig")
    before = signature.read_bytes()
    monkeypatch.delenv("LABKIT_SIGNING_KEY")
    write_run_file(run, runs_dir=tmp_path / "recorded_runs", replace=True)  # the same bytes: the same signature
    assert signature.read_bytes() == before
    changed = RecordedRun.model_validate(_run(tmp_path, description="Rewritten by the authored-run writer."))
    write_run_file(changed, runs_dir=tmp_path / "recorded_runs", replace=True)
    assert not signature.exists()  # it covered the old bytes, and no key is set to sign the new ones
    run, problem = _signed_problems(tmp_path)["05-demo"]
    assert run is None and "authored run '05-demo' is unsigned" in problem


def test_copy_fixtures_puts_a_replaced_fixture_in_a_copy_and_leaves_the_repository_alone(tmp_path):
    from labkit.canonical import file_sha256 as sha
    from labkit.rag.trace import RUN_AUTHORED
    from labkit.recording import check_fixtures, copy_fixtures, load_run

    run = load_run(RUN_AUTHORED)
    corpus = next(rel for rel in run.fixtures if rel.endswith("api_summaries.json"))
    check_fixtures(run, root=copy_fixtures(run, tmp_path / "same"))
    edited = tmp_path / "edited.json"
    edited.write_text("[]", encoding="utf-8")
    with pytest.raises(FixtureChanged, match=r"api_summaries\.json"):
        check_fixtures(run, root=copy_fixtures(run, tmp_path / "changed", replace={corpus: edited}))
    assert sha(tmp_path / "changed" / corpus) == sha(edited)
    with pytest.raises(FixtureChanged, match="names no fixture"):
        copy_fixtures(run, tmp_path / "x", replace={"fixtures/other.json": edited})


def test_write_edited_run_changes_only_a_copy_that_load_run_then_refuses(tmp_path):
    from labkit.recording import RUN_FILE, load_run, run_path, write_edited_run

    before = run_path("02-rag-authored").read_bytes()

    def redescribe(data):
        data["description"] += " Edited."

    copy = write_edited_run("02-rag-authored", tmp_path, redescribe)
    assert copy == tmp_path / "02-rag-authored" / RUN_FILE
    assert json.loads(copy.read_text(encoding="utf-8"))["description"].endswith(" Edited.")
    assert run_path("02-rag-authored").read_bytes() == before
    with pytest.raises(RecordedRunError, match="content_sha256"):
        load_run(copy)
    load_run(write_edited_run("02-rag-authored", tmp_path / "same", lambda data: None))


def test_refusal_reason_names_the_field_and_the_reason_without_pydantic_labels(tmp_path) -> None:
    from labkit.rag.trace import RUN_AUTHORED
    from labkit.recording import load_run, refusal_reason, write_edited_run

    edited = write_edited_run(RUN_AUTHORED, tmp_path / "edited", lambda data: data.update(description="edited"))
    with pytest.raises(RecordedRunError) as refused:
        load_run(edited)
    reason = refusal_reason(refused.value)
    assert reason.startswith("run: field 'content_sha256'")
    assert "Value error" not in reason and str(tmp_path) not in reason
    assert "restore it from git or record it again" in reason
