"""Lesson 05's prompt test: the lesson's requests with the ``tool_call`` example corrected.

The lesson's `SYSTEM` prompt writes ``get_refund`` in the value slot of its
``tool_args`` example, and every reply of the temperature-0 captured run carries
``"intent": "get_refund"``. `SYSTEM_FIXED` differs from `SYSTEM` in that one
sentence: the value is left open and the three intents are named as choices.
Two captured runs test the diagnosis on one runtime (the ``local`` extra's
server): `RUN_BASELINE` holds the lesson's unchanged requests, `RUN_CAPTURED` the
same requests sent with `SYSTEM_FIXED`. Between them the prompt is the only
variable; the lesson's first captured run was served by another runtime. What they
show: with the fix the count question gets a valid ``tool_call``, but the
cancellation count still names ``get_refund``, so the example is not the whole cause.

Record both again with ``python -m labkit.system.prompt_fix`` (a served model in
``LABKIT_BASE_URL`` / ``LABKIT_MODEL``, as for ``labkit record``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from labkit.system.contract import SETTINGS
from labkit.system.runs import CAPTURED_DESCRIPTION as LESSON_DESCRIPTION
from labkit.system.runs import make_requests as lesson_requests
from labkit.system.runs import run_fixtures as lesson_fixtures
from labkit.system.workflow import SYSTEM

#: The sentence of `SYSTEM` suspected of the captured replies' shared ``get_refund``.
BUGGED_SENTENCE = (
    'To count tickets: kind "tool_call" and tool_args '
    '{"intent": "get_refund", "track_order" or "cancel_order"}, nothing else.'
)
#: The same sentence with the value left open.
FIXED_SENTENCE = (
    'To count tickets: kind "tool_call" and tool_args {"intent": ...}, where intent is the kind '
    'of ticket asked about: "get_refund", "track_order" or "cancel_order"; nothing else.'
)
#: `SYSTEM` with only the ``tool_call`` sentence changed.
SYSTEM_FIXED = SYSTEM.replace(BUGGED_SENTENCE, FIXED_SENTENCE)

#: Re-exported: `labkit.course.lessons` reads a run module's settings.
SETTINGS = SETTINGS
RUN_CAPTURED = "05-system-smollm2-prompt-fixed"
#: The lesson's unchanged requests, captured on the same runtime as `RUN_CAPTURED`.
RUN_BASELINE = "05-system-smollm2-xllamacpp"
#: Both runs of the prompt test, the unchanged prompt first.
RUNS = (RUN_BASELINE, RUN_CAPTURED)
CAPTURED_DESCRIPTION = (
    LESSON_DESCRIPTION + " The system prompt's tool_call example leaves the intent open "
    "(labkit.system.prompt_fix.SYSTEM_FIXED)."
)


def run_fixtures() -> list[Path]:
    """Return the files the requests depend on: the lesson's policy PDF and saved embeddings."""
    return lesson_fixtures()


def make_requests(
    adapter: Any, *, trace_path: str | Path | None = None
) -> list[tuple[str, str, dict[str, Any]]]:
    """Ask the lesson's requests (golden set, then the empty count) with `SYSTEM_FIXED`."""
    return lesson_requests(adapter, trace_path=trace_path, system_prompt=SYSTEM_FIXED)


def replay_both(*, trace_dir: str | Path) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Replay `RUN_BASELINE` with `SYSTEM` and `RUN_CAPTURED` with `SYSTEM_FIXED`, offline.

    Returns, per prompt (``"unchanged"``, ``"fixed"``), the lesson's four requests as
    ``(question, team, result)``; each run's trace lines go to ``<trace_dir>/<run id>.jsonl``.
    """
    from labkit.boundary import connect

    return {
        name: lesson_requests(
            connect(run_id, lesson="05", settings=SETTINGS),
            trace_path=Path(trace_dir) / f"{run_id}.jsonl",
            system_prompt=prompt,
        )
        for name, run_id, prompt in (
            ("unchanged", RUN_BASELINE, SYSTEM),
            ("fixed", RUN_CAPTURED, SYSTEM_FIXED),
        )
    }


def comparison_table(
    asked: dict[str, list[tuple[str, str, dict[str, Any]]]], trace_dir: str | Path
) -> Any:
    """Return one row per request: under each prompt, the raw reply, the status and the golden verdict.

    A request that is no golden case (the empty count) has no verdict: its cell says so.
    """
    import pandas as pd

    from labkit.system.golden import GOLDEN, passed
    from labkit.system.runs import reply_table
    from labkit.system.workflow import read_trace_lines
    from labkit.tables import text_table

    cases = {case.question: case for case in GOLDEN}
    columns = {}
    for name, run_id in (("unchanged", RUN_BASELINE), ("fixed", RUN_CAPTURED)):
        replies = reply_table(
            read_trace_lines(Path(trace_dir) / f"{run_id}.jsonl")[-len(asked[name]) :]
        )
        columns[f"{name} prompt: raw reply"] = list(replies["raw reply"])
        columns[f"{name}: status"] = [result["status"] for _, _, result in asked[name]]
        columns[f"{name}: golden"] = [
            ("pass" if passed(result, cases[q]) else "fail") if q in cases else "not a golden case"
            for q, _, result in asked[name]
        ]
    table = pd.DataFrame({"question": [q for q, _, _ in asked["unchanged"]], **columns})
    return text_table(table.set_index("question"))


def main(argv: list[str] | None = None) -> int:
    """Record `RUN_BASELINE` and `RUN_CAPTURED` against the endpoint in ``LABKIT_BASE_URL``."""
    import importlib

    from labkit.course.lessons import lesson_module, record_captured

    parser = argparse.ArgumentParser(
        prog="python -m labkit.system.prompt_fix", description=main.__doc__
    )
    parser.parse_args(argv)
    for module, run_id in (
        (lesson_module("05"), RUN_BASELINE),
        (importlib.import_module("labkit.system.prompt_fix"), RUN_CAPTURED),
    ):
        print(record_captured("05", run_id=run_id, module=module))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
