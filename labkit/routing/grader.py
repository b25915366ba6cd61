"""The routing regression gate: grade two saved routing runs against one labelled suite.

A suite holds labelled support tickets and a penalty per expected route; its
``version`` names the schema, and each schema has one field for the ticket
text (``SCHEMA_TEXT_FIELDS``: the course's suite says ``message``, the routing
walkthrough's ``maple-routing-v1`` files say ``input``). A run
holds one predicted route per ticket and the SHA-256 of the exact suite bytes
it answered. ``compare`` grades a baseline and a candidate run and applies the
release rule: the candidate's correct count does not fall, its penalty points
do not rise, it misses no ``urgent_support`` case, and (optionally) no
protected case that the baseline got right goes wrong. Every malformed input
raises ``RouteGradeError``; nothing is repaired or skipped silently.
"""

from __future__ import annotations

import inspect
import json
import re
import reprlib
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labkit.canonical import load_strict
from labkit.errors import LabkitError, RouteGradeError

if TYPE_CHECKING:
    import pandas as pd

ROUTES = ("sales", "billing", "support", "urgent_support")
URGENT = "urgent_support"
ORIGINS = ("simulated", "captured")

SUITE_FIELDS = frozenset({"version", "penalties", "cases"})
#: Suite schema versions and the field each one's cases use for the ticket text: one version per field name.
#: The course's own suite says ``message``; the routing walkthrough's ``make_fixture.py`` writes ``input``.
SCHEMA_TEXT_FIELDS = {"quillfeather-routing-v1": "message", "maple-routing-v1": "input"}
RUN_FIELDS = frozenset({"label", "origin", "suite_sha256", "predictions"})
PREDICTION_FIELDS = frozenset({"id", "route"})
#: A validated suite's cases, keyed by id (what `validate_suite` returns).
Cases = Mapping[str, Mapping[str, Any]]
#: One run's graded summary (what `score` returns): correct, penalty_points, urgent_misses, failures ...
Summary = Mapping[str, Any]

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60


