"""Lesson 02a's ranking example and its run: ``python -m labkit.rag.ranking --authored``.

For `RANKING_QUESTION` ("Which pathlib method writes a string to a file in
UTF-8?") the two best-scored passages describe ``Path.read_text``; the passage
on ``Path.write_text``, which the answer needs, ranks third. The reply of the
authored run cites that third passage and uses nothing from the others. The run is apart from ``02-rag-authored``
so that the runs recorded before this question existed keep their bindings and
fixtures; lesson 03 replays those two questions only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from labkit.rag.trace import (
    RANKING_QUESTION,
    SETTINGS,
    TracedRequest,
    load_docs_index,
    ranking_embeddings_path,
    trace_request,
)
from labkit.rag.trace import run_fixtures as docs_fixtures

LESSON = "02"
RUN_AUTHORED = "02-rag-ranking-authored"
AUTHORED_DESCRIPTION = (
    "A reply written by the course for lesson 02a's ranking example: the question's best-scored passages "
    "describe reading text, and the reply cites the third-ranked passage, on writing text. No model produced it."
)
AUTHORED_REPLIES = {
    RANKING_QUESTION: json.dumps(
        {
            "status": "answered",
            "answer": "Path.write_text(data, encoding=...) opens the file in text mode, writes the string data "
            "and closes the file again; its encoding argument names the encoding to write.",
            "source_ids": ["path-write-text"],
        }
    ),
}


def run_fixtures() -> list[Path]:
    """Return the files the ranking request depends on: the corpus and both files of saved vectors."""
    return [*docs_fixtures(), ranking_embeddings_path()]


def make_requests(adapter: Any) -> list[TracedRequest]:
    """Ask the ranking question through `trace_request`: what the ranking run holds."""
    return [trace_request(RANKING_QUESTION, load_docs_index(), adapter)]


def write_authored(*, runs_dir: Path | None = None, created_at: str = "2026-11-29T00:00:00Z") -> Path:
    """Rewrite the ranking run from `AUTHORED_REPLIES`, refusing a reply the app would not accept."""
    from labkit.authored import AuthoringAdapter, authored_run, write_authored_run

    adapter = AuthoringAdapter(AUTHORED_REPLIES, settings=SETTINGS)
    stopped = [t for t in make_requests(adapter) if t.outcome != "completed"]
    if stopped:
        raise ValueError(f"the authored reply did not complete: {stopped[0].outcome}: {stopped[0].error}")
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


def main(argv: list[str] | None = None) -> int:
    """Command line: rewrite the ranking run from the reply the course wrote (no model involved)."""
    parser = argparse.ArgumentParser(prog="python -m labkit.rag.ranking", description=__doc__.splitlines()[0])
    parser.add_argument("--authored", action="store_true", required=True, help=f"rewrite {RUN_AUTHORED} (no model)")
    parser.parse_args(argv)
    from labkit.errors import LabkitError
    from labkit.paths import relative_to_root

    try:
        path = write_authored()
    except (LabkitError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(relative_to_root(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
