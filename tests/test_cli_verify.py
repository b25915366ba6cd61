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
