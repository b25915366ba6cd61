import pytest

from labkit.boundary import BoundaryConfigError, Endpoint, connect, current_mode, endpoint_from_env


def test_replay_is_the_default_mode(monkeypatch):
    monkeypatch.delenv("LABKIT_MODE", raising=False)
    assert current_mode() == "replay"


def test_unknown_mode_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setenv("LABKIT_MODE", "offline")
    with pytest.raises(BoundaryConfigError, match="replay, live, record"):
        current_mode()


def test_live_mode_without_an_endpoint_explains_how_to_start_the_local_model(monkeypatch):
    for name in ("LABKIT_BASE_URL", "OPENAI_BASE_URL", "LABKIT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BoundaryConfigError, match="labkit serve"):
        endpoint_from_env()


def test_loopback_endpoint_is_the_local_model_and_others_are_generic(monkeypatch):
    monkeypatch.delenv("LABKIT_ENDPOINT_KIND", raising=False)
    assert Endpoint("http://127.0.0.1:8081/v1", "k", "m").kind == "local-llama-cpp"
    assert Endpoint("https://llm.example.org/v1", "k", "m").kind == "openai-compatible"


def test_saving_outside_record_mode_is_refused(tmp_path, monkeypatch):
    from tests.fake_endpoint import FakeEndpoint

    with FakeEndpoint() as endpoint:
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "m")
        boundary = connect("06-demo", lesson="06", mode="live")
        assert boundary.chat([{"role": "user", "content": "hi"}]).choices[0].message.content == "echo: hi"
        with pytest.raises(BoundaryConfigError, match="record mode"):
            boundary.save(description="x", fixtures=[])


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _unreachable(monkeypatch, base_url):
    """Call ``base_url`` in live mode and return the `EndpointUnreachable` message."""
    from labkit.boundary import EndpointUnreachable

    monkeypatch.setenv("LABKIT_BASE_URL", base_url)
    monkeypatch.setenv("LABKIT_MODEL", "m")
    boundary = connect("06-demo", lesson="06", mode="live")
    with pytest.raises(EndpointUnreachable) as caught:
        boundary.chat([{"role": "user", "content": "hi"}])
    assert isinstance(caught.value, ConnectionError)
    return str(caught.value)


def test_a_closed_endpoint_is_one_error_naming_its_base_url(monkeypatch):
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    message = _unreachable(monkeypatch, base_url)
    assert base_url in message and "cannot connect" in message and "labkit serve" in message
    assert "\n" not in message


def test_record_against_a_closed_endpoint_exits_1_with_one_line_and_writes_nothing(course, monkeypatch, capsys):
    from labkit.cli import main

    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    monkeypatch.setenv("LABKIT_BASE_URL", base_url)
    monkeypatch.setenv("LABKIT_MODEL", "m")
    before = sorted(p.name for p in (course / "recorded_runs").iterdir())
    assert main(["record", "06", "--run-id", "06-closed"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and base_url in err
    assert sorted(p.name for p in (course / "recorded_runs").iterdir()) == before


def test_a_silent_endpoint_times_out_with_the_stated_read_timeout(monkeypatch):
    import socket

    with socket.socket() as server:  # accepts connections, never answers
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        base_url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
        monkeypatch.setenv("LABKIT_READ_TIMEOUT", "0.2")
        message = _unreachable(monkeypatch, base_url)
    assert base_url in message and "read 0.2 s" in message and "LABKIT_READ_TIMEOUT" in message


def test_live_timeouts_default_to_a_few_seconds_to_connect(monkeypatch):
    from labkit.boundary import CONNECT_TIMEOUT_S

    monkeypatch.setenv("LABKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LABKIT_MODEL", "m")
    monkeypatch.delenv("LABKIT_CONNECT_TIMEOUT", raising=False)
    monkeypatch.setenv("LABKIT_READ_TIMEOUT", "7")
    timeout = connect("06-demo", lesson="06", mode="live").client._client.timeout
    assert (timeout.connect, timeout.read) == (CONNECT_TIMEOUT_S, 7.0) and CONNECT_TIMEOUT_S <= 10


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf"])
def test_a_bad_timeout_setting_is_refused(monkeypatch, value):
    monkeypatch.setenv("LABKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LABKIT_MODEL", "m")
    monkeypatch.setenv("LABKIT_CONNECT_TIMEOUT", value)
    with pytest.raises(BoundaryConfigError, match="LABKIT_CONNECT_TIMEOUT"):
        connect("06-demo", lesson="06", mode="live")


# --- a password in the base URL is never shown -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://learner:hunter2@127.0.0.1:9/v1", "http://learner:***@127.0.0.1:9/v1"),
        ("see https://a:b@c:d@host/v1?x=1 now", "see https://a:***@host/v1?x=1 now"),  # the password holds an @
        ("'https://ghp-token@github.example/v1'", "'https://***@github.example/v1'"),  # a bare user name is a token
        ("http://host/v1 mailed to me@example.org", "http://host/v1 mailed to me@example.org"),
        ("http://learner:***@host/v1", "http://learner:***@host/v1"),
    ],
)
def test_redact_url_hides_the_password_of_every_url_in_a_text(text, shown):
    from labkit.boundary import redact_url

    assert redact_url(text) == shown


