import pytest

from labkit.secret_scan import scan_for_secrets


@pytest.mark.parametrize(
    "line,kind",
    [
        ('"key": "sk-abcdefghijklmnop1234"', "OpenAI-style key"),
        ('"Authorization": "x"', "authorization header"),
        ("token Bearer abcdefghijklmnopqrstuv", "bearer token"),
        ('"api_key": "x"', "api-key header or field"),
        ("hf_abcdefghijklmnopqrstuvwx", "Hugging Face token"),
    ],
)
def test_key_like_strings_are_found_with_file_and_line(tmp_path, line, kind):
    (tmp_path / "run.json").write_text("{\n" + line + "\n}\n", encoding="utf-8")
    (finding,) = scan_for_secrets(tmp_path)
    assert (finding.path.name, finding.line, finding.kind) == ("run.json", 2, kind)


def test_ordinary_run_text_is_not_flagged(tmp_path):
    (tmp_path / "run.json").write_text(
        '{"model": "SmolLM2-135M-Instruct", "task": "ask-for-a-skeleton"}\n', encoding="utf-8"
    )
    assert scan_for_secrets(tmp_path) == []


@pytest.mark.parametrize(
    "key",
    [
        # No run of 16 letters or digits: only a pattern that allows `_` and `-` inside the key finds these.
        "sk-proj_Ab3dE-fGh1_iJk2-LmN3_oPq4",
        "sk-svcacct-X9y8_Z7w6-V5u4_T3s2-R1q0",
    ],
)
def test_openai_keys_with_underscores_and_dashes_are_found(tmp_path, key):
    (tmp_path / "run.json").write_text('{\n"note": "' + key + '"\n}\n', encoding="utf-8")
    findings = scan_for_secrets(tmp_path)
    assert {(finding.path.name, finding.line) for finding in findings} == {("run.json", 2)}
