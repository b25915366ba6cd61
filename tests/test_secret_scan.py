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
