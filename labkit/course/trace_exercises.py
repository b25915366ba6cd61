"""The checks of lesson 02a's four exercises, kept here so the notebook's check cells are one call each.

Each check runs the learner's function on requests traced for real (probes,
replayed runs, other indexes and context rules) and raises `AssertionError`
with what to fix. A check prints at most a verdict on predictions and never shows the expected answer;
`score_floor_findings` explains exercise B's answer, for printing after its check passed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from labkit.course.shortcuts import calls_to
from labkit.rag.trace import (
    QUESTIONS,
    RANKING_QUESTION,
    DocsIndex,
    Reply,
    ReplyCheck,
    ReplyRejected,
    Select,
    TracedRequest,
    load_docs_index,
    probe,
    trace_request,
)

ANSWERED, UNSUPPORTED = QUESTIONS["answered"], QUESTIONS["not_in_docs"]


#: The probes whose cited rank exercise A asks the learner to predict, before writing the function.
RANK_PREDICTIONS = (
    "timestamp question, reply cites zoneinfo",
    "ranking question, reply cites path-read-text and path-write-text",
    "timestamp question, only rank 1 kept, reply cites zoneinfo",
)


def check_cited_rank(
    cited_rank: Callable[[TracedRequest], int | None],
    predicted: dict[str, int | None],
    index: DocsIndex,
    adapter: Any,
) -> None:
    """Check exercise A: the predicted ranks first, then ``cited_rank(traced)``.

    ``predicted`` maps each name in `RANK_PREDICTIONS` to the rank ``cited_rank``
    should return for that probe, or None; ``...`` is not filled in. The check says
    only whether all three are right, and prints so before it runs the function.
    The function's cases are probes that cite other passages, drop candidates from
    the context or are rejected, and replayed requests from ``adapter`` (the
    authored run) that end without a cited source.
    """
    predicted_probes: dict[str, tuple[TracedRequest, int | None]] = dict(
        zip(
            RANK_PREDICTIONS,
            (
                (probe(ANSWERED, index, ["zoneinfo"]), 3),
                (probe(RANKING_QUESTION, index, ["path-read-text", "path-write-text"]), 1),
                (probe(ANSWERED, index, ["zoneinfo"], select=lambda r: [r[0][0]]), None),  # rejected
            ),
            strict=True,
        )
    )
    if any(predicted.get(name, ...) is ... for name in predicted_probes):
        raise NotImplementedError("hint: fill in PREDICTED_RANKS first: a rank, or None, for each probe")
    if any(predicted[name] != expected for name, (_, expected) in predicted_probes.items()):
        raise AssertionError(
            "the predictions do not all match the traces: for each probe, would the checks accept the reply, "
            "and where in its question's candidate table are the sources it cites?"
        )
    print("PREDICTED_RANKS is right for all three probes; checking cited_rank next")
    cases: dict[str, tuple[TracedRequest, int | None]] = {
        "ranking question, cites read-text": (probe(RANKING_QUESTION, index, ["path-read-text"]), 1),
        "ranking question, cites write-text": (probe(RANKING_QUESTION, index, ["path-write-text"]), 3),
        "timestamp question, cites both": (probe(ANSWERED, index, ["zoneinfo", "datetime-fromisoformat"]), 1),
        "backup question, cites datetime": (probe(UNSUPPORTED, index, ["datetime-fromisoformat"]), 2),
        "ranking question, top passage dropped": (
            probe(RANKING_QUESTION, index, ["path-write-text"], select=lambda r: [d for d, _ in r[1:]]),
            3,
        ),
        "rejected: not_in_docs citing shutil-copy2": (
            probe(UNSUPPORTED, index, ["shutil-copy2"], status="not_in_docs"),
            None,
        ),
        "timestamp question, replayed": (trace_request(ANSWERED, index, adapter), 1),
        "backup question, not_in_docs": (trace_request(UNSUPPORTED, index, adapter), None),
        "blank question": (trace_request(" ", index, adapter), None),
        **predicted_probes,
    }
    for name, (traced, expected) in cases.items():
        if cited_rank(traced) != expected:
            raise AssertionError(f"cited_rank is wrong for: {name}")


#: What can happen to a question's recorded reply when it is given again under a score floor.
FLOOR_FATES = ("app answers", "completed", "rejected")


def check_score_floor(
    floor_band: Callable[[dict[str, TracedRequest]], tuple[float, float] | None],
    predicted: dict[str, tuple[int, str]],
    floor: float,
    index: DocsIndex,
    adapters: dict[str, Any],
) -> dict[str, TracedRequest]:
    """Check exercise B; return the three requests traced at ``floor``, for `branch_table`.

    ``predicted`` maps "timestamp", "backup" and "ranking" to (passages kept,
    fate) at ``floor``, a fate from `FLOOR_FATES`. At the floor each question's
    recorded reply (from its adapter in ``adapters``) is given again as a probe:
    ``app answers`` when no passage is kept, else whether the checks completed or
    rejected it. The check says only whether all three are right, never how many or which,
    so trying values one question at a time does not find them. It grades the predictions
    first and prints their verdict, so a learner whose ``floor_band`` is still the stub
    learns it before the stub raises; a prediction still ``None`` is not finished.

    ``floor_band(traced)`` receives completed requests traced with the app's own
    rule, by name, at least one answered and one ``not_in_docs``. It must return
    ``(low, high)``: every floor above ``low`` and at most ``high`` keeps a passage
    of every source each answered reply cites and drops every passage of each
    ``not_in_docs`` request; or ``None`` when no floor does. The cases are the three
    traced questions, subsets of them and probes with other citations and statuses,
    sets with several ``not_in_docs`` requests of different best scores and a set
    whose band is empty because low equals high; a ``floor_band`` that calls
    `score_floor_findings` is refused.
    """
    if floor != 0.6:
        raise AssertionError("keep the floor as given: FLOOR = 0.6")
    questions = {"timestamp": ANSWERED, "backup": UNSUPPORTED, "ranking": RANKING_QUESTION}
    if any(None in tuple(predicted.get(name, (None,))) for name in questions):
        raise NotImplementedError("hint: fill in PREDICTED first: (passages kept, fate) for each question")
    at_floor = {name: _same_reply(q, index, adapters[name], _at_least(floor)) for name, q in questions.items()}
    if any(tuple(predicted.get(name, ())) != (len(_kept(t)), _fate(t)) for name, t in at_floor.items()):
        raise AssertionError(
            "the predictions do not all match what happens: work each one out from its candidate table "
            "(which scores reach the floor, and which sources the recorded reply cites)"
        )
    print(
        f"PREDICTED is right for all three questions at FLOOR = {floor}; checking floor_band next"
    )  # before floor_band can raise
    traced = {name: trace_request(q, index, adapters[name]) for name, q in questions.items()}
    cases = {name: (case, _expected_band(case)) for name, case in _band_cases(traced, index).items()}
    with calls_to(score_floor_findings, _expected_band) as called:
        wrong_cases = [name for name, (case, band) in cases.items() if not _same_band(floor_band(case), band)]
    if called:
        raise AssertionError(f"floor_band called labkit's {called[0]}: read the scores from the events yourself")
    if wrong_cases:
        raise AssertionError(f"floor_band is wrong for: {wrong_cases[0]}")
    return at_floor


def _at_least(min_score: float) -> Select:
    """A score floor: keep every passage whose score, as `retrieval_completed` records it (6 decimals), is >= it."""

    def keep(ranked: list[tuple[Any, float]]) -> list[Any]:
        return [doc for doc, score in ranked if round(float(score), 6) >= min_score]

    return keep


def _band_cases(traced: dict[str, TracedRequest], index: DocsIndex) -> dict[str, dict[str, TracedRequest]]:
    """The request sets `check_score_floor` gives ``floor_band``: the traced three, subsets and probes."""
    reworded = ANSWERED.replace("parse", "read")
    refused = {q: probe(q, index, status="not_in_docs") for q in (ANSWERED, RANKING_QUESTION, reworded)}
    return {
        "the three traced questions": traced,
        "ranking and backup": {"ranking": traced["ranking"], "backup": traced["backup"]},
        "timestamp and backup": {"timestamp": traced["timestamp"], "backup": traced["backup"]},
        "ranking cites both sources, backup": {
            "ranking": probe(RANKING_QUESTION, index, ["path-read-text", "path-write-text"]),
            "backup": traced["backup"],
        },
        "timestamp cites zoneinfo only, backup": {
            "timestamp": probe(ANSWERED, index, ["zoneinfo"]),
            "backup": traced["backup"],
        },
        "reworded refused, ranking answered": {"reworded": refused[reworded], "ranking": traced["ranking"]},
        "ranking refused, timestamp answered": {"ranking": refused[RANKING_QUESTION], "timestamp": traced["timestamp"]},
        "backup answered from shutil-copy2, timestamp refused": {
            "backup": probe(UNSUPPORTED, index, ["shutil-copy2"]),
            "timestamp": refused[ANSWERED],
        },
        # Two or three not_in_docs requests of different best scores, the highest neither first nor
        # last in every set: low is the highest of them, not the lowest, the first or the last.
        "backup and reworded refused, ranking answered": {
            "backup": traced["backup"],
            "reworded": refused[reworded],
            "ranking": traced["ranking"],
        },
        "timestamp, backup and reworded refused, ranking answered": {
            "timestamp": refused[ANSWERED],
            "backup": traced["backup"],
            "reworded": refused[reworded],
            "ranking": traced["ranking"],
        },
        # The same question answered and refused: low equals high, so no floor is above low and at most high.
        "timestamp answered and refused": {"answered": traced["timestamp"], "refused": refused[ANSWERED]},
    }


def _expected_band(traced: dict[str, TracedRequest]) -> tuple[float, float] | None:
    """The band `check_score_floor` expects of ``floor_band`` on ``traced``; it is not shown in the notebook."""
    needed, unneeded = [], []
    for request in traced.values():
        candidates = _event_data(request, "retrieval_completed")["candidates"]
        result = request.result or {}
        if result.get("status") == "answered":
            needed += [max(c["score"] for c in candidates if c["source_id"] == s) for s in result["source_ids"]]
        else:
            unneeded.append(max(c["score"] for c in candidates))
    low, high = max(unneeded), min(needed)
    return (low, high) if low < high else None


def _same_band(given: Any, expected: tuple[float, float] | None) -> bool:
    if expected is None or given is None:
        return given is None and expected is None
    try:
        low, high = given
        return math.isclose(low, expected[0], abs_tol=1e-9) and math.isclose(high, expected[1], abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


def score_floor_findings(at_floor: dict[str, TracedRequest], defaults: dict[str, TracedRequest], floor: float) -> str:
    """Say what exercise B's floor did, for the check cell to print once the check has passed.

    ``at_floor`` is what `check_score_floor` returns; ``defaults`` holds the same
    questions traced with the app's own rule (every candidate sent). The text
    names each question the floor changed, then the band of floors that, on these
    questions only, keeps a cited passage of every answered one and drops every
    passage of the others, and the best-scored passage of a cited source that a
    floor inside that band still drops.
    """
    lines = []
    needed: dict[str, float] = {}  # per answered question: the score a floor must not pass to keep every cited source
    unneeded: dict[str, float] = {}  # per other question: the best score, which a floor must pass to drop them all
    cited_passages: list[tuple[str, dict[str, Any]]] = []  # (question, candidate) for every cited source's passage
    for name, default in defaults.items():
        traced = at_floor[name]
        result = default.result
        answered = result is not None and result["status"] == "answered"
        candidates = _event_data(default, "retrieval_completed")["candidates"]
        if answered and result is not None:
            best = {s: max(c["score"] for c in candidates if c["source_id"] == s) for s in result["source_ids"]}
            needed[name] = min(best.values())
            cited_passages += [(name, c) for c in candidates if c["source_id"] in best]
        else:
            unneeded[name] = max(c["score"] for c in candidates)
        if _fate(traced) == "app answers" and answered:
            lines.append(
                f"The {name} question: no passage scores {floor} or more, so the app answers not_in_docs itself, "
                "although its documents answer it."
            )
        elif _fate(traced) == "rejected":
            kept = sorted(set(_event_data(traced, "context_selected")["source_ids"]))
            cited = json.loads(_event_data(traced, "model_reply_returned")["reply"])["source_ids"]
            lines.append(
                f"The {name} question keeps only {kept}. Its recorded reply, given again, cites {cited}, "
                "so the checks reject it. The best-scored passage need not be the one the answer needs."
            )
    if needed and unneeded:
        dropped, tightest = max(unneeded, key=unneeded.__getitem__), min(needed, key=needed.__getitem__)
        low, high = unneeded[dropped], needed[tightest]
        lines.append(
            f"An app has one floor for every question. On these {len(defaults)} questions, a floor above "
            f"{low} and at most {high} keeps a passage of every cited source and drops "
            f"every passage of the unanswered question{'s' if len(unneeded) > 1 else ''}."
        )
        lines.append(  # the scores as the trace records them, printed whole: rounding could swap the ends
            f"Its ends: a floor of exactly {low} still sends the {dropped} question's best passage "
            f"(a score equal to the floor is kept), so {low} is outside; a floor of exactly "
            f"{high} still sends the {tightest} question's cited passage, so {high} is inside."
        )
        inside = [(name, c) for name, c in cited_passages if low < c["score"] < high]
        if inside:
            name, c = max(inside, key=lambda pair: pair[1]["score"])
            lines.append(
                f"But a floor above {c['score']} in that band drops the {name} question's rank-{c['rank']} "
                f"passage of {c['source_id']}: a band that keeps each cited source can still drop a passage "
                "the answer relies on."
            )
    return "\n".join("- " + line for line in lines)


def _event_data(traced: TracedRequest, kind: str) -> dict[str, Any]:
    event = traced.trace.first(kind)
    if event is None:
        raise AssertionError(f"the request {traced.question!r} has no {kind} event: pass requests from trace_request")
    return event.data


def _same_reply(question: str, index: DocsIndex, adapter: Any, select: Select) -> TracedRequest:
    recorded = trace_request(question, index, adapter).trace.first("model_reply_returned")
    if recorded is None:
        raise AssertionError(f"no recorded reply for {question!r}: connect the run that answers it")
    reply = json.loads(recorded.data["reply"])
    return probe(question, index, reply["source_ids"], status=reply["status"], answer=reply["answer"], select=select)


def _fate(traced: TracedRequest) -> str:
    if traced.trace.first("model_skipped") is not None:
        return "app answers"
    return "completed" if traced.outcome == "completed" else "rejected"


def _kept(traced: TracedRequest) -> list[str]:
    selected = traced.trace.first("context_selected")
    return list(selected.data["chunk_ids"]) if selected else []


#: The requests whose outcome under the learner's word check exercise D asks them to predict.
WORD_CHECK_PREDICTIONS = (
    "timestamp question, the probe that contradicts its source",
    "ranking question, 'Choose utf-8 explicitly.' citing path-write-text",
    "timestamp question, captured run",
)
#: What a request traced with an extra check can end as.
WORD_CHECK_OUTCOMES = ("completed", "reply_rejected")
CONTRADICTION = "datetime.fromisoformat() rejects every string ending in Z; strip the Z first."


def check_cited_words(
    cited_words_check: ReplyCheck,
    predicted: dict[str, str],
    index: DocsIndex,
    authored: Any,
    captured: Any,
    ranking: Any,
) -> None:
    """Check exercise D: the predicted outcomes first, then ``cited_words_check(reply, selected)``.

    ``predicted`` maps each name in `WORD_CHECK_PREDICTIONS` to the outcome (one of
    `WORD_CHECK_OUTCOMES`) of that request traced with the learner's check as
    ``extra_check``; ``...`` is not filled in. The check says only whether all
    three are right, and prints so before it runs the function. The function's
    cases are probes (several sources, words only in a passage not sent or in
    another source's passage, upper case, punctuation around words, only short
    words shared) and the replayed replies of the ``authored``, ``ranking`` and
    ``captured`` runs; each must end as the course's own word check makes it end.
    A function that refuses by raising anything but `ReplyRejected`, or calls labkit's `cited_words` or
    `content_words`, is refused.
    """
    diagnosed = dict(
        zip(
            WORD_CHECK_PREDICTIONS,
            (
                lambda c: probe(ANSWERED, index, ["datetime-fromisoformat"], answer=CONTRADICTION, extra_check=c),
                lambda c: probe(
                    RANKING_QUESTION, index, ["path-write-text"], answer="Choose utf-8 explicitly.", extra_check=c
                ),
                lambda c: trace_request(ANSWERED, index, captured, extra_check=c),
            ),
            strict=True,
        )
    )
    if any(predicted.get(name, ...) is ... for name in diagnosed):
        raise NotImplementedError("hint: fill in PREDICTED_OUTCOMES first: 'completed' or 'reply_rejected' for each")
    if any(predicted[name] != make(cited_words).outcome for name, make in diagnosed.items()):
        raise AssertionError(
            "the predictions do not all match the traces: for each reply, does the word rule apply to it, "
            "and which passages sent belong to the sources it cites?"
        )
    print("PREDICTED_OUTCOMES is right for all three requests; checking cited_words_check next")

    def ts(sources: list[str], answer: str, status: str = "answered") -> Callable[[ReplyCheck], TracedRequest]:
        return lambda c: probe(ANSWERED, index, sources, status=status, answer=answer, extra_check=c)

    def rk(sources: list[str], answer: str) -> Callable[[ReplyCheck], TracedRequest]:
        return lambda c: probe(RANKING_QUESTION, index, sources, answer=answer, extra_check=c)

    cases: dict[str, Callable[[ReplyCheck], TracedRequest]] = {
        "timestamp question, authored run": lambda c: trace_request(ANSWERED, index, authored, extra_check=c),
        "ranking question, authored run": lambda c: trace_request(RANKING_QUESTION, index, ranking, extra_check=c),
        "backup question, authored run": lambda c: trace_request(UNSUPPORTED, index, authored, extra_check=c),
        "backup question, captured run": lambda c: trace_request(UNSUPPORTED, index, captured, extra_check=c),
        "cites zoneinfo, answers with fromisoformat": ts(["zoneinfo"], "Use fromisoformat."),
        "cites both sources, only one shares a word": ts(["datetime-fromisoformat", "zoneinfo"], "Use fromisoformat."),
        "cites write-text with read-text's words": rk(["path-write-text"], "Portable programs need it."),
        "cites read-text and write-text, both share words": rk(["path-read-text", "path-write-text"], "Pass encoding."),
        "upper case": ts(["datetime-fromisoformat"], "PYTHON 3.11 ACCEPTS IT."),
        "punctuation around the word": ts(["datetime-fromisoformat"], "Call fromisoformat(date_string)."),
        "only short words shared": ts(["zoneinfo"], "It is in the docs."),
        "one four-letter word shared": ts(["zoneinfo"], "It is a zone."),
        "backup answered from shutil-copy2": lambda c: probe(
            UNSUPPORTED, index, ["shutil-copy2"], answer="Backups are kept for 30 days.", extra_check=c
        ),
        "not_in_docs probe": ts([], "Nothing about fromisoformat here.", status="not_in_docs"),
        **diagnosed,
    }
    expected = {name: make(cited_words) for name, make in cases.items()}
    wrong: str | None = None
    with calls_to(cited_words, content_words) as called:
        for name, make in cases.items():
            try:
                got = make(cited_words_check)
            except NotImplementedError:
                raise
            except Exception as exc:  # a refusal must be a ReplyRejected, which the app records
                raise AssertionError(
                    f"cited_words_check raised {type(exc).__name__} for: {name}; refuse a reply with ReplyRejected"
                ) from exc
            if wrong is None and (got.outcome, got.trace.kinds()) != (
                expected[name].outcome,
                expected[name].trace.kinds(),
            ):
                wrong = name
    if called:
        raise AssertionError(f"cited_words_check called labkit's {called[0]}: compare the words yourself")
    if wrong is not None:
        raise AssertionError(f"cited_words_check is wrong for: {wrong}")


def content_words(text: str) -> set[str]:
    """The lower-cased runs of 4 or more letters, digits or underscores in ``text``."""
    return set(re.findall(r"\w{4,}", text.lower()))


def cited_words(reply: Reply, selected: list[Any]) -> None:
    """The course's word check: every source an answered reply cites shares a content word with its answer."""
    if reply.status != "answered":
        return
    words = content_words(reply.answer)
    for source in reply.source_ids:
        if not any(words & content_words(d.page_content) for d in selected if d.metadata["id"] == source):
            raise ReplyRejected(f"the answer shares no content word with the passages of {source} sent")


