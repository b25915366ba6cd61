"""Lesson 01's findings said in sentences, each built from the figures of the run it reads.

Every function returns Markdown for the notebook to display, so no figure on the
page is typed by hand. Where a sentence says something about the recorded replies
(a word a description holds, a verdict, why replies were refused), the function
checks it first and raises `ReadingOutdated` when the run no longer supports it:
a new recording stops at the first sentence it contradicts instead of printing it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from labkit.errors import ReadingOutdated
from labkit.evaluator.calibration import BOOTSTRAP_RESAMPLES, Agreement, route_criterion
from labkit.evaluator.experiments import Experiment, comparisons_table
from labkit.evaluator.record import user_description
from labkit.evaluator.repeats import PRODUCTS, REJECTED, TRIALS, SampledJudge, varies_across_seeds
from labkit.evaluator.report import EvaluationReport
from labkit.tables import interval
from labkit.trials import wilson


def _require(holds: bool, claim: str) -> None:
    if not holds:
        raise ReadingOutdated(
            f"the recorded run no longer shows that {claim}; read the run's tables again and rewrite "
            "this sentence in labkit/evaluator/readings.py"
        )


def _shown(text: str) -> str:
    """Return the description a shopper would see in a reply, or raise if the reply holds none."""
    shown = user_description(text)
    _require(shown is not None, "this reply holds a description")
    assert shown is not None
    return shown.description


def _row(report: EvaluationReport, criterion: str, arrangement: str) -> Agreement:
    row = report.agreement_for(criterion, arrangement)
    _require(row is not None, f"the run has a {arrangement} agreement row for {criterion}")
    assert row is not None
    return row


def _names(criteria: list[str]) -> str:
    return " and ".join(f"`{c}`" for c in criteria)


def influence_reading(report: EvaluationReport, criterion: str, index: int) -> str:
    """Say which held-out item ``criterion``'s kappa hangs on: its labels, and kappa with and without it."""
    from labkit.evaluator.calibration import kappa, most_influential_item

    people = report.inputs.labels.column(report.inputs.labels.held_out, criterion)
    judged = report.runs.judging.labels(arrangement="per_criterion", source="labeled", criterion=criterion)
    verdicts = [judged[p] for p in report.inputs.labels.held_out]
    judge = [v for v in verdicts if v is not None]
    _require(len(judge) == len(people), f"the judge labeled every held-out item for {criterion}")
    _require(index == most_influential_item(people, judge), f"item {index} moves {criterion}'s kappa most")
    full = kappa(people, judge)
    without = kappa(people[:index] + people[index + 1 :], judge[:index] + judge[index + 1 :])
    assert full is not None and without is not None
    product = report.inputs.labels.held_out[index]
    same = people[index] == judge[index]
    kind = (
        f"an item where both say `{people[index]}`"
        if same
        else f"the raters say `{people[index]}`, the judge `{judge[index]}`"
    )
    rarest = min(set(people), key=people.count)
    lesson = (
        f"The item that moves kappa most is an agreement, on the rarer label `{rarest}`."
        if same and people[index] == rarest
        else "One item of ten moves the figure this far."
    )
    return f"**{product}** ({kind}): without it, `{criterion}`'s kappa goes from {full:.2f} to {without:.2f}. {lesson}"


