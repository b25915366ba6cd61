"""The replay and record transports are of the HTTP library the pinned `openai` client uses (httpx2).

So a transport failure reaches lesson code as the exception the SDK documents:
``openai.APIConnectionError`` for a refused connection, ``openai.APITimeoutError``
for a timeout, never a foreign library's exception.
"""

from __future__ import annotations

import httpx2
import openai
import pytest

from labkit.capture import RecordingTransport
from labkit.recording import Binding, TransportFailure
from labkit.replay import BindingStore, ReplayTransport, replay_client

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _client(transport: httpx2.BaseTransport) -> openai.OpenAI:
    return openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="unused",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def _failing(exc_type: type[httpx2.TransportError]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise exc_type("simulated", request=request)

    return httpx2.MockTransport(handler)


def test_the_transports_are_httpx2_transports():
    assert issubclass(ReplayTransport, httpx2.BaseTransport)
    assert issubclass(RecordingTransport, httpx2.BaseTransport)
    assert isinstance(replay_client(BindingStore([]))._client, httpx2.Client)


def test_a_refused_connection_while_recording_reaches_the_lesson_as_api_connection_error():
    recorder = RecordingTransport(_failing(httpx2.ConnectError))
    with pytest.raises(openai.APIConnectionError) as caught:
        _client(recorder).chat.completions.create(**REQUEST)
    assert not isinstance(caught.value, openai.APITimeoutError)
    [failed] = recorder.failed()
    assert failed.transport_errors[0].error.startswith("ConnectError")


def test_a_timeout_while_recording_reaches_the_lesson_as_api_timeout_error():
    recorder = RecordingTransport(_failing(httpx2.ReadTimeout))
    with pytest.raises(openai.APITimeoutError):
        _client(recorder).chat.completions.create(**REQUEST)
    assert recorder.failed()[0].transport_errors[0].error.startswith("ReadTimeout")


def test_a_recorded_transport_failure_replays_as_api_connection_error():
    from labkit.replay import as_sent

    failure = TransportFailure(attempt=1, error="ConnectError: refused", at="2026-11-30T00:00:00Z")
    binding = Binding.make(as_sent(REQUEST), None, status_code=0, transport_errors=[failure])
    client = replay_client(BindingStore([binding]))
    with pytest.raises(openai.APIConnectionError, match="Connection error"):
        client.with_options(max_retries=0).chat.completions.create(**REQUEST)
