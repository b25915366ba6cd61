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
    table = grade(load_questions(), run.rag, path="rag", retrieval=run.retrieval).set_index("id")
    assert table.loc["015", "status"] == "insufficient_evidence"
    assert table.loc["018", ["correctness", "faithful"]].tolist() == ["correct", False]
    assert table.loc["030", ["correctness", "faithful"]].tolist() == ["wrong", True]
    assert table.loc["005", ["kind", "correctness"]].tolist() == ["unanswerable", "wrong"]
    assert set(table["question_type"]) == {"metrics-generated", "domain-relevant", "novel-generated"}


def test_the_captured_run_replays_with_failures_kept_as_failed_trials():
    if not run_path(RUN_CAPTURED).is_file():
        pytest.skip("the captured run has not been recorded (python -m labkit.rag.runs --captured)")
    recorded = load_run(RUN_CAPTURED)
    assert recorded.origin == "captured" and recorded.model.endpoint_kind == "local-llama-cpp"
    questions = load_questions()
    run = make_requests(connect(RUN_CAPTURED, lesson="02", settings=SETTINGS), questions=questions)
    answered = sum(r is not None for r in run.rag.values()) + sum(r is not None for r in run.naive.values())
    failed = len(run.errors["rag"]) + len(run.errors["naive"])
    assert len(questions) == 30 and answered + failed == 2 * len(questions)


class BrokenModel:
    """Answers every request with text that is not JSON, so every generation trial fails."""

    def generate(self, question, messages, **settings):
        from openai.types.chat import ChatCompletion

        from labkit.authored import authored_response

        return ChatCompletion.model_validate(authored_response("I think it is about 2 billion.", number=1))


def test_retrieval_is_graded_for_every_question_when_every_reply_fails():
    questions = load_questions()
    run = make_requests(BrokenModel(), questions=questions)
    answerable = [q for q in questions if q.answerable]
    assert all(run.rag[q.financebench_id] is None for q in answerable)
    assert {q.financebench_id for q in answerable} <= set(run.errors["rag"])
    table = grade(questions, run.rag, path="rag", retrieval=run.retrieval, errors=run.errors["rag"]).set_index("id")
    answerable_rows = table[table["kind"] != "unanswerable"]
    assert set(answerable_rows["correctness"]) == {"failed"}
    assert answerable_rows["page_hit"].notna().all() and answerable_rows["reciprocal_rank"].notna().all()
    # the same retrieval as when every reply is fine: generation cannot move retrieval's numbers
    authored = make_requests(connect(RUN_AUTHORED, lesson="02", settings=SETTINGS), questions=questions)
    good = grade(questions, authored.rag, path="rag", retrieval=authored.retrieval).set_index("id")
    assert answerable_rows["page_hit"].tolist() == good.loc[answerable_rows.index, "page_hit"].tolist()
    assert answerable_rows["page_hit"].sum() > 0


class UnreachableModel:
    """Fails every request as a lost connection would: an error that is not a bad reply."""

    def generate(self, question, messages, **settings):
        raise ConnectionError("the model server went away")


def test_an_error_that_is_not_a_bad_reply_stops_the_run_instead_of_becoming_a_failed_trial():
    questions = load_questions()[:2]
    with pytest.raises(ConnectionError, match="went away"):
        make_requests(UnreachableModel(), questions=questions)
