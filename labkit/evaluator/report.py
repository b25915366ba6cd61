"""The lesson 01 report: replay a run, check every description, calibrate the judge, build the records.

`evaluate_run(run_id)` replays one recorded run through the model boundary
and returns an `EvaluationReport` whose methods give the notebook's tables:
generations with cost and latency, agreement per criterion and arrangement,
routing, one product's record, and the release summary.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from labkit.evaluator.calibration import REJECTED, Agreement, Routing, agreement, route_criterion
from labkit.evaluator.checks import CheckReport, parse_description, run_checks
from labkit.evaluator.lesson import SETTINGS, LessonInputs, LessonRuns, load_inputs, make_requests
from labkit.evaluator.record import EvaluationRecord, build_record
from labkit.evaluator.rubric import ensure_same_rubric
from labkit.tables import interval, text_table

#: How the agreement table names the row of rater A against rater B; both raters are the course's.
RATERS_ROW = "rater A vs B (authored)"


@dataclass
class EvaluationReport:
    """Everything lesson 01 measures about one recorded run."""

    run_id: str
    origin: str
    inputs: LessonInputs
    runs: LessonRuns
    checks: dict[str, CheckReport]
    agreements: list[Agreement]
    routing: dict[str, Routing]
    records: dict[str, EvaluationRecord]

    def agreement_for(self, criterion: str, arrangement: str) -> Agreement | None:
        """Return one row of the agreement evidence."""
        return next((a for a in self.agreements if (a.criterion, a.arrangement) == (criterion, arrangement)), None)

    @property
    def provenance(self) -> str:
        """One line saying where this run's replies come from: written by the course, or a model's."""
        if self.origin == "authored":
            return f"{self.run_id} (authored): every reply written by the course; no model produced any"
        return f"{self.run_id} ({self.origin}): every reply from the model {self.runs.generation.model_id}"

    @property
    def created_at(self) -> str:
        """The time the recorded run was made, from its manifest (ISO 8601)."""
        from labkit.recording import load_run

        return load_run(self.run_id).created_at

    def kappa_summary(self) -> Any:
        """Return the judge's kappa per criterion in each arrangement, with how many replies each refused."""
        import pandas as pd

        rows = []
        for criterion in self.inputs.rubric.judged():
            row: dict[str, Any] = {"criterion": criterion.id}
            for arrangement in ("per_criterion", "bundled"):
                a = self.agreement_for(criterion.id, arrangement)
                assert a is not None
                row[f"kappa, {arrangement}"] = None if a.kappa is None else round(a.kappa, 2)
                row[f"refused, {arrangement}"] = a.rejected
            rows.append(row)
        return pd.DataFrame(rows).set_index("criterion")

    def waiting_for(self) -> dict[tuple[str, ...], int]:
        """Count the products held for review by the criteria they wait for (``name:scorer``, sorted)."""
        counts: dict[tuple[str, ...], int] = {}
        for record in self.records.values():
            if record.release == "awaiting_human_review":
                key = tuple(sorted(f"{c.criterion}:{c.scorer}" for c in record.criteria if c.passed is None))
                counts[key] = counts.get(key, 0) + 1
        return counts

    def with_human_review(self) -> EvaluationReport:
        """Return an in-memory copy in which people have given every label the rule sent to ``human_review``.

        The people are the course's authored raters: a criterion waiting for review takes
        the adjudicated label of its product, but only where the run's description is, byte
        for byte, the text the raters labeled (the labels file pins each to its SHA-256);
        elsewhere it keeps waiting. Each record's release is decided again by
        `release_decision`. Nothing is recorded or written.
        """
        from labkit.evaluator.record import release_decision

        labels, rubric = self.inputs.labels, self.inputs.rubric
        records = {}
        for pid, record in self.records.items():
            labeled = labels.description_sha256.get(pid) == record.description_sha256
            results = []
            for r in record.criteria:
                if r.scorer == "human_review" and labeled:
                    label = labels.label(pid, r.criterion)
                    passed = label in rubric.criterion(r.criterion).pass_labels
                    r = r.model_copy(update={"label": label, "passed": passed, "scorer": "human"})
                results.append(r)
            records[pid] = record.model_copy(update={"criteria": results, "release": release_decision(results)})
        return dataclasses.replace(self, records=records)

    def with_material_check(self, find: Any) -> EvaluationReport:
        """Return an in-memory copy in which ``find`` gates `factual_accuracy` as the numeric check does.

        ``find(description, facts_materials)`` is exercise 3's check, run on each of the run's
        descriptions (see `flag_descriptions`). Where it names a material, `factual_accuracy`
        fails, scored by code whatever the judge or people gave, with those materials as its
        evidence. Each record's release is decided again by `release_decision`. Nothing is
        recorded or written.
        """
        from labkit.evaluator.record import failing_label, release_decision

        criterion = self.inputs.rubric.criterion("factual_accuracy")
        fail = {"label": failing_label(criterion), "passed": False, "scorer": "programmatic"}
        flagged = self.flag_descriptions(find)
        records = {}
        for pid, record in self.records.items():
            results = list(record.criteria)
            if pid in flagged:
                found = [f"materials: {', '.join(flagged[pid])}, not in the facts"]
                results = [
                    r.model_copy(update={**fail, "evidence": r.evidence + found}) if r.criterion == criterion.id else r
                    for r in results
                ]
            records[pid] = record.model_copy(update={"criteria": results, "release": release_decision(results)})
        return dataclasses.replace(self, records=records)

    def review_table(self) -> Any:
        """Return every product whose release `with_human_review` changes: what it waited on, what people gave.

        ``waited on`` lists each criterion that held the release (``name: scorer``);
        ``review gave`` the labels people gave, in the same order; the last two columns are
        the release before and after. A product whose release does not change has no row.
        """
        import pandas as pd

        after = self.with_human_review().records
        rows = []
        for pid, before in self.records.items():
            if after[pid].release == before.release:
                continue
            now = {c.criterion: c for c in after[pid].criteria}
            held = [c for c in before.criteria if c.passed is None]
            rows.append(
                {
                    "product": pid,
                    "waited on": ", ".join(f"{c.criterion}: {c.scorer}" for c in held),
                    "review gave": ", ".join(
                        f"{c.criterion}: {now[c.criterion].label}" for c in held if now[c.criterion].scorer == "human"
                    ),
                    "before": before.release,
                    "after": after[pid].release,
                }
            )
        return text_table(pd.DataFrame(rows, columns=["product", "waited on", "review gave", "before", "after"]))

    def scored_by(self, scorer: str) -> list[str]:
        """Return the criteria the agreement rule routes to ``scorer`` (judge, human_review or programmatic)."""
        return [criterion for criterion, routed in self.routing.items() if routed.scorer == scorer]

    def label_table(self, criterion: str, arrangement: str = "per_criterion") -> Any:
        """Return the held-out labels of one criterion counted in a cross-table: people's by row, the judge's by column.

        The diagonal is where they agree; the margins (``all``) are how often each side
        gives each label, which is what chance agreement is made of.
        """
        import pandas as pd

        held_out = self.inputs.labels.held_out
        judged = self.runs.judging.labels(arrangement=arrangement, source="labeled", criterion=criterion)  # type: ignore[arg-type]  # per_criterion or bundled
        people = pd.Series(self.inputs.labels.column(held_out, criterion), name="adjudicated label")
        judge = pd.Series([judged.get(p) or REJECTED for p in held_out], name=f"{arrangement} judge")
        return pd.crosstab(people, judge, margins=True, margins_name="all")

    def generation_table(self) -> Any:
        """Return one row per generated description: words, schema, tokens, cost, latency."""
        import pandas as pd

        rows = []
        for g in self.runs.generation.generations:
            check = self.checks[g.product_id]
            output, _ = parse_description(g.text)
            rows.append(
                {
                    "product": g.product_id,
                    "schema": check.status("schema"),
                    "length": check.status("length"),
                    "words": len(output.description.split()) if output else None,
                    "numeric_claims": check.status("numeric_claims"),
                    "prompt_tokens": g.call.prompt_tokens,
                    "completion_tokens": g.call.completion_tokens,
                    "tokens": g.call.usage_source,
                    "cost_usd": round(g.call.cost_usd, 7),
                    "latency_s": None if g.call.latency_s is None else round(g.call.latency_s, 2),
                }
            )
        return text_table(pd.DataFrame(rows).astype({"words": "Int64"}))

    def agreement_table(self) -> Any:
        """Return the agreement evidence: one row per criterion and arrangement, the two raters' row beside it.

        The raters' row is named `RATERS_ROW`: the course wrote both raters' labels. In an
        authored run the judge's rows say "(authored)" too: the course wrote its verdicts.
        """
        import pandas as pd

        rows = []
        for a in self.agreements:
            if a.arrangement == "human-human":
                arrangement = RATERS_ROW
            elif a.arrangement != "programmatic" and self.origin == "authored":
                arrangement = f"{a.arrangement} (authored)"
            else:
                arrangement = a.arrangement
            rows.append(
                {
                    "criterion": a.criterion,
                    "arrangement": arrangement,
                    "items": a.items,
                    "refused": a.rejected,
                    "agreement": round(a.percent_agreement, 2),
                    "agreement_95": interval(a.agreement_low, a.agreement_high),
                    "kappa": None if a.kappa is None else round(a.kappa, 2),
                    "kappa_95": interval(a.kappa_low, a.kappa_high),
                    "base_rate": f"{a.base_rate:.2f} ({a.base_rate_label})",
                }
            )
        return text_table(pd.DataFrame(rows))

    def routing_table(self) -> Any:
        """Return who scores each criterion in release, and why; an authored run's judge says "(authored)"."""
        import pandas as pd

        rows = [r.model_dump() for r in self.routing.values()]
        if self.origin == "authored":
            for row in rows:
                if row["scorer"] == "judge":
                    row["scorer"] = "judge (authored)"
        return text_table(pd.DataFrame(rows))

    def judge_table(self, product_id: str, *, source: str = "labeled") -> Any:
        """Return the judge's labels for one description: arrangement, criterion, explanation, verdict, or rejection."""
        import pandas as pd

        rows = []
        for call in self.runs.judging.calls:
            if (call.product_id, call.description_source) != (product_id, source):
                continue
            if call.rejected:
                rows.append(
                    {
                        "arrangement": call.arrangement,
                        "criterion": ", ".join(call.criteria),
                        "explanation": call.rejected,
                        "verdict": REJECTED,
                    }
                )
            for label in call.labels:
                rows.append(
                    {
                        "arrangement": call.arrangement,
                        "criterion": label.criterion,
                        "explanation": label.explanation,
                        "verdict": label.verdict,
                    }
                )
        return text_table(pd.DataFrame(rows, columns=["arrangement", "criterion", "explanation", "verdict"]))

    def release_table(self) -> Any:
        """Return the release summary: per product, the run's origin, each criterion's label (or who must give it) and the decision."""
        import pandas as pd

        rows = []
        for pid, record in self.records.items():
            row: dict[str, Any] = {"product": pid, "origin": self.origin}
            for result in record.criteria:
                row[result.criterion] = result.label if result.label else result.scorer
            row.update({"cost_usd": round(record.cost_usd, 7), "release": record.release})
            rows.append(row)
        return text_table(pd.DataFrame(rows))

    def flag_descriptions(self, find: Any, *, source: str = "generated") -> dict[str, Any]:
        """Return product -> ``find(description, facts_materials)`` for each description that it flags.

        ``source`` is ``"generated"`` (the run's descriptions) or ``"labeled"`` (the texts
        the raters labeled). ``find`` gets the description a shopper would see and the
        product's materials; a product is listed only where it returns something
        non-empty, and a reply that holds no description is skipped.
        """
        from labkit.evaluator.record import user_description

        if source == "generated":
            texts = {pid: g.text for pid, g in self.runs.generation.by_product().items()}
        elif source == "labeled":
            texts = dict(self.inputs.labeled_texts)
        else:
            raise ValueError(f"source is {source!r}; give 'generated' or 'labeled'")
        flagged = {}
        for pid, text in texts.items():
            shown = user_description(text)
            if shown is not None:
                found = find(shown.description, self.inputs.products[pid].facts.materials)
                if found:
                    flagged[pid] = found
        return flagged

    def pass_counts(self) -> dict[str, str]:
        """Return, per programmatic check, how many of the run's descriptions pass it (``"22/24"``)."""
        names = [r.name for r in next(iter(self.checks.values())).results]
        total = len(self.checks)
        return {n: f"{sum(c.status(n) == 'pass' for c in self.checks.values())}/{total}" for n in names}

    def label_changes(self) -> dict[str, int]:
        """Return, per judged criterion, how many held-out items get a different label per criterion and bundled.

        A refused reply has no label, so an item refused in one arrangement and labeled in the other counts.
        """
        changes = {}
        for criterion in self.inputs.rubric.judged():
            each, bundled = (
                self.runs.judging.labels(arrangement=a, source="labeled", criterion=criterion.id)
                for a in ("per_criterion", "bundled")
            )
            changes[criterion.id] = sum(each.get(p) != bundled.get(p) for p in self.inputs.labels.held_out)
        return changes

    def checks_table(self, product_id: str) -> Any:
        """Return the programmatic checks of one generated description."""
        import pandas as pd

        return text_table(pd.DataFrame([r.model_dump() for r in self.checks[product_id].results]))

    def claims_table(self, product_id: str) -> Any:
        """Return every number-with-unit found in one description, with the supplied fact beside it."""
        import pandas as pd

        columns = ["quantity", "text", "claimed", "fact", "status"]
        return text_table(pd.DataFrame([c.model_dump() for c in self.checks[product_id].claims], columns=columns))

    def record_table(self, product_id: str) -> Any:
        """Return one record's criteria: label, scorer, the judge's explanation and the programmatic evidence.

        The judge's explanation is shown only where the judge decides the label (scorer ``judge``):
        elsewhere the judge's reply, if any, counts for nothing, so it is not shown beside the label.
        """
        import pandas as pd

        rows = [
            {
                "criterion": r.criterion,
                "label": r.label or "-",
                "scorer": r.scorer,
                "judge's explanation": (r.explanation or "-") if r.scorer == "judge" else "-",
                "evidence": "; ".join(r.evidence) or "-",
            }
            for r in self.records[product_id].criteria
        ]
        return text_table(pd.DataFrame(rows))


