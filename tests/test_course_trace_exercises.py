"""Lesson 02a's exercise checks: each passes a correct answer and refuses a wrong one and a shortcut."""

import pytest

from labkit.boundary import connect
from labkit.course.trace_exercises import (
    RANK_PREDICTIONS,
    check_cited_rank,
    check_not_in_docs_cause,
    check_score_floor,
)
from labkit.rag.ranking import RUN_AUTHORED as RUN_RANKING
from labkit.rag.trace import RUN_AUTHORED, RUN_CAPTURED, SETTINGS, load_docs_index, model_step


@pytest.fixture(scope="module")
def index():
    return load_docs_index()


@pytest.fixture(scope="module")
def authored():
    return connect(RUN_AUTHORED, lesson="02", settings=SETTINGS, mode="replay")


@pytest.fixture(scope="module")
def captured():
    return connect(RUN_CAPTURED, lesson="02", settings=SETTINGS, mode="replay")


@pytest.fixture(scope="module")
def adapters(authored):
    ranking = connect(RUN_RANKING, lesson="02", settings=SETTINGS, mode="replay")
    return {"timestamp": authored, "backup": authored, "ranking": ranking}


def cited_rank(traced):
    checked = traced.trace.first("reply_checked")
    if checked is None or traced.trace.first("request_completed") is None:
        return None
    cited = set(checked.data["source_ids"])
    ranks = [c["rank"] for c in traced.trace.first("retrieval_completed").data["candidates"] if c["source_id"] in cited]
    return min(ranks) if ranks else None


RANKS = dict(zip(RANK_PREDICTIONS, (3, 1, None), strict=True))


def stub_cited_rank(traced):
    raise NotImplementedError("hint: which events hold the answer?")


def test_cited_rank_check_passes_the_best_rank_and_refuses_the_last_one(index, authored, capsys):
    check_cited_rank(cited_rank, RANKS, index, authored)
    assert "PREDICTED_RANKS is right for all three probes" in capsys.readouterr().out

    def last_rank(traced):
        best = cited_rank(traced)
        if best is None:
            return None
        cited = set(traced.trace.first("reply_checked").data["source_ids"])
        candidates = traced.trace.first("retrieval_completed").data["candidates"]
        return max(c["rank"] for c in candidates if c["source_id"] in cited)

    with pytest.raises(AssertionError, match="cited_rank is wrong for"):
        check_cited_rank(last_rank, RANKS, index, authored)


def test_cited_rank_check_refuses_always_rank_one(index, authored):
    with pytest.raises(AssertionError, match="cited_rank is wrong for"):
        check_cited_rank(
            lambda t: 1 if t.outcome == "completed" and t.result["source_ids"] else None, RANKS, index, authored
        )


@pytest.mark.parametrize(
    ("why", "predicted"),
    [
        ("the stub: nothing filled in", dict.fromkeys(RANK_PREDICTIONS, ...)),
        ("one left unfilled", {**RANKS, RANK_PREDICTIONS[2]: ...}),
        ("wrong: a rejected reply still gets its rank", {**RANKS, RANK_PREDICTIONS[2]: 3}),
        ("wrong: the last cited rank", {**RANKS, RANK_PREDICTIONS[1]: 3}),
        ("shortcut: the top candidate is always the cited one", dict.fromkeys(RANK_PREDICTIONS, 1)),
    ],
)
def test_cited_rank_check_grades_the_predictions_before_the_function(index, authored, capsys, why, predicted):
    expected = NotImplementedError if ... in predicted.values() else AssertionError
    with pytest.raises(expected, match=r"PREDICTED_RANKS first|the predictions do not all match"):
        check_cited_rank(stub_cited_rank, predicted, index, authored)  # the stub is never reached
    assert "checking cited_rank next" not in capsys.readouterr().out


def test_cited_rank_check_with_right_predictions_refuses_the_stub(index, authored, capsys):
    with pytest.raises(NotImplementedError, match="hint"):
        check_cited_rank(stub_cited_rank, RANKS, index, authored)
    assert "PREDICTED_RANKS is right for all three probes" in capsys.readouterr().out


def _band_with(pick_low, strict=True):
    """floor_band with its low end chosen by ``pick_low`` from the not_in_docs best scores, in order."""

    def band(traced):
        must_keep, must_drop = [], []
        for request in traced.values():
            candidates = request.trace.first("retrieval_completed").data["candidates"]
            if request.result["status"] == "answered":
                for source in request.result["source_ids"]:
                    must_keep.append(max(c["score"] for c in candidates if c["source_id"] == source))
            else:
                must_drop.append(max(c["score"] for c in candidates))
        low, high = pick_low(must_drop), min(must_keep)
        return (low, high) if (low < high if strict else low <= high) else None

    return band


