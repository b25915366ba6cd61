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