def rubric_table(rubric: Any) -> Any:
    """Return the rubric's criteria as a table: labels, passing labels, who scores, which checks gate it."""
    import pandas as pd

    return text_table(
        pd.DataFrame(
            [
                {
                    "criterion": c.id,
                    "allowed_labels": ", ".join(c.allowed_labels),
                    "pass_labels": ", ".join(c.pass_labels),
                    "scored_by": c.scored_by,
                    "gated_by_checks": ", ".join(c.checks) or "-",
                }
                for c in rubric.criteria
            ]
        )
    )


def release_counts(reports: dict[str, EvaluationReport]) -> Any:
    """Return how many products each run releases, blocks, or holds for human review."""
    import pandas as pd

    decisions = ("release", "blocked", "awaiting_human_review")
    rows = {
        name: {d: sum(r.release == d for r in report.records.values()) for d in decisions}
        for name, report in reports.items()
    }
    return pd.DataFrame(rows).T


def spread_table(reports: dict[str, EvaluationReport]) -> Any:
    """Return each run's generation cost and measured latency as median and range (what the plots draw).

    One column per run. The last two rows are the judge calls' latency, median and range,
    which the plots do not draw.
    """
    import pandas as pd

    rows = []
    for name, report in reports.items():
        calls = [g.call for g in report.runs.generation.generations]
        cost = pd.Series([c.cost_usd * 1e6 for c in calls])
        latency = pd.Series([c.latency_s for c in calls if c.latency_s is not None], dtype=float)
        judging = [j.call.latency_s for j in report.runs.judging.calls if j.call.latency_s is not None]
        judge_latency = pd.Series(judging, dtype=float)
        rows.append(
            {
                "run": name,
                "descriptions": len(calls),
                "tokens": calls[0].usage_source,
                "cost, millionths of $ (median)": round(cost.median(), 2),
                "cost range": interval(cost.min(), cost.max()),
                "latency s (median)": round(latency.median(), 2) if len(latency) else "not measured",
                "latency range": interval(latency.min(), latency.max()) if len(latency) else "-",
                "judge latency s (median)": round(judge_latency.median(), 2) if judging else "not measured",
                "judge latency range": interval(judge_latency.min(), judge_latency.max()) if judging else "-",
            }
        )
    return text_table(pd.DataFrame(rows).set_index("run").T)