floor_band = _band_with(max)  # the right answer: the highest best score of the requests to drop


RIGHT = {"timestamp": (0, "app answers"), "backup": (0, "app answers"), "ranking": (1, "rejected")}


def test_score_floor_check_passes_the_band_and_returns_the_requests_at_the_floor(index, adapters):
    at_floor = check_score_floor(floor_band, RIGHT, 0.6, index, adapters)
    assert sorted(at_floor) == ["backup", "ranking", "timestamp"]
    assert at_floor["timestamp"].trace.first("model_skipped") is not None
    assert "outside this request's selected context ['path-read-text']" in at_floor["ranking"].error


def test_score_floor_check_gives_the_recorded_reply_again_so_a_dropped_cited_passage_is_rejected(index, adapters):
    at_floor = check_score_floor(floor_band, RIGHT, 0.6, index, adapters)
    returned = at_floor["ranking"].trace.first("model_reply_returned").data
    assert returned["supplied_by"] == "driver (controlled probe)"
    assert '"path-write-text"' in returned["reply"]


def test_the_band_cases_include_sets_no_floor_separates(index, adapters):
    from labkit.course.trace_exercises import _band_cases, _expected_band
    from labkit.rag.trace import QUESTIONS, RANKING_QUESTION, trace_request

    questions = {"timestamp": QUESTIONS["answered"], "backup": QUESTIONS["not_in_docs"], "ranking": RANKING_QUESTION}
    traced = {name: trace_request(q, index, adapters[name]) for name, q in questions.items()}
    bands = {name: _expected_band(case) for name, case in _band_cases(traced, index).items()}
    assert bands["ranking refused, timestamp answered"] is None  # 0.684 to drop, 0.553 to keep
    assert [round(x, 3) for x in bands["the three traced questions"]] == [0.227, 0.553]
    assert [round(x, 3) for x in bands["ranking and backup"]] == [0.227, 0.568]
    # several not_in_docs requests: low is the highest best score, neither the first nor the lowest
    assert [round(x, 3) for x in bands["backup and reworded refused, ranking answered"]] == [0.545, 0.568]
    assert [round(x, 3) for x in bands["timestamp, backup and reworded refused, ranking answered"]] == [0.553, 0.568]
    # the same question answered and refused: low == high, an empty band
    answered, refused = _band_cases(traced, index)["timestamp answered and refused"].values()
    assert _best(refused) == _best(answered) and bands["timestamp answered and refused"] is None


def _best(traced):
    return max(c["score"] for c in traced.trace.first("retrieval_completed").data["candidates"])


def test_score_floor_check_refuses_the_top_score_and_every_cited_passage(index, adapters):
    def top_score(traced):
        keep = [
            t.trace.first("retrieval_completed").data["candidates"][0]["score"]
            for t in traced.values()
            if t.result["status"] == "answered"
        ]
        drop = [
            t.trace.first("retrieval_completed").data["candidates"][0]["score"]
            for t in traced.values()
            if t.result["status"] != "answered"
        ]
        return (max(drop), min(keep)) if max(drop) < min(keep) else None

    def never_none(traced):
        band = floor_band(traced)
        return band if band is not None else (0.9, 0.1)

    for wrong in (top_score, never_none, lambda traced: (0.226712, 0.552792)):
        with pytest.raises(AssertionError, match="floor_band is wrong for"):
            check_score_floor(wrong, RIGHT, 0.6, index, adapters)


@pytest.mark.parametrize(
    ("name", "wrong"),
    [
        ("the lowest not_in_docs score", _band_with(min)),
        ("the first not_in_docs request's score", _band_with(lambda drop: drop[0])),
        ("the last not_in_docs request's score", _band_with(lambda drop: drop[-1])),
        ("low <= high, so a band of one point", _band_with(max, strict=False)),
    ],
)
def test_score_floor_check_refuses_a_wrong_low_end_and_an_empty_band(index, adapters, name, wrong):
    with pytest.raises(AssertionError, match="floor_band is wrong for"):
        check_score_floor(wrong, RIGHT, 0.6, index, adapters)
    check_score_floor(_band_with(max), RIGHT, 0.6, index, adapters)


