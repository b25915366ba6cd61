import json

from labkit.cli import main


def test_verify_passes_on_the_committed_runs(course, capsys):
    assert main(["verify"]) == 0
    assert "runs verified, 0 secrets found (detect-secrets)" in capsys.readouterr().out


def test_verify_catches_a_tampered_reply(course, capsys):
    path = course / "recorded_runs" / "02-rag-authored" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][0]["request"]["temperature"] = 1
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["verify"]) == 1
    assert "02-rag-authored" in capsys.readouterr().out.split("REFUSED")[0].splitlines()[-1]


def test_verify_catches_a_changed_fixture(course, capsys):
    inputs = course / "fixtures" / "routing" / "model-inputs.json"
    inputs.write_text(inputs.read_text(encoding="utf-8").replace("t1", "t01"), encoding="utf-8")
    assert main(["verify"]) == 1
    assert "model-inputs.json" in capsys.readouterr().out


def test_verify_catches_a_key_in_a_run_folder(course, capsys):
    (course / "recorded_runs" / "02-rag-authored" / "notes.txt").write_text(
        "OPENAI_API_KEY=s" + "k-abcdefghijklmnopqrstuvwx\n"
    )
    assert main(["verify"]) == 1
    assert "SECRET" in capsys.readouterr().out


def _line(out, run_id):
    return next(row for row in out.splitlines() if row.startswith(run_id))


def test_verify_catches_an_edited_reply_in_a_captured_run(course, capsys):
    path = course / "recorded_runs" / "02-rag-smollm2" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][1]["response"]["choices"][0]["message"]["content"] = '{"status": "not_in_docs"}'
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["verify"]) == 1
    line = _line(capsys.readouterr().out, "02-rag-smollm2")
    assert "REFUSED" in line and "bindings.1" in line and "field 'response' was edited" in line


def test_verify_catches_a_fixture_edited_after_its_hash_was_removed_from_the_run(course, capsys):
    from labkit.recording import load_run, seal_run, write_run_file

    run = load_run("06-routing-smollm2")
    fields = run.model_dump(mode="json")
    fields["fixtures"] = {k: v for k, v in run.fixtures.items() if not k.endswith("model-inputs.json")}
    # a thorough forger: the run file and the manifest both agree with the shortened fixture list
    write_run_file(
        seal_run(**{k: v for k, v in fields.items() if k not in ("schema_version", "content_sha256")}), replace=True
    )
    inputs = course / "fixtures" / "routing" / "model-inputs.json"
    inputs.write_text(inputs.read_text(encoding="utf-8").replace("t1", "t01"), encoding="utf-8")
    assert main(["verify"]) == 1
    line = _line(capsys.readouterr().out, "06-routing-smollm2")
    assert "field 'fixtures' lacks ['fixtures/routing/model-inputs.json']" in line and "lesson 06" in line


def test_verify_catches_a_run_added_outside_the_manifest(course, capsys):
    import shutil

    shutil.copytree(course / "recorded_runs" / "02-rag-authored", course / "recorded_runs" / "02-rag-copy")
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "02-rag-copy" in out and "not in manifest.json" in out