def intervals_reading(report: EvaluationReport) -> str:
    """Say what the held-out items can show: how far one item moves agreement, how wide the intervals are."""
    rule = report.inputs.rubric.agreement_rule
    tone = _row(report, "tone", "per_criterion")
    judge, raters = _row(report, "completeness", "per_criterion"), _row(report, "completeness", "human-human")
    code = _row(report, "format_length", "programmatic")
    n = tone.items
    _require(n == len(report.inputs.labels.held_out) == 10, "the held-out subset holds the ten items §5 names")
    low, high = tone.kappa_low, tone.kappa_high
    wide = low is not None and high is not None and low <= 0 and high >= rule.min_kappa
    _require(wide, "tone's kappa interval runs from chance or below to past min_kappa")
    _require(tone.base_rate < 1, "people give tone more than one label, so a constant judge has kappa 0")
    _require(None not in (judge.kappa, raters.kappa), "both completeness kappas are defined")
    assert judge.kappa is not None and raters.kappa is not None
    _require(judge.kappa > raters.kappa, "the judge's completeness kappa tops the raters'")
    perfect = (code.kappa, code.kappa_low, code.kappa_high) == (1.0, 1.0, 1.0)
    _require(perfect and code.kappa_undefined > 0, "format_length's kappa and its interval are all 1.00")
    return (
        f"**What {n} items can show.** One disagreement moves percent agreement by {100 / n:.0f} points, and the "
        f"intervals are wide: `tone`'s kappa interval, {interval(low, high)}, cannot separate a judge near chance "
        f"from one near agreement. A judge that always said `{tone.base_rate_label}` would agree on "
        f"{tone.base_rate:.0%} of tone's items, with a kappa of 0. The judge's `completeness` kappa "
        f"({judge.kappa:.2f}) tops the raters' ({raters.kappa:.2f}) but compares another pair (judge against the "
        "adjudicated label, itself settled from both raters; A against B): not a judge better than its raters. "
        "`format_length`'s perfect score is close to vacuous: "
        f"{round(code.base_rate * code.items)} of its {code.items} reference labels are `{code.base_rate_label}`, "
        f"and its interval [1.00, 1.00] leaves out the {code.kappa_undefined} draws (of {BOOTSTRAP_RESAMPLES}) that "
        "drew one label only, where kappa is undefined."
    )


def routing_reading(report: EvaluationReport) -> str:
    """Say what the agreement rule's routing of the authored run shows, and what its two floors cannot tell apart."""
    rule = report.inputs.rubric.agreement_rule
    judged = [c.id for c in report.inputs.rubric.judged()]
    rows = {c: _row(report, c, rule.arrangement) for c in judged}
    raters = {c: _row(report, c, "human-human") for c in judged}
    by_judge = report.scored_by("judge")
    opening = ["factual_accuracy", "completeness"]  # the notebook's first cell names them
    _require(report.origin == "authored" and by_judge == opening, "the authored judge qualifies on the two named")
    first = rows[by_judge[0]]
    _require(first.kappa_low is not None and first.kappa_low <= 0, "a qualified kappa's interval reaches chance")
    assert first.kappa is not None
    common = [c for c, a in rows.items() if a.base_rate >= rule.min_percent_agreement]
    rates = {rows[c].base_rate for c in common}
    _require(len(rates) == 1, "the criteria whose base rate reaches the floor share one base rate")
    missed = [c for c, a in raters.items() if route_criterion(a, rule).scorer != "judge"]
    _require(
        len(missed) == 1 and missed[0] in report.scored_by("human_review"),
        "the raters miss the rule where the judge does",
    )
    them = raters[missed[0]]
    assert them.kappa is not None
    return (
        f"**An authored success.** The judge scores {_names(by_judge)}, but it is the course's: this shows how the "
        "rule routes, not that a model judge can earn a criterion (§7 tries a real one). The rule reads point "
        f"estimates: `{first.criterion}` qualifies with kappa {first.kappa:.2f} "
        f"though its `kappa_95`, {interval(first.kappa_low, first.kappa_high)}, reaches down to chance.\n\n"
        f"**The {rule.min_percent_agreement:.0%} floor does little here.** On {_names(common)} the base rate is "
        f"{rates.pop():.0%}: a judge that always gives the common label reaches `min_percent_agreement`, so only kappa "
        "tells it from a constant.\n\n"
        f"**The raters miss the rule too**, on `{them.criterion}` (rater A against rater B: kappa {them.kappa:.2f}, "
        f"agreement {them.percent_agreement:.0%}). The reference itself is uncertain there: in practice, sharpen the "
        "anchors until people agree before asking what a judge needs. Exercise 2 asks it anyway, to show how little "
        "the judge's kappa rests on."
    )


