"""Lesson 05's golden set over repeated trials: each case sent once per seed, and what that shows.

The lesson's captured run asks each golden case once, at temperature 0. A request at
temperature 0 is decoded greedily: it is deterministic for its inputs, so sending it
again measures nothing new. The repeats here measure another configuration, the
*sampled* one: each case's messages sent ``TRIALS.n`` times at a temperature above
zero, each trial with its own ``seed`` (`labkit.trials`), so each trial is its own
request with its own replay binding. `outcomes` scores each trial with the same
`passed` as the single run; `golden_repeat_table` gives each case's pass rate with
its Wilson interval; `repeat_summary` sets them beside the greedy run's verdicts;
`trial_failures` says why the failed trials failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.system.contract import SETTINGS as BASE_SETTINGS
from labkit.system.golden import GOLDEN, GoldenCase, passed
from labkit.system.runs import run_fixtures as _run_fixtures
from labkit.trials import Trials, repeat_table

#: Five seeds per golden case at 0.4: at 0.7 a pilot got no reply the contract accepts (0 of 6),
#: so a lower temperature, still sampling; five is the fewest a rate is shown over, as each
#: request took a minute or more to record.
TRIALS = Trials(n=5, temperature=0.4, first_seed=500)
RUN_CAPTURED = "05-system-smollm2-repeats"
#: The lesson's settings at the plan's temperature with the first trial's seed (each sends its own).
SETTINGS = TRIALS.settings_for(BASE_SETTINGS, 0)
CAPTURED_DESCRIPTION = (
    "Lesson 05's three golden cases sent repeatedly to a real model through the LangGraph workflow, "
    "schema-constrained JSON, one binding per trial. " + TRIALS.describe()
)


def run_fixtures() -> list[Path]:
    """Return the files the requests depend on: the lesson's policy PDF and saved embeddings."""
    return _run_fixtures()


@dataclass(frozen=True)
class GoldenTrial:
    """One trial of a golden case: its seed, its thread, the system's result, whether it passed."""

    case: GoldenCase
    trial: int
    seed: int
    session_id: str
    result: dict[str, Any]
    passed: bool


def make_requests(adapter: Any, *, trace_path: str | Path | None = None) -> list[GoldenTrial]:
    """Ask each golden case once per trial of `TRIALS`, each on a fresh thread; return them."""
    from labkit.system.policy import load_policy_index
    from labkit.system.workflow import MinimalSystem

    index = load_policy_index()
    systems = [
        MinimalSystem(trial, index=index, trace_path=trace_path) for trial in TRIALS.each(adapter)
    ]
    trials = []
    for case_number, case in enumerate(GOLDEN, start=1):
        for system in systems:
            trial = system.adapter
            session_id = system.new_session(f"case{case_number}-seed{trial.seed}")
            result = ask_trial(system, case, session_id)
            trials.append(
                GoldenTrial(case, trial.trial, trial.seed, session_id, result, passed(result, case))
            )
    return trials


def ask_trial(system: Any, case: GoldenCase, session_id: str) -> dict[str, Any]:
    """Ask one trial; a request that got no reply (recorded so) is kept as a failed trial."""
    import openai

    from labkit.boundary import EndpointUnreachable
    from labkit.errors import LabkitError
    from labkit.system.contract import ModelReplyMissing

    try:
        return system.ask(case.question, case.team, session_id)
    except (EndpointUnreachable, openai.APIConnectionError) as exc:
        if isinstance(
            exc.__cause__, LabkitError
        ):  # a replay refusal (a changed request) is a defect, not a trial
            raise
        return {"status": "request_failed", "reason": str(exc)}
    except ModelReplyMissing as exc:
        return {"status": "no_reply", "reason": str(exc)}


def outcomes(trials: list[GoldenTrial]) -> dict[str, list[bool]]:
    """Return golden question -> pass or fail of each trial, in seed order."""
    by_case: dict[str, list[GoldenTrial]] = {}
    for trial in trials:
        by_case.setdefault(trial.case.question, []).append(trial)
    return {
        question: [t.passed for t in sorted(rows, key=lambda t: t.seed)]
        for question, rows in by_case.items()
    }


def golden_repeat_table(trials: list[GoldenTrial]) -> Any:
    """Return `repeat_table` of the golden set: per case trials, rate, Wilson interval, verdict."""
    return repeat_table(outcomes(trials)).set_index("case")


def status_table(trials: list[GoldenTrial]) -> Any:
    """Return a table counting, per golden case, the statuses its trials ended with."""
    import pandas as pd

    rows = [{"case": t.case.question, "status": t.result["status"]} for t in trials]
    table = pd.crosstab(pd.DataFrame(rows)["case"], pd.DataFrame(rows)["status"])
    table = table.reindex([case.question for case in GOLDEN if case.question in table.index])
    table.columns.name = None
    return table


def repeat_summary(trials: list[GoldenTrial], greedy: dict[str, bool]) -> Any:
    """Return one row per golden case: the greedy run's verdict beside the sampled trials' record.

    ``greedy`` maps each question to whether the temperature-0 run passed it. Columns: that
    verdict; the trials in seed order (✓ pass, ✗ fail); passes of n; the 95% Wilson interval
    of the sampled pass rate, as ``[low, high]``; the statuses the trials ended with. No word
    verdict: 0 of 5 is not "never", its interval reaches 0.43.
    """
    import pandas as pd

    from labkit.tables import interval, text_table

    table, statuses = golden_repeat_table(trials), status_table(trials)
    sampled = f"temperature {TRIALS.temperature:g}, {TRIALS.n} seeds"
    rows = [
        {
            "case": question,
            f"temperature {BASE_SETTINGS['temperature']:g}, one request": (
                "pass" if greedy[question] else "fail"
            ),
            sampled: row["trials"],
            "passed": row["passed"],
            "95% Wilson interval": interval(row["wilson_low"], row["wilson_high"]),
            "ended as": ", ".join(f"{s} {n}" for s, n in statuses.loc[question].items() if n),
        }
        for question, row in table.iterrows()
    ]
    return text_table(pd.DataFrame(rows).set_index("case"))


def trial_failures(trials: list[GoldenTrial]) -> Any:
    """Return why the failed trials failed: one row per case, status and reason, with their seeds.

    The reason is the check's own (a reply that broke the contract), else every golden
    rule the result broke (`labkit.system.golden.unmet`).
    """
    import pandas as pd

    from labkit.system.golden import unmet
    from labkit.tables import text_table

    seeds: dict[tuple[str, str, str], list[int]] = {}
    for t in trials:
        if not t.passed:
            why = t.result.get("reason") or "; ".join(unmet(t.result, t.case))
            seeds.setdefault((t.case.question, t.result["status"], why), []).append(t.seed)
    rows = [
        {"case": q, "status": status, "why it failed": why, "seeds": ", ".join(map(str, found))}
        for (q, status, why), found in seeds.items()
    ]
    return text_table(pd.DataFrame(rows, columns=["case", "status", "why it failed", "seeds"]))
