"""Part B's recorded runs replay the lesson's exact requests, and the authored run is rebuilt byte for byte."""

from __future__ import annotations

import pytest

from labkit.boundary import connect
from labkit.rag.answer import SETTINGS
from labkit.rag.metrics import grade
from labkit.rag.questions import load_questions
from labkit.rag.runs import RUN_AUTHORED, RUN_CAPTURED, make_requests, write_authored
from labkit.recording import load_run, run_path


def test_the_authored_run_is_what_the_authoring_script_writes(tmp_path):
    write_authored(runs_dir=tmp_path)
    assert (tmp_path / RUN_AUTHORED / "run.json").read_bytes() == run_path(RUN_AUTHORED).read_bytes()


def test_replaying_the_authored_run_answers_every_request_and_shows_its_mistakes():
    run = make_requests(connect(RUN_AUTHORED, lesson="02", settings=SETTINGS))
    assert run.errors == {"rag": {}, "naive": {}}
    table = grade(load_questions(), run.rag, path="rag").set_index("id")
    assert table.loc["018", "status"] == "insufficient_evidence"
    assert table.loc["020", ["correctness", "faithful"]].tolist() == ["correct", False]
    assert table.loc["025", ["correctness", "faithful"]].tolist() == ["wrong", True]
    assert table.loc["005", "correctness"] == "partial"


def test_the_captured_run_replays_with_failures_kept_as_failed_trials():
    if not run_path(RUN_CAPTURED).is_file():
        pytest.skip("the captured run has not been recorded (python -m labkit.rag.runs --captured)")
    recorded = load_run(RUN_CAPTURED)
    assert recorded.origin == "captured" and recorded.model.endpoint_kind == "local-llama-cpp"
    questions = load_questions()
    run = make_requests(connect(RUN_CAPTURED, lesson="02", settings=SETTINGS), questions=questions)
    answered = sum(r is not None for r in run.rag.values()) + sum(r is not None for r in run.naive.values())
    failed = len(run.errors["rag"]) + len(run.errors["naive"])
    assert len(questions) == 36 and answered + failed == 2 * len(questions)