def test_score_floor_check_refuses_reading_the_findings(index, adapters):
    from labkit.course.trace_exercises import score_floor_findings

    def via_findings(traced):
        score_floor_findings(traced, traced, 0.6)
        return floor_band(traced)

    with pytest.raises(AssertionError, match=r"called labkit.s .*score_floor_findings"):
        check_score_floor(via_findings, RIGHT, 0.6, index, adapters)


def test_score_floor_check_says_neither_how_many_predictions_are_wrong_nor_which(index, adapters):
    one_wrong = {**RIGHT, "ranking": (1, "completed")}
    all_wrong = {name: (3, "completed") for name in RIGHT}
    messages = set()
    for wrong in (one_wrong, all_wrong):
        with pytest.raises(AssertionError, match=r"^the predictions do not all match what happens") as raised:
            check_score_floor(floor_band, wrong, 0.6, index, adapters)
        messages.add(str(raised.value))
    assert len(messages) == 1  # one wrong and three wrong read the same
    with pytest.raises(AssertionError, match="keep the floor as given"):
        check_score_floor(floor_band, RIGHT, 0.5, index, adapters)


def test_score_floor_check_grades_the_predictions_before_it_calls_floor_band(index, adapters, capsys):
    def stub(traced):  # the student copy's floor_band
        raise NotImplementedError("hint")

    with pytest.raises(NotImplementedError):
        check_score_floor(stub, RIGHT, 0.6, index, adapters)
    assert "PREDICTED is right for all three questions at FLOOR = 0.6" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=r"^the predictions do not all match"):
        check_score_floor(stub, {**RIGHT, "ranking": (1, "completed")}, 0.6, index, adapters)
    assert "PREDICTED is right" not in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="fill in PREDICTED"):  # the stub's predictions
        check_score_floor(stub, {name: (None, None) for name in RIGHT}, 0.6, index, adapters)


def not_in_docs_cause(traced):
    done = traced.trace.first("request_completed")
    if done is None or done.data["status"] != "not_in_docs":
        return None
    if traced.trace.first("model_skipped") is None:
        return "model_reply"
    found = traced.trace.first("retrieval_completed").data["candidates"]
    return "all_dropped" if found else "no_candidates"


CAUSES = {
    "backup question, floor 0.3": "all_dropped",
    "timestamp question, floor 0.5": None,
    "timestamp question, captured run": "model_reply",
}


def test_not_in_docs_cause_check_grades_the_predicted_causes_before_the_function(index, authored, captured, capsys):
    def stub(traced):
        raise NotImplementedError("hint: which events hold the answer?")

    with pytest.raises(NotImplementedError, match="fill in PREDICTED_CAUSES"):  # the stub's predictions
        check_not_in_docs_cause(stub, {name: ... for name in CAUSES}, index, authored, captured)
    refused_was_dropped = {**CAUSES, "timestamp question, floor 0.5": "all_dropped"}
    with pytest.raises(AssertionError, match=r"^the predictions do not all match"):
        check_not_in_docs_cause(not_in_docs_cause, refused_was_dropped, index, authored, captured)
    assert "PREDICTED_CAUSES is right" not in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="which events"):  # right predictions, stub function
        check_not_in_docs_cause(stub, CAUSES, index, authored, captured)
    assert "PREDICTED_CAUSES is right for all three requests" in capsys.readouterr().out


def test_not_in_docs_cause_check_passes_reading_the_events(index, authored, captured):
    check_not_in_docs_cause(not_in_docs_cause, CAUSES, index, authored, captured)


def test_not_in_docs_cause_check_refuses_reading_the_context_instead_of_the_candidates(index, authored, captured):
    def from_context(traced):
        cause = not_in_docs_cause(traced)
        if cause in ("all_dropped", "no_candidates"):
            return "all_dropped" if traced.trace.first("context_selected").data["chunk_ids"] else "no_candidates"
        return cause

    with pytest.raises(AssertionError, match="not_in_docs_cause is wrong for"):
        check_not_in_docs_cause(from_context, CAUSES, index, authored, captured)


def test_not_in_docs_cause_check_refuses_calling_model_step(index, authored, captured):
    def via_model_step(traced):
        model_step(traced)
        return not_in_docs_cause(traced)

    with pytest.raises(AssertionError, match=r"called labkit.s labkit\.rag\.trace\.model_step"):
        check_not_in_docs_cause(via_model_step, CAUSES, index, authored, captured)