#: The moves exercise C names, in the order the app runs them; None says the request ended right.
MOVES = ("search", "context", "model")


def first_wrong_move(traced: TracedRequest, answer_source: str | None) -> str | None:
    """Return the first move whose output was wrong for this request, or None if it ended right.

    ``answer_source`` is the source id whose passage answers the question, or None
    when the documents cannot answer it. A move that never ran cannot be wrong: a
    replay refused after the context dropped the answer is the context's fault.
    """
    ended = traced.trace.first("request_completed")
    status = ended.data["status"] if ended else None
    if answer_source is None:
        return None if status == "not_in_docs" else "model"
    searched = traced.trace.first("retrieval_completed")
    if searched is None or answer_source not in [c["source_id"] for c in searched.data["candidates"]]:
        return "search"
    packed = traced.trace.first("context_selected")
    if packed is None or answer_source not in packed.data["source_ids"]:
        return "context"
    checked = traced.trace.first("reply_checked")
    cited = checked.data["source_ids"] if checked else []
    return None if status == "answered" and answer_source in cited else "model"


def _move_cases(
    index: DocsIndex, authored: Any, captured: Any, ranking: Any
) -> dict[str, tuple[Callable[[], TracedRequest], str | None]]:
    """Exercise C's requests: name -> (how to trace it, the source that answers its question or None)."""
    timestamp, write_text = "datetime-fromisoformat", "path-write-text"
    empty = load_docs_index(empty=True)

    def without_answer(ranked: list[tuple[Any, float]]) -> list[Any]:
        return [doc for doc, _ in ranked if doc.metadata["id"] != timestamp]

    return {
        "timestamp question, authored run": (lambda: trace_request(ANSWERED, index, authored), timestamp),
        "timestamp question, captured run": (lambda: trace_request(ANSWERED, index, captured), timestamp),
        "backup question, authored run": (lambda: trace_request(UNSUPPORTED, index, authored), None),
        "backup question, captured run": (lambda: trace_request(UNSUPPORTED, index, captured), None),
        "ranking question, authored run": (lambda: trace_request(RANKING_QUESTION, index, ranking), write_text),
        "ranking question, k=1": (lambda: trace_request(RANKING_QUESTION, index, ranking, k=1), write_text),
        "timestamp question, empty index": (lambda: trace_request(ANSWERED, empty, authored), timestamp),
        "timestamp question, a rule dropping its passage": (
            lambda: trace_request(ANSWERED, index, authored, select=without_answer),
            timestamp,
        ),
        "probe citing json-dumps, never sent": (lambda: probe(ANSWERED, index, ["json-dumps"]), timestamp),
        "probe citing zoneinfo only": (lambda: probe(ANSWERED, index, ["zoneinfo"], answer="Use zoneinfo."), timestamp),
        "probe contradicting its passage": (
            lambda: probe(ANSWERED, index, [timestamp], answer=CONTRADICTION),
            timestamp,
        ),
        "backup question, probe answering from shutil-copy2": (
            lambda: probe(UNSUPPORTED, index, ["shutil-copy2"], answer="Backups are kept for 30 days."),
            None,
        ),
    }


