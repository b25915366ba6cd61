"""The secret scan finds each kind of credential, in JSON values, base64 and non-UTF-8 files.

Every test secret is assembled at run time from pieces, so no key-shaped string sits in the repository.
"""

import base64
import json
import string

import pytest

from labkit.secret_scan import SecretFound, refuse_secrets, scan_file, scan_for_secrets, scan_value, secret_kinds


def _body(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    """Return ``n`` characters that look random enough for a detector (not a real key)."""
    return "".join(alphabet[(i * 7 + 3) % len(alphabet)] for i in range(n))


def _jwt() -> str:
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")  # noqa: E731
    return ".".join([part({"alg": "HS256", "typ": "JWT"}), part({"sub": "learner"}), _body(43)])


KINDS = {
    "GitHub token": ("gh" + "p_" + _body(36), "GitHub Token"),
    "PEM private key": ("-----BEGIN " + "RSA PRIVATE KEY-----\n" + _body(64), "Private Key"),
    "JWT": (_jwt(), "JSON Web Token"),
    "Slack token": ("xo" + "xb-" + "123456789012-1234567890123-" + _body(24).lower(), "Slack Token"),
    "Google API key": ("AI" + "za" + _body(35), "Google API key"),
    "Stripe key": ("sk" + "_live_" + _body(24), "Stripe Access Key"),
    "AWS access key": ("AK" + "IA" + _body(16, string.ascii_uppercase + string.digits), "AWS Access Key"),
    "AWS secret key": ("aws_secret_access_key = " + _body(40), "AWS secret access key"),
    "OpenAI key": ("s" + "k-" + _body(40), "OpenAI-style key"),
    "OpenAI project key": ("s" + "k-proj-" + _body(20) + "_" + _body(20) + "-" + _body(8), "OpenAI-style key"),
    "Anthropic key": ("s" + "k-ant-api03-" + _body(30) + "-" + _body(10), "OpenAI-style key"),
    "Hugging Face token": ("h" + "f_" + _body(34), "Hugging Face token"),
    "GitHub fine-grained token": ("github" + "_pat_" + _body(22) + "_" + _body(59), "GitHub fine-grained token"),
    "npm token": ("np" + "m_" + _body(36), "npm access token"),
    "Bearer token": ("Authorization: Bear" + "er " + _body(30), "Bearer token"),
    "password in a URL": ("https://learner:" + "hunter2" + _body(6) + "@example.com/v1", "Basic Auth Credentials"),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_of_secret_is_found(name):
    secret, kind = KINDS[name]
    assert kind in secret_kinds(f"the reply said: {secret} and more")


@pytest.mark.parametrize("name", ["OpenAI key", "GitHub token", "AWS access key"])
def test_a_key_inside_base64_is_found(name):
    secret, kind = KINDS[name]
    wrapped = base64.b64encode(f"token={secret}".encode()).decode()
    assert f"{kind} (inside base64)" in secret_kinds(f"data: {wrapped}")


def test_a_key_written_with_a_json_unicode_escape_is_found_in_a_run_file(tmp_path):
    secret = KINDS["OpenAI key"][0]
    escaped = "\\u0073" + secret[1:]  # the raw text holds no "sk-": only the decoded JSON value does
    (tmp_path / "run.json").write_text('{"bindings": [{"reply": "' + escaped + '"}]}\n', encoding="utf-8")
    assert "sk-" not in (tmp_path / "run.json").read_text(encoding="utf-8")
    findings = scan_for_secrets(tmp_path)
    assert [(f.kind, f.where) for f in findings] == [("OpenAI-style key", "bindings[0].reply")]


def test_a_file_that_is_not_utf8_is_scanned_byte_by_byte(tmp_path):
    secret = KINDS["Hugging Face token"][0]
    (tmp_path / "notes.txt").write_bytes(b"\xff\xfe caf\xe9 " + secret.encode("ascii") + b"\n")
    (tmp_path / "utf16.txt").write_bytes(("key " + KINDS["GitHub token"][0]).encode("utf-16"))
    kinds = {(f.path.name, f.kind) for f in scan_for_secrets(tmp_path)}
    assert kinds == {("notes.txt", "Hugging Face token"), ("utf16.txt", "GitHub Token")}


def test_a_finding_names_file_and_line(tmp_path):
    (tmp_path / "run.txt").write_text("first\nkey " + KINDS["Stripe key"][0] + "\n", encoding="utf-8")
    (finding,) = scan_file(tmp_path / "run.txt")
    assert (finding.path.name, finding.line, finding.kind) == ("run.txt", 2, "Stripe Access Key")


def test_a_header_field_in_a_run_is_found():
    assert "authorization or api-key header" in secret_kinds('{"Authorization": "x"}')
    assert "authorization or api-key header" in secret_kinds('{"api_key": "x"}')


def test_ordinary_run_text_is_not_flagged(tmp_path):
    (tmp_path / "run.json").write_text(
        '{"model": "SmolLM2-135M-Instruct", "task": "ask-for-a-skeleton", "key": "'
        + "ab" * 32
        + '", "note": "ask a skeptic"}\n',
        encoding="utf-8",
    )
    assert scan_for_secrets(tmp_path) == []


def test_a_run_with_a_secret_is_refused_naming_binding_and_kind_but_not_the_secret():
    secret = KINDS["GitHub token"][0]
    run = {
        "run_id": "demo",
        "bindings": [
            {"key": "a" * 64, "question": "first?", "response": {"content": "fine"}},
            {"key": "b" * 64, "question": "second?", "response": {"content": f"here: {secret}"}},
        ],
    }
    with pytest.raises(SecretFound) as caught:
        refuse_secrets(run, run_id="demo")
    message = str(caught.value)
    assert "binding 2 (second?) response.content: GitHub Token" in message
    assert secret not in message and secret[:10] not in message
    refuse_secrets({"run_id": "demo", "bindings": [run["bindings"][0]]}, run_id="demo")


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
    # Found on the line as written (line 2) and again in the decoded JSON value (line 0): both name this file.
    assert ("run.json", 2) in {(finding.path.name, finding.line) for finding in findings}
    assert {finding.path.name for finding in findings} == {"run.json"}


def _b64(text: str, *, encode=base64.b64encode) -> str:
    return encode(text.encode()).decode()


@pytest.mark.parametrize("tail", ["", "a", "ab"])
def test_a_key_in_base64_without_its_padding_is_found(tail):
    wrapped = _b64(f"key={KINDS['OpenAI key'][0]}{tail}").rstrip("=")
    assert "OpenAI-style key (inside base64)" in secret_kinds(f"data: {wrapped}")


def test_base64_without_padding_is_tried_at_every_length():
    lengths = {len(_b64(f"key={KINDS['OpenAI key'][0]}{tail}").rstrip("=")) % 4 for tail in ["", "a", "ab"]}
    assert lengths == {0, 2, 3}  # the cases of the test above: no, one and two padding characters missing


def test_a_key_in_url_safe_base64_is_found():
    wrapped = _b64(f"key={KINDS['OpenAI key'][0]} aa?", encode=base64.urlsafe_b64encode).rstrip("=")
    assert "_" in wrapped or "-" in wrapped  # not standard base64: only the url-safe alphabet reads it
    assert secret_kinds(f"data: {wrapped}") == ["OpenAI-style key (inside base64)"]


def test_a_key_in_base64_of_several_lines_is_found():
    wrapped = _b64(f"user: learner\ntoken: {KINDS['GitHub token'][0]}\n")
    assert secret_kinds(f"data: {wrapped}") == ["GitHub Token (inside base64)"]


def test_a_key_in_the_second_of_two_base64_runs_is_found():
    harmless = _b64("nothing to see in this one, only prose")
    assert secret_kinds(harmless) == []
    text = f"first: {harmless} second: {_b64('token=' + KINDS['OpenAI key'][0])}"
    assert secret_kinds(text) == ["OpenAI-style key (inside base64)"]


def test_base64_is_decoded_two_levels_deep_and_no_further():
    once = _b64(f"token={KINDS['OpenAI key'][0]}")
    twice = _b64(f"inner={once}")
    thrice = _b64(f"outer={twice}")
    assert secret_kinds(twice) == ["OpenAI-style key (inside base64) (inside base64)"]
    assert secret_kinds(thrice) == []  # the bound keeps the scan's work finite on nested encodings


def test_a_key_right_after_a_non_ascii_character_is_found_in_a_json_value():
    # Read with \\u escapes (ensure_ascii) the key would follow a letter ("\\u00ab"), and the pattern would miss it.
    reply = "la clé «" + KINDS["OpenAI key"][0] + "»"
    assert scan_value({"reply": reply}) == [("reply", "OpenAI-style key")]


def test_a_key_in_a_list_of_strings_is_found_at_its_index():
    value = {"messages": ["hello", KINDS["OpenAI key"][0]]}
    assert scan_value(value) == [("messages[1]", "OpenAI-style key")]
    assert scan_value(["fine", KINDS["GitHub token"][0]]) == [("[1]", "GitHub Token")]


def test_a_key_opening_a_utf16_file_without_byte_order_mark_is_found(tmp_path):
    raw = (KINDS["OpenAI key"][0] + "\nclé\n").encode("utf-16-le")
    (tmp_path / "notes.txt").write_bytes(raw)
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    assert [f.kind for f in scan_for_secrets(tmp_path)] == ["OpenAI-style key"]


def test_a_finding_in_a_decoded_json_value_has_no_line_and_names_its_place(tmp_path):
    escaped = "\\u0073" + KINDS["OpenAI key"][0][1:]
    (tmp_path / "run.json").write_text('{"bindings": [{"reply": "' + escaped + '"}]}\n', encoding="utf-8")
    (finding,) = scan_file(tmp_path / "run.json")
    assert finding.line == 0
    assert finding.place.endswith("run.json at bindings[0].reply")


def _refusal(run: dict) -> str:
    with pytest.raises(SecretFound) as caught:
        refuse_secrets(run, run_id="demo")
    return str(caught.value)


def test_a_refusal_says_what_to_do():
    message = _refusal({"bindings": [{"key": "a" * 64, "response": KINDS["OpenAI key"][0]}]})
    assert message.startswith("run 'demo' was not saved: it holds a secret (")
    assert "). An endpoint echoed a key or a prompt carries one: " in message
    assert "remove it from the lesson or endpoint, rotate the key, and record again." in message


def test_a_binding_without_a_question_is_named_by_the_start_of_its_key():
    secret = KINDS["GitHub token"][0]
    message = _refusal(
        {"bindings": [{"key": "0123456789abcdef" * 4, "response": secret}, {"question": "q?", "note": secret}]}
    )
    assert "(binding 1 (key 0123456789ab) response: GitHub Token; binding 2 (q?) note: GitHub Token)" in message


def test_a_binding_with_neither_question_nor_key_or_that_is_itself_a_secret_is_named():
    secret = KINDS["OpenAI key"][0]
    message = _refusal({"bindings": [{"response": secret}, secret]})
    assert "binding 1 (no question or key) response: OpenAI-style key" in message
    assert "binding 2 (no question or key) itself: OpenAI-style key" in message


def test_a_secret_outside_the_bindings_is_named_by_its_place():
    secret = KINDS["OpenAI key"][0]
    message = _refusal({"bindings": [], "note": secret, "bindings[0]": secret, "": secret})
    assert "note: OpenAI-style key" in message
    assert "bindings[0]: OpenAI-style key" in message  # looks like a binding's place, but there is no binding 1
    assert "run: OpenAI-style key" in message  # a field with an empty name: the run itself


def test_a_key_in_url_safe_base64_is_found_even_when_a_standard_reading_also_gives_text():
    # Read as standard base64 (the "_" skipped, padding made up) this run also decodes to printable text, without
    # the key; the scan must not settle for that reading: padded as written it is not standard base64 at all.
    plain = b"a key?u" + b"AC" + b"fec24t00sb10ugfhw6x3no2y4xtuyxyw"
    wrapped = base64.urlsafe_b64encode(plain).decode().rstrip("=")
    assert wrapped.count("_") == 1 and len(wrapped) % 4 == 3
    assert secret_kinds(f"data: {wrapped}") == ["Twilio API Key (inside base64)"]


# --- token formats detect-secrets 1.5 misses: labkit's plugins, on its own base class ---------------------

NEW_FORMATS = ["GitHub fine-grained token", "npm token"]


@pytest.fixture
def detect_secrets_alone():
    """Scan a line with detect-secrets' own machinery and only the plugins named (its loader caches; cleared)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    def scan(line, plugins):
        get_mapping_from_secret_type_to_class.cache_clear()
        with transient_settings({"plugins_used": plugins}):
            return sorted({secret.type for secret in scan_line(line)})

    yield scan
    get_mapping_from_secret_type_to_class.cache_clear()


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_detect_secrets_own_plugins_miss_the_formats_labkit_adds(name, detect_secrets_alone):
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    from labkit.secret_scan import _SKIPPED

    mapping = get_mapping_from_secret_type_to_class()
    shipped = [{"name": cls.__name__} for kind, cls in mapping.items() if kind not in _SKIPPED]
    assert len(shipped) > 20 and detect_secrets_alone(f"token = {KINDS[name][0]}", shipped) == []


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_detect_secrets_loads_labkits_plugin_file_as_a_custom_plugin(name, detect_secrets_alone):
    from labkit import secret_plugins
    from labkit.paths import project_root

    path = project_root() / "labkit" / "secret_plugins.py"
    plugin = next(cls for cls in secret_plugins.OWN_PLUGINS if cls.secret_type == KINDS[name][1])
    found = detect_secrets_alone(f"token = {KINDS[name][0]}", [{"name": plugin.__name__, "path": f"file://{path}"}])
    assert found == [KINDS[name][1]]


def test_the_fine_grained_format_needs_its_exact_lengths():
    token = KINDS["GitHub fine-grained token"][0]
    assert "GitHub fine-grained token" in secret_kinds(f"GITHUB_TOKEN={token}")
    prefix, first, second = "github_pat_", token[11:33], token[34:]
    for wrong in (prefix + first[1:] + "_" + second, prefix + first + "_" + second[1:], prefix + first + second):
        assert "GitHub fine-grained token" not in secret_kinds(f"GITHUB_TOKEN={wrong}")


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_record_refuses_a_run_whose_reply_holds_the_token_and_verify_finds_it(name, course, monkeypatch, capsys):
    from labkit.cli import main
    from labkit.paths import recorded_runs_dir
    from tests.fake_endpoint import FakeEndpoint

    secret = KINDS[name][0]
    with FakeEndpoint(answer=lambda body: '{"route": "sales", "note": "use ' + secret + '"}') as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "m")
        assert main(["record", "06", "--run-id", "06-leaky"]) == 1
    err = capsys.readouterr().err
    assert "run '06-leaky' was not saved: it holds a secret (" in err and KINDS[name][1] in err and secret not in err
    assert not (recorded_runs_dir() / "06-leaky").exists()

    leaked = recorded_runs_dir() / "06-routing-smollm2" / "notes.txt"
    leaked.write_text(f"the endpoint said: {secret}\n", encoding="utf-8")
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert (
        f"SECRET: recorded_runs/06-routing-smollm2/notes.txt:1: {KINDS[name][1]}; remove it and rotate the key" in out
    )


def test_the_scan_refuses_a_run_file_nested_too_deeply_with_the_loaders_message(tmp_path):
    from labkit.errors import InvalidJSON
    from labkit.recording import load_run

    folder = tmp_path / "06-deep"
    folder.mkdir()
    (folder / "run.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InvalidJSON) as loaded:
        load_run(folder)
    with pytest.raises(InvalidJSON) as scanned:
        scan_for_secrets(tmp_path)
    assert str(scanned.value) == str(loaded.value) == f"{folder / 'run.json'}: JSON nested too deeply to read"


def test_a_value_nested_as_deep_as_the_loader_reads_is_scanned_to_its_bottom(tmp_path):
    from labkit.errors import InvalidJSON

    secret = "\\u0073" + KINDS["OpenAI key"][0][1:]  # escaped: found only in the decoded value

    def scan(depth):
        (tmp_path / "run.json").write_text('{"a": ' * depth + '"' + secret + '"' + "}" * depth, encoding="utf-8")
        try:
            return [f.kind for f in scan_for_secrets(tmp_path)]
        except InvalidJSON:  # deeper than the loader reads
            return None

    read, refused = 1, 100_000
    while read + 1 < refused:  # the deepest nesting the loader reads, as the scan calls it
        middle = (read + refused) // 2
        read, refused = (read, middle) if scan(middle) is None else (middle, refused)
    assert scan(read) == ["OpenAI-style key"] and scan(refused) is None
