"""The recorded runs of lesson 02 part B, and how to make them again: ``python -m labkit.rag.runs``.

Both runs hold the same kind of request: for a question, the RAG request of
``answer_with_rag(question, k=5)`` (when reranking selected any context) and
the no-retrieval baseline request: 59 requests for the 30 questions. Both runs cover every question (recording
the captured run took 25.5 minutes with the local model on one thread, on two cores shared with a load average
of about 15; its prompts hold five 800-character passages).
``--authored`` rewrites the authored run
from `labkit.rag.replies` (no model involved); ``--captured`` starts the
bundled local model (the ``[local]`` extra) and records a new captured run.
Lesson 02's entry in ``labkit.course.lessons.RECORDABLE`` belongs to part A, so part B
calls the lower-level functions itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.rag.answer import CANDIDATES, SETTINGS, FilingsRAG, naive_answer, naive_key
from labkit.rag.metrics import Retrieval

LESSON = "02"
RUN_AUTHORED = "02-filings-authored"
RUN_CAPTURED = "02-filings-smollm2"
K = 5
AUTHORED_DESCRIPTION = (
    "Replies written by the course for lesson 02 part B, to show the intended behaviour: grounded answers that "
    "cite the selected pages (with a few deliberate mistakes) and a no-retrieval baseline that refuses or guesses. "
    "No model produced them."
)
CAPTURED_DESCRIPTION = (
    "Replies captured from a real model for lesson 02 part B: every question through answer_with_rag(k=5) "
    "and through the no-retrieval baseline, schema-constrained JSON."
)


def run_fixtures() -> list[Path]:
    """Return the files the requests depend on: the filings, their manifest, the questions and the saved vectors."""
    from labkit.rag.index import embeddings_path, filings_folder, load_manifest

    folder = filings_folder()
    return [folder / e.file for e in load_manifest(folder).values()] + [
        folder / "filings.json",
        folder / "questions.jsonl",
        embeddings_path(),
    ]


@dataclass
class LessonRun:
    """What the lesson's requests produced: answer records per question for each path, and each failure."""

    rag: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """financebench_id -> the answer_with_rag record, or None when the trial failed."""
    naive: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """financebench_id -> the baseline record, or None when the trial failed."""
    errors: dict[str, dict[str, str]] = field(default_factory=lambda: {"rag": {}, "naive": {}})
    """path -> financebench_id -> why the trial failed (invalid reply, outside citation)."""
    retrieval: dict[str, Retrieval] = field(default_factory=dict)
    """financebench_id -> what the RAG path's retrieval returned, for every question whatever generation did."""


def make_requests(adapter: Any, *, questions: list[Any] | None = None, index: Any = None) -> LessonRun:
    """Ask every question through the RAG path and the baseline; a ValueError is kept as a failed trial.

    Each question's retrieval is recorded first (``run.retrieval``), apart from the trials.
    """
    from labkit.rag.index import open_index
    from labkit.rag.questions import load_questions

    questions = questions or load_questions()
    index = index or open_index({q.doc_name for q in questions})
    app = FilingsRAG(index, adapter)
    run = LessonRun()
    for q in questions:
        # Retrieval is deterministic and calls no model: record it apart, so a failed reply cannot hide it.
        candidates, ranked = app.retrieve(q.question, k=CANDIDATES)
        run.retrieval[q.financebench_id] = Retrieval(
            ranked=tuple(s["citation_id"] for s in ranked),
            k=K,
            candidates=tuple(c["citation_id"] for c in candidates),
        )
        for path, ask in (
            ("rag", lambda q=q: app.answer_with_rag(q.question, k=K)),
            ("naive", lambda q=q: naive_answer(q.question, adapter)),
        ):
            try:
                getattr(run, path)[q.financebench_id] = ask()
            except ValueError as exc:
                getattr(run, path)[q.financebench_id] = None
                run.errors[path][q.financebench_id] = f"{type(exc).__name__}: {exc}"
    return run


def authored_replies() -> dict[str, str]:
    """Return request key -> reply text of the authored run (the question for RAG, ``naive: `` + question)."""
    from labkit.rag.questions import load_questions
    from labkit.rag.replies import NAIVE_REPLIES, RAG_REPLIES

    replies = {}
    for q in load_questions():
        short = q.financebench_id.removeprefix("labkit_filings_")
        for key, table in ((q.question, RAG_REPLIES), (naive_key(q.question), NAIVE_REPLIES)):
            if short in table:
                status, answer, cited = table[short]
                replies[key] = json.dumps({"status": status, "answer": answer, "cited_pages": list(cited)})
    return replies


def write_authored(*, runs_dir: Path | None = None, created_at: str = "2026-11-29T00:00:00Z") -> Path:
    """Rewrite the authored run by running the lesson's requests against the authored replies."""
    from labkit.authored import AuthoringAdapter, authored_run, write_authored_run

    adapter = AuthoringAdapter(authored_replies(), settings=SETTINGS)
    result = make_requests(adapter)
    failed = {p: e for p, e in result.errors.items() if e}
    if failed:
        raise ValueError(f"authored replies broke the reply contract: {failed}; fix labkit/rag/replies.py")
    run = authored_run(
        run_id=RUN_AUTHORED,
        lesson=LESSON,
        description=AUTHORED_DESCRIPTION,
        created_at=created_at,
        settings=SETTINGS,
        fixtures=run_fixtures(),
        exchanges=adapter.exchanges,
    )
    return write_authored_run(run, runs_dir=runs_dir)


def record_captured(*, run_id: str = RUN_CAPTURED, runs_dir: Path | None = None) -> Path:
    """Start the bundled local model, make the lesson's requests in record mode and save a captured run."""
    from labkit.boundary import connect
    from labkit.serve import local_model_server

    with local_model_server(threads=1) as server:  # one thread is much faster on a busy two-core machine
        os.environ.update(LABKIT_BASE_URL=server.base_url, LABKIT_MODEL=server.model_id)
        boundary = connect(run_id, lesson=LESSON, settings=SETTINGS, mode="record")
        make_requests(boundary)
        return boundary.save(
            description=CAPTURED_DESCRIPTION + f" Model {boundary.model} at {boundary.endpoint_kind}.",
            fixtures=run_fixtures(),
            run_id=run_id,
            runs_dir=runs_dir,
        )


def main(argv: list[str] | None = None) -> int:
    """Command line: rewrite the authored run, or record a captured run against the bundled local model."""
    parser = argparse.ArgumentParser(prog="python -m labkit.rag.runs", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--authored", action="store_true", help=f"rewrite {RUN_AUTHORED} (no model)")
    group.add_argument("--captured", action="store_true", help="record a new captured run (needs the [local] extra)")
    parser.add_argument("--run-id", default=RUN_CAPTURED, help=f"id of the captured run (default {RUN_CAPTURED})")
    args = parser.parse_args(argv)
    from labkit.errors import LabkitError
    from labkit.paths import relative_to_root

    try:
        path = write_authored() if args.authored else record_captured(run_id=args.run_id)
    except LabkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    print(relative_to_root(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
