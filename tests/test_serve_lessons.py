"""The lessons' own recorded requests, sent to the bundled model's server as it is installed now, get valid replies.

Each captured run's requests carry what the lessons send: temperature 0, a seed,
max_tokens and a JSON schema in ``response_format``. Whichever runtime serves the
model (xllamacpp by default, llama-cpp-python as the fallback), a reply that
stopped on its own must be JSON that its request's schema accepts; one cut off by
max_tokens is reported as such, never taken as valid. The small model's answers
may be wrong: that is for the lessons' checks, not for the runtime.
"""

from __future__ import annotations

import json

import pytest

from labkit import explore
from labkit.recording import load_run

#: One captured run per lesson that sends a schema (lesson 03 replays lesson 02's requests).
RUNS = ("01-evaluator-smollm2", "02-rag-smollm2", "04-agent-smollm2", "05-system-smollm2", "06-routing-smollm2")
PER_RUN = 2


def schema_requests() -> list[tuple[str, dict]]:
    picked = []
    for run_id in RUNS:
        with_schema = [b.request for b in load_run(run_id).bindings if "schema" in b.request.get("response_format", {})]
        picked += [(f"{run_id}#{n}", request) for n, request in enumerate(with_schema[:PER_RUN])]
    return picked


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not explore.local_extra_installed():
        pytest.skip("needs the [local] extra (the bundled model and a runtime)")
    from labkit.serve import local_model_server

    with local_model_server(threads=explore.local_threads()) as running:
        yield running


def test_every_lesson_sends_a_schema():
    assert {name.split("#")[0] for name, _ in schema_requests()} == set(RUNS)


@pytest.mark.parametrize(("name", "request_body"), schema_requests(), ids=[n for n, _ in schema_requests()])
def test_a_lessons_recorded_request_gets_a_reply_its_schema_accepts(server, name, request_body):
    import httpx2
    import jsonschema

    body = {**request_body, "model": server.model_id}
    reply = httpx2.post(f"{server.base_url}/chat/completions", json=body, timeout=600, trust_env=False)
    assert reply.status_code == 200, reply.text[:500]
    choice = reply.json()["choices"][0]
    assert reply.json()["usage"]["completion_tokens"] <= body["max_tokens"]
    if choice["finish_reason"] == "length":
        pytest.xfail(f"{name}: the reply used all {body['max_tokens']} tokens before its JSON closed")
    assert choice["finish_reason"] == "stop"
    jsonschema.validate(json.loads(choice["message"]["content"]), body["response_format"]["schema"])