def _shown(value: Any) -> str:
    """Render a value from an input file as JSON for a message, cut to a readable length."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = _repr.repr(value)
    return text if len(text) <= 60 else text[:45] + "..." + text[-10:]


def _short_sha(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return value[:12] + "..."
    return _shown(value)


def load(path: str | Path) -> tuple[Any, str]:
    """Load a suite or run file strictly and return ``(data, sha256 of its exact bytes)``."""
    try:
        return load_strict(path)
    except LabkitError:
        raise
    except OSError as exc:
        raise RouteGradeError(
            f"{path}: cannot read it ({exc.strerror or exc}); check the path and permissions"
        ) from None
    except (TypeError, ValueError) as exc:  # e.g. a NUL byte in the path, or no path at all
        raise RouteGradeError(f"{path!r} is not a usable file path ({exc}); pass the path of a JSON file") from None


def id_order(case_id: str) -> tuple[Any, ...]:
    """Sort key that puts ``t2`` before ``t10`` (digit runs compare by value, without int conversion)."""
    parts = re.split(r"([0-9]+)", case_id)
    key = tuple((len(p.lstrip("0")), p.lstrip("0")) if i % 2 else p for i, p in enumerate(parts))
    return key, case_id


def _ids(ids: Iterable[str], limit: int = 6) -> str:
    ordered = sorted(ids, key=id_order)
    shown = ", ".join(ordered[:limit])
    return shown + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_fields(value: Any, fields: frozenset[str], where: str) -> None:
    if not isinstance(value, dict):
        raise RouteGradeError(
            f"{where} must be a JSON object, got {type(value).__name__}; see the shipped fixtures for the shape"
        )
    missing = sorted(fields - value.keys())
    unexpected = sorted(_shown(k) for k in value.keys() - fields)
    if missing or unexpected:
        problems = []
        if missing:
            problems.append(f"missing field(s) {', '.join(map(_shown, missing))}")
        if unexpected:
            problems.append(f"unexpected field(s) {', '.join(unexpected)}")
        raise RouteGradeError(f"{where} has {' and '.join(problems)}; it must have exactly {', '.join(sorted(fields))}")


def _check_text(value: Any, where: str) -> None:
    if not _is_text(value):
        raise RouteGradeError(f"{where} must be non-blank text, got {_shown(value)}")


def _check_route(value: Any, where: str) -> None:
    if not isinstance(value, str) or value not in ROUTES:
        raise RouteGradeError(f"{where} is {_shown(value)}, not a known route; use one of {', '.join(ROUTES)}")


def case_text_field(version: str) -> str:
    """Return the case field that holds the ticket text under a suite schema ``version``."""
    try:
        return SCHEMA_TEXT_FIELDS[version]
    except KeyError:
        known = ", ".join(f"{v} (cases carry {f!r})" for v, f in SCHEMA_TEXT_FIELDS.items())
        raise RouteGradeError(
            f"suite version {_shown(version)} is not a schema this gate knows; the version states the cases' "
            f"fields, so write one of: {known}"
        ) from None


def validate_suite(suite: Any) -> dict[str, dict[str, Any]]:
    """Check a suite's shape and return its cases keyed by id, in file order."""
    _check_fields(suite, SUITE_FIELDS, "suite")
    _check_text(suite["version"], "suite version")
    text_field = case_text_field(suite["version"])
    case_fields = frozenset({"id", text_field, "expected"})
    penalties = suite["penalties"]
    _check_fields(penalties, frozenset(ROUTES), "suite penalties")
    for route in ROUTES:
        weight = penalties[route]
        if type(weight) is not int or weight <= 0:
            raise RouteGradeError(
                f"suite penalty for {route} is {_shown(weight)}; penalties must be positive whole numbers "
                "(not 0, negative, true/false, text or decimals)"
            )
    cases = suite["cases"]
    if not isinstance(cases, list):
        raise RouteGradeError(f"suite cases must be a list, got {type(cases).__name__}")
    if not cases:
        raise RouteGradeError(
            "suite has no cases; a gate over an empty suite would pass anything, so add labelled cases"
        )
    by_id: dict[str, dict[str, Any]] = {}
    for number, case in enumerate(cases, start=1):
        where = f"suite case {number}"
        _check_fields(case, case_fields, f"{where} (schema {suite['version']})")
        _check_text(case["id"], f"{where} id")
        _check_text(case[text_field], f"{where} {text_field}")
        _check_route(case["expected"], f"{where} expected route")
        if case["id"] in by_id:
            raise RouteGradeError(
                f"suite case id {_shown(case['id'])} appears more than once; give every case its own id"
            )
        by_id[case["id"]] = case
    return by_id


def validate_run(run: Any, *, cases: Mapping[str, Mapping[str, Any]], suite_sha256: str, name: str) -> dict[str, str]:
    """Check one run's fields, origin and suite fingerprint; return its route per case id (`prediction_routes`).

    ``cases`` is what ``validate_suite`` returned; ``name`` ("baseline", "candidate") names the run in errors.
    """
    where = f"{name} run"
    _check_fields(run, RUN_FIELDS, where)
    _check_text(run["label"], f"{where} label")
    if not isinstance(run["origin"], str) or run["origin"] not in ORIGINS:
        raise RouteGradeError(
            f'{where} origin is {_shown(run["origin"])}; it must be "simulated" (authored to show a rule) '
            'or "captured" (recorded from a real model call)'
        )
    if run["suite_sha256"] != suite_sha256:
        raise RouteGradeError(
            f"{where} was made for suite bytes with sha256 {_short_sha(run['suite_sha256'])}, but this suite's "
            f"bytes hash to {_short_sha(suite_sha256)}; grade it against the suite it was made for, or re-run it on this suite"
        )
    return prediction_routes(run["predictions"], cases=cases, where=where)


