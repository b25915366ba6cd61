"""Lesson 01's findings said in sentences, each built from the figures of the run it reads.

Every function returns Markdown for the notebook to display, so no figure on the
page is typed by hand. Where a sentence says something about the recorded replies
(a word a description holds, a verdict, why replies were refused), the function
checks it first and raises `ReadingOutdated` when the run no longer supports it:
a new recording stops at the first sentence it contradicts instead of printing it.
"""

from __future__ import annotations

from typing import Any

from labkit.errors import ReadingOutdated
from labkit.evaluator.experiments import Experiment, comparisons_table
from labkit.evaluator.record import user_description
from labkit.evaluator.report import EvaluationReport


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
        "It states both 6 and 12 hours, and a price per litre that no text holds. Then it passes the text."
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
        "leaves those items out gives a difference of exactly 0, so each interval starts at 0.00. Each interval "
        "reaches zero, so by the rule every measure is a tie. Here a tie does not mean the two score the same: "
        f"no interval goes below 0, but {items} items cannot rule out no difference. The log keeps the `tie`: "
        "the next person may not call either arrangement the better one on these items."
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
        "for no criterion, so it `failed`. Its baseline is replies the course wrote, so this says the small model "
        "falls short of those written replies, not of another model. The generation-model `tie` counts only "
        "schema, length and numeric-claim passes, against authored texts the course wrote with flaws on purpose "
        f"(the lantern's 12 hours of §3, for one). {len(edges)} of its {len(generation.result['comparisons'])} "
        f"intervals hold zero only as an end: {' and '.join(edges)}, the course's texts first. By the rule those "
        "are ties, not evidence that the two pass alike. It does not say the small model writes as well: §7 showed its lantern text. The log file "
        f"under `scratch/` holds all {len(logged)} entries."
    )


def shelf_reading(authored: EvaluationReport) -> str:
    """Tell the case of the shelf p15: a false material claim that the checks and the authored judge passed."""
    inputs = authored.inputs
    shelf = inputs.products["p15"]
    text = _shown(inputs.labeled_texts["p15"])
    human = inputs.labels.labels[("p15", "factual_accuracy")]
    judged = authored.runs.judging.labels(arrangement="per_criterion", source="labeled", criterion="factual_accuracy")
    record = authored.records["p15"]
    fa = authored.agreement_for("factual_accuracy", "per_criterion")
    assert fa is not None and fa.kappa is not None
    materials = shelf.facts.for_prompt()["materials"]
    held = [c.criterion for c in record.criteria if c.passed is None]
    _require("solid oak" in text and "oak" not in shelf.facts.materials, "the shelf claims oak")
    _require(judged.get("p15") == "pass" and authored.checks["p15"].status("numeric_claims") == "pass", "p15 passes")
    _require(record.release == "awaiting_human_review" and held == ["tone"], "p15 waits only for tone")
    passed = [r for r in inputs.labels.raters if human[r] == "pass"]
    reviewed = authored.with_human_review().records["p15"]
    _require(reviewed.release == "release", "the reviewed shelf is released")
    same = authored.runs.generation.by_product()["p15"].text == inputs.labeled_texts["p15"]
    _require(same and human["adjudicated"] == "fail", "the raters labeled p15's released text as a fail")
    return (
        f"**p15, the {shelf.name}.** Facts: *{materials}*. Description: *{text}* The numeric check passes it (a "
        "material is not a number with a unit), and so does the authored judge, a verdict the course wrote to show "
        f"this case. {len(passed)} of the {len(inputs.labels.raters)} authored raters passed it; the adjudicated "
        f"label is `{human['adjudicated']}`. The authored judge still met the agreement rule "
        f"({fa.percent_agreement:.0%} agreement, kappa {fa.kappa:.2f}, on {fa.items} items): the rule measures "
        "agreement with the raters, not truth, and tolerates a miss. p15 waited only for `tone`; the review above "
        "passes its tone, so the shelf is released with a false material claim. The raters' `fail` on its factual "
        "accuracy is in the labels file, but the release never reads it: the rule gave that criterion to the judge. "
        "Agreement is not correctness: a material check against the facts, or a person, must cover what the judge "
        "misses."
    )


def materials_debrief(flags: dict[str, list[str]], report: EvaluationReport) -> str:
    """Say why exercise 3's material check flags what it flags in the captured run, and what it misses."""
    inputs = report.inputs
    text = report.runs.generation.by_product()
    _require(flags == {"p06": ["fabric"]}, "the check flags only p06's fabric in the captured run")
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
