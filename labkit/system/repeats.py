"""Lesson 05's golden set over repeated trials: each case sent once per seed, and what that shows.

The lesson's captured run asks each golden case once, at temperature 0. A request at
temperature 0 is decoded greedily: it is deterministic for its inputs, so sending it
again measures nothing new. The repeats here measure another configuration, the
*sampled* one: each case's messages sent ``TRIALS.n`` times at a temperature above
zero, each trial with its own ``seed`` (`labkit.trials`), so each trial is its own
request with its own replay binding. `outcomes` scores each trial with the same
`passed` as the single run; `golden_repeat_table` gives each case's pass rate with
its Wilson interval (the notebook builds its own tables from the trials on the page);
`separable_counts` lists the pass counts whose intervals do not overlap.
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


def separable_counts(n: int) -> list[tuple[int, int]]:
    """Return every pair of pass counts of ``n`` trials whose 95% Wilson intervals do not overlap.

    A pair ``(a, b)``, ``a < b``, is listed when ``b`` passes' interval starts above where
    ``a`` passes' ends: only then do the intervals tell two cases with those counts apart.
    """
    from labkit.trials import wilson

    return [
        (a, b) for a in range(n) for b in range(a + 1, n + 1) if wilson(b, n)[0] > wilson(a, n)[1]
    ]


def trial_summary(trials: list[GoldenTrial], greedy: dict[str, bool]) -> Any:
    """Return one row per golden case: its temperature-0 result, passes of n, 95% Wilson interval, statuses.

    ``greedy`` maps each question to whether its single temperature-0 request passed.
    ``statuses`` counts how the case's trials ended, e.g. ``answered 3, invalid_output 2``.
    """
    import pandas as pd

    from labkit.tables import interval
    from labkit.trials import wilson

    rows = []
    for question, passes in outcomes(trials).items():
        ended = [t.result["status"] for t in trials if t.case.question == question]
        k, n = sum(passes), len(passes)
        rows.append(
            {
                "case": question,
                "temperature 0": "pass" if greedy[question] else "fail",
                "passes": f"{k}/{n}",
                "95% Wilson interval": interval(*wilson(k, n)),
                "statuses": ", ".join(f"{s} {ended.count(s)}" for s in sorted(set(ended))),
            }
        )
    return pd.DataFrame(rows).set_index("case")


def invalid_json(trials: list[GoldenTrial]) -> list[str]:
    """Return the session ids of the trials whose reply `check` refused as invalid JSON."""
    return [
        t.session_id for t in trials if str(t.result.get("reason", "")).startswith("Invalid JSON")
    ]