def prediction_routes(predictions: Any, *, cases: Mapping[str, Any], where: str = "run") -> dict[str, str]:
    """Return a run's route per case id, refusing a run that does not answer every case exactly once.

    A missing answer is refused rather than dropped (dropping it would shrink the denominator),
    and a repeated one rather than resolved (which one would count?). ``where`` names the run
    in the error message.
    """
    if not isinstance(predictions, list):
        raise RouteGradeError(
            f"{where} predictions must be a list of {{id, route}} objects, got {type(predictions).__name__}"
        )
    routes: dict[str, str] = {}
    for number, row in enumerate(predictions, start=1):
        at = f"{where} prediction {number}"
        _check_fields(row, PREDICTION_FIELDS, at)
        _check_text(row["id"], f"{at} id")
        _check_route(row["route"], f"{at} route")
        if row["id"] in routes:
            raise RouteGradeError(
                f"{where} predicts case {_shown(row['id'])} more than once; keep exactly one prediction per case"
            )
        routes[row["id"]] = row["route"]
    missing = cases.keys() - routes.keys()
    extra = routes.keys() - cases.keys()
    if missing:
        raise RouteGradeError(
            f"{where} has no prediction for {_ids(missing)}; a run must answer every suite case (count a missing "
            f"or malformed reply separately; never fill it in or drop the case){_unicode_form_notes(missing, extra)}"
        )
    if extra:
        raise RouteGradeError(
            f"{where} predicts ids the suite does not have: {_ids(extra)}; remove them or use the matching suite"
        )
    return routes


def route_counts(
    cases: Mapping[str, Mapping[str, Any]], routes: Mapping[str, str], penalties: Mapping[str, int]
) -> dict[str, dict[str, int]]:
    """Return, per expected route, how many cases the suite has, how many the run got right, and the points lost."""
    by_route = {route: {"cases": 0, "correct": 0, "penalty_points": 0} for route in ROUTES}
    for cid, case in cases.items():
        row = by_route[case["expected"]]
        row["cases"] += 1
        if routes[cid] == case["expected"]:
            row["correct"] += 1
        else:
            row["penalty_points"] += penalties[case["expected"]]
    return by_route


def score(suite: Any, cases: Cases, suite_sha256: str, run: Any, *, name: str = "run") -> Summary:
    """Grade one run against the suite it answered: its correct routes, penalty points, urgent misses.

    ``cases`` is what ``validate_suite(suite)`` returned. A run that does not answer these
    exact suite bytes, or does not answer every case exactly once, raises `RouteGradeError`.
    """
    routes = validate_run(run, cases=cases, suite_sha256=suite_sha256, name=name)
    penalties = suite["penalties"]
    failures: list[dict[str, Any]] = []
    for cid in sorted(cases, key=id_order):
        expected, actual = cases[cid]["expected"], routes[cid]
        if actual != expected:
            penalty = penalties[expected]
            failures.append({"id": cid, "expected": expected, "actual": actual, "penalty": penalty})
    correct = len(cases) - len(failures)
    return {
        "label": run["label"],
        "origin": run["origin"],
        "cases": len(cases),
        "correct": correct,
        "accuracy": correct / len(cases),
        "penalty_points": sum(failure["penalty"] for failure in failures),
        "urgent_misses": sum(failure["expected"] == URGENT for failure in failures),
        "failures": failures,
        "by_route": route_counts(cases, routes, penalties),
    }


def check_protected(protected: Any, cases: Cases) -> list[str]:
    """Return the ``protected`` case ids sorted, each once; raise `RouteGradeError` for an id the suite lacks."""
    if isinstance(protected, str) or not isinstance(protected, Iterable):
        raise RouteGradeError(f'protected must be a list of case ids, got {_shown(protected)}; write ["t3"], not "t3"')
    ids = list(protected)
    for cid in ids:
        if not isinstance(cid, str) or cid not in cases:
            raise RouteGradeError(
                f"protected case id {_shown(cid)} is not in the suite; protect ids such as {_ids(cases)}"
            )
    return sorted(set(ids), key=id_order)


def regressions(old: Summary, new: Summary) -> list[str]:
    """Return the ids the baseline routed right and the candidate routes wrong, in id order."""
    missed_before = {failure["id"] for failure in old["failures"]}
    return [failure["id"] for failure in new["failures"] if failure["id"] not in missed_before]