def calls_of(report: EvaluationReport, source: str, product_id: str = "p07") -> list[Any]:
    """Return a run's per-criterion judge calls on one product's description from ``source`` (labeled or generated)."""
    return [
        c
        for c in report.runs.judging.calls
        if (c.product_id, c.description_source, c.arrangement) == (product_id, source, "per_criterion")
    ]


def captured_first_look(captured: EvaluationReport) -> str:
    """Say that the real model's judge passes both lantern texts the numeric check fails, quoting what it wrote.

    The judge prompt asks for an explanation that quotes the description, so a quote is
    no failure: the failure is a verdict that does not follow from what the quote says.
    """
    own = captured.runs.judging.labels(arrangement="per_criterion", source="generated", criterion="factual_accuracy")
    _require(own.get("p07") == "pass", "the judge passes its own lantern's factual accuracy")
    claims = {(c.text, c.fact, c.status) for c in captured.checks["p07"].claims}
    _require(("110 grams", "340 g", "contradicted") in claims, "the lantern claims 110 grams against 340 g")
    own_text = _shown(captured.runs.generation.by_product()["p07"].text)
    facts = str(captured.inputs.products["p07"].facts.for_prompt()).lower()
    _require(
        "rectangular" in own_text and "rectangular" not in facts, "it calls the lantern rectangular, unlike its facts"
    )
    calls = captured.runs.judging.calls
    labeled = [c for c in calls if (c.product_id, c.description_source) == ("p07", "labeled")]
    first = next(c for c in labeled if c.arrangement == "per_criterion" and c.criteria == ["factual_accuracy"])
    _require(bool(first.labels) and first.labels[0].verdict == "pass", "the judge passes the §3 lantern text")
    quoted = first.labels[0].explanation
    _require("12 hours" in quoted and "per litre" in quoted, "its explanation holds 12 hours and a price per litre")
    description = _shown(captured.inputs.labeled_texts["p07"])
    sentences = [x.strip() + "." for x in description.split(".") if len(x.split()) >= 5]
    explanations = [label.explanation for c in labeled for label in c.labels]
    copying = [e for e in explanations if any(x in e for x in sentences)]
    copied_sentences = {x for e in copying for x in sentences if x in e}
    _require(len(copied_sentences) == 1, "the explanations that copy a sentence all copy the same one")
    _require("litre" not in facts and "litre" not in description.lower(), "no fact or text of p07 names a litre")
    bundled = next(c for c in labeled if c.arrangement == "bundled")
    tone = next(label for label in bundled.labels if label.criterion == "tone")
    _require(tone.verdict == "fail" and "friendly" in tone.explanation, "the bundled tone fails a friendly tone")
    return (
        "**The judge passes false numbers.** The numeric check fails both lantern texts: *110 grams* in "
        "table A, and the course's 12 hours against 6 h (§3). (The model's *rectangular* is in no fact either: a shape, "
        "which the numeric check cannot read, like p15's oak in §9.) The model's judge passes `factual_accuracy` on "
        "both (tables B and C). The prompt asks for an explanation that quotes the description. An explanation "
        "counts here as quoting when it holds, word for word with its full stop, one of the description's "
        f"sentences of five words or more: {len(copying)} of the {len(explanations)} in table C do, all the same "
        f"sentence, *{copied_sentences.pop()}* The failure is that the verdict does not follow from the "
        "quote. Table C's first explanation, in full:\n\n"
        f"> {quoted}\n\n"
        "It states both 6 and 12 hours, and a price per litre that neither p07's facts nor its text hold. Then it "
        "passes the text. The verdict need not follow the explanation the other way either: table C's bundled "
        f"`tone` is `{tone.verdict}` on *{tone.explanation.strip()}*"
    )