#: The two captured traces exercise C asks the learner to diagnose by reading, before writing the function.
DIAGNOSES = ("timestamp question, captured run", "backup question, captured run")


def check_first_wrong_move(
    first_wrong_move_fn: Callable[[TracedRequest, str | None], str | None],
    diagnosed: dict[str, Any],
    index: DocsIndex,
    authored: Any,
    captured: Any,
    ranking: Any,
) -> dict[str, str | None]:
    """Check exercise C: the learner's diagnoses first, then ``first_wrong_move(traced, answer_source)``.

    ``diagnosed`` maps each name in `DIAGNOSES` to the move (one of `MOVES`, or None)
    the learner read off that captured trace; ``...`` is not filled in. The check says
    only whether both are right, and prints so before it runs the function. The
    function's requests: the authored, captured and ranking runs' replies, the ranking
    question searched with k=1, an empty index, a context rule that drops the answer's
    passage, and probes that cite a source never sent, the wrong source, the right
    source with a false answer, or answer a question the documents cannot. Each must
    get the course's verdict. A function that calls labkit's `first_wrong_move` is refused.
    """
    cases = _move_cases(index, authored, captured, ranking)
    traced = {name: (make(), source) for name, (make, source) in cases.items()}
    if any(diagnosed.get(name, ...) is ... for name in DIAGNOSES):
        raise NotImplementedError("hint: fill in DIAGNOSED first: the move that failed in each captured trace")
    if any(diagnosed[name] != first_wrong_move(*traced[name]) for name in DIAGNOSES):
        raise AssertionError(
            "the diagnoses do not both match the traces: for each, was the answer's source a candidate, "
            "was it sent, and how did the request end?"
        )
    print("DIAGNOSED is right for both captured traces; checking first_wrong_move next")
    verdicts: dict[str, str | None] = {}
    with calls_to(first_wrong_move) as called:
        for name, (request, source) in traced.items():
            verdicts[name] = first_wrong_move_fn(request, source)
    if called:
        raise AssertionError("first_wrong_move called labkit's first_wrong_move: read the events yourself")
    outside = sorted({str(v) for v in verdicts.values() if v is not None and v not in MOVES})
    if outside:
        raise AssertionError(f"first_wrong_move returned {outside}: return one of {MOVES}, or None")
    wrong = [name for name, (request, source) in traced.items() if verdicts[name] != first_wrong_move(request, source)]
    if wrong:
        raise AssertionError(
            f"first_wrong_move is wrong for {len(wrong)} of {len(traced)} requests, among them: {wrong[0]}. "
            "Walk the moves in order; a move that never ran cannot be wrong"
        )
    return verdicts