def fixes(old: Summary, new: Summary) -> list[str]:
    """Return the ids the baseline routed wrong and the candidate routes right, in id order."""
    missed_now = {failure["id"] for failure in new["failures"]}
    return [failure["id"] for failure in old["failures"] if failure["id"] not in missed_now]


def ticket_changes(old: Summary, new: Summary) -> dict[str, Any]:
    """Compare two runs ticket by ticket: the ids the candidate ``fixed`` and ``broke``, and whether chance explains the split.

    Both runs answer the same tickets, so only the tickets exactly one of them gets right carry evidence. If
    neither run were better, each such ticket would be as likely fixed as broken: ``p_value`` is
    the exact two-sided sign test's chance of a split at least this lopsided, ``smallest_p`` the
    smallest it could be for that many tickets, and ``no_evidence`` is true when the chance is 5% or more
    (no evidence of a difference, which is not proof the runs are equal; no disagreement at all gives ``p_value`` 1).
    """
    from scipy.stats import binomtest

    fixed, broke = fixes(old, new), regressions(old, new)
    differ = len(fixed) + len(broke)
    p_value = float(binomtest(len(fixed), differ).pvalue) if differ else 1.0
    smallest_p = min(1.0, 2 * 0.5**differ)  # every differing ticket the same way
    return {
        "fixed": fixed,
        "broke": broke,
        "p_value": p_value,
        "smallest_p": smallest_p,
        "no_evidence": p_value >= 0.05,
    }


def sign_test_sentence(changes: Mapping[str, Any]) -> str:
    """Say in words what `ticket_changes` found: the split, its p-value, and what this many tickets can show.

    With n differing tickets the smallest two-sided p-value is 2 * 0.5**n (all n one way), so
    fewer than 6 differing tickets can never reach the 5% level: the sentence says so.
    """
    fixed, broke = changes["fixed"], changes["broke"]
    differ = len(fixed) + len(broke)
    split = f"{len(fixed)} fixed and {len(broke)} broken of the {differ} tickets exactly one run gets right"
    verdict = "cannot be told apart on correct routes" if changes["no_evidence"] else "differ beyond chance"
    text = (
        f"{split}: the exact two-sided sign test gives p = {changes['p_value']:.2f}, so at the 5% level "
        f"the runs {verdict}."
    )
    if changes["smallest_p"] >= 0.05:
        text += (
            f" With {differ} differing tickets the smallest p any split could give is "
            f"{changes['smallest_p']:.2f}: this test could not have told them apart here "
            "(that takes at least 6 differing tickets, all one way)."
        )
    return text


def release_reasons(old: Summary, new: Summary, *, protected: Iterable[str] = ()) -> list[str]:
    """Apply the release rule to two run summaries; return why the candidate fails ([]: it passes).

    The candidate ``new`` passes when its correct count does not fall below the baseline
    ``old``'s, its penalty points do not rise above them, it misses no urgent case, and no
    ``protected`` case the baseline routed right goes wrong.
    """
    reasons = []
    if new["correct"] < old["correct"]:
        reasons.append(f"correct routes fell from {old['correct']} to {new['correct']} of {new['cases']}")
    if new["penalty_points"] > old["penalty_points"]:
        reasons.append(f"penalty points rose from {old['penalty_points']} to {new['penalty_points']}")
    if new["urgent_misses"]:
        missed = [f"{f['id']} (sent to {f['actual']})" for f in new["failures"] if f["expected"] == URGENT]
        reasons.append(f"{new['urgent_misses']} urgent_support case(s) misrouted: {', '.join(missed)}")
    broken = [cid for cid in regressions(old, new) if cid in set(protected)]
    if broken:
        reasons.append(f"protected case(s) regressed: {', '.join(broken)}")
    return reasons