def refusals_reading(captured: EvaluationReport) -> str:
    """Say why some of the real model's judge replies were refused, and why the rule sends every criterion to people."""
    rule = captured.inputs.rubric.agreement_rule
    calls = captured.runs.judging.calls
    refused = [c.rejected for c in calls if c.rejected]
    _require(
        bool(refused) and all("control character" in r for r in refused), "each refused reply held a control character"
    )
    judged = captured.inputs.rubric.judged()
    each = [_row(captured, c.id, "per_criterion").rejected for c in judged]
    bundled = {_row(captured, c.id, "bundled").rejected for c in judged}
    _require(
        len(bundled) == 1 and sum(each) + bundled.pop() == len(refused), "a refused bundled reply counts per criterion"
    )
    read = [_row(captured, c.id, rule.arrangement).kappa for c in judged]
    _require(None not in read, "every kappa the rule reads is defined")
    best = max(k for k in read if k is not None)
    _require(best <= 0 and captured.scored_by("judge") == [], "the real judge, no better than chance, scores nothing")
    return (
        "**Refused replies.** The recording server held each reply to the schema with a *grammar* (rules, built "
        "from the schema, on which characters may come next), yet let raw control characters (invisible ones, such "
        f"as a line break) into strings, which JSON forbids: {len(refused)} of the model's {len(calls)} judge replies "
        "were refused. Each enters kappa as `(refused)`, a label no person gave, so it counts as a disagreement; a refused "
        "bundled reply counts once per criterion in the `refused` columns. The highest "
        f"`{rule.arrangement}` kappa, the one the rule reads, is {best:.2f}, no better than chance, so every judged "
        "criterion goes to people.\n\n"
        "**What this failure teaches.** The rule benched the lesson's only real judge for agreeing with people no "
        "better than chance, not for passing false numbers: a judge that qualifies can still pass a false claim "
        "(p15's shelf, §9). A stronger judge must first be measured against people's labels on held-out items."
    )


def sampled_reading(sampled: SampledJudge, report: EvaluationReport) -> str:
    """Say which text the sampled judge read, and what its seeds can and cannot show."""
    inputs = report.inputs
    _require(len(PRODUCTS) == 1, "the sampled judge reads one product")
    pid = PRODUCTS[0]
    text = inputs.labeled_texts[pid]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    read = {(t.call.product_id, t.call.description_source, t.call.description_sha256) for t in sampled.trials}
    _require(read == {(pid, "labeled", digest)} and "12 hours" in text, "every trial judged the 12-hour lantern text")
    varying = [c for _, c in varies_across_seeds(sampled.trials)]
    _require(bool(varying), "the sampled verdict varies across seeds on some criterion")
    _require(all(t.verdict != REJECTED for t in sampled.trials), "no sampled reply was refused")
    seen = [t.verdict for t in sorted(sampled.trials, key=lambda t: t.seed) if t.criterion == varying[0]]
    agree = sum(v == inputs.labels.label(pid, varying[0]) for v in seen)
    others = len(inputs.labels.held_out) - len(PRODUCTS)
    return (
        f"Every trial judged one text: {pid}'s labeled description, the course's 12-hour lantern of §3. At "
        f"temperature {TRIALS.temperature:g} the verdict varies across seeds on {_names(varying)}, and none of the "
        f"{len(sampled.trials)} sampled replies was refused: on this one description the sampled judge gives more "
        f"than one verdict. Its {TRIALS.n} seeds cannot show how good it is (on `{varying[0]}`, {agree} of "
        f"{len(seen)} agreeing gives {interval(*wilson(agree, len(seen)))}, room for a judge that usually agrees and "
        f"for one that usually does not), how often it varies on the other {others} held-out items, "
        "or anything about the temperature-0 judge the rule read. To deploy a sampled judge, measure "
        "that configuration's agreement on every held-out item."
    )


