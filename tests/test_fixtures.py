import hashlib
import json

import pytest

from labkit.errors import FixtureOverwriteRefused
from labkit.fixtures import fixture_script, prepare_fixture_folder, write_json_fixtures


def test_a_new_folder_is_created(tmp_path):
    assert prepare_fixture_folder(tmp_path / "new").is_dir()


def test_a_folder_holding_a_captured_run_is_refused_untouched(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"origin": "captured"}), encoding="utf-8")
    with pytest.raises(FixtureOverwriteRefused, match=r"run\.json is a captured run"):
        prepare_fixture_folder(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_written_files_are_pretty_json_and_their_hashes_match(tmp_path):
    hashes = write_json_fixtures(tmp_path, {"a.json": {"b": 1, "a": 2}, "raw.json": "[]\n"})
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == '{\n  "a": 2,\n  "b": 1\n}\n'
    assert hashes["raw.json"] == hashlib.sha256(b"[]\n").hexdigest()


def test_the_script_refusal_is_one_line_on_stderr_and_exit_1(tmp_path, capsys):
    (tmp_path / "run.json").write_text("{not json", encoding="utf-8")
    assert (
        fixture_script([str(tmp_path)], prog="demo", default=tmp_path, write=lambda f: prepare_fixture_folder(f) and {})
        == 1
    )
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("demo: ") and "might be a captured run" in captured.err


def test_the_script_rejects_options_it_does_not_have(tmp_path, capsys):
    assert fixture_script(["--force"], prog="demo", default=tmp_path, write=lambda f: {}) == 1
    assert "usage: python -m demo [FOLDER]" in capsys.readouterr().err