def _passes(old: Mapping[str, Any], correct: int, penalty: int, urgent_misses: int, protected_regressions: int) -> bool:
    return (
        correct >= old["correct"]
        and penalty <= old["penalty_points"]
        and urgent_misses == 0
        and protected_regressions == 0
    )


def _smallest_flip(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    cases: Mapping[str, Mapping[str, Any]],
    penalties: Mapping[str, int],
    protected_ids: set[str],
    regressed: list[str],
) -> list[dict[str, str]]:
    """The fewest candidate predictions to change so that the verdict flips ([] if none can)."""
    correct, penalty = new["correct"], new["penalty_points"]
    protected_regressions = [cid for cid in regressed if cid in protected_ids]
    if not _passes(old, correct, penalty, new["urgent_misses"], len(protected_regressions)):
        # Failing: fixing urgent misses and protected regressions is unavoidable; then fix the
        # costliest remaining failures until both counts are back within the baseline's.
        must = {f["id"] for f in new["failures"] if f["expected"] == URGENT} | set(protected_regressions)
        rest = sorted(
            (f for f in new["failures"] if f["id"] not in must), key=lambda f: (-f["penalty"], id_order(f["id"]))
        )
        chosen = [f for f in new["failures"] if f["id"] in must]
        correct += len(chosen)
        penalty -= sum(f["penalty"] for f in chosen)
        for failure in rest:
            if correct >= old["correct"] and penalty <= old["penalty_points"]:
                break
            chosen.append(failure)
            correct += 1
            penalty -= failure["penalty"]
        return [{"id": f["id"], "route": f["expected"]} for f in sorted(chosen, key=lambda f: id_order(f["id"]))]
    # Passing: misroute the correct cases that hurt most until the rule breaks. One urgent or
    # protected case is always enough on its own, so those come first.
    wrong = {f["id"] for f in new["failures"]}
    baseline_wrong = {f["id"] for f in old["failures"]}

    def breaks_alone(cid: str) -> bool:
        return cases[cid]["expected"] == URGENT or (cid in protected_ids and cid not in baseline_wrong)

    right = sorted(
        (cid for cid in cases if cid not in wrong),
        key=lambda cid: (not breaks_alone(cid), -penalties[cases[cid]["expected"]], id_order(cid)),
    )
    chosen_ids: list[str] = []
    for cid in right:
        chosen_ids.append(cid)
        correct -= 1
        penalty += penalties[cases[cid]["expected"]]
        if breaks_alone(cid) or not _passes(old, correct, penalty, 0, 0):
            return [
                {"id": c, "route": next(r for r in ROUTES if r != cases[c]["expected"])}
                for c in sorted(chosen_ids, key=id_order)
            ]
    return []