def arrangement_reading(experiment: Experiment, report: EvaluationReport) -> str:
    """Say what one arrangement experiment decides: a point estimate ahead is not a win when the interval holds 0.

    ``report`` is the run the experiment read: its label changes between the
    arrangements say why each difference interval starts at exactly 0.
    """
    compared = comparisons_table([experiment])
    pairs = list(zip(compared.baseline, compared.changed_to, compared.difference_95, strict=True))
    _require(experiment.variable == "judge arrangement", "the experiment shown changes the arrangement")
    _require(experiment.outcome == "tie" and set(compared.verdict) == {"tie"}, "every measure is a tie")
    _require(all(float(c) > float(b) for b, c, _ in pairs), "per-criterion is ahead on every point estimate")
    _require(all(d.startswith("[0.00,") for _, _, d in pairs), "each difference interval starts at 0.00")
    changes = report.label_changes()
    _require(all(n > 0 for n in changes.values()), "the arrangements' labels differ on some item")
    items = experiment.conditions["items"]
    points = ", ".join(f"{float(c):.2f} vs {float(b):.2f}" for b, c, _ in pairs)
    changed = ", ".join(f"{n} for `{c}`" for c, n in changes.items())
    author = "The course wrote these judge replies, so this lead is authored. " if report.origin == "authored" else ""
    return (
        f"Per-criterion is ahead of bundled on every point estimate ({points}). {author}"
        f"The two arrangements give a different label on few held-out items: {changed}. A resample that "
        "leaves those items out gives a difference of exactly 0, so each interval starts at 0.00: by the rule every "
        "measure is a tie. Here a tie does not mean the two score the same: no interval goes below 0, but "
        f"{items} items cannot rule out no difference. The log keeps the `tie`, so no one may later call either "
        "arrangement the better on these items."
    )


def log_reading(logged: list[Experiment]) -> str:
    """Say in a few sentences what the rest of the experiment log holds, from its outcomes."""
    by_variable = {e.variable: e for e in logged}
    arrangements = [e for e in logged if e.variable == "judge arrangement"]
    judge, generation = by_variable["judge model"], by_variable["generation model"]
    _require([e.outcome for e in arrangements] == ["tie", "tie"], "both arrangement experiments are ties")
    captured = comparisons_table([arrangements[1]])
    below = all(float(c) < float(b) for b, c in zip(captured.baseline, captured.changed_to, strict=True))
    _require(below, "per-criterion is below bundled on every captured point estimate")
    scorers = judge.result["scorer"]
    by_changed = [c for c, s in scorers.items() if s["changed_to"] == "judge"]
    _require(not by_changed and judge.outcome == "failed", "the changed judge qualifies for no criterion")
    _require(generation.outcome == "tie", "the generation-model experiment is a tie")
    edges = [
        f"`{c['measure']}` {c['difference_95']} ({c['baseline']} against {c['changed_to']})"
        for c in generation.result["comparisons"]
        if "0.00" in c["difference_95"].strip("[]").split(", ")
    ]
    _require(bool(edges), "an interval of the generation-model experiment ends at zero")
    return (
        "On the captured run the arrangement experiment is a tie too, with per-criterion *below* bundled on each "
        f"of its {len(captured)} point estimates. The judge-model experiment is decided by the agreement rule, and SmolLM2 qualifies "
        "for no criterion, so it `failed`, against replies the course wrote, not against another model. The "
        "generation-model `tie` counts only "
        "schema, length and numeric-claim passes, against authored texts the course wrote with flaws on purpose "
        f"(the lantern's 12 hours of §3, for one). {len(edges)} of its {len(generation.result['comparisons'])} "
        f"intervals hold zero only as an end: {' and '.join(edges)}, the course's texts first. By the rule those "
        "are ties, not evidence that the two pass alike. It does not say the small model writes as well: §7 showed its lantern text. The log file "
        f"under `scratch/` holds all {len(logged)} entries."
    )