def cost_ceiling_table(reports: dict[str, EvaluationReport]) -> Any:
    """Return whether the cost check could fail on each run: its dearest request, had the reply used all of max_tokens.

    The ceiling is the request's prompt tokens at the input price plus ``max_tokens`` at
    the output price; the check can fail on the run only if some ceiling passes ``max_cost_usd``.
    The last column is what the check leaves out: the dearest description with its judge calls
    added (``cost_usd + judge_cost_usd`` of its record), and whether that passes the limit.
    """
    import pandas as pd

    rows = []
    for name, report in reports.items():
        limit = report.inputs.rubric.limits.max_cost_usd
        calls = [g.call for g in report.runs.generation.generations]
        price = report.inputs.prices.models[calls[0].model_id]
        ceiling = max(
            (c.prompt_tokens or 0) * price.input_per_million_tokens
            + c.request["max_tokens"] * price.output_per_million_tokens
            for c in calls
        )
        rows.append(
            {
                "run": name,
                "dearest, USD": f"{max(c.cost_usd for c in calls):.6f}",
                "ceiling, USD": f"{ceiling / 1e6:.6f}",
                "max_cost_usd": f"{limit:.6f}",
                "cost check": "can fail" if ceiling / 1e6 > limit else "cannot fail here",
                "with judge calls, USD": _with_judge(report, limit),
            }
        )
    return text_table(pd.DataFrame(rows).set_index("run"))


