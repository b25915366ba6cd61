import json

import pytest

from labkit.boundary import connect
from labkit.recording import load_run
from labkit.secret_scan import SecretFound
from tests.fake_endpoint import FakeEndpoint

KEY = "s" + "k-test0123456789abcdefghijklmnop"  # assembled, so no key-shaped string sits in the repo


@pytest.fixture
def course_root(tmp_path, monkeypatch):
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "inputs.json").write_text('["Where is my order?"]\n', encoding="utf-8")
    monkeypatch.setenv("LABKIT_ROOT", str(tmp_path))
    return tmp_path


def _record(monkeypatch, endpoint, questions, run_id="06-demo"):
    monkeypatch.setenv("LABKIT_MODE", "record")
    monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
    monkeypatch.setenv("LABKIT_MODEL", "SmolLM2-135M-Instruct")
    monkeypatch.setenv("LABKIT_API_KEY", KEY)
    boundary = connect("06-demo", lesson="06", settings={"temperature": 0, "seed": 1})
    replies = [
        boundary.chat([{"role": "user", "content": q}], question=q).choices[0].message.content for q in questions
    ]
    path = boundary.save(
        description="Echo replies from a test endpoint.", fixtures=["fixtures/inputs.json"], run_id=run_id
    )
    return path, replies


def test_record_mode_captures_each_exchange_with_its_measurements(course_root, monkeypatch):
    with FakeEndpoint() as endpoint:
        path, replies = _record(monkeypatch, endpoint, ["Where is my order?", "Cancel it"])
    run = load_run(path.parent, root=course_root)
    assert run.origin == "captured" and run.model.id == "SmolLM2-135M-Instruct"
    assert run.model.endpoint_kind == "local-llama-cpp"
    assert [b.question for b in run.bindings] == ["Where is my order?", "Cancel it"]
    first = run.bindings[0]
    assert first.usage.total_tokens == 13 and first.latency_s >= 0 and first.recorded_at.endswith("Z")
    assert first.request["temperature"] == 0 and first.retries == 0
    assert replies == ["echo: Where is my order?", "echo: Cancel it"]


def test_recorded_run_never_holds_the_api_key_or_auth_header(course_root, monkeypatch):
    with FakeEndpoint() as endpoint:
        path, _ = _record(monkeypatch, endpoint, ["Where is my order?"])
        assert any(KEY in h.get("authorization", "") for h in endpoint.headers_seen)  # the key was really sent
    text = path.read_text(encoding="utf-8")
    assert KEY not in text and "Bearer" not in text and "authorization" not in text.lower()


def test_retry_after_rate_limit_is_recorded_with_the_failed_attempt(course_root, monkeypatch):
    with FakeEndpoint(fail_first=1) as endpoint:
        path, replies = _record(monkeypatch, endpoint, ["Where is my order?"])
    binding = load_run(path.parent, root=course_root).bindings[0]
    assert replies == ["echo: Where is my order?"]
    assert binding.retries == 1 and binding.transport_errors[0].error.startswith("HTTP 429")


def test_captured_run_replays_offline_with_the_same_replies(course_root, monkeypatch):
    with FakeEndpoint() as endpoint:
        _path, recorded = _record(monkeypatch, endpoint, ["Where is my order?", "Cancel it"], run_id="06-echo")
    monkeypatch.setenv("LABKIT_MODE", "replay")
    monkeypatch.delenv("LABKIT_API_KEY")
    boundary = connect("06-echo", lesson="06", settings={"temperature": 0, "seed": 1})
    assert boundary.origin == "captured"
    replayed = [
        boundary.chat([{"role": "user", "content": q}]).choices[0].message.content
        for q in ["Cancel it", "Where is my order?"]
    ]
    assert replayed == list(reversed(recorded))


def test_request_that_failed_every_attempt_is_kept_without_a_reply(course_root, monkeypatch):
    with FakeEndpoint(fail_first=99) as endpoint:
        monkeypatch.setenv("LABKIT_MODE", "record")
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "m")
        boundary = connect("06-demo", lesson="06")
        import openai

        with pytest.raises(openai.RateLimitError):
            boundary.chat([{"role": "user", "content": "hi"}])
        path = boundary.save(description="All attempts failed.", fixtures=[], run_id="06-failed")
    data = json.loads(path.read_text(encoding="utf-8"))
    (binding,) = data["bindings"]
    assert binding["status_code"] == 429 and binding["retries"] == 2 and len(binding["transport_errors"]) == 3


