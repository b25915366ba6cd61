"""Each lesson's "try your own": the committed value replays, a change is refused in replay and answered in explore."""

from __future__ import annotations

import socket

import pytest

from labkit import explore
from labkit.course import try_your_own as t
from labkit.rag.trace import QUESTIONS
from labkit.refusal import EXPLORE_HINT

RECORDED = {
    "01": lambda: t.try_generation_line(""),
    "02": lambda: t.try_policy_line(""),
    "02b": lambda: t.try_filings_policy_line(""),
    "03": lambda: t.try_question(QUESTIONS["answered"]),
    "04": lambda: t.try_router_question("How many refund requests are in the dataset?"),
    "05": lambda: t.try_evidence_k(3),
    "06": lambda: t.try_ticket_message(t.recorded_ticket_message("t1")),
}
CHANGED = {
    "01": lambda: t.try_generation_line("Mention that it is waterproof."),
    "02": lambda: t.try_policy_line("Answer in French."),
    "02b": lambda: t.try_filings_policy_line("Round every figure to the nearest billion."),
    "03": lambda: t.try_question("What does zoneinfo.ZoneInfo give you?"),
    "04": lambda: t.try_router_question("Can you book me a table for two tonight?"),
    "05": lambda: t.try_evidence_k(1),
    "06": lambda: t.try_ticket_message("Checkout has been failing for every customer since this morning."),
}
#: What each lesson's check says when a reply does not even have the lesson's shape.
SHAPELESS = {
    "01": "schema fail",
    "02": "invalid shape",
    "02b": "invalid shape",
    "03": "invalid shape",
    "04": "not JSON",
    "05": "invalid_output",
    "06": "not strict JSON",
}


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a try-your-own cell opened a socket in replay mode")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.mark.parametrize("lesson", sorted(RECORDED))
def test_the_committed_value_is_the_recorded_request_and_replays(lesson, no_network):
    result = RECORDED[lesson]()
    assert result.path == "recorded" and result.answer and not result.diff
    assert result.origin.startswith("the course's recorded run ")
    assert "not judged" not in result.verdict and SHAPELESS[lesson] not in result.verdict
    assert f"answer from: {result.origin}" in str(result)
    assert str(result).splitlines()[-1] == t.TRY_HINT  # replay mode: the one-line hint


@pytest.mark.parametrize("lesson", sorted(CHANGED))
def test_a_changed_value_is_refused_in_replay_mode_with_the_hint(lesson, no_network):
    result = CHANGED[lesson]()
    assert result.path == "refused" and result.answer is None and result.diff
    assert result.verdict == "not judged: there is no answer"
    assert str(result).splitlines()[-1] == EXPLORE_HINT


def test_the_lesson_06_check_judges_the_route_against_the_suite(no_network):
    result = RECORDED["06"]()
    assert result.verdict == "route sales; the suite expects urgent_support: a miss"  # the captured run's miss


def test_the_lesson_01_check_leaves_out_the_cost_it_does_not_measure(no_network):
    result = RECORDED["01"]()
    assert result.verdict == "schema pass, length pass, numeric_claims pass (cost not measured here)"


def test_the_lesson_01_look_for_says_only_numbers_with_a_read_unit_fail_numeric_claims(no_network):
    look_for = RECORDED["01"]().look_for
    assert "a number with a unit the check reads (h, g, kg, mm, cm, EUR)" in look_for
    assert "'a 5-year warranty' or 'waterproof' passes every check" in look_for


def test_the_lesson_02b_check_grades_the_reply_as_the_lesson_does(no_network):
    result = RECORDED["02b"]()  # question 017: the authored reply is correct and cites the page printing it
    assert result.verdict == "correctness correct, faithful True, cited ['BRIGHTWAVE_2025_10K#p3']"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [('{"id": "t9", "route": "sales"}', "not an object with exactly route"), ("sales", "not strict JSON")],
)
def test_a_malformed_lesson_06_reply_is_one_the_gate_refuses_to_grade_not_a_miss(reply, problem):
    verdict = t.route_reply_verdict("support", reply)
    assert verdict.startswith(f"malformed ({problem}")
    assert verdict.endswith("the gate refuses to grade a run that holds it (exit code 1)")
    assert "miss" not in verdict