def _with_judge(report: EvaluationReport, limit: float) -> str:
    """Return the dearest record's generation plus judge cost, and whether it passes ``limit``."""
    total = max(r.cost_usd + r.judge_cost_usd for r in report.records.values())
    return f"{total:.6f} ({'over' if total > limit else 'within'} the limit)"


def _format_label(text: str, inputs: LessonInputs, product_id: str) -> str:
    checks = run_checks(text, inputs.products[product_id], inputs.rubric, cost_usd=0.0)
    return "pass" if checks.status("schema") == "pass" and checks.status("length") == "pass" else "fail"


def calibrate(inputs: LessonInputs, runs: LessonRuns) -> tuple[list[Agreement], dict[str, Routing]]:
    """Measure agreement on the held-out subset per criterion and arrangement, and route each criterion."""
    labels, rubric = inputs.labels, inputs.rubric
    held_out = labels.held_out
    rows, routing = [], {}
    for criterion in rubric.criteria:
        reference = labels.column(held_out, criterion.id)
        if criterion.scored_by == "judge":
            for arrangement in ("per_criterion", "bundled"):
                judged = runs.judging.labels(arrangement=arrangement, source="labeled", criterion=criterion.id)
                rows.append(agreement(criterion.id, arrangement, reference, [judged.get(p) for p in held_out]))
        else:
            rows.append(
                agreement(
                    criterion.id,
                    "programmatic",
                    reference,
                    [_format_label(inputs.labeled_texts[p], inputs, p) for p in held_out],
                )
            )
        release_arrangement = rubric.agreement_rule.arrangement if criterion.scored_by == "judge" else "programmatic"
        evidence = next(r for r in rows if (r.criterion, r.arrangement) == (criterion.id, release_arrangement))
        routing[criterion.id] = route_criterion(evidence, rubric.agreement_rule, scored_by=criterion.scored_by)
        rater_a, rater_b = labels.raters
        rows.append(
            agreement(
                criterion.id,
                "human-human",
                labels.column(held_out, criterion.id, who=rater_a),
                labels.column(held_out, criterion.id, who=rater_b),
            )
        )
    return rows, routing


