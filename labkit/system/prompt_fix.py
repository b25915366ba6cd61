"""Lesson 05's prompt test: the lesson's requests with the ``tool_call`` example corrected.

The lesson's `SYSTEM` prompt writes ``get_refund`` in the value slot of its
``tool_args`` example, and every reply of the temperature-0 captured run carries
``"intent": "get_refund"``. `SYSTEM_FIXED` differs from `SYSTEM` in that one
sentence: the value is left open and the three intents are named as choices.
Two captured runs test the diagnosis on one runtime (the ``local`` extra's
server): `RUN_BASELINE` holds the lesson's unchanged requests, `RUN_CAPTURED` the
same requests sent with `SYSTEM_FIXED`. `settings_table` sets what the lesson's
first captured run and these two carried side by side, read from their files: between
the two the system prompt is the only variable; of the settings recorded, the first run
differs from the baseline only in its server. `server_timings` reads how long the server
spent reading each prompt and writing each reply. On these four requests the fixed prompt passes the count case,
but with ``get_refund``, the value the old example writes anyway, and the one request
whose right intent is another (the empty count) still names ``get_refund``: the example
is not shown to be the cause; the other suspects (the enum's first value,
refund-saturated evidence) remain.

Record both again with ``python -m labkit.course.prompt_test`` (a served model in
``LABKIT_BASE_URL`` / ``LABKIT_MODEL``, as for ``labkit record``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labkit.canonical import canonical_json
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


def reply_gist(raw: str) -> str:
    """Return a reply's shape in a few words: its kind and which fields it fills (the intent named).

    ``{"kind": "answer", "tool_args": {"intent": "get_refund"}}`` reads
    ``answer + intent get_refund``; text is cut to its first 30 characters. A reply
    that is not a JSON object reads ``not JSON``.
    """
    import json

    try:
        reply = json.loads(raw)
    except ValueError:
        return "not JSON"
    if not isinstance(reply, dict):
        return "not JSON"
    parts = [str(reply.get("kind"))]
    if reply.get("text"):
        text = str(reply["text"]).split("\n")[0]
        parts.append(f"text {text[:30]!r}" + ("…" if len(text) > 30 else ""))
    if reply.get("citation_ids"):
        parts.append(f"cites {', '.join(map(str, reply['citation_ids']))}")
    if isinstance(reply.get("tool_args"), dict):
        parts.append(f"intent {reply['tool_args'].get('intent')}")
    return " + ".join(parts)


def server_timings(run_id: str) -> dict[str, dict[str, float]]:
    """Return, per recorded question, the seconds the server spent reading the prompt and writing, and per token.

    Read from the ``timings`` that llama.cpp's server (run by xllamacpp) adds to each reply:
    ``prompt_ms`` over ``prompt_n`` tokens (reading the prompt) and ``predicted_ms`` over
    ``predicted_n`` (generating the reply), in seconds rounded to 0.1 and in whole milliseconds
    per token. A run whose replies carry no ``timings`` is refused: nothing split its time.
    """
    from labkit.errors import RecordedRunError
    from labkit.recording import load_run

    timings: dict[str, dict[str, float]] = {}
    for binding in load_run(run_id).bindings:
        recorded = (binding.response or {}).get("timings")
        if not recorded or binding.question is None:
            raise RecordedRunError(
                f"run {run_id!r} recorded no server timings for {binding.question!r}: "
                "only the xllamacpp runs split a call's time"
            )
        timings[binding.question] = {
            "reading prompt (s)": round(recorded["prompt_ms"] / 1000, 1),
            "writing reply (s)": round(recorded["predicted_ms"] / 1000, 1),
            "ms per prompt token": round(recorded["prompt_ms"] / recorded["prompt_n"]),
            "ms per reply token": round(recorded["predicted_ms"] / recorded["predicted_n"]),
        }
    return timings


def sha12(value: Any) -> str:
    """Return the first 12 hex digits of the SHA-256 of ``value``: a text as it is, else its JSON."""
    import hashlib

    text = value if isinstance(value, str) else canonical_json(value)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def settings_table(run_ids: tuple[str, ...] = ("05-system-smollm2", *RUNS)) -> Any:
    """Return, read from each run's file, what its requests carried: one column per run.

    Rows: the model id, the server its replies' shape shows (`runs.server_of`), the
    temperature, seed and max_tokens, and short hashes (first 12 hex digits of SHA-256)
    (`sha12`) of the reply schema and of the system prompt's text, each read from the
    recorded requests. A row whose requests disagree within a run says ``mixed``.
    """
    import pandas as pd

    from labkit.recording import load_run
    from labkit.system.runs import server_of

    def one(values: list[Any]) -> Any:
        distinct = {canonical_json(v) for v in values}
        return values[0] if len(distinct) == 1 else "mixed"

    columns = {}
    for run_id in run_ids:
        run = load_run(run_id)
        requests = [b.request for b in run.bindings]
        systems = [
            next(m["content"] for m in r["messages"] if m["role"] == "system") for r in requests
        ]
        columns[run_id] = {
            "model": one([r["model"] for r in requests]),
            "server": server_of(run),
            "temperature": one([r.get("temperature") for r in requests]),
            "seed": one([r.get("seed") for r in requests]),
            "max_tokens": one([r.get("max_tokens") for r in requests]),
            "reply schema sha256": one([sha12(r.get("response_format")) for r in requests]),
            "system prompt sha256": one([sha12(s) for s in systems]),
        }
    return pd.DataFrame(columns).astype(str)


def golden_scores(replayed: dict[str, list[tuple[str, str, dict[str, Any]]]]) -> dict[str, int]:
    """Return, per prompt of `replay_both`'s result, how many golden cases its replies passed."""
    from labkit.system.golden import GOLDEN, passed

    cases = {case.question: case for case in GOLDEN}
    return {
        prompt: sum(passed(result, cases[q]) for q, _, result in asked if q in cases)
        for prompt, asked in replayed.items()
    }


def intents_named(trace_path: str | Path) -> dict[str, str | None]:
    """Return, per question of a trace file, the intent its raw reply names (None: none named)."""
    import json

    from labkit.system.workflow import read_trace_lines

    named: dict[str, str | None] = {}
    for line in read_trace_lines(trace_path):
        raw = next(step["raw_reply"] for step in line["trace"] if step["step"] == "generate")
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
        args = reply.get("tool_args") if isinstance(reply, dict) else None
        named[line["question"]] = args.get("intent") if isinstance(args, dict) else None
    return named
