"""Explore mode: the recorded run answers what it binds; a live model (a fake one here) answers the rest, once."""

from __future__ import annotations

import hashlib
import json

import pytest

from labkit import explore
from labkit.boundary import connect
from labkit.explore import (
    MISSED_FILE,
    ExploreUnavailable,
    answer_origin,
    explore_dir,
    explore_label,
    last_answer,
)
from labkit.paths import recorded_runs_dir
from labkit.rag.trace import QUESTIONS, RUN_AUTHORED, SETTINGS, load_docs_index, trace_request
from labkit.recording import RUN_FILE, load_run
from labkit.refusal import EXPLORE_HINT
from labkit.widgets import static_html
from tests.fake_endpoint import FakeEndpoint

ANSWERED = QUESTIONS["answered"]
#: A changed question whose query vector is saved, so retrieval works and only the model call is new.
REWORDED = ANSWERED.replace("parse", "read")
LABEL = "captured now from fake-model, your change: not part of the course's recorded runs"


def json_reply(body):
    """Answer as the docs app's reply contract asks, citing the first passage sent (else echo the message)."""
    if len(body["messages"]) < 2:
        return "echo: " + body["messages"][-1]["content"]
    content = json.loads(body["messages"][1]["content"])
    cited = content["passages"][0]["source_id"]
    return json.dumps({"status": "answered", "answer": "Use fromisoformat.", "source_ids": [cited]})


@pytest.fixture
def endpoint(monkeypatch):
    with FakeEndpoint(answer=json_reply) as fake:
        monkeypatch.setenv("LABKIT_MODE", "explore")
        monkeypatch.setenv("LABKIT_BASE_URL", fake.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        yield fake


@pytest.fixture(scope="module")
def index():
    return load_docs_index()


def tree_sha256(folder):
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_a_recorded_request_replays_with_no_call_to_the_endpoint(endpoint, index, monkeypatch):
    boundary = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)
    explored = trace_request(ANSWERED, index, boundary)
    monkeypatch.setenv("LABKIT_MODE", "replay")
    replayed = trace_request(ANSWERED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    assert endpoint.attempts == 0
    assert boundary.mode == "explore" and last_answer(boundary).source == "recorded"
    assert explored.result == replayed.result and explored.status == "answered"
    assert "origin" not in explored.trace.first("model_reply_returned").data
    assert list(explore_dir().iterdir()) == []


def test_a_changed_request_is_answered_live_saved_and_labelled(endpoint, index):
    boundary = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)
    traced = trace_request(REWORDED, index, boundary)
    assert endpoint.attempts == 1
    assert traced.outcome == "completed" and traced.result["answer"] == "Use fromisoformat."
    reply = traced.trace.first("model_reply_returned")
    assert reply.data["origin"] == LABEL == explore_label("fake-model")
    assert {d["path"] for d in reply.data["your_change"]} >= {"messages[1].content.question"}
    assert f"origin={LABEL}" in traced.trace.summary()
    assert LABEL in static_html(traced.trace, "explore")
    answer = last_answer(boundary)
    assert answer.source == "live" and answer.origin == LABEL
    run = load_run(answer.run_path)
    assert answer.run_path.parent.parent == explore_dir()
    assert (run.origin, run.model.id, run.lesson, run.settings) == ("captured", "fake-model", "02", SETTINGS)
    (binding,) = run.bindings
    assert binding.latency_s is not None and binding.usage.total_tokens == 13 and binding.question == REWORDED
    assert binding.request["model"] == "fake-model"
    missed = json.loads((answer.run_path.parent / MISSED_FILE).read_text())
    recorded = next(b for b in load_run(RUN_AUTHORED).bindings if b.question == ANSWERED)
    assert missed["would_have_replayed"] == RUN_AUTHORED and missed["nearest_recorded_key"] == recorded.key
    assert "messages[1].content.question" in {d["path"] for d in missed["diff"]}


def test_the_same_change_asked_again_is_answered_from_scratch_without_a_second_call(endpoint, index):
    first = trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    again = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)  # a new boundary reads only the scratch folder
    second = trace_request(REWORDED, index, again)
    assert endpoint.attempts == 1
    assert second.result == first.result
    assert last_answer(again).source == "saved" and last_answer(again).origin == LABEL
    assert second.trace.first("model_reply_returned").data["origin"] == LABEL
    assert len(list(explore_dir().glob(f"*/{RUN_FILE}"))) == 1


def test_another_model_does_not_reuse_a_saved_answer(endpoint, index, monkeypatch):
    trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    monkeypatch.setenv("LABKIT_MODEL", "another-model")
    traced = trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    assert endpoint.attempts == 2
    assert traced.trace.first("model_reply_returned").data["origin"] == explore_label("another-model")


def test_replay_mode_still_refuses_the_changed_request_and_says_how_to_see_an_answer(endpoint, index, monkeypatch):
    monkeypatch.setenv("LABKIT_MODE", "replay")
    traced = trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    assert traced.outcome == "replay_refused" and endpoint.attempts == 0
    assert traced.error.splitlines()[-1] == EXPLORE_HINT
    assert traced.trace.first("replay_refused").data["hints"] == [EXPLORE_HINT]


def test_an_explore_answer_never_reaches_recorded_runs(endpoint, index):
    before = tree_sha256(recorded_runs_dir())
    boundary = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)
    trace_request(REWORDED, index, boundary)
    assert endpoint.attempts == 1
    assert tree_sha256(recorded_runs_dir()) == before
    assert recorded_runs_dir() not in last_answer(boundary).run_path.parents


def test_the_answer_reaches_lesson_code_as_an_openai_completion(endpoint):
    from openai.types.chat import ChatCompletion

    boundary = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)
    completion = boundary.chat([{"role": "user", "content": "Is this recorded?"}])
    assert isinstance(completion, ChatCompletion) and completion.id == "fake-1"
    assert answer_origin(completion) == LABEL
    recorded = load_run(RUN_AUTHORED).bindings[0]
    replayed = boundary.client.chat.completions.create(**recorded.request)
    assert answer_origin(replayed, "authored") == "authored"


def test_without_an_endpoint_or_the_local_extra_a_change_says_how_to_get_one(index, monkeypatch):
    monkeypatch.setenv("LABKIT_MODE", "explore")
    for name in ("LABKIT_BASE_URL", "OPENAI_BASE_URL", "LABKIT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(explore, "local_extra_installed", lambda: False)
    boundary = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)
    assert trace_request(ANSWERED, index, boundary).status == "answered"  # what is recorded still replays
    with pytest.raises(ExploreUnavailable, match=r'pip install -c constraints.txt -e "\.\[local\]"') as caught:
        trace_request(REWORDED, index, boundary)
    assert "LABKIT_BASE_URL" in str(caught.value) and "course.py lab --explore" in str(caught.value)
    assert list(explore_dir().iterdir()) == []


def test_a_saved_run_that_was_edited_is_passed_over_and_asked_again(endpoint, index):
    trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    (saved,) = explore_dir().glob(f"*/{RUN_FILE}")
    saved.write_text(saved.read_text().replace("Use fromisoformat.", "Edited by hand."))
    traced = trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    assert endpoint.attempts == 2 and traced.result["answer"] == "Use fromisoformat."