def test_record_mode_binds_the_request_as_sent_with_its_query_and_response_id(course_root, monkeypatch):
    schema = {"type": "json_object", "schema": {"properties": {"route": {}, "id": {}}}}
    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_MODE", "record")
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "m")
        boundary = connect("06-demo", lesson="06", settings={"response_format": schema})
        boundary.client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], response_format=schema, extra_query={"v": "1"}
        )
        path = boundary.save(description="One exchange.", fixtures=[], run_id="06-sent")
    binding = load_run(path.parent, root=course_root).bindings[0]
    assert list(binding.request["response_format"]["schema"]["properties"]) == ["route", "id"]
    assert binding.path.endswith("/chat/completions") and binding.query == [("v", "1")]
    assert binding.response["id"] == "fake-1" and binding.response_sha256


def test_streaming_is_refused_clearly_in_record_mode_before_anything_is_sent(course_root, monkeypatch):
    from labkit.recording import StreamingNotRecorded

    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_MODE", "record")
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "m")
        boundary = connect("06-demo", lesson="06")
        with pytest.raises(StreamingNotRecorded, match=r"streaming is not recorded; call without stream=True"):
            boundary.chat([{"role": "user", "content": "hi"}], stream=True)
        assert endpoint.attempts == 0


def test_streaming_is_refused_clearly_in_live_mode(monkeypatch):
    from labkit.recording import StreamingNotRecorded

    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_MODE", "live")
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "m")
        boundary = connect("06-demo", lesson="06")
        with pytest.raises(StreamingNotRecorded, match=r"streaming is not recorded; call without stream=True"):
            boundary.chat([{"role": "user", "content": "hi"}], stream=True)
        assert boundary.chat([{"role": "user", "content": "hi"}]).choices[0].message.content == "echo: hi"
        assert endpoint.attempts == 1


def test_a_reply_that_echoes_the_authorization_header_is_refused_and_nothing_is_written(course_root, monkeypatch):
    with FakeEndpoint(echo_headers=True) as endpoint, pytest.raises(SecretFound) as caught:
        _record(monkeypatch, endpoint, ["Where is my order?"])
    message = str(caught.value)
    assert "binding 1 (Where is my order?)" in message and "Bearer token" in message and "OpenAI-style key" in message
    assert KEY not in message
    assert not (course_root / "recorded_runs" / "06-demo").exists()


# --- what a broken or hostile endpoint sends is refused, and kept only as a transport error -----------------


def _recording(monkeypatch, base_url, mode="record"):
    monkeypatch.setenv("LABKIT_MODE", mode)
    monkeypatch.setenv("LABKIT_BASE_URL", base_url)
    monkeypatch.setenv("LABKIT_MODEL", "m")
    return connect("06-demo", lesson="06")


@pytest.mark.parametrize("mode", ["record", "live"])
def test_a_reply_of_truncated_json_is_refused_naming_the_endpoint_and_what_was_wrong(course_root, monkeypatch, mode):
    from labkit.boundary import EndpointUnreachable
    from labkit.capture import UnusableReply

    with FakeEndpoint(truncate=True) as endpoint:
        boundary = _recording(monkeypatch, endpoint.url_with_password(), mode)
        with pytest.raises(UnusableReply) as caught:
            boundary.chat([{"role": "user", "content": "hi"}])
        assert endpoint.attempts == 1  # a malformed reply is not asked for again
    assert isinstance(caught.value, EndpointUnreachable) and isinstance(caught.value, ConnectionError)
    message = str(caught.value)
    assert message.startswith(
        f"model endpoint {endpoint.url_with_password(password='***')}: its HTTP 200 reply to POST "
        "/v1/chat/completions is not a chat completion (malformed JSON at line 1, column "
    )
    assert message.endswith("; check that LABKIT_BASE_URL points at an OpenAI-compatible endpoint, and its log")


def test_a_refused_reply_is_kept_in_the_run_as_a_transport_error_without_a_response(course_root, monkeypatch):
    from labkit.capture import UnusableReply

    with FakeEndpoint(truncate=True) as endpoint:
        boundary = _recording(monkeypatch, endpoint.base_url)
        with pytest.raises(UnusableReply):
            boundary.chat([{"role": "user", "content": "hi"}])
        path = boundary.save(description="A truncated reply.", fixtures=[], run_id="06-truncated")
    (binding,) = load_run(path.parent, root=course_root).bindings
    assert binding.response is None and binding.status_code == 0 and binding.retries == 0
    assert binding.transport_errors[0].error.startswith(f"UnusableReply: model endpoint {endpoint.base_url}: its HTTP")


