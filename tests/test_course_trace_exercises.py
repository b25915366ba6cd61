"""Lesson 02a's exercise checks: each passes a correct answer and refuses a wrong one and a shortcut."""

import re

import pytest

from labkit.boundary import connect
from labkit.course.trace_exercises import (
    RANK_PREDICTIONS,
    WORD_CHECK_PREDICTIONS,
    check_cited_rank,
    check_cited_words,
    check_score_floor,
    cited_words,
)
from labkit.rag.ranking import RUN_AUTHORED as RUN_RANKING
from labkit.rag.trace import (
    QUESTIONS,
    RUN_AUTHORED,
    RUN_CAPTURED,
    SETTINGS,
    ReplyRejected,
    load_corpus,
    load_docs_index,
    trace_request,
)


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


def cited_words_check(reply, selected):
    if reply.status != "answered":
        return
    words = set(re.findall(r"\w{4,}", reply.answer.lower()))
    for source in reply.source_ids:
        texts = [d.page_content.lower() for d in selected if d.metadata["id"] == source]
        if not any(words & set(re.findall(r"\w{4,}", text)) for text in texts):
            raise ReplyRejected(f"{source} shares no word with the answer")


OUTCOMES = dict(zip(WORD_CHECK_PREDICTIONS, ("completed", "reply_rejected", "completed"), strict=True))


@pytest.fixture(scope="module")
def word_runs(index, authored, captured, adapters):
    return index, authored, captured, adapters["ranking"]


def test_cited_words_check_grades_the_predictions_before_the_function(word_runs, capsys):
    def stub(reply, selected):
        raise NotImplementedError("hint: which passages may a cited source's words come from?")

    with pytest.raises(NotImplementedError, match="fill in PREDICTED_OUTCOMES"):  # the stub's predictions
        check_cited_words(stub, {name: ... for name in OUTCOMES}, *word_runs)
    for wrong in ("reply_rejected", "completed"):  # the contradiction refused; the utf-8 reply accepted
        guess = dict(zip(WORD_CHECK_PREDICTIONS, (wrong, wrong, "completed"), strict=True))
        with pytest.raises(AssertionError, match=r"^the predictions do not all match"):
            check_cited_words(cited_words_check, guess, *word_runs)
    assert "PREDICTED_OUTCOMES is right" not in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="which passages"):  # right predictions, stub function
        check_cited_words(stub, OUTCOMES, *word_runs)
    assert "PREDICTED_OUTCOMES is right for all three requests" in capsys.readouterr().out


def test_cited_words_check_passes_a_check_per_cited_source_over_the_passages_sent(word_runs):
    check_cited_words(cited_words_check, OUTCOMES, *word_runs)


def pooled(reply, selected):  # shortcut: any passage sent, whatever its source
    words = set(re.findall(r"\w{4,}", reply.answer.lower()))
    if reply.status == "answered" and not any(
        words & set(re.findall(r"\w{4,}", d.page_content.lower())) for d in selected
    ):
        raise ReplyRejected("no word shared")


def never_refuses(reply, selected):  # shortcut: the checks already ran
    return None


def whole_document(reply, selected):  # wrong: the source's whole summary, not the passages sent
    docs = {d.metadata["id"]: d.page_content.lower() for d in load_corpus()}
    words = set(re.findall(r"\w{4,}", reply.answer.lower()))
    for source in reply.source_ids if reply.status == "answered" else []:
        if not words & set(re.findall(r"\w{4,}", docs[source])):
            raise ReplyRejected("no word shared")


def case_sensitive(reply, selected):  # wrong: 'PYTHON' is not 'Python'
    words = set(re.findall(r"\w{4,}", reply.answer))
    for source in reply.source_ids if reply.status == "answered" else []:
        if not any(words & set(re.findall(r"\w{4,}", d.page_content)) for d in selected if d.metadata["id"] == source):
            raise ReplyRejected("no word shared")


def every_word(reply, selected):  # wrong: 'it' and 'the' count as shared words
    words = set(re.findall(r"\w+", reply.answer.lower()))
    for source in reply.source_ids if reply.status == "answered" else []:
        texts = [d.page_content.lower() for d in selected if d.metadata["id"] == source]
        if not any(words & set(re.findall(r"\w+", text)) for text in texts):
            raise ReplyRejected("no word shared")


def five_letters(reply, selected):  # wrong: a content word is 4 or more characters, not 5
    words = set(re.findall(r"\w{5,}", reply.answer.lower()))
    for source in reply.source_ids if reply.status == "answered" else []:
        texts = [d.page_content.lower() for d in selected if d.metadata["id"] == source]
        if not any(words & set(re.findall(r"\w{5,}", text)) for text in texts):
            raise ReplyRejected("no word shared")


def value_error(reply, selected):  # wrong: refuses with an error the app does not record
    try:
        cited_words_check(reply, selected)
    except ReplyRejected as exc:
        raise ValueError(str(exc)) from exc