def _default_floor_findings(index, adapters, authored):
    """The findings the notebook prints: the three default questions, traced with the app's own rule, at 0.6."""
    from labkit.course.trace_exercises import score_floor_findings
    from labkit.rag.trace import QUESTIONS, RANKING_QUESTION, trace_request

    at_floor = check_score_floor(floor_band, RIGHT, 0.6, index, adapters)
    defaults = {
        "backup": trace_request(QUESTIONS["not_in_docs"], index, authored),
        "timestamp": trace_request(QUESTIONS["answered"], index, authored),
        "ranking": trace_request(RANKING_QUESTION, index, adapters["ranking"]),
    }
    text = score_floor_findings(at_floor, defaults, 0.6)
    return text


def test_score_floor_findings_explain_the_floor_from_the_traces(index, adapters, authored):
    text = _default_floor_findings(index, adapters, authored)
    assert "The timestamp question: no passage scores 0.6 or more, so the app answers not_in_docs" in text
    assert "The backup question" not in text  # its not_in_docs is right: nothing to explain
    assert "keeps only ['path-read-text']. Its recorded reply, given again, cites ['path-write-text']" in text
    assert "a floor above 0.226712 and at most 0.552792 keeps a passage of every cited source" in text
    assert (
        "a floor above 0.480887 in that band drops the timestamp question's rank-2 passage of datetime-fromisoformat"
        in text
    )


def test_score_floor_findings_band_follows_the_scores(index, adapters, authored):
    from labkit.course.trace_exercises import score_floor_findings
    from labkit.rag.trace import QUESTIONS, RANKING_QUESTION, trace_request

    at_floor = check_score_floor(floor_band, RIGHT, 0.6, index, adapters)
    ranking = trace_request(RANKING_QUESTION, index, adapters["ranking"])
    backup = trace_request(QUESTIONS["not_in_docs"], index, authored)
    text = score_floor_findings(at_floor, {"ranking": ranking, "backup": backup}, 0.6)
    assert "a floor above 0.226712 and at most 0.567713 keeps" in text  # without the timestamp question
    assert "in that band drops" not in text  # the ranking question cites one passage, scored above the band


def test_score_floor_findings_say_which_end_of_the_band_is_in_and_the_traces_agree(index, adapters, authored):
    from labkit.rag.trace import QUESTIONS, trace_request

    text = _default_floor_findings(index, adapters, authored)
    assert "a floor of exactly 0.226712 still sends the backup question's best passage" in text
    assert "a floor of exactly 0.552792 still sends the timestamp question's cited passage" in text
    for question in (QUESTIONS["not_in_docs"], QUESTIONS["answered"]):  # the rule keeps a score equal to the floor
        best = index.store.similarity_search_with_score(question, k=1)[0][1]
        kept = trace_request(question, index, authored, select=lambda r, best=best: [d for d, s in r if s >= best])
        assert len(kept.trace.first("context_selected").data["chunk_ids"]) == 1


def test_score_floor_findings_print_ends_that_keep_their_claims_when_read_back(index, adapters, authored):
    """Each printed number, read back as a float and used as the exercise's floor, does what the line says.

    Rounded to 3 decimals the ends would swap: 0.227 drops the backup passage, 0.553 drops the cited one."""
    import math
    import re

    from labkit.course.trace_exercises import _at_least
    from labkit.rag.trace import QUESTIONS, trace_request

    text = _default_floor_findings(index, adapters, authored)
    ends = re.search(r"a floor of exactly ([0-9.]+) still sends .* a floor of exactly ([0-9.]+) still sends", text)
    drops = re.search(r"But a floor above ([0-9.]+) in that band drops", text)
    assert ends and drops
    low, high, rank2 = float(ends[1]), float(ends[2]), float(drops[1])

    def kept(question, floor):
        traced = trace_request(question, index, authored, select=_at_least(floor))
        return traced.trace.first("context_selected").data["chunk_ids"]

    backup, timestamp = QUESTIONS["not_in_docs"], QUESTIONS["answered"]
    assert kept(backup, low) and not kept(backup, math.nextafter(low, 1))  # low itself is outside the band
    assert "datetime-fromisoformat" in str(kept(timestamp, high))  # high itself is inside
    assert not kept(timestamp, math.nextafter(high, 1))
    assert len(kept(timestamp, rank2)) == 2 and len(kept(timestamp, math.nextafter(rank2, 1))) == 1
