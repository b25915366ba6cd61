"""Lesson 04's repeated trials: the headline count and the router-settled cases, run again with their own seeds.

One trial is the repeated cases run once, in order, with one sampling seed:
every case starts from fresh data and a new row-ref store (as in
`labkit.agent.runs`), and each trial starts with an empty profile memory, shared
by that trial's cases only, so the correction ``c07`` follows ``c06`` of the same
trial and never a fact left over from an earlier trial. The seed is part of every
request, so each trial has its own bindings and replay stays exact;
`repeat_outcomes` grades each trial with the lesson's own outcome check
(`labkit.agent.evaluation.outcome_correct`).

Which cases: the lesson's headline question (``c01``) and the four cases the
router alone should settle (the declines ``c04``, ``c05`` and the profile cases
``c06``, ``c07``). A case the router sends to the agent makes up to six requests
per trial, so five trials of all ten cases that reach the model come to about
190 requests, and on the course's shared two-core machine a request took about
20 s; these five cases keep a run near 80 requests. The cases refused before
routing (``c08``, ``c09``) make no model request, so a repeat of them could not differ.

These are repeats of one wording. The lesson's paraphrase trials
(`labkit.agent.runs.TRIALS`: one question worded several ways, each run once) say
how robust a behaviour is to wording; these say how often the same request
succeeds, which is what a pass rate per case with a Wilson interval needs.

They measure the sampled setting (temperature 0.7), a different configuration
from the evaluation's greedy one (`labkit.agent.runs.SETTINGS`, temperature 0):
a temperature-0 request is deterministic for its inputs, so sending it again
would return the same reply, and it is no sample of this setting's pass rate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from labkit.agent import runs
from labkit.agent.runs import CASES, AgentCase, CaseResult
from labkit.trials import Trials

RUN_CAPTURED = "04-agent-smollm2-repeats"
#: Five trials per case at temperature 0.7: SmolLM2-135M still answers within the JSON schema, and its replies vary.
TRIALS = Trials(n=5, temperature=0.7, first_seed=400)
#: The lesson's settings with the first trial's seed and the trials' temperature (each trial sends its own seed).
SETTINGS = TRIALS.settings_for(runs.SETTINGS, 0)
#: The repeated cases: the headline count, the two declines, and the profile fact with its correction.
REPEATED_IDS = ("c01", "c04", "c05", "c06", "c07")
REPEATED_CASES: tuple[AgentCase, ...] = tuple(case for case in CASES if case.id in REPEATED_IDS)
CAPTURED_DESCRIPTION = (
    f"Repeated trials of lesson 04's cases {', '.join(REPEATED_IDS)} from a real model: router and agent prompts, "
    "schema-constrained JSON. One trial runs each of these cases once, in order, each from fresh data, with an "
    "empty profile memory at the start of the trial. " + TRIALS.describe()
)


def run_fixtures() -> list[Any]:
    """Return the files this run's requests depend on (the lesson's own)."""
    return runs.run_fixtures()


def make_requests(adapter: Any) -> dict[str, list[CaseResult]]:
    """Run every repeated case once per trial, trial after trial; return each case's results in trial order."""
    from labkit.agent.profile import ProfileMemory
    from labkit.agent.tools import SupportData

    results: dict[str, list[CaseResult]] = {case.id: [] for case in REPEATED_CASES}
    for trial in TRIALS.each(adapter):
        data, profile = SupportData(), ProfileMemory()
        for case in REPEATED_CASES:
            results[case.id].append(runs.run_case(case, trial, data=data, profile=profile))
    return results


def repeat_outcomes(results: Mapping[str, Sequence[CaseResult]]) -> dict[str, list[bool]]:
    """Grade every trial with the lesson's outcome check: ``{case id: [pass per trial]}``, trials in order."""
    from labkit.agent.evaluation import outcome_correct

    return {case: [outcome_correct(result) for result in trials] for case, trials in results.items()}


def seen_verdict(passes: Sequence[bool]) -> str:
    """Say what a case's trials showed: ``no pass in n``, ``no fail in n`` or ``mixed``, and no more."""
    if not passes:
        raise ValueError("a case needs at least one trial to have a verdict")
    if not any(passes):
        return f"no pass in {len(passes)}"
    return f"no fail in {len(passes)}" if all(passes) else "mixed"


def trials_table(results: Mapping[str, Sequence[CaseResult]], greedy: Sequence[CaseResult]) -> Any:
    """Return one row per repeated case, as lesson 04 prints it.

    The columns: the case's kind; `labkit.trials.repeat_table`'s trials in seed order,
    passes, rate, 95% Wilson interval (printed ``[low, high]``), first trial and
    verdict, the verdict said as what was seen (``no pass in 5``, ``no fail in 5``,
    ``mixed``), since five failures do not show a case never passes; the routes its trials chose, each with how many trials chose it (``invalid`` for a reply that was no route);
    and the verdict of ``greedy``, the evaluation's temperature-0 run, shown for
    comparison and not counted in the rate.
    """
    from labkit.agent.evaluation import INVALID, outcome_correct
    from labkit.tables import interval
    from labkit.trials import repeat_table

    kinds = {case.id: case.kind for case in REPEATED_CASES}
    greedy_verdict = {r.case.id: "pass" if outcome_correct(r) else "fail" for r in greedy}
    outcomes = repeat_outcomes(results)
    table = repeat_table(outcomes).set_index("case")
    table["verdict"] = [seen_verdict(outcomes[case]) for case in table.index]
    table.insert(0, "kind", [kinds[case] for case in table.index])
    bounds = zip(table.pop("wilson_low"), table.pop("wilson_high"), strict=True)
    table.insert(4, "95% Wilson", [interval(low, high) for low, high in bounds])
    table["routes chosen"] = [route_counts(result.route or INVALID for result in results[case]) for case in table.index]
    table["greedy run (temperature 0)"] = [greedy_verdict[case] for case in table.index]
    return table


def route_counts(routes: Iterable[str]) -> str:
    """Return each route with how many trials chose it, most chosen first: ``profile 3, structured 2``."""
    counted = Counter(routes)
    return ", ".join(f"{route} {n}" for route, n in sorted(counted.items(), key=lambda item: (-item[1], item[0])))


def replay() -> Any:
    """Return the model boundary for the repeated trials' recorded run, sent with their `SETTINGS`."""
    return runs.replay(RUN_CAPTURED, settings=SETTINGS)