def check_fingerprint(suite_sha256: Any) -> str:
    """Return ``suite_sha256`` if it is a SHA-256 hex digest (as `load` returns), else raise `RouteGradeError`."""
    if not isinstance(suite_sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", suite_sha256):
        raise RouteGradeError(
            f"suite_sha256 {_shown(suite_sha256)} is not a SHA-256 hex digest; pass the hash that load() returned"
        )
    return suite_sha256


def explanation(
    suite: Any, old: Summary, new: Summary, passed: bool, *, protected: Iterable[str] = ()
) -> dict[str, Any]:
    """Return what decided a verdict: the cases fixed and regressed, and the smallest change that would flip it."""
    cases = {case["id"]: case for case in suite["cases"]}
    regressed = regressions(old, new)
    flip = _smallest_flip(old, new, cases, suite["penalties"], set(protected), regressed)
    return {
        "fixed": fixes(old, new),
        "regressed": regressed,
        "deciding_cases": [change["id"] for change in flip],
        "smallest_flip": flip,
        "summary": _flip_sentence(passed, flip),
    }


def compare(
    suite: Any, suite_sha256: str, baseline: Any, candidate: Any, *, protected: Iterable[str] = ()
) -> dict[str, Any]:
    """Grade a baseline and a candidate run on one suite, and apply the release rule to them.

    The report holds the suite's version and fingerprint, the ``protected`` ids, each run's
    `score` (``baseline``, ``candidate``), ``pass``, the ``reasons`` it fails, and an
    ``explanation`` (cases fixed and regressed, the smallest change that flips the verdict).
    """
    cases = validate_suite(suite)
    check_fingerprint(suite_sha256)
    old = score(suite, cases, suite_sha256, baseline, name="baseline")
    new = score(suite, cases, suite_sha256, candidate, name="candidate")
    protected_ids = check_protected(protected, cases)
    reasons = release_reasons(old, new, protected=protected_ids)
    return {
        "suite_version": suite["version"],
        "suite_sha256": suite_sha256,
        "protected": protected_ids,
        "baseline": old,
        "candidate": new,
        "pass": not reasons,
        "reasons": reasons,
        "explanation": explanation(suite, old, new, not reasons, protected=protected_ids),
    }


def grade_files(
    suite_path: str | Path, baseline_path: str | Path, candidate_path: str | Path, *, protected: Iterable[str] = ()
) -> dict[str, Any]:
    """Load a suite and two run files strictly and ``compare`` them (what ``labkit grade-routes`` does)."""
    suite, suite_sha256 = load(suite_path)
    baseline, _ = load(baseline_path)
    candidate, _ = load(candidate_path)
    return compare(suite, suite_sha256, baseline, candidate, protected=protected)


def _flip_sentence(passed: bool, flip: list[dict[str, str]]) -> str:
    if not flip:
        return "The candidate passes, and no change to the candidate alone could fail it: the baseline got every case wrong."
    steps = ", ".join(f"route {c['id']} to {c['route']}" for c in flip)
    count = f"{len(flip)} change{'s' if len(flip) != 1 else ''}"
    if passed:
        return f"The candidate passes. The smallest change that would fail it ({count}): {steps}."
    return f"The candidate fails. The smallest change that would make it pass ({count}): {steps}."


def explain(report: Mapping[str, Any]) -> str:
    """Return a few plain lines saying what decided the verdict and how close it is to flipping."""
    old, new, why = report["baseline"], report["candidate"], report["explanation"]
    lines = [
        f"verdict: {'pass' if report['pass'] else 'fail'}",
        f"fixed by the candidate: {', '.join(why['fixed']) or 'none'}",
        f"regressed in the candidate: {', '.join(why['regressed']) or 'none'}",
        f"correct {old['correct']} -> {new['correct']}, penalty points {old['penalty_points']} -> "
        f"{new['penalty_points']}, urgent misses {old['urgent_misses']} -> {new['urgent_misses']}",
    ]
    lines += [f"reason: {reason}" for reason in report["reasons"]]
    lines.append(f"deciding cases: {', '.join(why['deciding_cases'])}")
    lines.append(why["summary"])
    return "\n".join(lines)


def own_functions() -> list[Callable[..., Any]]:
    """Return every function defined in this module, private ones too: what an exercise's check watches with `calls_to`."""
    module = sys.modules[__name__]
    return [f for f in vars(module).values() if inspect.isfunction(f) and f.__module__ == __name__]


def apply_changes(run: Mapping[str, Any], changes: Iterable[Mapping[str, str]]) -> dict[str, Any]:
    """Return a copy of ``run`` with the given ``{id, route}`` changes applied (used to test a suggested flip)."""
    new_routes = {change["id"]: change["route"] for change in changes}
    predictions = [{**row, "route": new_routes.get(row["id"], row["route"])} for row in run["predictions"]]
    return {**run, "predictions": predictions}


def constant_run(suite: Any, suite_sha256: str, route: str) -> dict[str, Any]:
    """Return the constant run that sends every case of ``suite`` to one ``route`` (origin ``simulated``).

    A constant run reads no ticket at all: any router worth the name should do better.
    """
    _check_route(route, "constant run route")
    predictions = [{"id": case["id"], "route": route} for case in suite["cases"]]
    return {"label": f"always {route}", "origin": "simulated", "suite_sha256": suite_sha256, "predictions": predictions}


#: The columns `summary_table` shows, from each `score` summary.
HEADLINE = ("origin", "correct", "accuracy", "penalty_points", "urgent_misses")


def summary_table(*summaries: Mapping[str, Any]) -> pd.DataFrame:
    """Return one row per `score` summary, indexed by its run's label, with the `HEADLINE` columns."""
    import pandas as pd

    rows = [{key: summary[key] for key in HEADLINE} for summary in summaries]
    return pd.DataFrame(rows, index=pd.Index([summary["label"] for summary in summaries], name="run"))


def failure_table(*summaries: Mapping[str, Any]) -> pd.DataFrame:
    """Return every failure of the given `score` summaries, one row each, indexed by its run's label."""
    import pandas as pd

    rows = [{"run": summary["label"], **failure} for summary in summaries for failure in summary["failures"]]
    return pd.DataFrame(rows, columns=["run", "id", "expected", "actual", "penalty"]).set_index("run")


def case_table(suite: Mapping[str, Any]) -> pd.DataFrame:
    """Return the suite's cases indexed by id: the expected route, its penalty weight, and the ticket text."""
    import pandas as pd

    cases = pd.DataFrame(suite["cases"]).set_index("id")
    cases.insert(1, "weight", cases["expected"].map(suite["penalties"]))
    return cases


def route_slices(report: Mapping[str, Any]) -> pd.DataFrame:
    """Return, per expected route, its cases and each run's right routes and penalty points.

    Columns: ``cases``, ``baseline_right``, ``candidate_right``, ``baseline_points``,
    ``candidate_points``. A route's recall is its right routes over its cases; they are
    counts, not rates, because a route has only a few cases (a route without any shows 0).
    """
    import pandas as pd

    rows = []
    for route in ROUTES:
        old, new = (report[side]["by_route"][route] for side in ("baseline", "candidate"))
        rows.append(
            {
                "route": route,
                "cases": old["cases"],
                "baseline_right": old["correct"],
                "candidate_right": new["correct"],
                "baseline_points": old["penalty_points"],
                "candidate_points": new["penalty_points"],
            }
        )
    return pd.DataFrame(rows).set_index("route")


def route_confusion(suite: Any, suite_sha256: str, run: Any, *, name: str = "run") -> pd.DataFrame:
    """Return the confusion matrix of one validated run: rows are expected routes, columns predicted routes."""
    import pandas as pd
    from sklearn.metrics import confusion_matrix

    cases = validate_suite(suite)
    routes = validate_run(run, cases=cases, suite_sha256=suite_sha256, name=name)
    ordered = sorted(cases, key=id_order)
    matrix = confusion_matrix(
        [cases[c]["expected"] for c in ordered], [routes[c] for c in ordered], labels=list(ROUTES)
    )
    frame = pd.DataFrame(matrix, index=pd.Index(ROUTES, name="expected"), columns=pd.Index(ROUTES, name="predicted"))
    return frame


def _unicode_form_notes(missing: Iterable[str], extra: Iterable[str], limit: int = 3) -> str:
    """Say which of a run's ids are a missing suite id written in another Unicode form (NFD for NFC), or ""."""
    import unicodedata

    from labkit.replay import code_points, unicode_form_difference

    by_form = {unicodedata.normalize("NFC", run_id): run_id for run_id in extra}
    notes = []
    for suite_id in sorted(missing, key=id_order):
        run_id = by_form.get(unicodedata.normalize("NFC", suite_id))
        d = unicode_form_difference(suite_id, run_id)
        if run_id is None or d is None:
            continue
        notes.append(
            f"the run's id {_shown(run_id)} is the suite's {_shown(suite_id)} in another Unicode form "
            f"({d.actual_form} in the run, {d.recorded_form} in the suite: at character {d.at} the suite has "
            f"{code_points(d.recorded)}, the run {code_points(d.actual)})"
        )
    if not notes:
        return ""
    shown = "; ".join(notes[:limit]) + (f"; and {len(notes) - limit} more" if len(notes) > limit else "")
    return f". Note: {shown}. Write each id with the same code points as the suite (the grader never normalises)"
