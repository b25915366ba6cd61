"""Lesson 02's report card (part B, the filings pipeline): correctness, faithfulness and page-hit@k.

RULE: the RAG path answers at least as many questions correctly as the baseline's. A question the application
declined itself (``insufficient_evidence``: nothing was selected, no model was asked) is never counted as a
model's correct answer, as in the lesson's table.
"""

from __future__ import annotations

from typing import Any

from labkit.rag import runs as RUNS
from labkit.scorecard import Card, Verdict, at_least, share

LESSON = "02"
TITLE = "filings RAG (part B)"
RULE = "the RAG path answers at least as many questions correctly as the baseline"
CORRECT = "RAG answers correct"


def grade(boundary: Any) -> Card:
    """Ask every filings question through ``boundary`` (RAG path and no-retrieval baseline) and grade both."""
    from labkit.rag.metrics import APP_REFUSAL
    from labkit.rag.metrics import grade as grade_path
    from labkit.rag.questions import load_questions

    questions = load_questions()
    run = RUNS.make_requests(boundary, questions=questions)
    rag = grade_path(questions, run.rag, path="rag", retrieval=run.retrieval, errors=run.errors["rag"])
    naive = grade_path(questions, run.naive, path="naive", errors=run.errors["naive"])
    asked = rag[rag["status"] != APP_REFUSAL]  # an answer the application gave without asking is no model's
    faithful = rag["faithful"].dropna()
    hits = rag["page_hit"].dropna()
    measures = [
        share(CORRECT, int((asked["correctness"] == "correct").sum()), len(rag)),
        share("no-retrieval answers correct", int((naive["correctness"] == "correct").sum()), len(naive)),
        share("RAG answers faithful", int(faithful.sum()), len(faithful)),
        share("page-hit@5", int(hits.sum()), len(hits)),
        share("RAG trials failed", int((rag["status"] == "failed").sum()), len(rag), lower_is_better=True),
    ]
    return Card(measures, evidence=rag)


def decide(candidate: Card, baseline: Card) -> Verdict:
    """Apply the lesson's rule."""
    return Verdict(*at_least(CORRECT, candidate, baseline))
