"""Lesson 01: the product-description evaluator with a rubric fixed before generation and a calibrated judge.

The parts, one concept each:

- `products`: the fictional products and their typed facts with units.
- `rubric`: the versioned rubric (criteria, anchors, allowed labels, pass rules) and its hash.
- `catalog`: the course's authored data (products, the labeled descriptions, two raters' labels).
- `fixtures`: writes that data to ``fixtures/evaluator`` (``python -m labkit.evaluator.fixtures``).
- `labels`: the human labels and the calibration and held-out subsets fixed in advance.
- `calls`: one model call with its exact request, measured latency and tokens, and cost from the price table.
- `generation`: one description per product, with prompt version, model id, latency, tokens and cost.
- `checks`: programmatic checks: output schema, length and cost limits, numeric claims against facts.
- `judge`: a model judge that writes its explanation first and a verdict from the allowed labels second.
- `calibration`: judge-human and human-human agreement, and the rule that routes weak criteria to people.
- `record`: the evaluation record, kept apart from the description a shopper sees.
- `experiments`: a JSON Lines log that keeps every experiment, failed ones included.
- `lesson`: the lesson's model requests, identical in every mode (what its recorded runs hold).
- `report`: `evaluate_run(run_id)`: replay a run and build checks, calibration, routing and records.
- `plots`: agreement per criterion and arrangement; cost and latency distributions.
"""