def test_an_unreachable_endpoint_with_a_password_is_named_with_the_password_hidden(monkeypatch):
    port = _closed_port()
    message = _unreachable(monkeypatch, f"http://learner:hunter2@127.0.0.1:{port}/v1")
    assert f"model endpoint http://learner:***@127.0.0.1:{port}/v1: cannot connect" in message
    assert "hunter2" not in message


def test_record_against_an_endpoint_with_a_password_never_prints_it(course, monkeypatch, capsys):
    from labkit.cli import main

    port = _closed_port()
    monkeypatch.setenv("LABKIT_BASE_URL", f"http://learner:hunter2@127.0.0.1:{port}/v1")
    monkeypatch.setenv("LABKIT_MODEL", "m")
    assert main(["record", "06", "--run-id", "06-closed"]) == 1
    captured = capsys.readouterr()
    assert f"http://learner:***@127.0.0.1:{port}/v1" in captured.err
    assert "hunter2" not in captured.err + captured.out


def test_the_password_leaves_the_url_for_a_basic_auth_header_and_no_log_line_holds_it(monkeypatch, caplog):
    import base64
    import logging

    from tests.fake_endpoint import FakeEndpoint

    with FakeEndpoint() as endpoint, caplog.at_level(logging.DEBUG):
        monkeypatch.setenv("LABKIT_BASE_URL", endpoint.url_with_password())
        monkeypatch.setenv("LABKIT_MODEL", "m")
        boundary = connect("06-demo", lesson="06", mode="live")
        assert boundary.chat([{"role": "user", "content": "hi"}]).choices[0].message.content == "echo: hi"
    [headers] = endpoint.headers_seen
    assert headers["authorization"] == "Basic " + base64.b64encode(b"learner:hunter2").decode()
    assert any("HTTP Request: POST" in record.getMessage() for record in caplog.records)
    assert "hunter2" not in caplog.text and "hunter2" not in repr(boundary.endpoint)


# --- a deadline for each whole request ------------------------------------------------------------------


def test_the_request_deadline_defaults_to_two_minutes_and_is_read_from_the_environment(monkeypatch):
    from labkit.boundary import REQUEST_DEADLINE_S

    monkeypatch.setenv("LABKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LABKIT_MODEL", "m")
    monkeypatch.delenv("LABKIT_REQUEST_DEADLINE", raising=False)
    assert REQUEST_DEADLINE_S == 120
    assert connect("06-demo", lesson="06", mode="live").client._client._transport.inner.deadline_s == 120
    monkeypatch.setenv("LABKIT_REQUEST_DEADLINE", "7.5")
    assert connect("06-demo", lesson="06", mode="record").client._client._transport.inner.deadline_s == 7.5
    monkeypatch.setenv("LABKIT_REQUEST_DEADLINE", "0")
    with pytest.raises(BoundaryConfigError, match="LABKIT_REQUEST_DEADLINE='0' is not a number of seconds"):
        connect("06-demo", lesson="06", mode="live")


@pytest.mark.parametrize("behaviour", ["silent", "drip"])
def test_a_silent_or_dripping_endpoint_ends_at_the_deadline_of_each_attempt_naming_the_endpoint(monkeypatch, behaviour):
    from tests.fake_endpoint import FakeEndpoint

    # A read timeout alone would wait 30 s for the silent endpoint, and forever for the drip (a byte every 0.2 s).
    monkeypatch.setenv("LABKIT_READ_TIMEOUT", "30")
    monkeypatch.setenv("LABKIT_REQUEST_DEADLINE", "0.6")
    hostile = {"silent": {"silent": True}, "drip": {"drip_every": 0.2}}[behaviour]
    with FakeEndpoint(**hostile) as endpoint:
        message = _unreachable(monkeypatch, endpoint.url_with_password())
        attempts = endpoint.attempts
    shown = endpoint.url_with_password(password="***")
    assert message == (
        f"model endpoint {shown}: no complete reply within the 0.6 s deadline of each request (3 attempts): it "
        "answers too slowly, a little at a time, or not at all; check that it is serving, or raise "
        "LABKIT_REQUEST_DEADLINE for a slow model"
    )
    assert attempts == 3
