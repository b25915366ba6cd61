"""Lesson 05's prompt test: the lesson's requests with the ``tool_call`` example corrected.

The lesson's `SYSTEM` prompt writes ``get_refund`` in the value slot of its
``tool_args`` example, and every reply of the temperature-0 captured run carries
``"intent": "get_refund"``. `SYSTEM_FIXED` differs from `SYSTEM` in that one
sentence: the value is left open and the three intents are named as choices.
Two captured runs test the diagnosis on one runtime (the ``local`` extra's
server): `RUN_BASELINE` holds the lesson's unchanged requests, `RUN_CAPTURED` the
same requests sent with `SYSTEM_FIXED`. Between them the prompt is the only
variable; the lesson's first captured run was served by another runtime
(`server_change`); `settings_table` sets the three runs' settings side by side,
read from their files. `fix_reading` says what they show: the fixed prompt passes the
count case, but with ``get_refund``, the value the old example writes anyway; the
one request whose right intent is another (the empty count) still names
``get_refund``. On these four requests the example is not shown to be the cause;
the other suspects (the enum's first value, refund-saturated evidence) remain.

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


def comparison_table(
    asked: dict[str, list[tuple[str, str, dict[str, Any]]]], trace_dir: str | Path
) -> Any:
    """Return one row per request and prompt: the reply's shape (`reply_gist`), status, golden verdict.

    Rows are indexed by ``(question, prompt)``, the unchanged prompt first. A request
    that is no golden case (the empty count) has no verdict: its cell says so. The raw
    replies stay in the trace files under ``trace_dir``.
    """
    import pandas as pd

    from labkit.system.golden import GOLDEN, passed
    from labkit.system.runs import reply_table
    from labkit.system.workflow import read_trace_lines

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
            "reply": reply_gist(replies[name][n]),
            "status": result["status"],
            "golden": (
                ("pass" if passed(result, cases[question]) else "fail")
                if question in cases
                else "not a golden case"
            ),
            "raw": replies[name][n],
        }
        for n in range(len(asked["unchanged"]))
        for name in ("unchanged", "fixed")
        for question, _, result in [asked[name][n]]
    ]
    table = pd.DataFrame(rows).set_index(["question", "prompt"])
    table.attrs["raw"] = table.pop("raw").to_dict()  # the replies in full, for `fix_reading`
    return table


def server_change(*, earlier: str = "05-system-smollm2") -> str:
    """Return one sentence: how many replies differ between ``earlier`` and `RUN_BASELINE`.

    ``earlier`` (the lesson's run on llama-cpp-python) and `RUN_BASELINE` (xllamacpp)
    are compared when their binding keys, the hashes of the exact requests, are equal,
    counting the replies that differ once whitespace is removed. The server is inferred
    from whether the replies carry ``timings``; the runs record no model file, build or
    machine, so the sentence credits the difference to nothing.
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

    changed = sum(bare(b) != bare(keys_after[b.key]) for b in before.bindings)
    return (
        f"Same {len(keys_before)} requests (equal binding keys) on {server_of(after)} as "
        f"`{earlier}` on {server_of(before)}: {changed} of {len(keys_before)} replies differ "
        "beyond whitespace; the runs record no model file, build or machine to say why."
    )


def golden_scores(table: Any) -> dict[str, tuple[int, int]]:
    """Return, per prompt, ``(golden cases passed, golden cases)`` read from `comparison_table`."""
    scores = {}
    for name in ("unchanged", "fixed"):
        golden = table.xs(name, level="prompt")["golden"]
        scored = golden[golden != "not a golden case"]
        scores[name] = (int((scored == "pass").sum()), len(scored))
    return scores


def fix_reading(table: Any) -> str:
    """Return, in Markdown, what the prompt change measured, read from `comparison_table`'s result.

    It gives both golden scores, names each case whose verdict changed and the intent it
    passed with, reads the one request whose right intent is not ``get_refund`` (the empty
    count, no golden case; its right intent is the authored run's), counts the fixed
    prompt's replies that still name ``get_refund``, and says what one reply per request
    can and cannot show.
    """
    import json

    from labkit.system.golden import EMPTY_COUNT_QUESTION, GOLDEN
    from labkit.system.runs import AUTHORED_REPLIES

    scores = golden_scores(table)
    (u, n), (f, _) = scores["unchanged"], scores["fixed"]
    note = [
        f"**Measured.** Golden set, one request per case at temperature 0: the unchanged prompt "
        f"passes {u}/{n}, the fixed prompt {f}/{n}."
    ]
    for case in GOLDEN:
        verdicts = {p: table.loc[(case.question, p), "golden"] for p in ("unchanged", "fixed")}
        if verdicts["unchanged"] != verdicts["fixed"]:
            reply = table.loc[(case.question, "fixed"), "reply"]
            said = f"*{case.question}* {'passes' if verdicts['fixed'] == 'pass' else 'fails'} "
            said += f"under the fixed prompt ({reply})"
            if "intent get_refund" in reply:
                said += ", with the value the old example writes: that pass cannot tell the fix from the bug"
            note.append(said + ".")
    right = json.loads(AUTHORED_REPLIES[EMPTY_COUNT_QUESTION])["tool_args"]["intent"]
    fixed_reply = table.loc[(EMPTY_COUNT_QUESTION, "fixed"), "reply"]
    status = table.loc[(EMPTY_COUNT_QUESTION, "fixed"), "status"]
    note.append(
        f"The one request whose right intent is not `get_refund` is *{EMPTY_COUNT_QUESTION}* "
        f"(`{right}`), and it is no golden case: under the fixed prompt its reply is "
        f"{fixed_reply}, ending `{status}`."
    )
    if f"intent {right}" not in fixed_reply:
        note.append(
            f"So with n = {n} golden cases, one reply each, and the one request that could show the fix"
            " still naming `get_refund`, this test cannot show that the example causes the bug, nor"
            " rule it out: the other suspects remain."
        )
    fixed = list(table.xs("fixed", level="prompt")["reply"])
    naming = sum("intent get_refund" in reply for reply in fixed)
    note.append(f"{naming} of the {len(fixed)} fixed-prompt replies still name `get_refund`.")
    questions = list(dict.fromkeys(table.index.get_level_values("question")))
    shapes = {q: [table.loc[(q, p), "reply"] for p in ("unchanged", "fixed")] for q in questions}
    moved = [f"*{q}* ({a} became {b})" for q, (a, b) in shapes.items() if a != b]
    kept = len(questions) - len(moved)
    note.append(
        f"Per request, the fixed prompt changed the reply's shape on {len(moved)} of "
        f"{len(questions)}"
        + (": " + "; ".join(moved) if moved else "")
        + f"; the other {kept} kept theirs."
    )
    raw = table.attrs.get("raw", {})
    address = [str(raw.get((GOLDEN[2].question, p), "")) for p in ("unchanged", "fixed")]
    texts = [str(_text_of(reply)).split("\n")[0] for reply in address]
    if texts[0] and texts[0] == texts[1]:
        before, after = shapes.get(GOLDEN[2].question, ["", ""])
        dropped = "+ intent" in before and "+ intent" not in after
        note.append(
            ("The address reply dropped its intent, but the" if dropped else "The")
            + f" first line of its invented address is the same under both prompts (*{texts[0]}*)"
            + (": the fix removed the stray intent, not the invention." if dropped else ".")
        )
    return " ".join(note)


def _text_of(raw: str) -> str:
    import json

    try:
        reply = json.loads(raw)
    except ValueError:
        return ""
    return str(reply.get("text") or "") if isinstance(reply, dict) else ""


def sha12(value: Any) -> str:
    """Return the first 12 hex digits of the SHA-256 of ``value``: a text as it is, else its JSON."""
    import hashlib

    text = value if isinstance(value, str) else json_key(value)
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
        distinct = {json_key(v) for v in values}
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


def json_key(value: Any) -> str:
    """Return ``value`` as canonical JSON text, so that equal settings compare equal."""
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)