def release_reading(authored: EvaluationReport, captured: EvaluationReport) -> str:
    """Say what holds each run's release, and what people's review, applied in memory, changes."""
    labels, judged = authored.inputs.labels, [c.id for c in authored.inputs.rubric.judged()]
    released = [sum(r.release == "release" for r in run.records.values()) for run in (authored, captured)]
    _require(released == [0, 0], "neither recorded run releases a description")
    held = sum(authored.waiting_for().values())
    all_three = tuple(sorted(f"{c}:human_review" for c in judged))
    _require(
        captured.waiting_for() == {all_three: held}, "each run holds as many, the captured on every judged criterion"
    )
    waits = dict(authored.waiting_for())
    only_tone = waits.pop(("tone:human_review",), 0)
    unasked = all("completeness:not_judged" in k and "factual_accuracy:not_judged" in k for k in waits)
    _require(only_tone > 0 and unasked, "the other held authored products also wait for a judge label never asked for")
    asked = {(c.product_id, c.description_source) for run in (authored, captured) for c in run.runs.judging.calls}
    _require(
        asked == {(p, "labeled") for p in labels.held_out} | {("p07", "generated")}, "the runs judge what it names"
    )
    texts = authored.runs.generation.by_product()
    same = all(authored.inputs.labeled_texts[p] == texts[p].text for p in labels.held_out)
    _require(same, "the held-out labeled texts are the authored run's own descriptions")
    moved = authored.review_table()
    tone_rows, others = (
        moved[moved["waited on"] == "tone: human_review"],
        moved[moved["waited on"] != "tone: human_review"],
    )
    freed = tone_rows["after"].tolist().count("release")
    stopped = tone_rows[tone_rows["after"] == "blocked"]["review gave"].tolist()
    _require(len(tone_rows) == only_tone and stopped == ["tone: fail"] * (only_tone - freed), "review settles tone")
    other = others.iloc[0] if len(others) == 1 else None
    _require(
        other is not None and (other["after"], other["review gave"]) == ("blocked", "tone: fail"),
        "one other product changes, blocked by its tone fail",
    )
    assert other is not None
    _require(other["product"] in labels.calibration, f"{other['product']} is a calibration text")
    unlabeled = all(labels.description_sha256.get(p) != r.description_sha256 for p, r in captured.records.items())
    _require(unlabeled and captured.review_table().empty, "no captured description is a text the raters labeled")
    left = sum(authored.with_human_review().waiting_for().values())
    return (
        f"**What holds each run.** Neither run releases a description; each holds {held}. A held captured product "
        f"waits for people on all {len(judged)} judged criteria. Of the authored {held}, {only_tone} wait only for "
        f"`tone`; the other {held - only_tone} also wait for a judge label never asked for (`not_judged`): the runs "
        "judge only the held-out labeled texts (the authored run's own descriptions) and p07's generated one.\n\n"
        f"**After review** (the second table), those {only_tone} are settled ({freed} released, {only_tone - freed} "
        f"blocked on the people's `fail`), and {other['product']}, a `calibration` text, is blocked by its `tone` "
        f"fail; the other {left} still wait. The {freed} release on judge labels given on the very items that "
        "qualified the judge, where a real evaluation would score new descriptions. The captured run moves nothing: "
        "none of its descriptions is a text the raters labeled."
    )


