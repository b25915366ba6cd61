"""Explore mode: the recorded run answers what it binds; a live model (a fake one here) answers the rest, once."""

from __future__ import annotations

import hashlib
import json
import os
import re

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
from labkit.widgets import viewer_html
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
    assert LABEL in viewer_html(traced.trace, "explore")
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


# --- the try-your-own cells ---------------------------------------------------------------------------------


def try_your_own_cell(lesson: str) -> str:
    import nbformat

    from labkit.paths import notebooks_dir

    (path,) = notebooks_dir().glob(f"{lesson}_*.ipynb")
    cells = [c for c in nbformat.read(path, as_version=4).cells if "try-your-own" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"notebook {lesson} has {len(cells)} try-your-own cells"
    return cells[0].source


def test_notebook_03s_cell_edited_to_a_new_question_gets_the_fake_endpoints_answer(endpoint, capsys):
    source = try_your_own_cell("03").replace(ANSWERED, "What does zoneinfo.ZoneInfo return?")
    assert "What does zoneinfo" in source
    exec(compile(source, "try-your-own", "exec"), {})
    printed = capsys.readouterr().out
    assert endpoint.attempts == 1
    assert f"answer from: {LABEL}" in printed and "the lesson's check: reply_checked" in printed


def test_notebook_03s_cell_as_committed_replays_in_explore_mode_with_no_call(endpoint, capsys):
    exec(compile(try_your_own_cell("03"), "try-your-own", "exec"), {})
    assert endpoint.attempts == 0
    assert "answer from: the course's recorded run 02-rag-authored (authored)" in capsys.readouterr().out


def _local_extra_installed() -> bool:
    return explore.local_extra_installed()


@pytest.mark.skipif(not _local_extra_installed(), reason="needs the [local] extra (the bundled model and a runtime)")
def test_notebook_03s_cell_gets_a_real_answer_from_the_bundled_model_started_and_stopped_by_labkit(tmp_path):
    import subprocess
    import sys

    import psutil

    question = "What does zoneinfo.ZoneInfo give you?"
    source = try_your_own_cell("03").replace(ANSWERED, question)
    script = source + (
        "\nfrom labkit.explore import _LOCAL, last_answer\n"
        "print('server pid:', _LOCAL['server'].process.pid, flush=True)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABKIT_", "OPENAI_"))}
    env.update(LABKIT_MODE="explore", LABKIT_SCRATCH=str(tmp_path / "scratch"))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    label = "captured now from SmolLM2-135M-Instruct, your change: not part of the course's recorded runs"
    assert f"answer from: {label}" in done.stdout
    assert f"your change: QUESTION = {question!r}" in done.stdout
    answer = next(line for line in done.stdout.splitlines() if line.startswith("answer: "))
    assert len(answer) > len("answer: ")
    pid = int(done.stdout.split("server pid:")[1].split()[0])
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    (saved,) = (tmp_path / "scratch" / "explore").glob("*/run.json")
    run = load_run(saved)
    assert run.origin == "captured" and run.model.id == "SmolLM2-135M-Instruct"
    assert run.model.endpoint_kind == "local-llama-cpp" and run.bindings[0].question == question


# --- nothing leaks into the course's evidence ---------------------------------------------------------------


def test_no_committed_notebook_output_carries_an_explore_answer():
    import nbformat

    from labkit.paths import notebooks_dir

    marker = "your change: not part of the course's recorded runs"
    for path in sorted(notebooks_dir().glob("0*.ipynb")):
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for output in cell.get("outputs", []):
                text = json.dumps(output, ensure_ascii=False)
                assert marker not in text and "labkit_origin" not in text, f"{path.name} cell {number}"


def test_verify_and_doctor_read_only_the_recorded_runs(endpoint, index):
    from labkit.course.doctor import check_recorded_runs
    from labkit.course.lessons import verify_course_runs
    from labkit.recording import read_manifest

    boundary = connect(RUN_AUTHORED, lesson="02", settings=SETTINGS)
    trace_request(REWORDED, index, boundary)
    saved = last_answer(boundary).run_path.parent.name
    verified = {name for name, _, _ in verify_course_runs()}
    assert verified == set(read_manifest()) and saved not in verified
    assert not any(saved in check.name or saved in check.detail for check in check_recorded_runs())


def test_the_kernels_of_labkit_run_nbval_and_workshop_check_replay_whatever_labkit_mode_says(tmp_path, monkeypatch):
    from pathlib import Path

    from labkit.course.pytest_plugin import session_environment
    from labkit.offline import offline_kernel_env

    monkeypatch.setenv("LABKIT_MODE", "explore")
    assert offline_kernel_env()["LABKIT_MODE"] == "replay"  # labkit run, labkit workshop check, doctor
    assert session_environment(dict(os.environ), checkout=Path.cwd(), folder=tmp_path)["LABKIT_MODE"] == "replay"


def test_workshop_check_grades_an_exercise_in_replay_mode_under_explore(tmp_path, monkeypatch, capsys):
    import nbformat

    from labkit.cli import main

    monkeypatch.setenv("LABKIT_MODE", "explore")
    task = nbformat.v4.new_markdown_cell("Say which mode the check runs in.")
    task.metadata["tags"] = ["exercise", "ex:mode"]
    solution = nbformat.v4.new_code_cell("from labkit.boundary import current_mode")
    solution.metadata["tags"] = ["solution", "ex:mode"]
    check = nbformat.v4.new_code_cell("assert current_mode() == 'replay', current_mode()\nprint('ex:mode passed')")
    check.metadata["tags"] = ["check", "ex:mode"]
    nb = nbformat.v4.new_notebook(cells=[task, solution, check])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "learner.ipynb")
    assert main(["workshop", "check", str(tmp_path / "learner.ipynb")]) == 0
    assert re.search(r"ex:mode +passed", capsys.readouterr().out)


def test_a_traced_request_answered_live_keeps_the_diff_a_refusal_would_have_shown(endpoint, index, monkeypatch):
    from labkit.replay import diff_table

    explored = trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    monkeypatch.setenv("LABKIT_MODE", "replay")
    refused = trace_request(REWORDED, index, connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    assert [d["path"] for d in explored.extra["diff"]] == [d.path for d in refused.extra["diff"]]
    assert list(diff_table(explored.extra["diff"])["field"]) == list(diff_table(refused.extra["diff"])["field"])