def build_report(run_id: str, origin: str, inputs: LessonInputs, runs: LessonRuns) -> EvaluationReport:
    """Check every description, calibrate the judge and build one record per generated description."""
    rubric = inputs.rubric
    ensure_same_rubric(runs.generation, rubric)
    ensure_same_rubric(runs.judging, rubric)
    agreements, routing = calibrate(inputs, runs)
    release_arrangement = rubric.agreement_rule.arrangement
    checks, records = {}, {}
    for g in runs.generation.generations:
        product = inputs.products[g.product_id]
        checks[g.product_id] = run_checks(g.text, product, rubric, cost_usd=g.call.cost_usd)
        digest = hashlib.sha256(g.text.encode("utf-8")).hexdigest()
        calls = [c for c in runs.judging.calls if c.product_id == g.product_id and c.description_sha256 == digest]
        judge_labels = {lab.criterion: lab for c in calls if c.arrangement == release_arrangement for lab in c.labels}
        in_release = {c.call.request_sha256: c for c in calls if c.arrangement == release_arrangement}
        judge_cost = sum(c.call.cost_usd for c in in_release.values())  # not the other arrangement's, §5 compares
        records[g.product_id] = build_record(
            g,
            checks[g.product_id],
            rubric,
            run_id=run_id,
            routing=routing,
            agreements={a.criterion: a for a in agreements if a.arrangement in (release_arrangement, "programmatic")},
            judge_labels=judge_labels,
            judge_cost_usd=judge_cost,
        )
    return EvaluationReport(run_id, origin, inputs, runs, checks, agreements, routing, records)


def evaluate_run(run_id: str, *, inputs: LessonInputs | None = None) -> EvaluationReport:
    """Replay one recorded run of lesson 01 through the model boundary and evaluate it."""
    from labkit.boundary import connect

    inputs = inputs or load_inputs()
    boundary = connect(run_id, lesson="01", settings=SETTINGS)
    runs = make_requests(boundary, inputs=inputs)
    return build_report(run_id, boundary.origin or runs.generation.origin, inputs, runs)
