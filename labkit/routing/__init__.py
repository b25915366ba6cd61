"""Lesson 06: the penalty-weighted routing regression gate, with simulated and captured runs.

- `labkit.routing.grader`: strict loading of a suite and two runs, scoring, the three-condition
  release rule with its optional protected cases (`compare`), `explain`, confusion and slices.
- `labkit.routing.suite`: the fictional suite, the simulated baseline and candidate and the
  unlabelled model inputs (``python -m labkit.routing.suite``).
- `labkit.routing.runs`: the lesson's model requests and the captured run graded by the same gate.

Importing this package imports nothing heavy.
"""