@pytest.mark.parametrize(
    ("attempt", "message"),
    [
        (pooled, "wrong for: cites zoneinfo, answers with fromisoformat"),
        (never_refuses, "wrong for: cites zoneinfo, answers with fromisoformat"),
        (whole_document, "wrong for: ranking question, 'Choose utf-8 explicitly.'"),
        (case_sensitive, "wrong for: upper case"),
        (every_word, "wrong for: only short words shared"),
        (five_letters, "wrong for: one four-letter word shared"),
        (value_error, "raised ValueError"),
        (cited_words, "called labkit's labkit.course.trace_exercises.cited_words"),
    ],
)
def test_cited_words_check_refuses_shortcuts_and_wrong_rules(word_runs, attempt, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_cited_words(attempt, OUTCOMES, *word_runs)


def test_an_extra_check_leaves_replay_bound_to_the_same_request(word_runs):
    index, authored, captured, _ranking = word_runs
    for adapter in (authored, captured):  # the check changes nothing sent, so the recorded reply still answers
        plain = trace_request(QUESTIONS["answered"], index, adapter)
        checked = trace_request(QUESTIONS["answered"], index, adapter, extra_check=cited_words)
        assert checked.outcome == plain.outcome == "completed"
        assert checked.trace.first("reply_checked").data["checks"][-1] == "cited_words"


# --- exercise D: which move failed? -------------------------------------------------------------------------


def _walk_the_moves(traced, answer_source):
    ended = traced.trace.first("request_completed")
    status = ended.data["status"] if ended else None
    if answer_source is None:
        return None if status == "not_in_docs" else "model"
    if answer_source not in [c["source_id"] for c in traced.trace.first("retrieval_completed").data["candidates"]]:
        return "search"
    if answer_source not in traced.trace.first("context_selected").data["source_ids"]:
        return "context"
    checked = traced.trace.first("reply_checked")
    return (
        None if status == "answered" and answer_source in (checked.data["source_ids"] if checked else []) else "model"
    )


DIAGNOSED = {"timestamp question, captured run": "model", "backup question, captured run": "model"}


@pytest.mark.parametrize(
    ("diagnosed", "error", "message"),
    [
        ({}, NotImplementedError, "fill in DIAGNOSED"),  # the stub's ...
        ({**DIAGNOSED, "backup question, captured run": ...}, NotImplementedError, "fill in DIAGNOSED"),
        ({**DIAGNOSED, "backup question, captured run": "search"}, AssertionError, "do not both match"),
        ({**DIAGNOSED, "timestamp question, captured run": None}, AssertionError, "do not both match"),
    ],
)
def test_the_failed_move_check_grades_the_diagnoses_before_the_function(
    index, authored, captured, adapters, diagnosed, error, message, capsys
):
    from labkit.course.trace_exercises import check_first_wrong_move

    with pytest.raises(error, match=message):
        check_first_wrong_move(_walk_the_moves, diagnosed, index, authored, captured, adapters["ranking"])
    assert "checking first_wrong_move next" not in capsys.readouterr().out


def test_the_failed_move_check_passes_a_walk_of_the_moves_in_order(index, authored, captured, adapters):
    from labkit.course.trace_exercises import check_first_wrong_move

    verdicts = check_first_wrong_move(_walk_the_moves, DIAGNOSED, index, authored, captured, adapters["ranking"])
    assert verdicts["timestamp question, captured run"] == "model"
    assert verdicts["timestamp question, empty index"] == "search"
    assert verdicts["ranking question, k=1"] == "search"
    assert verdicts["timestamp question, a rule dropping its passage"] == "context"
    assert verdicts["probe contradicting its passage"] is None  # a trace cannot see that a reply is false
    assert set(verdicts.values()) == {None, "search", "context", "model"}


def _outcome_only(traced, answer_source):
    return None if traced.outcome == "completed" else "model"


def _context_first(traced, answer_source):
    if answer_source is not None and answer_source not in traced.trace.first("context_selected").data["source_ids"]:
        return "context"
    return _walk_the_moves(traced, answer_source)


def _not_in_docs_is_fine(traced, answer_source):
    verdict = _walk_the_moves(traced, answer_source)
    ended = traced.trace.first("request_completed")
    return None if verdict == "model" and ended and ended.data["status"] == "not_in_docs" else verdict


def _course_rule(traced, answer_source):
    from labkit.course.trace_exercises import first_wrong_move

    return first_wrong_move(traced, answer_source)


@pytest.mark.parametrize(
    ("attempt", "message"),
    [
        (lambda traced, answer_source: None, "wrong for"),  # everything ended right
        (_outcome_only, "wrong for"),  # the shortcut: the outcome alone
        (_context_first, "wrong for"),  # an empty index blamed on the context
        (_not_in_docs_is_fine, "wrong for"),  # the captured timestamp reply taken as right
        (lambda traced, answer_source: "retrieval", "return one of"),  # a move the task does not name
        (_course_rule, "called labkit's first_wrong_move"),
    ],
)
def test_the_failed_move_check_refuses_wrong_rules_and_shortcuts(index, authored, captured, adapters, attempt, message):
    from labkit.course.trace_exercises import check_first_wrong_move

    with pytest.raises(AssertionError, match=message):
        check_first_wrong_move(attempt, DIAGNOSED, index, authored, captured, adapters["ranking"])