def shelf_reading(authored: EvaluationReport) -> str:
    """Tell the case of the shelf p15: a false material claim that the checks and the authored judge passed."""
    inputs = authored.inputs
    labels = inputs.labels
    shelf = inputs.products["p15"]
    text = _shown(inputs.labeled_texts["p15"])
    human = labels.labels[("p15", "factual_accuracy")]
    judged = authored.runs.judging.labels(arrangement="per_criterion", source="labeled", criterion="factual_accuracy")
    record = authored.records["p15"]
    fa = authored.agreement_for("factual_accuracy", "per_criterion")
    assert fa is not None and fa.kappa is not None
    materials = shelf.facts.for_prompt()["materials"]
    held = [c.criterion for c in record.criteria if c.passed is None]
    _require("solid oak" in text and "oak" not in shelf.facts.materials, "the shelf claims oak")
    _require(judged.get("p15") == "pass" and authored.checks["p15"].status("numeric_claims") == "pass", "p15 passes")
    _require(record.release == "awaiting_human_review" and held == ["tone"], "p15 waits only for tone")
    passed = [r for r in labels.raters if human[r] == "pass"]
    reviewed = authored.with_human_review().records["p15"]
    _require(reviewed.release == "release", "the reviewed shelf is released")
    same = authored.runs.generation.by_product()["p15"].text == inputs.labeled_texts["p15"]
    _require(same and human["adjudicated"] == "fail", "the raters labeled p15's released text as a fail")
    misses = [p for p in labels.held_out if judged.get(p) != labels.label(p, "factual_accuracy")]
    _require(misses == ["p15"], "p15 is the judge's only held-out disagreement on factual_accuracy")
    _require(fa.items == len(labels.held_out), "the agreement row counts every held-out item")
    return (
        f"**p15, the {shelf.name}.** Facts: *{materials}*. Description: *{text}* The numeric check passes it (a "
        "material is no number with a unit), and so does the authored judge, written to show this case. "
        f"{len(passed)} of the {len(labels.raters)} authored raters passed it, but the adjudicated label is "
        f"`{human['adjudicated']}`, and the facts bear it out. On `factual_accuracy`, p15 is the judge's only "
        f"disagreement with the adjudicated labels, of {fa.items} held-out items: the reference was right, the "
        "judge wrong. That one miss still left the judge within the agreement rule "
        f"({fa.percent_agreement:.0%} agreement, kappa {fa.kappa:.2f}). The review above passes p15's tone, its only "
        "wait, so the shelf is released with a false material claim. The labels file holds the `fail`, but the "
        "release never reads it: the rule gave that criterion to the judge. A judge that meets the rule can still "
        "pass a false claim: a material check, or a person, must cover what it misses."
    )


def materials_debrief(flags: dict[str, list[str]], report: EvaluationReport) -> str:
    """Say why exercise 3's material check flags what it flags in the captured run, and what it misses.

    ``flags`` are the learner's check's flags on the captured run. Where they differ from what the task's
    rules flag, the reading says so to the learner instead of explaining flags the check did not make.
    """
    inputs = report.inputs
    text = report.runs.generation.by_product()
    if flags != {"p06": ["fabric"]}:  # the learner's check passed its tests yet reads these texts otherwise
        return (
            f"Your check flags {flags} in the captured run, where the task's rules flag only p06's *fabric*. Run "
            "your function on the captured texts of p06 and p01 and compare what it does with each rule of the task."
        )
    owners = [p.id for p in inputs.products.values() if "fabric" in p.facts.materials]
    _require(bool(owners) and "p06" not in owners, "another product's facts name fabric")
    _require("alumium" in text["p01"].text, "captured p01 misspells aluminium")
    p01_facts = inputs.products["p01"].facts.materials
    _require(
        "alumina" in text["p01"].text and "alumina" not in p01_facts, "captured p01 names alumina, not in its facts"
    )
    p06 = _shown(text["p06"].text)
    p01 = _shown(text["p01"].text)
    fabric = next(s for s in p06.split(". ") if "fabric" in s.lower())
    misspelt = next(s for s in p01.split(". ") if "alumium" in s)
    unread = [w for w in ("waterproof", "perfect for the beach") if w in p06]
    _require(len(unread) == 2, "captured p06 claims waterproof and perfect for the beach")
    facts = ", ".join(inputs.products["p06"].facts.materials)
    return (
        f"Captured p06 says: *{fabric.rstrip('.')}.* It is flagged for *fabric*, a false positive: its facts say "
        f"*{facts}*, which is a fabric. The word is in `MATERIALS` only because the facts of {', '.join(owners)} "
        f"name it. Captured p01 says: *{misspelt.rstrip('.')}.* Its *alumium* is not flagged: a misspelling "
        f"matches no word on the list. Its *alumina* goes unflagged too: its facts say *{', '.join(p01_facts)}*, and "
        f"*alumina* is not on the list. The same p06 text also claims *{unread[0]}* and *{unread[1]}*. "
        "No check of this lesson reads either."
    )