@pytest.fixture(scope="module")
def bundled_model():
    if not explore.local_extra_installed():
        pytest.skip("needs the [local] extra (the bundled model and a runtime)")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("LABKIT_BASE_URL", "OPENAI_BASE_URL", "LABKIT_MODEL"):
            patch.delenv(name, raising=False)
        patch.setenv("LABKIT_MODE", "explore")
        try:
            yield
        finally:
            explore.stop_local_server()


@pytest.mark.parametrize("lesson", sorted(CHANGED))
def test_each_lessons_changed_request_is_answered_by_the_bundled_model_and_judged_by_the_lessons_check(
    lesson, bundled_model, monkeypatch
):
    """The small model's answer may fail the check (a reply cut off at max_tokens, say): the check says so."""
    monkeypatch.setenv("LABKIT_MODE", "explore")
    result = CHANGED[lesson]()
    assert result.path == "explore"
    assert (
        result.origin == "captured now from SmolLM2-135M-Instruct, your change: not part of the course's recorded runs"
    )
    assert result.answer and not result.verdict.startswith("not judged")
    assert result.diff  # what the learner changed, against the nearest recorded request


def test_lesson_03s_explore_answer_is_a_run_bound_replay_replays(monkeypatch):
    """The run explore mode saved for a changed question binds exactly try_question's request, and only that."""
    import json

    from labkit.course.try_your_own import _docs_request
    from labkit.replay import BoundReplay, ReplayRequestMismatch
    from tests.fake_endpoint import FakeEndpoint

    question = "What does zoneinfo.ZoneInfo give you?"
    reply = json.dumps({"status": "answered", "answer": "A time zone.", "source_ids": ["zoneinfo"]})
    assert t.explore_run_for(question) is None
    assert t.replay_your_run(question).startswith("No run of yours binds this question yet")
    with FakeEndpoint(answer=lambda body: reply) as fake:
        monkeypatch.setenv("LABKIT_MODE", "explore")
        monkeypatch.setenv("LABKIT_BASE_URL", fake.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        assert t.try_question(question).path == "explore" and fake.attempts == 1
    monkeypatch.setenv("LABKIT_MODE", "replay")
    run = t.explore_run_for(question)
    assert run is not None and (run.origin, run.model.id) == ("captured", "fake-model")
    mine = BoundReplay.from_run(run)
    assert mine.generate(question, _docs_request(question, "")[0]).choices[0].message.content == reply
    with pytest.raises(ReplayRequestMismatch):
        mine.generate(QUESTIONS["answered"], _docs_request(QUESTIONS["answered"], "")[0])
    said = t.replay_your_run(question).splitlines()
    assert said[0].startswith(f"your run {run.run_id} | origin: captured | model id: fake-model")
    assert said[1:] == [f"your question, replayed: {reply}", "the course's recorded question: refused"]
    assert t.explore_run_for(QUESTIONS["answered"]) is None  # the recorded question is never saved by explore
    assert t.explore_run_for("Another question?") is None


def test_an_explore_run_that_no_longer_loads_is_passed_over(monkeypatch, scratch_in_tmp):
    from tests.fake_endpoint import FakeEndpoint

    question = "What does zoneinfo.ZoneInfo give you?"
    with FakeEndpoint(answer=lambda body: '{"status": "not_in_docs", "answer": "-", "source_ids": []}') as fake:
        monkeypatch.setenv("LABKIT_MODE", "explore")
        monkeypatch.setenv("LABKIT_BASE_URL", fake.base_url)
        monkeypatch.setenv("LABKIT_MODEL", "fake-model")
        t.try_question(question)
    (saved,) = (scratch_in_tmp / "explore").glob("*/run.json")
    assert t.explore_run_for(question) is not None
    saved.write_text(saved.read_text(encoding="utf-8").replace("fake-model", "edited-model"), encoding="utf-8")
    assert t.explore_run_for(question) is None


def test_lesson_05s_look_for_points_to_the_recorded_replies_and_types_no_outcome_of_its_own(no_network):
    look_for = t.try_evidence_k(3).look_for
    assert "the optional part's tables show what SmolLM2 replied" in look_for
    assert "prompt_fix.SYSTEM_FIXED" in look_for and "name get_refund" in look_for
    # a recorded outcome typed into a string would not follow a re-recording: the tables print it
    assert "invalid_output" not in look_for and "did not stop it" not in look_for