def test_a_reply_over_the_limit_of_one_reply_is_refused_and_nothing_of_it_is_written(course_root, monkeypatch):
    from labkit.capture import MAX_REPLY_BYTES, UnusableReply

    assert MAX_REPLY_BYTES == 1_000_000
    with FakeEndpoint(pad_reply=MAX_REPLY_BYTES + 1) as endpoint:
        boundary = _recording(monkeypatch, endpoint.base_url)
        with pytest.raises(UnusableReply) as caught:
            boundary.chat([{"role": "user", "content": "hi"}])
        path = boundary.save(description="A huge reply.", fixtures=[], run_id="06-huge")
    assert str(caught.value) == (
        f"model endpoint {endpoint.base_url}: its reply to POST /v1/chat/completions is over the 1,000,000-byte "
        "limit of one reply; nothing of it was kept; ask for a shorter reply (max_tokens) or check what the endpoint "
        "sends"
    )
    assert path.stat().st_size < 10_000 and load_run(path.parent, root=course_root).bindings[0].response is None


def test_a_run_never_grows_past_the_run_limit(course_root, monkeypatch):
    from labkit import capture

    monkeypatch.setattr(capture, "MAX_RUN_BYTES", 200_000)  # room for two replies of 40 kB besides the headroom
    with FakeEndpoint(pad_reply=40_000) as endpoint:
        boundary = _recording(monkeypatch, endpoint.base_url)
        boundary.chat([{"role": "user", "content": "one"}])
        boundary.chat([{"role": "user", "content": "two"}])
        with pytest.raises(capture.UnusableReply) as caught:
            boundary.chat([{"role": "user", "content": "three"}])
        path = boundary.save(description="Replies that outgrow a run.", fixtures=[], run_id="06-outgrown")
    assert f"model endpoint {endpoint.base_url}: its replies would make the run larger than the 200,000-byte " in str(
        caught.value
    )
    run = load_run(path.parent, root=course_root)
    assert [b.response is not None for b in run.bindings] == [True, True, False]
    assert path.stat().st_size <= 200_000


def test_the_saved_run_names_the_endpoint_with_its_password_hidden(course_root, monkeypatch):
    import openai

    with FakeEndpoint(fail_first=99, fail_message="no upstream at {url}") as endpoint:
        boundary = _recording(monkeypatch, endpoint.url_with_password())
        with pytest.raises(openai.RateLimitError):
            boundary.chat([{"role": "user", "content": "hi"}])
        path = boundary.save(description="Every attempt refused.", fixtures=[], run_id="06-refused")
    text = path.read_text(encoding="utf-8")
    assert "hunter2" not in text
    assert f"no upstream at {endpoint.url_with_password(password='***')}" in text


def test_a_deadline_that_passed_is_kept_in_the_run_naming_the_endpoint_with_its_password_hidden(
    course_root, monkeypatch
):
    from labkit.boundary import EndpointUnreachable

    monkeypatch.setenv("LABKIT_REQUEST_DEADLINE", "0.3")
    with FakeEndpoint(silent=True) as endpoint:
        boundary = _recording(monkeypatch, endpoint.url_with_password())
        with pytest.raises(EndpointUnreachable):
            boundary.chat([{"role": "user", "content": "hi"}])
        path = boundary.save(description="A silent endpoint.", fixtures=[], run_id="06-silent")
    (binding,) = load_run(path.parent, root=course_root).bindings
    assert [f.error for f in binding.transport_errors] == [
        f"RequestDeadlineExceeded: no complete reply from {endpoint.url_with_password(password='***')} within the "
        "0.3 s deadline of one request (LABKIT_REQUEST_DEADLINE)"
    ] * 3
    assert "hunter2" not in path.read_text(encoding="utf-8")


def test_a_run_over_the_run_limit_is_never_written(course_root, monkeypatch):
    from labkit import recording
    from labkit.errors import RecordedRunError

    with FakeEndpoint(pad_reply=40_000) as endpoint:
        boundary = _recording(monkeypatch, endpoint.base_url)
        boundary.chat([{"role": "user", "content": "one"}])
        monkeypatch.setattr(recording, "MAX_RUN_BYTES", 30_000)  # the run, built, is over it
        with pytest.raises(RecordedRunError) as caught:
            boundary.save(description="Too large a run.", fixtures=[], run_id="06-large")
    assert str(caught.value).startswith("run '06-large' was not saved: it would be ")
    assert "bytes, over the 30,000-byte limit of a run; record fewer or shorter replies" in str(caught.value)
    assert not (course_root / "recorded_runs" / "06-large").exists()
