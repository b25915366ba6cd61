"""Lesson 05's prompt test: the lesson's requests with the ``tool_call`` example corrected.

The lesson's `SYSTEM` prompt writes ``get_refund`` in the value slot of its
``tool_args`` example, and every reply of the temperature-0 captured run carries
``"intent": "get_refund"``. `SYSTEM_FIXED` differs from `SYSTEM` in that one
sentence: the value is left open and the three intents are named as choices.
Two captured runs test the diagnosis on one runtime (the ``local`` extra's
server): `RUN_BASELINE` holds the lesson's unchanged requests, `RUN_CAPTURED` the
same requests sent with `SYSTEM_FIXED`. Between them the prompt is the only
variable; the lesson's first captured run was served by another runtime. What they
show: with the fix the count question gets a valid ``tool_call``, but three of the four
replies still name ``get_refund``. The fourth invents the same address under both
prompts, so it does not come from the fix (`fix_reading`). On these four
requests the example is not shown to be the cause; the other suspects (the enum's
first value, refund-saturated evidence) remain.

Record both again with ``python -m labkit.course.prompt_test`` (a served model in
``LABKIT_BASE_URL`` / ``LABKIT_MODEL``, as for ``labkit record``).
"""

from __future__ import annotations

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
    """Return one row per request and prompt: the raw reply in full, the status, the golden verdict.

    Rows are indexed by ``(question, prompt)``, the unchanged prompt first. A request
    that is no golden case (the empty count) has no verdict: its cell says so.
    """
    import pandas as pd

    from labkit.system.golden import GOLDEN, passed
    from labkit.system.runs import reply_table
    from labkit.system.workflow import read_trace_lines
    from labkit.tables import text_table

    cases = {case.question: case for case in GOLDEN}
    replies = {
        name: list(
            reply_table(read_trace_lines(Path(trace_dir) / f"{run_id}.jsonl")[-len(asked[name]) :])[
                "raw reply"
            ]
        )
        for name, run_id in (("unchanged", RUN_BASELINE), ("fixed", RUN_CAPTURED))
    }
    rows = [
        {
            "question": question,
            "prompt": name,
            "raw reply": replies[name][n],
            "status": result["status"],
            "golden": (
                ("pass" if passed(result, cases[question]) else "fail")
                if question in cases
                else "not a golden case"
            ),
        }
        for n in range(len(asked["unchanged"]))
        for name in ("unchanged", "fixed")
        for question, _, result in [asked[name][n]]
    ]
    return text_table(pd.DataFrame(rows).set_index(["question", "prompt"]))


def server_change(*, earlier: str = "05-system-smollm2") -> str:
    """Return, in Markdown, how the replies to the same requests differ between two servers.

    ``earlier`` (the lesson's run on llama-cpp-python) and `RUN_BASELINE` (xllamacpp)
    are compared: whether their binding keys, the hashes of the exact requests, are
    equal, and how many replies differ once whitespace is removed. The server is inferred
    from whether the replies carry ``timings``; the runs record no model file, build or machine, so
    the note does not credit the difference to the server alone.
    """
    from labkit.recording import load_run
    from labkit.system.runs import server_of

    before, after = load_run(earlier), load_run(RUN_BASELINE)
    keys_before = [b.key for b in before.bindings]
    keys_after = {b.key: b for b in after.bindings}
    if sorted(keys_before) != sorted(keys_after):
        return (
            f"`{earlier}` and `{RUN_BASELINE}` hold different requests: "
            "their replies cannot be compared."
        )

    def bare(binding: Any) -> str:
        return "".join(binding.response["choices"][0]["message"]["content"].split())

    changed = [b.question for b in before.bindings if bare(b) != bare(keys_after[b.key])]
    named = ", ".join(f"*{q}*" for q in changed) or "none"
    return (
        f"The {len(keys_before)} requests of `{earlier}` ({server_of(before)}) "
        f"and `{RUN_BASELINE}` ({server_of(after)}) have the same binding keys, the hashes of each exact request: "
        f"the requests were identical. {len(changed)} of {len(keys_before)} replies differ "
        f"beyond whitespace: {named}. The server is inferred from whether the replies carry "
        "`timings`. "
        "The runs do not record the model file, the build or the machine. "
        "So one reply per request cannot say the server alone changed them."
    )


def fix_reading(table: Any, *, earlier_run: str = "05-system-smollm2") -> str:
    """Return, in Markdown, what the fixed prompt changed in the replies of ``table``, `comparison_table`'s result.

    It counts the fixed prompt's replies that still name ``get_refund``, and reads the
    address question's reply under both prompts: when both open their ``text`` with the
    same sentence, the note says that sentence does not come from the fix, and, when
    ``earlier_run`` (the other server's run) holds no reply with it, that it appears only
    in the runs served by xllamacpp, which one reply per request cannot credit to the
    server alone. It also says when that ``text`` holds ``\\n``, JSON's escape for a line
    break, which the table prints like a raw line break.
    """
    import json

    from labkit.recording import load_run
    from labkit.system.golden import GOLDEN

    fixed = list(table.xs("fixed", level="prompt")["raw reply"])
    naming = sum('"get_refund"' in reply for reply in fixed)
    address = GOLDEN[2].question
    raw = {name: table.loc[(address, name), "raw reply"] for name in ("unchanged", "fixed")}
    texts = {name: str(json.loads(reply).get("text") or "") for name, reply in raw.items()}
    opening = {name: text.split("\n")[0] for name, text in texts.items()}
    note = f"With the example fixed, {naming} of the {len(fixed)} replies still name `get_refund`."
    if opening["unchanged"] and opening["unchanged"] == opening["fixed"]:
        note += (
            f" The address question gets the same invented address under both prompts: "
            f"*{opening['fixed']}* So it does not come from the fix."
        )
        earlier = [
            str(b.response["choices"][0]["message"]["content"])
            for b in load_run(earlier_run).bindings
            if b.response
        ]
        if not any(opening["fixed"] in reply for reply in earlier):
            note += (
                " It appears in the runs served by xllamacpp, and in no reply of"
                f" the earlier run `{earlier_run}`. One reply per request cannot say"
                " the server alone caused it."
            )
    if "\\n" in raw["fixed"]:
        note += (
            " Inside the address replies' `text`, `\\n` is JSON's escape for a line break, which"
            " strict parsing accepts. Every other `\\n` in the table is a raw line break outside"
            " any string."
        )
    return note
